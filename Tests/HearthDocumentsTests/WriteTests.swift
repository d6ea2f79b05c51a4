import HearthCore
import HearthDocuments
import Testing

@Suite("Writes")
struct WriteTests {
    @Test("create makes a document; creating it again is ALREADY_EXISTS and changes nothing", arguments: Backend.allCases)
    func create(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let result = try await db.create("users/alice", ["age": .integer(30)])
            let doc = try #require(try await db.get("users/alice"))
            #expect(doc.fields == ["age": .integer(30)])
            #expect(doc.createTime == result.commitTime)
            #expect(doc.updateTime == result.commitTime)
            #expect(result.writeResults[0].updateTime == result.commitTime)
            await expectError(.alreadyExists) { try await db.create("users/alice", ["age": .integer(31)]) }
            #expect(try await db.get("users/alice") == doc)
        }
    }

    @Test("set replaces the whole document and keeps its create time", arguments: Backend.allCases)
    func set(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let first = try await db.set("users/alice", ["a": .integer(1), "b": .integer(2)])
            let second = try await db.set("users/alice", ["c": .string("x")])
            let doc = try #require(try await db.get("users/alice"))
            #expect(doc.fields == ["c": .string("x")])
            #expect(doc.createTime == first.commitTime)
            #expect(doc.updateTime == second.commitTime)
            #expect(second.commitTime > first.commitTime)
        }
    }

    @Test("update with a mask merges, sets nested fields and deletes masked fields absent from the data", arguments: Backend.allCases)
    func updateWithMask(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("users/alice", ["keep": .integer(1), "gone": .integer(2), "m": .map(["x": .integer(1), "y": .integer(2)]), "s": .string("old")])
            try await db.update(
                "users/alice", ["s": .string("new"), "m": .map(["x": .integer(10)]), "n": .map(["deep": .boolean(true)])],
                mask: ["s", "m.x", "n.deep", "gone", "m.y", "never.existed"])
            let fields = try #require(try await db.fields("users/alice"))
            #expect(fields == ["keep": .integer(1), "s": .string("new"), "m": .map(["x": .integer(10)]), "n": .map(["deep": .boolean(true)])])
        }
    }

    @Test("update on a missing document is NOT_FOUND and creates nothing", arguments: Backend.allCases)
    func updateMissing(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            await expectError(.notFound) { try await db.update("users/nobody", ["a": .integer(1)], mask: ["a"]) }
            #expect(try await db.get("users/nobody") == nil)
        }
    }

    @Test("A masked write without precondition creates the document (set with merge)", arguments: Backend.allCases)
    func mergeCreates(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.commit([Write(path: path("users/new"), kind: .update(fields: ["a": .integer(1), "b": .integer(2)], mask: [field("a")]))])
            #expect(try await db.fields("users/new") == ["a": .integer(1)])
        }
    }

    @Test("delete removes the document; deleting a missing one succeeds unless it must exist", arguments: Backend.allCases)
    func delete(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("users/alice", ["a": .integer(1)])
            let result = try await db.write(.delete(path("users/alice")))
            #expect(result.updateTime == nil)
            #expect(try await db.get("users/alice") == nil)
            try await db.write(.delete(path("users/alice")))
            await expectError(.notFound) { try await db.write(.delete(path("users/alice"), precondition: .exists(true))) }
            // A re-created document gets a new create time.
            let again = try await db.set("users/alice", ["a": .integer(2)])
            #expect(try await db.get("users/alice")?.createTime == again.commitTime)
        }
    }

    @Test("Preconditions: exists and update_time", arguments: Backend.allCases)
    func preconditions(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let created = try await db.set("c/d", ["v": .integer(1)])
            let t = created.commitTime
            try await db.commit([Write(path: path("c/d"), kind: .update(fields: ["v": .integer(2)], mask: nil), precondition: .updateTime(t))])
            #expect(try await db.value("c/d", "v") == .integer(2))
            await expectError(.failedPrecondition) {
                try await db.commit([Write(path: path("c/d"), kind: .update(fields: ["v": .integer(3)], mask: nil), precondition: .updateTime(t))])
            }
            await expectError(.failedPrecondition) {
                try await db.commit([Write(path: path("c/missing"), kind: .update(fields: [:], mask: nil), precondition: .updateTime(t))])
            }
            await expectError(.failedPrecondition) { try await db.write(.delete(path("c/d"), precondition: .updateTime(t))) }
            await expectError(.alreadyExists) {
                try await db.commit([Write(path: path("c/d"), kind: .update(fields: [:], mask: nil), precondition: .exists(false))])
            }
            #expect(try await db.value("c/d", "v") == .integer(2))
            try await db.commit([Write(path: path("c/d"), kind: .delete, precondition: .exists(true))])
            #expect(try await db.get("c/d") == nil)
        }
    }

    @Test("A commit is atomic: one failing write leaves every other write unapplied", arguments: Backend.allCases)
    func atomic(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/existing", ["v": .integer(1)])
            await expectError(.alreadyExists) {
                try await db.commit([.set(path("c/a"), ["v": .integer(1)]), .delete(path("c/b")), .create(path("c/existing"), [:])])
            }
            #expect(try await db.get("c/a") == nil)
            #expect(try await db.value("c/existing", "v") == .integer(1))
        }
    }

    @Test("A write that changes nothing keeps the document's update time", arguments: Backend.allCases)
    func noOp(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let first = try await db.set("c/d", ["a": .integer(1), "m": .map(["x": .string("y")])])
            let again = try await db.set("c/d", ["a": .integer(1), "m": .map(["x": .string("y")])])
            #expect(again.commitTime > first.commitTime)
            #expect(again.writeResults[0].updateTime == first.commitTime)
            #expect(try await db.get("c/d")?.updateTime == first.commitTime)
            let merge = try await db.update("c/d", ["a": .integer(1)], mask: ["a"])
            #expect(merge.writeResults[0].updateTime == first.commitTime)
            // 1 → 1.0 is a change of type, so not a no-op.
            let toDouble = try await db.set("c/d", ["a": .double(1), "m": .map(["x": .string("y")])])
            #expect(toDouble.writeResults[0].updateTime == toDouble.commitTime)
            expectIdentical(try await db.value("c/d", "a"), .double(1))
        }
    }

    /// "\u{E9}" and "e\u{301}" are different strings to Firestore (different UTF-8 bytes) but
    /// equal Swift Strings; a write from one to the other must be stored, not skipped as a no-op.
    @Test("Rewriting a string with different bytes but canonically equivalent text is stored", arguments: Backend.allCases)
    func unicodeNormalizationIsAChange(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", ["s": .string("caf\u{E9}")])
            let result = try await db.set("c/d", ["s": .string("cafe\u{301}")])
            #expect(result.writeResults[0].updateTime == result.commitTime)
            expectIdentical(try await db.value("c/d", "s"), .string("cafe\u{301}"))
        }
    }

    /// Firestore compares ids by their UTF-8 bytes: "c/\u{E9}" and "c/e\u{301}" name two documents,
    /// though Swift's String == (canonical equivalence) calls the paths equal.
    @Test("Ids that differ only in Unicode normalization name different documents", arguments: Backend.allCases)
    func unicodeNormalizationInPaths(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/\u{E9}", ["v": .integer(1)])
            try await db.set("c/e\u{301}", ["v": .integer(2)])
            #expect(try await db.names(Query(collectionId: "c")).count == 2)
            let nfc = try #require(try await db.get("c/\u{E9}"))
            let nfd = try #require(try await db.get("c/e\u{301}"))
            #expect(Array(nfc.path.lastSegment.utf8) == Array("\u{E9}".utf8))
            #expect(nfc.fields["v"] == .integer(1))
            #expect(Array(nfd.path.lastSegment.utf8) == Array("e\u{301}".utf8))
            #expect(nfd.fields["v"] == .integer(2))
        }
    }

    @Test("Commit times strictly increase and are every written document's update time", arguments: Backend.allCases)
    func commitTimes(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            var last: Timestamp?
            for i in 0..<40 {
                let r = try await db.commit([.set(path("c/d\(i % 3)"), ["i": .integer(Int64(i))]), .set(path("c/e"), ["i": .integer(Int64(i))])])
                if let last { #expect(r.commitTime > last) }
                #expect(r.writeResults.allSatisfy { $0.updateTime == r.commitTime })
                #expect(r.commitTime.nanos % 1000 == 0)
                last = r.commitTime
            }
            // Concurrent commits still get distinct times.
            let times = try await withThrowingTaskGroup(of: Timestamp.self) { group in
                for i in 0..<20 { group.addTask { try await db.set("c/concurrent\(i)", [:]).commitTime } }
                var out: [Timestamp] = []
                for try await t in group { out.append(t) }
                return out
            }
            #expect(Set(times).count == 20)
            #expect(times.allSatisfy { $0 > last! })
        }
    }

    @Test("More than 500 writes are rejected and nothing is written; 500 are fine", arguments: Backend.allCases)
    func maximumWrites(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let tooMany = (0...500).map { Write.set(path("c/d\($0)"), ["i": .integer(Int64($0))]) }
            await expectError(.invalidArgument) { try await db.commit(tooMany) }
            #expect(try await db.get("c/d0") == nil)
            #expect(try await db.names(Query(collectionId: "c")).isEmpty)
            let r = try await db.commit(Array(tooMany.prefix(500)))
            #expect(r.writeResults.count == 500)
            #expect(try await db.names(Query(collectionId: "c")).count == 500)
            await expectError(.invalidArgument) { _ = try await db.engine.batchWrite(db.database, tooMany) }
        }
    }

    @Test("batchWrite applies each write on its own and reports per-write failures", arguments: Backend.allCases)
    func batchWrite(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/exists", ["v": .integer(1)])
            let (outcomes, commitTime) = try await db.engine.batchWrite(db.database, [
                .set(path("c/a"), ["v": .integer(1)]),
                .create(path("c/exists"), ["v": .integer(2)]),
                .update(path("c/missing"), ["v": .integer(3)], mask: [field("v")]),
                .set(path("c"), [:]),  // a collection path
                .set(path("c/b"), ["__bad__": .null]),
                .update(path("c/exists"), ["w": .integer(4)], mask: [field("w")]),
            ])
            #expect(outcomes.count == 6)
            func code(_ o: BatchWriteOutcome) -> ErrorCode? {
                if case .failure(let e) = o { return e.code }
                return nil
            }
            #expect(outcomes.map(code) == [nil, .alreadyExists, .notFound, .invalidArgument, .invalidArgument, nil])
            if case .success(let r) = outcomes[0] { #expect(r.updateTime == commitTime) }
            #expect(try await db.fields("c/a") == ["v": .integer(1)])
            #expect(try await db.fields("c/exists") == ["v": .integer(1), "w": .integer(4)])
            #expect(try await db.get("c/missing") == nil)
            #expect(try await db.get("c/b") == nil)
        }
    }

    @Test("Invalid writes are INVALID_ARGUMENT", arguments: Backend.allCases)
    func invalidWrites(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let bad: [Write] = [
                .set(path("c"), [:]),
                .set(path("c/d/e"), [:]),
                .set(path("c//d"), [:]),
                .set(path("c/__d__"), [:]),
                .set(path("c/.."), [:]),
                .set(path("c/d"), ["": .null]),
                .set(path("c/d"), ["__x__": .null]),
                .set(path("c/d"), ["a": .array([.array([])])]),
                .set(path("c/d"), ["big": .string(String(repeating: "x", count: 1_048_576))]),
                .update(path("c/d"), [:], mask: [.documentName]),
                Write(path: path("c/d"), kind: .transform, transforms: [FieldTransform(field: field("n"), operation: .increment(.string("1")))]),
                Write(path: path("c/d"), kind: .transform, transforms: [FieldTransform(field: field("n"), operation: .maximum(.null))]),
                Write(path: path("c/d"), kind: .transform, transforms: [FieldTransform(field: .documentName, operation: .serverTimestamp)]),
                Write(
                    path: path("c/d"), kind: .transform,
                    transforms: [FieldTransform(field: field("n"), operation: .serverTimestamp), FieldTransform(field: field("n"), operation: .increment(.integer(1)))]),
                Write(path: path("c/d"), kind: .update(fields: ["n": .integer(1)], mask: [field("n")]), transforms: [FieldTransform(field: field("n.x"), operation: .serverTimestamp)]),
            ]
            for (i, w) in bad.enumerated() {
                await expectError(.invalidArgument, "write #\(i)") { try await db.commit([w]) }
            }
            var deep = Value.integer(1)
            for _ in 0..<21 { deep = .map(["m": deep]) }
            await expectError(.invalidArgument) { try await db.set("c/d", ["deep": deep]) }
            #expect(try await db.names(Query(collectionId: "c")).isEmpty)
        }
    }

    @Test("A document of exactly the maximum size can be written", arguments: Backend.allCases)
    func maximumSize(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            // name "c/d": 2 + 2 + 16; field "s": 2; string n + 1; document: 32
            let n = 1_048_576 - 20 - 2 - 1 - 32
            try await db.set("c/d", ["s": .string(String(repeating: "x", count: n))])
            await expectError(.invalidArgument) { try await db.set("c/e", ["s": .string(String(repeating: "x", count: n + 1))]) }
            // Transforms that push a document over the limit fail too.
            await expectError(.invalidArgument) { try await db.transform("c/d", [("t", .serverTimestamp)]) }
        }
    }

    @Test("get and batchGet: masks, missing documents, invalid paths", arguments: Backend.allCases)
    func reads(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/a", ["x": .integer(1), "m": .map(["y": .integer(2), "z": .integer(3)])])
            let r = try await db.engine.batchGet(db.database, [path("c/a"), path("c/missing"), path("c/a")], mask: [field("m.y")])
            #expect(r.documents.count == 3)
            #expect(r.documents[0]?.fields == ["m": .map(["y": .integer(2)])])
            #expect(r.documents[1] == nil)
            #expect(r.documents[2]?.path == path("c/a"))
            await expectError(.invalidArgument) { _ = try await db.engine.get(db.database, path("c")) }
            await expectError(.invalidArgument) { _ = try await db.engine.get(db.database, path("c/__a__")) }
        }
    }

    @Test("Databases are isolated from each other", arguments: Backend.allCases)
    func databases(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let other = DatabaseName(project: "demo", database: "other")
            try await db.set("c/d", ["v": .integer(1)])
            _ = try await db.engine.commit(other, [.set(path("c/d"), ["v": .integer(2)])])
            #expect(try await db.value("c/d", "v") == .integer(1))
            #expect(try await db.engine.get(other, path("c/d")).0?.fields == ["v": .integer(2)])
            try await db.engine.clear(other)
            #expect(try await db.engine.get(other, path("c/d")).0 == nil)
            #expect(try await db.value("c/d", "v") == .integer(1))
        }
    }
}
