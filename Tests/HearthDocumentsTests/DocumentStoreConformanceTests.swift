import Foundation
import HearthCore
import HearthDocuments
import HearthSQLite
import Synchronization
import Testing

/// The ``DocumentStore`` contract, run unchanged against every implementation (``Backend``:
/// SQLite in memory and in a WAL file; a PostgreSQL store is one more case there). These talk to
/// the store directly, below the engine: what every backend must do with a planned commit.
@Suite("DocumentStore conformance")
struct DocumentStoreConformanceTests {
    static let db = "(default)"

    func withStore(_ backend: Backend, _ body: (any DocumentStore) async throws -> Void) async throws {
        switch backend {
        case .sqliteInMemory:
            try await body(try SQLiteDocumentStore.inMemory())
        case .sqliteFile:
            try await withTemporaryDirectory { dir in
                try await body(try SQLiteDocumentStore(path: dir.appendingPathComponent("hearth.sqlite").path))
            }
        }
    }

    static func doc(_ p: String, _ n: Int64, at time: Int64, created: Int64? = nil) -> Document {
        Document(
            path: path(p), fields: ["n": .integer(n)], createTime: Timestamp(microseconds: created ?? time),
            updateTime: Timestamp(microseconds: time))
    }

    static func put(_ document: Document, previous: Document? = nil) -> DocumentMutation {
        DocumentMutation(
            path: document.path, document: document, entries: IndexEntries.all(document, []),
            oldEntries: previous.map { IndexEntries.all($0, []) } ?? [], previous: previous)
    }

    static func request(_ time: Int64, writing: [String], expecting: [(String, Int64?)] = [], indexVersion: Int = 15) -> DocumentCommitRequest {
        DocumentCommitRequest(
            database: db, time: Timestamp(microseconds: time), writing: writing.map(path),
            expectations: expecting.map { DocumentExpectation(database: db, path: path($0.0), updateTime: $0.1.map(Timestamp.init(microseconds:))) },
            indexVersion: indexVersion)
    }

    func stored(_ store: any DocumentStore, _ p: String) async throws -> Document? {
        let viaPointRead = try await store.documents(Self.db, [path(p)], at: nil)
        let viaReader = try await store.read { r in try r.document(Self.db, path(p)) }
        #expect(viaPointRead == [viaReader], "the point read and the snapshot reader agree")
        return viaReader
    }

    /// Index entries of the built-in ascending index on `n` in collection `c`.
    func entries(_ store: any DocumentStore, collection: String = "c") async throws -> [String] {
        try await store.read { r in
            var out: [String] = []
            try r.scanIndex(
                Self.db, scope: IndexScope.collection(path(collection)).key, .prefix(IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, field("n"))),
                reverse: false
            ) { e in
                out.append(e.document)
                return true
            }
            return out
        }
    }

    @Test("A commit hands the plan the current documents in order, then stores its mutations, history and time", arguments: Backend.allCases)
    func commitAppliesThePlan(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let a1 = Self.doc("c/a", 1, at: 10)
            let seen = try await store.commit(Self.request(10, writing: ["c/a", "c/b"])) { current in
                ([Self.put(a1)], current.map { $0?.path.text })
            }
            #expect(seen == [nil, nil])
            #expect(try await stored(store, "c/a") == a1)
            #expect(try await store.lastCommitTime() == Timestamp(microseconds: 10))

            let a2 = Self.doc("c/a", 2, at: 20, created: 10)
            let current = try await store.commit(Self.request(20, writing: ["c/b", "c/a"])) { current in
                ([Self.put(a2, previous: a1)], current)
            }
            #expect(current == [nil, a1])
            #expect(try await stored(store, "c/a") == a2)
            #expect(try await entries(store) == ["c/a"])
            // History: the state a write replaced, for reads at a past time.
            #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 15)) == [a1])
            #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 5)) == [nil])
            #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 25)) == [a2])

            try await store.commit(Self.request(30, writing: ["c/a"])) { _ in
                ([DocumentMutation(path: path("c/a"), document: nil, entries: [], oldEntries: IndexEntries.all(a2, []), previous: a2)], ())
            }
            #expect(try await stored(store, "c/a") == nil)
            #expect(try await entries(store).isEmpty)
            #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 25)) == [a2])
        }
    }

    @Test("An empty store reads no documents, no indexes and no commit time", arguments: Backend.allCases)
    func emptyStoreReads(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let none = try await store.documents(Self.db, [], at: nil)
            #expect(none.isEmpty)
            #expect(try await store.documents(Self.db, [path("c/a"), path("c/a/d/b")], at: nil) == [nil, nil])
            #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 5)) == [nil])
            #expect(try await store.collectionIds(Self.db, parent: .root).isEmpty)
            #expect(try await store.indexDefinitions().isEmpty)
            #expect(try await store.lastCommitTime() == nil)
        }
    }

    @Test("Point reads return documents in the order asked (repeats, missing ones, other databases), now and at past times", arguments: Backend.allCases)
    func pointReads(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let a1 = Self.doc("c/a", 1, at: 10), b1 = Self.doc("c/b", 1, at: 10), nested = Self.doc("c/a/sub/x", 7, at: 10)
            try await store.commit(Self.request(10, writing: ["c/a", "c/b", "c/a/sub/x"])) { _ in ([Self.put(a1), Self.put(b1), Self.put(nested)], ()) }
            let a2 = Self.doc("c/a", 2, at: 20, created: 10)
            try await store.commit(Self.request(20, writing: ["c/a", "c/b"])) { _ in
                ([Self.put(a2, previous: a1), DocumentMutation(path: path("c/b"), document: nil, entries: [], oldEntries: IndexEntries.all(b1, []), previous: b1)], ())
            }
            let paths = ["c/b", "c/a", "c/missing", "c/a", "c/a/sub/x"].map(path)
            #expect(try await store.documents(Self.db, paths, at: nil) == [nil, a2, nil, a2, nested])
            #expect(try await store.documents(Self.db, paths, at: Timestamp(microseconds: 15)) == [b1, a1, nil, a1, nested])
            #expect(try await store.documents(Self.db, paths, at: Timestamp(microseconds: 5)) == [nil, nil, nil, nil, nil])
            #expect(try await store.documents(Self.db, paths, at: Timestamp(microseconds: 20)) == [nil, a2, nil, a2, nested])
            #expect(try await store.documents("other", paths, at: nil) == [nil, nil, nil, nil, nil])
            let viaReader = try await store.read { r in try paths.map { try r.document(Self.db, $0, at: Timestamp(microseconds: 15)) } }
            #expect(viaReader == [b1, a1, nil, a1, nested])
            #expect(try await store.lastCommitTime() == Timestamp(microseconds: 20))
        }
    }

    @Test("collectionIds lists the collections directly under a parent, as they are now, in byte order", arguments: Backend.allCases)
    func collectionIdsNow(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let names = ["b/1", "a/1", "a-x/1", "a/1/sub/2", "a/1/sub/3", "a/1/other/4", "a/2/deep/5", "a/1/sub/2/z/6"]
            for (i, name) in names.enumerated() {
                try await store.commit(Self.request(Int64(10 + i), writing: [name])) { _ in ([Self.put(Self.doc(name, Int64(i), at: Int64(10 + i)))], ()) }
            }
            #expect(try await store.collectionIds(Self.db, parent: .root) == ["a", "a-x", "b"])
            #expect(try await store.collectionIds(Self.db, parent: path("a/1")) == ["other", "sub"])
            #expect(try await store.collectionIds(Self.db, parent: path("a/1/sub/2")) == ["z"])
            #expect(try await store.collectionIds(Self.db, parent: path("b/1")).isEmpty)
            #expect(try await store.collectionIds("other", parent: .root).isEmpty)
            let viaReader = try await store.read { r in try r.collectionIds(Self.db, parent: path("a/1")) }
            #expect(viaReader == ["other", "sub"])
        }
    }

    @Test("A point read of several documents sees one snapshot: never half of a commit", arguments: Backend.allCases)
    func pointReadsAreConsistent(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.commit(Self.request(1, writing: ["c/a", "c/b"])) { _ in
                ([Self.put(Self.doc("c/a", 0, at: 1)), Self.put(Self.doc("c/b", 0, at: 1))], ())
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for i in 1...60 {
                        let time = Int64(1 + i)
                        try await store.commit(Self.request(time, writing: ["c/a", "c/b"])) { current in
                            ([
                                Self.put(Self.doc("c/a", Int64(i), at: time, created: 1), previous: current[0]),
                                Self.put(Self.doc("c/b", Int64(i), at: time, created: 1), previous: current[1]),
                            ], ())
                        }
                    }
                }
                for _ in 0..<2 {
                    group.addTask {
                        for _ in 0..<120 {
                            let docs = try await store.documents(Self.db, [path("c/a"), path("c/b")], at: nil)
                            #expect(docs[0]?.fields == docs[1]?.fields, "both documents of one commit, or neither")
                            #expect(docs[0]?.updateTime == docs[1]?.updateTime)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("A changed expectation refuses the commit before the plan runs; nothing is stored", arguments: Backend.allCases)
    func expectationsAreChecked(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let a = Self.doc("c/a", 1, at: 10)
            try await store.commit(Self.request(10, writing: ["c/a"])) { _ in ([Self.put(a)], ()) }
            let planned = PlanCounter()
            for expectation: (String, Int64?) in [("c/a", 9), ("c/a", nil), ("c/other", 10)] {
                await #expect(throws: DocumentStoreConflict.document(database: Self.db, path: path(expectation.0))) {
                    try await store.commit(Self.request(20, writing: ["c/b"], expecting: [expectation])) { _ in
                        planned.count.withLock { $0 += 1 }
                        return ([Self.put(Self.doc("c/b", 1, at: 20))], ())
                    }
                }
            }
            #expect(planned.count.withLock { $0 } == 0)
            #expect(try await stored(store, "c/b") == nil)
            #expect(try await store.lastCommitTime() == Timestamp(microseconds: 10))
            // Expectations that hold (stored update time, still missing) let it through.
            try await store.commit(Self.request(20, writing: ["c/b"], expecting: [("c/a", 10), ("c/other", nil)])) { _ in
                ([Self.put(Self.doc("c/b", 1, at: 20))], ())
            }
            #expect(try await stored(store, "c/b") != nil)
        }
    }

    @Test("A plan that throws stores nothing, and commits grouped with it are unaffected", arguments: Backend.allCases)
    func failingPlanChangesNothing(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            struct Refused: Error {}
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<40 {
                    group.addTask {
                        do {
                            try await store.commit(Self.request(Int64(100 + i), writing: ["c/d\(i)"])) { _ in
                                if i % 4 == 0 { throw Refused() }
                                return ([Self.put(Self.doc("c/d\(i)", Int64(i), at: Int64(100 + i)))], ())
                            }
                            return true
                        } catch is Refused {
                            return false
                        }
                    }
                }
                var stored = 0
                for try await ok in group where ok { stored += 1 }
                #expect(stored == 30)
            }
            for i in 0..<40 { #expect(try await stored(store, "c/d\(i)") == (i % 4 == 0 ? nil : Self.doc("c/d\(i)", Int64(i), at: Int64(100 + i)))) }
            #expect(try await entries(store).count == 30)
            #expect(try await store.lastCommitTime() == Timestamp(microseconds: 139))
        }
    }

    @Test("The last commit time only grows, whatever order commits arrive in", arguments: Backend.allCases)
    func lastCommitTimeGrows(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.commit(Self.request(50, writing: ["c/a"])) { _ in ([Self.put(Self.doc("c/a", 1, at: 50))], ()) }
            try await store.commit(Self.request(40, writing: ["c/b"])) { _ in ([Self.put(Self.doc("c/b", 1, at: 40))], ()) }
            #expect(try await store.lastCommitTime() == Timestamp(microseconds: 50))
            try await store.clear(Self.db, time: Timestamp(microseconds: 45))
            #expect(try await store.lastCommitTime() == Timestamp(microseconds: 50))
            try await store.clear(Self.db, time: Timestamp(microseconds: 60))
            #expect(try await store.lastCommitTime() == Timestamp(microseconds: 60))
        }
    }

    @Test("clear removes a database's documents and index entries, and no other database's", arguments: Backend.allCases)
    func clearOneDatabase(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.commit(Self.request(10, writing: ["c/a"])) { _ in ([Self.put(Self.doc("c/a", 1, at: 10))], ()) }
            let other = DocumentCommitRequest(database: "other", time: Timestamp(microseconds: 11), writing: [path("c/a")], expectations: [], indexVersion: 15)
            try await store.commit(other) { _ in ([Self.put(Self.doc("c/a", 2, at: 11))], ()) }
            try await store.clear(Self.db, time: Timestamp(microseconds: 12))
            #expect(try await stored(store, "c/a") == nil)
            #expect(try await entries(store).isEmpty)
            #expect(try await store.documents("other", [path("c/a")], at: nil).first! == Self.doc("c/a", 2, at: 11))
        }
    }

    @Test("createIndex numbers indexes from 16, back-fills them, refuses duplicates, and moves the index version", arguments: Backend.allCases)
    func createIndex(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            for (i, name) in ["g/a", "g/b", "other/x/g/c", "h/d"].enumerated() {
                try await store.commit(Self.request(Int64(10 + i), writing: [name])) { _ in ([Self.put(Self.doc(name, Int64(i), at: Int64(10 + i)))], ()) }
            }
            let proposed = IndexDefinition(
                id: 0, database: Self.db, collectionGroup: "g", groupScope: true, fields: [.init(field("n"), .descending)],
                automatic: true)
            let created = try #require(try await store.createIndex(proposed) { doc, def in IndexEntries.composite(doc, def) })
            #expect(created.id == 16)
            #expect(try await store.createIndex(proposed) { doc, def in IndexEntries.composite(doc, def) } == nil)
            #expect(try await store.indexDefinitions() == [created])
            let backfilled = try await store.read { r in
                var docs: [String] = []
                try r.scanIndex(Self.db, scope: IndexScope.group("g").key, KeyRange(lower: nil, upper: nil), reverse: false) { e in
                    docs.append(e.document)
                    return true
                }
                return docs
            }
            #expect(backfilled == ["other/x/g/c", "g/b", "g/a"], "every document of the group, by n descending")

            // A commit planned before the index existed is refused; one planned with it passes.
            await #expect(throws: DocumentStoreConflict.indexes) {
                try await store.commit(Self.request(20, writing: ["g/e"], indexVersion: 15)) { _ in ([Self.put(Self.doc("g/e", 9, at: 20))], ()) }
            }
            try await store.commit(Self.request(21, writing: ["g/e"], indexVersion: 16)) { _ in ([Self.put(Self.doc("g/e", 9, at: 21))], ()) }
            let second = IndexDefinition(
                id: 0, database: Self.db, collectionGroup: "h", groupScope: false, fields: [.init(field("n"), .ascending)],
                automatic: false)
            #expect(try await store.createIndex(second) { doc, def in IndexEntries.composite(doc, def) }?.id == 17)
        }
    }
}

final class PlanCounter: Sendable {
    let count = Mutex(0)
}
