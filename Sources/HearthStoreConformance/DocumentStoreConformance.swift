import HearthCore
public import HearthDocuments
import Synchronization
public import Testing

/// The ``DocumentStore`` contract, one scenario per case, run unchanged against every
/// implementation: each test target calls it with fresh stores of its backends (SQLite in memory
/// and in a WAL file in `HearthDocumentsTests`; PostgreSQL in `HearthPostgresTests`). These talk
/// to the store directly, below the engine: what every backend must do with planned commits,
/// point reads, scans and snapshots.
///
/// ```swift
/// @Test(arguments: DocumentStoreConformance.cases)
/// func conformance(_ scenario: DocumentStoreConformance.Case) async throws {
///     try await scenario.run { try MyStore.fresh() }
/// }
/// ```
public enum DocumentStoreConformance {
    /// One scenario: give it a factory of fresh, empty stores.
    public typealias Case = StoreConformanceCase<any DocumentStore>

    /// Every scenario.
    public static let cases: [Case] = [
        Case("A commit hands the plan the current documents in order, then stores its mutations, history and time", commitAppliesThePlan),
        Case("An empty store reads no documents, no indexes and no commit time", emptyStoreReads),
        Case("Point reads return documents in the order asked (repeats, missing ones, other databases), now and at past times", pointReads),
        Case("collectionIds lists the collections directly under a parent, as they are now, in byte order", collectionIdsNow),
        Case("A point read of several documents sees one snapshot: never half of a commit", pointReadsAreConsistent),
        Case("A changed expectation refuses the commit before the plan runs; nothing is stored", expectationsAreChecked),
        Case("A plan that throws stores nothing, and commits grouped with it are unaffected", failingPlanChangesNothing),
        Case("The last commit time only grows, whatever order commits arrive in", lastCommitTimeGrows),
        Case("clear removes a database's documents and index entries, and no other database's", clearOneDatabase),
        Case("createIndex numbers indexes from 16, back-fills them, refuses duplicates, and moves the index version", createIndex),
        Case("A document scan returns a scope's documents in name order, within a key range, reversed, filtered, up to a limit", documentScans),
        Case("An index scan follows entries in key order to their documents, skips entries of missing ones, and stops at the limit", indexScans),
        Case("A scan reads rows only until its limit of kept documents", scansStopAtTheLimit),
        Case("A snapshot at a past time reads paths and document scans from the history; index scans are refused", snapshotAtPastTime),
        Case("A snapshot lists the parents of missing documents and its last commit time when asked", snapshotParentsAndCommitTime),
        Case("Every part of a snapshot sees the same commits: never half of a commit", snapshotsAreConsistent),
        Case("countDocuments counts a database's documents up to a limit", countDocuments),
        Case("Concurrent commits that rewrite one document from its current state lose no update (a plan may run again)", concurrentRewrites),
        Case("Of concurrent commits expecting one document's update time, exactly one is applied", concurrentExpectations),
        Case("Two commits that each expect unchanged the document the other writes never both apply (no write skew)", noWriteSkew),
        Case("Scans over hundreds of rows see each once, in order both ways, and stop at the limit of a selective filter", longScans),
        Case("A snapshot at a past time merges the history into long scans: order, range, filter, limit", longScansAtPastTime),
        Case("createIndex back-fills atomically: a concurrent commit planned before it is either back-filled or refused", createIndexWhileCommitting),
        Case("Index keys of 3 KB to 600 KB sharing long prefixes with short ones scan in byte order both ways, by range, past a page, and are replaced", longIndexKeys),
        Case("Document names of 1 to 6 KiB under parents of 1 to 4 KiB: point reads, scans of collections, groups and descendants, collection ids, parents, past times, deletes", longDocumentNames),
    ]

    /// Runs every scenario, each on a store `make` creates fresh.
    public static func runAll(make: Case.MakeStore) async throws { try await Case.runAll(cases, make: make) }

    static let db = "(default)"

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

    /// Creates each document in its own commit, the i-th at time 10 + i with n = i.
    static func commitEach(_ store: any DocumentStore, _ names: [String]) async throws {
        for (i, name) in names.enumerated() {
            try await store.commit(Self.request(Int64(10 + i), writing: [name])) { _, _ in ([Self.put(Self.doc(name, Int64(i), at: Int64(10 + i)))], ()) }
        }
    }

    /// A document as stored, read both ways (a point read and a snapshot), which must agree.
    static func stored(_ store: any DocumentStore, _ p: String) async throws -> Document? {
        let viaPointRead = try await store.documents(Self.db, [path(p)], at: nil)
        let viaSnapshot = try await store.snapshot(DocumentSnapshotRead(database: Self.db, paths: [path(p)])).documents
        #expect(viaPointRead == viaSnapshot, "the point read and the snapshot agree")
        return viaPointRead[0]
    }

    /// The paths one scan returns.
    static func scan(_ store: any DocumentStore, _ scan: DocumentScan, database: String = db) async throws -> [String] {
        let read = try await store.snapshot(DocumentSnapshotRead(database: database, scans: [scan]))
        #expect(read.scans.count == 1)
        return read.scans[0].map(\.path.text)
    }

    /// Documents of collection `collection` in the built-in ascending index on `n`.
    static func entries(_ store: any DocumentStore, collection: String = "c") async throws -> [String] {
        try await scan(store, DocumentScan(
            .index(scope: IndexScope.collection(path(collection)).key),
            range: .prefix(IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, field("n")))))
    }

    static func commitAppliesThePlan(_ store: any DocumentStore) async throws {
        let a1 = Self.doc("c/a", 1, at: 10)
        let seen = try await store.commit(Self.request(10, writing: ["c/a", "c/b"])) { current, _ in
            ([Self.put(a1)], current.map { $0?.path.text })
        }
        #expect(seen == [nil, nil])
        #expect(try await stored(store, "c/a") == a1)
        #expect(try await store.lastCommitTime() == Timestamp(microseconds: 10))

        let a2 = Self.doc("c/a", 2, at: 20, created: 10)
        let current = try await store.commit(Self.request(20, writing: ["c/b", "c/a"])) { current, _ in
            ([Self.put(a2, previous: a1)], current)
        }
        #expect(current == [nil, a1])
        #expect(try await stored(store, "c/a") == a2)
        #expect(try await entries(store) == ["c/a"])
        // History: the state a write replaced, for reads at a past time.
        #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 15)) == [a1])
        #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 5)) == [nil])
        #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 25)) == [a2])

        try await store.commit(Self.request(30, writing: ["c/a"])) { _, _ in
            ([DocumentMutation(path: path("c/a"), document: nil, entries: [], oldEntries: IndexEntries.all(a2, []), previous: a2)], ())
        }
        #expect(try await stored(store, "c/a") == nil)
        #expect(try await entries(store).isEmpty)
        #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 25)) == [a2])
    }

    static func emptyStoreReads(_ store: any DocumentStore) async throws {
        let none = try await store.documents(Self.db, [], at: nil)
        #expect(none.isEmpty)
        #expect(try await store.documents(Self.db, [path("c/a"), path("c/a/d/b")], at: nil) == [nil, nil])
        #expect(try await store.documents(Self.db, [path("c/a")], at: Timestamp(microseconds: 5)) == [nil])
        #expect(try await store.collectionIds(Self.db, parent: .root).isEmpty)
        #expect(try await store.indexDefinitions().isEmpty)
        #expect(try await store.lastCommitTime() == nil)
    }

    static func pointReads(_ store: any DocumentStore) async throws {
        let a1 = Self.doc("c/a", 1, at: 10), b1 = Self.doc("c/b", 1, at: 10), nested = Self.doc("c/a/sub/x", 7, at: 10)
        try await store.commit(Self.request(10, writing: ["c/a", "c/b", "c/a/sub/x"])) { _, _ in ([Self.put(a1), Self.put(b1), Self.put(nested)], ()) }
        let a2 = Self.doc("c/a", 2, at: 20, created: 10)
        try await store.commit(Self.request(20, writing: ["c/a", "c/b"])) { _, _ in
            ([Self.put(a2, previous: a1), DocumentMutation(path: path("c/b"), document: nil, entries: [], oldEntries: IndexEntries.all(b1, []), previous: b1)], ())
        }
        let paths = ["c/b", "c/a", "c/missing", "c/a", "c/a/sub/x"].map(path)
        #expect(try await store.documents(Self.db, paths, at: nil) == [nil, a2, nil, a2, nested])
        #expect(try await store.documents(Self.db, paths, at: Timestamp(microseconds: 15)) == [b1, a1, nil, a1, nested])
        #expect(try await store.documents(Self.db, paths, at: Timestamp(microseconds: 5)) == [nil, nil, nil, nil, nil])
        #expect(try await store.documents(Self.db, paths, at: Timestamp(microseconds: 20)) == [nil, a2, nil, a2, nested])
        #expect(try await store.documents("other", paths, at: nil) == [nil, nil, nil, nil, nil])
        let viaSnapshot = try await store.snapshot(DocumentSnapshotRead(database: Self.db, at: Timestamp(microseconds: 15), paths: paths))
        #expect(viaSnapshot.documents == [b1, a1, nil, a1, nested])
        #expect(try await store.lastCommitTime() == Timestamp(microseconds: 20))
    }

    static func collectionIdsNow(_ store: any DocumentStore) async throws {
        let names = ["b/1", "a/1", "a-x/1", "a/1/sub/2", "a/1/sub/3", "a/1/other/4", "a/2/deep/5", "a/1/sub/2/z/6"]
        for (i, name) in names.enumerated() {
            try await store.commit(Self.request(Int64(10 + i), writing: [name])) { _, _ in ([Self.put(Self.doc(name, Int64(i), at: Int64(10 + i)))], ()) }
        }
        #expect(try await store.collectionIds(Self.db, parent: .root) == ["a", "a-x", "b"])
        #expect(try await store.collectionIds(Self.db, parent: path("a/1")) == ["other", "sub"])
        #expect(try await store.collectionIds(Self.db, parent: path("a/1/sub/2")) == ["z"])
        #expect(try await store.collectionIds(Self.db, parent: path("b/1")).isEmpty)
        #expect(try await store.collectionIds("other", parent: .root).isEmpty)
    }

    static func pointReadsAreConsistent(_ store: any DocumentStore) async throws {
        try await store.commit(Self.request(1, writing: ["c/a", "c/b"])) { _, _ in
            ([Self.put(Self.doc("c/a", 0, at: 1)), Self.put(Self.doc("c/b", 0, at: 1))], ())
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 1...60 {
                    let time = Int64(1 + i)
                    try await store.commit(Self.request(time, writing: ["c/a", "c/b"])) { current, _ in
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

    static func expectationsAreChecked(_ store: any DocumentStore) async throws {
        let a = Self.doc("c/a", 1, at: 10)
        try await store.commit(Self.request(10, writing: ["c/a"])) { _, _ in ([Self.put(a)], ()) }
        let planned = PlanCounter()
        for expectation: (String, Int64?) in [("c/a", 9), ("c/a", nil), ("c/other", 10)] {
            await #expect(throws: DocumentStoreConflict.document(database: Self.db, path: path(expectation.0))) {
                try await store.commit(Self.request(20, writing: ["c/b"], expecting: [expectation])) { _, _ in
                    planned.count.withLock { $0 += 1 }
                    return ([Self.put(Self.doc("c/b", 1, at: 20))], ())
                }
            }
        }
        #expect(planned.count.withLock { $0 } == 0)
        #expect(try await stored(store, "c/b") == nil)
        #expect(try await store.lastCommitTime() == Timestamp(microseconds: 10))
        // Expectations that hold (stored update time, still missing) let it through.
        try await store.commit(Self.request(20, writing: ["c/b"], expecting: [("c/a", 10), ("c/other", nil)])) { _, _ in
            ([Self.put(Self.doc("c/b", 1, at: 20))], ())
        }
        #expect(try await stored(store, "c/b") != nil)
    }

    static func failingPlanChangesNothing(_ store: any DocumentStore) async throws {
        struct Refused: Error {}
        let assigned = AssignedTimes()
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<40 {
                group.addTask {
                    do {
                        try await store.commit(Self.request(Int64(100 + i), writing: ["c/d\(i)"])) { _, time in
                            if i % 4 == 0 { throw Refused() }
                            assigned.record(Int64(100 + i), time)
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
        #expect(assigned.noneEarlier)
        #expect(try await store.lastCommitTime() == assigned.latest)
    }

    static func lastCommitTimeGrows(_ store: any DocumentStore) async throws {
        let assigned = AssignedTimes()
        try await store.commit(Self.request(50, writing: ["c/a"])) { _, time in
            assigned.record(50, time)
            return ([Self.put(Self.doc("c/a", 1, at: time.microseconds))], ())
        }
        try await store.commit(Self.request(40, writing: ["c/b"])) { _, time in
            assigned.record(40, time)
            return ([Self.put(Self.doc("c/b", 1, at: time.microseconds))], ())
        }
        // 50 (a store with a clock of its own keeps the proposed times), or 51 (a shared clock:
        // the second commit's time is above the first's).
        #expect(assigned.noneEarlier)
        let last = try #require(assigned.latest)
        #expect(try await store.lastCommitTime() == last)
        try await store.clear(Self.db, time: Timestamp(microseconds: 45))
        // A shared clock gives the clear a commit time of its own (the next one: it is logged
        // for the other servers' change feeds); a store with a clock of its own keeps the last.
        let sharedClock = last.microseconds == 51
        #expect(try await store.lastCommitTime() == (sharedClock ? Timestamp(microseconds: 52) : last))
        try await store.clear(Self.db, time: Timestamp(microseconds: 60))
        #expect(try await store.lastCommitTime() == Timestamp(microseconds: 60))
    }

    static func clearOneDatabase(_ store: any DocumentStore) async throws {
        try await store.commit(Self.request(10, writing: ["c/a"])) { _, _ in ([Self.put(Self.doc("c/a", 1, at: 10))], ()) }
        let other = DocumentCommitRequest(database: "other", time: Timestamp(microseconds: 11), writing: [path("c/a")], expectations: [], indexVersion: 15)
        try await store.commit(other) { _, _ in ([Self.put(Self.doc("c/a", 2, at: 11))], ()) }
        try await store.clear(Self.db, time: Timestamp(microseconds: 12))
        #expect(try await stored(store, "c/a") == nil)
        #expect(try await entries(store).isEmpty)
        #expect(try await store.documents("other", [path("c/a")], at: nil).first! == Self.doc("c/a", 2, at: 11))
    }

    static func createIndex(_ store: any DocumentStore) async throws {
        for (i, name) in ["g/a", "g/b", "other/x/g/c", "h/d"].enumerated() {
            try await store.commit(Self.request(Int64(10 + i), writing: [name])) { _, _ in ([Self.put(Self.doc(name, Int64(i), at: Int64(10 + i)))], ()) }
        }
        let proposed = IndexDefinition(
            id: 0, database: Self.db, collectionGroup: "g", groupScope: true, fields: [.init(field("n"), .descending)],
            automatic: true)
        let created = try #require(try await store.createIndex(proposed) { doc, def in IndexEntries.composite(doc, def) })
        #expect(created.id == 16)
        #expect(try await store.createIndex(proposed) { doc, def in IndexEntries.composite(doc, def) } == nil)
        #expect(try await store.indexDefinitions() == [created])
        let backfilled = try await scan(store, DocumentScan(.index(scope: IndexScope.group("g").key)))
        #expect(backfilled == ["other/x/g/c", "g/b", "g/a"], "every document of the group, by n descending")

        // A commit planned before the index existed is refused; one planned with it passes.
        await #expect(throws: DocumentStoreConflict.indexes) {
            try await store.commit(Self.request(20, writing: ["g/e"], indexVersion: 15)) { _, _ in ([Self.put(Self.doc("g/e", 9, at: 20))], ()) }
        }
        try await store.commit(Self.request(21, writing: ["g/e"], indexVersion: 16)) { _, _ in ([Self.put(Self.doc("g/e", 9, at: 21))], ()) }
        let second = IndexDefinition(
            id: 0, database: Self.db, collectionGroup: "h", groupScope: false, fields: [.init(field("n"), .ascending)],
            automatic: false)
        #expect(try await store.createIndex(second) { doc, def in IndexEntries.composite(doc, def) }?.id == 17)
    }

    // MARK: Scans and snapshots

    static func documentScans(_ store: any DocumentStore) async throws {
        let names = ["c/b", "c/a", "c/d", "c/c", "c/a/sub/x", "d/e", "other/1/c/z"]
        try await commitEach(store, names)
        let c = DocumentScanSource.documents(.collection(path("c")))
        #expect(try await scan(store, DocumentScan(c)) == ["c/a", "c/b", "c/c", "c/d"])
        #expect(try await scan(store, DocumentScan(c, reverse: true)) == ["c/d", "c/c", "c/b", "c/a"])
        let range = KeyRange(lower: IndexKey.encodePath(path("c/b")), upper: IndexKey.encodePath(path("c/d")))
        #expect(try await scan(store, DocumentScan(c, range: range)) == ["c/b", "c/c"], "lower inclusive, upper exclusive")
        #expect(try await scan(store, DocumentScan(c, range: range, reverse: true)) == ["c/c", "c/b"])
        #expect(try await scan(store, DocumentScan(c, limit: 2)) == ["c/a", "c/b"])
        #expect(try await scan(store, DocumentScan(c, reverse: true, limit: 1)) == ["c/d"])
        #expect(try await scan(store, DocumentScan(c, limit: 0)).isEmpty)
        let odd: @Sendable (Document) -> Bool = { $0.fields["n"] == .integer(1) || $0.fields["n"] == .integer(3) }
        // n follows the commit order: c/b 0, c/a 1, c/d 2, c/c 3.
        #expect(try await scan(store, DocumentScan(c, filter: odd)) == ["c/a", "c/c"])
        #expect(try await scan(store, DocumentScan(c, limit: 1, filter: odd)) == ["c/a"], "the limit counts kept documents")
        let empty = KeyRange(lower: IndexKey.encodePath(path("c/c")), upper: IndexKey.encodePath(path("c/c")))
        #expect(try await scan(store, DocumentScan(c, range: empty)).isEmpty)
        #expect(try await scan(store, DocumentScan(.documents(.group("c")))) == ["c/a", "c/b", "c/c", "c/d", "other/1/c/z"].sortedByKey())
        #expect(try await scan(store, DocumentScan(.documents(.collection(path("c/a/sub"))))) == ["c/a/sub/x"])
        #expect(Set(try await scan(store, DocumentScan(.documents(.descendants(.root))))) == Set(names), "kindless scans are unordered")
        #expect(Set(try await scan(store, DocumentScan(.documents(.descendants(path("c/a")))))) == ["c/a/sub/x"])
        #expect(try await scan(store, DocumentScan(c), database: "other").isEmpty)
        // Documents come back whole.
        let read = try await store.snapshot(DocumentSnapshotRead(database: db, scans: [DocumentScan(c, limit: 1)]))
        #expect(read.scans == [[Self.doc("c/a", 1, at: 11)]])
    }

    static func indexScans(_ store: any DocumentStore) async throws {
        // Entries of the built-in ascending index on n, plus one whose document does not exist.
        let ghost = IndexEntry(
            scope: IndexScope.collection(path("c")).key,
            key: IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, field("n")) + [0xFF], document: "c/ghost")
        for (i, (name, n)) in [("c/a", 3), ("c/b", 1), ("c/c", 2), ("c/d", 1)].enumerated() {
            let d = Self.doc(name, Int64(n), at: Int64(10 + i))
            let entries = IndexEntries.all(d, []) + (name == "c/d" ? [ghost] : [])
            try await store.commit(Self.request(Int64(10 + i), writing: [name])) { _, _ in
                ([DocumentMutation(path: d.path, document: d, entries: entries, oldEntries: [], previous: nil)], ())
            }
        }
        let byN = IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, field("n"))
        let source = DocumentScanSource.index(scope: IndexScope.collection(path("c")).key)
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byN))) == ["c/b", "c/d", "c/c", "c/a"], "n, then name; no ghost")
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byN), reverse: true)) == ["c/a", "c/c", "c/d", "c/b"])
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byN), reverse: true, limit: 2)) == ["c/a", "c/c"], "the ghost is skipped, not counted")
        var one = byN
        IndexKey.append(.integer(1), to: &one)
        #expect(try await scan(store, DocumentScan(source, range: .prefix(one))) == ["c/b", "c/d"])
        let notB: @Sendable (Document) -> Bool = { $0.path != path("c/b") }
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byN), limit: 2, filter: notB)) == ["c/d", "c/c"])
        #expect(try await scan(store, DocumentScan(.index(scope: IndexScope.collection(path("d")).key), range: .prefix(byN))).isEmpty)
    }

    static func scansStopAtTheLimit(_ store: any DocumentStore) async throws {
        try await commitEach(store, (0..<50).map { "c/d\($0 < 10 ? "0" : "")\($0)" })
        let seen = PlanCounter()
        let everyOther: @Sendable (Document) -> Bool = { d in
            seen.count.withLock { $0 += 1 }
            return d.fields["n"].map { if case .integer(let n) = $0 { n % 2 == 0 } else { false } } ?? false
        }
        let kept = try await scan(store, DocumentScan(.documents(.collection(path("c"))), limit: 3, filter: everyOther))
        #expect(kept == ["c/d00", "c/d02", "c/d04"])
        #expect(seen.count.withLock { $0 } == 5, "the filter saw the rows up to the third kept one, no more")
        seen.count.withLock { $0 = 0 }
        let byN = IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, field("n"))
        let viaIndex = try await scan(store, DocumentScan(.index(scope: IndexScope.collection(path("c")).key), range: .prefix(byN), reverse: true, limit: 2, filter: everyOther))
        #expect(viaIndex == ["c/d48", "c/d46"])
        #expect(seen.count.withLock { $0 } == 4)
    }

    static func snapshotAtPastTime(_ store: any DocumentStore) async throws {
        // At 10: c/a (n 1), c/b (n 1). At 20: c/a → n 2, c/b deleted, c/c created.
        let a1 = Self.doc("c/a", 1, at: 10), b1 = Self.doc("c/b", 1, at: 10)
        try await store.commit(Self.request(10, writing: ["c/a", "c/b"])) { _, _ in ([Self.put(a1), Self.put(b1)], ()) }
        let a2 = Self.doc("c/a", 2, at: 20, created: 10), c2 = Self.doc("c/c", 2, at: 20)
        try await store.commit(Self.request(20, writing: ["c/a", "c/b", "c/c"])) { _, _ in
            ([Self.put(a2, previous: a1), Self.put(c2),
              DocumentMutation(path: path("c/b"), document: nil, entries: [], oldEntries: IndexEntries.all(b1, []), previous: b1)], ())
        }
        let c = DocumentScanSource.documents(.collection(path("c")))
        func at(_ t: Int64, _ scans: [DocumentScan]) async throws -> DocumentSnapshot {
            try await store.snapshot(DocumentSnapshotRead(database: db, at: Timestamp(microseconds: t), paths: ["c/b", "c/c"].map(path), scans: scans))
        }
        let then = try await at(15, [DocumentScan(c), DocumentScan(c, reverse: true, limit: 1), DocumentScan(.documents(.group("c")))])
        #expect(then.documents == [b1, nil])
        #expect(then.scans == [[a1, b1], [b1], [a1, b1]])
        let before = try await at(5, [DocumentScan(c)])
        #expect(before.documents == [nil, nil] && before.scans == [[]])
        let later = try await at(25, [DocumentScan(c, filter: { $0.fields["n"] == .integer(2) })])
        #expect(later.documents == [nil, c2] && later.scans == [[a2, c2]])
        let range = KeyRange(lower: IndexKey.encodePath(path("c/b")), upper: nil)
        #expect(try await at(15, [DocumentScan(c, range: range)]).scans == [[b1]])
        #expect(Set(try await at(15, [DocumentScan(.documents(.descendants(.root)))]).scans[0].map(\.path.text)) == ["c/a", "c/b"])
        await #expect(throws: DocumentStoreMisuse.indexScanAtPastTime) {
            try await at(15, [DocumentScan(.index(scope: IndexScope.collection(path("c")).key))])
        }
    }

    static func snapshotParentsAndCommitTime(_ store: any DocumentStore) async throws {
        try await commitEach(store, ["c/a", "c/a/s/1", "c/m/s/2", "c/m/t/3/u/4", "c/n", "d/x/s/5"])
        let read = try await store.snapshot(DocumentSnapshotRead(database: db, parentsBelow: path("c"), readsLastCommitTime: true))
        #expect(Set(read.parents) == [path("c/a"), path("c/m")], "parents with children, existing or not, one level below")
        #expect(read.lastCommitTime == Timestamp(microseconds: 15))
        #expect(read.documents.isEmpty && read.scans.isEmpty)
        let quiet = try await store.snapshot(DocumentSnapshotRead(database: db))
        #expect(quiet.lastCommitTime == nil && quiet.parents.isEmpty, "nothing that was not asked")
        #expect(try await store.snapshot(DocumentSnapshotRead(database: db, parentsBelow: path("d"))).parents == [path("d/x")])
    }

    static func snapshotsAreConsistent(_ store: any DocumentStore) async throws {
        try await store.commit(Self.request(1, writing: ["c/a", "e/b"])) { _, _ in
            ([Self.put(Self.doc("c/a", 0, at: 1)), Self.put(Self.doc("e/b", 0, at: 1))], ())
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 1...60 {
                    let time = Int64(1 + i)
                    try await store.commit(Self.request(time, writing: ["c/a", "e/b"])) { current, _ in
                        ([
                            Self.put(Self.doc("c/a", Int64(i), at: time, created: 1), previous: current[0]),
                            Self.put(Self.doc("e/b", Int64(i), at: time, created: 1), previous: current[1]),
                        ], ())
                    }
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<120 {
                        let read = try await store.snapshot(DocumentSnapshotRead(
                            database: db, paths: [path("e/b")],
                            scans: [DocumentScan(.documents(.collection(path("c")))), DocumentScan(.documents(.collection(path("e"))))],
                            readsLastCommitTime: true))
                        let a = read.scans[0].first, b = read.scans[1].first
                        #expect(a?.fields == b?.fields, "both documents of one commit, or neither")
                        #expect(a?.updateTime == read.documents[0]?.updateTime)
                        #expect(a?.updateTime == read.lastCommitTime, "the commit time of the snapshot's last commit")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func countDocuments(_ store: any DocumentStore) async throws {
        #expect(try await store.countDocuments(db, upTo: 10) == 0)
        try await commitEach(store, ["c/a", "c/b", "c/a/s/1", "d/e"])
        #expect(try await store.countDocuments(db, upTo: 10) == 4)
        #expect(try await store.countDocuments(db, upTo: 3) == 3)
        #expect(try await store.countDocuments("other", upTo: 10) == 0)
    }
}

extension DocumentStoreConformance {
    static func number(_ doc: Document?) -> Int64? {
        if case .integer(let n)? = doc?.fields["n"] { n } else { nil }
    }

    static func concurrentRewrites(_ store: any DocumentStore) async throws {
        let runs = PlanCounter()
        let assigned = AssignedTimes()
        let writers = 16
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<writers {
                group.addTask {
                    let proposed = Int64(100 + i)
                    try await store.commit(Self.request(proposed, writing: ["c/counter"])) { current, assignedTime in
                        runs.count.withLock { $0 += 1 }
                        assigned.record(proposed, assignedTime)
                        let time = assignedTime.microseconds
                        let next = (Self.number(current[0]) ?? 0) + 1
                        let created = current[0]?.createTime.microseconds ?? time
                        return ([Self.put(Self.doc("c/counter", next, at: time, created: created), previous: current[0])], ())
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(Self.number(try await stored(store, "c/counter")) == Int64(writers), "every commit saw the one before it")
        #expect(runs.count.withLock { $0 } >= writers)
        #expect(assigned.noneEarlier)
        // The highest time: 115 (a clock of its own keeps the proposed times), or later (a shared clock).
        #expect(try await store.lastCommitTime() == assigned.latest)
    }

    static func concurrentExpectations(_ store: any DocumentStore) async throws {
        try await store.commit(Self.request(10, writing: ["c/a"])) { _, _ in ([Self.put(Self.doc("c/a", 1, at: 10))], ()) }
        let winners = try await withThrowingTaskGroup(of: Int?.self) { group in
            for i in 0..<8 {
                group.addTask {
                    let time = Int64(20 + i)
                    do {
                        try await store.commit(Self.request(time, writing: ["c/a"], expecting: [("c/a", 10)])) { current, _ in
                            ([Self.put(Self.doc("c/a", Int64(100 + i), at: time, created: 10), previous: current[0])], ())
                        }
                        return i
                    } catch let conflict as DocumentStoreConflict {
                        #expect(conflict == .document(database: Self.db, path: path("c/a")))
                        return nil
                    }
                }
            }
            var winners: [Int] = []
            for try await case let i? in group { winners.append(i) }
            return winners
        }
        #expect(winners.count == 1, "exactly one commit passed its expectation")
        if let winner = winners.first { #expect(Self.number(try await stored(store, "c/a")) == Int64(100 + winner)) }
    }

    static func noWriteSkew(_ store: any DocumentStore) async throws {
        for round in 0..<10 {
            let a = "s\(round)/a", b = "s\(round)/b"
            let t = Int64(10 + 10 * round)
            try await store.commit(Self.request(t, writing: [a, b])) { _, _ in ([Self.put(Self.doc(a, 0, at: t)), Self.put(Self.doc(b, 0, at: t))], ()) }
            let applied = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (i, (write, expect)) in [(a, b), (b, a)].enumerated() {
                    group.addTask {
                        let time = t + 1 + Int64(i)
                        do {
                            try await store.commit(Self.request(time, writing: [write], expecting: [(expect, t)])) { current, _ in
                                ([Self.put(Self.doc(write, 1, at: time, created: t), previous: current[0])], ())
                            }
                            return true
                        } catch is DocumentStoreConflict {
                            return false
                        }
                    }
                }
                var applied = 0
                for try await ok in group where ok { applied += 1 }
                return applied
            }
            #expect(applied == 1, "one of the two saw the other's write and was refused (round \(round))")
        }
    }

    /// 600 documents p/d000…p/d599 (n = i) in one commit at time 10.
    static func commitMany(_ store: any DocumentStore) async throws -> [Document] {
        let docs = (0..<600).map { i in Self.doc("p/d" + String(1000 + i).dropFirst(), Int64(i), at: 10) }
        try await store.commit(Self.request(10, writing: docs.map(\.path.text))) { _, _ in (docs.map { Self.put($0) }, ()) }
        return docs
    }

    static func longScans(_ store: any DocumentStore) async throws {
        let docs = try await commitMany(store)
        let names = docs.map(\.path.text)
        let p = DocumentScanSource.documents(.collection(path("p")))
        #expect(try await scan(store, DocumentScan(p)) == names, "each row once, in order, across pages")
        #expect(try await scan(store, DocumentScan(p, reverse: true)) == names.reversed())
        #expect(try await scan(store, DocumentScan(.documents(.group("p")))) == names)
        let everything = try await scan(store, DocumentScan(.documents(.descendants(.root))))
        #expect(everything.count == 600 && Set(everything) == Set(names))

        let seen = PlanCounter()
        let sevens: @Sendable (Document) -> Bool = { d in
            seen.count.withLock { $0 += 1 }
            return Self.number(d).map { $0 % 100 == 7 } ?? false
        }
        #expect(try await scan(store, DocumentScan(p, limit: 3, filter: sevens)) == ["p/d007", "p/d107", "p/d207"])
        #expect(seen.count.withLock { $0 } == 208, "the filter saw the rows up to the third kept one, no more")
        seen.count.withLock { $0 = 0 }
        #expect(try await scan(store, DocumentScan(p, reverse: true, limit: 3, filter: sevens)) == ["p/d507", "p/d407", "p/d307"])
        #expect(seen.count.withLock { $0 } == 293)
        let range = KeyRange(lower: IndexKey.encodePath(path("p/d100")), upper: IndexKey.encodePath(path("p/d350")))
        let fifties: @Sendable (Document) -> Bool = { Self.number($0).map { $0 % 50 == 0 } ?? false }
        #expect(try await scan(store, DocumentScan(p, range: range, filter: fifties)) == ["p/d100", "p/d150", "p/d200", "p/d250", "p/d300"])
        #expect(try await scan(store, DocumentScan(p, range: range, reverse: true, limit: 2, filter: fifties)) == ["p/d300", "p/d250"])

        let byN = IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, field("n"))
        let index = DocumentScanSource.index(scope: IndexScope.collection(path("p")).key)
        #expect(try await scan(store, DocumentScan(index, range: .prefix(byN))) == names)
        #expect(try await scan(store, DocumentScan(index, range: .prefix(byN), reverse: true)) == names.reversed())
        seen.count.withLock { $0 = 0 }
        #expect(try await scan(store, DocumentScan(index, range: .prefix(byN), reverse: true, limit: 2, filter: sevens)) == ["p/d507", "p/d407"])
        #expect(seen.count.withLock { $0 } == 193)
        #expect(try await scan(store, DocumentScan(index, range: .prefix(byN), limit: 5, filter: sevens)) == ["p/d007", "p/d107", "p/d207", "p/d307", "p/d407"])
        #expect(try await store.countDocuments(db, upTo: 1000) == 600)
    }

    static func longScansAtPastTime(_ store: any DocumentStore) async throws {
        let docs = try await commitMany(store)
        // At 20: every third document gets n + 1000, every fifth of the others is deleted, p/e1 is created.
        var mutations: [DocumentMutation] = []
        for (i, d) in docs.enumerated() {
            if i % 3 == 0 {
                mutations.append(Self.put(Self.doc(d.path.text, Int64(i + 1000), at: 20, created: 10), previous: d))
            } else if i % 5 == 0 {
                mutations.append(DocumentMutation(path: d.path, document: nil, entries: [], oldEntries: IndexEntries.all(d, []), previous: d))
            }
        }
        mutations.append(Self.put(Self.doc("p/e1", 7, at: 20)))
        let planned = mutations
        try await store.commit(Self.request(20, writing: planned.map(\.path.text))) { _, _ in (planned, ()) }
        let p = DocumentScanSource.documents(.collection(path("p")))
        func at(_ t: Int64, _ scan: DocumentScan) async throws -> [Document] {
            try await store.snapshot(DocumentSnapshotRead(database: db, at: Timestamp(microseconds: t), scans: [scan])).scans[0]
        }
        #expect(try await at(15, DocumentScan(p)) == docs, "the state at 15, every row once, in order")
        #expect(try await at(15, DocumentScan(p, reverse: true, limit: 4)) == Array(docs.reversed().prefix(4)))
        let sevens: @Sendable (Document) -> Bool = { Self.number($0).map { $0 % 100 == 7 } ?? false }
        #expect(try await at(15, DocumentScan(p, limit: 3, filter: sevens)).map(\.path.text) == ["p/d007", "p/d107", "p/d207"])
        let now = try await store.snapshot(DocumentSnapshotRead(database: db, scans: [DocumentScan(p)])).scans[0]
        let kept = 600 - (120 - 40) + 1  // all, less the deleted (fifths that are not thirds), plus p/e1
        #expect(now.count == kept)
        #expect(try await at(25, DocumentScan(p)) == now)
        #expect(try await at(25, DocumentScan(p, reverse: true)) == now.reversed())
        let range = KeyRange(lower: IndexKey.encodePath(path("p/d100")), upper: IndexKey.encodePath(path("p/e")))
        // At 15 the sevens below p/d100 are out of the range; at 25, n + 1000 moved p/d207 (i % 3 == 0) to 1207 (still a seven).
        #expect(try await at(15, DocumentScan(p, range: range, reverse: true, limit: 2, filter: sevens)).map(\.path.text) == ["p/d507", "p/d407"])
        #expect(try await at(25, DocumentScan(p, range: range, filter: sevens)).map(\.path.text) == ["p/d107", "p/d207", "p/d307", "p/d407", "p/d507"])
        #expect(try await at(25, DocumentScan(p, range: KeyRange(lower: IndexKey.encodePath(path("p/e")), upper: nil))).map(\.path.text) == ["p/e1"])
    }

    static func createIndexWhileCommitting(_ store: any DocumentStore) async throws {
        try await commitEach(store, (0..<20).map { "g/s\($0)" })
        let definition = IndexDefinition(
            id: 0, database: db, collectionGroup: "g", groupScope: false, fields: [.init(field("n"), .descending)], automatic: true)
        let refused = PlanCounter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<24 {
                group.addTask {
                    let name = "g/w\(i)"
                    do {
                        // Planned before the index: its index entries are those of index version 15.
                        try await store.commit(Self.request(Int64(100 + i), writing: [name], indexVersion: 15)) { _, _ in
                            ([Self.put(Self.doc(name, Int64(100 + i), at: Int64(100 + i)))], ())
                        }
                    } catch DocumentStoreConflict.indexes {
                        refused.count.withLock { $0 += 1 }
                    }
                }
                if i == 8 {
                    group.addTask {
                        let created = try await store.createIndex(definition) { doc, def in IndexEntries.composite(doc, def) }
                        #expect(created?.id == 16)
                    }
                }
            }
            try await group.waitForAll()
        }
        let stored = try await scan(store, DocumentScan(.documents(.collection(path("g")))))
        #expect(stored.count == 44 - refused.count.withLock { $0 }, "a refused commit stored nothing")
        let indexed = try await scan(store, DocumentScan(.index(scope: IndexScope.collection(path("g")).key), range: .prefix([0, 0, 0, 16])))
        #expect(indexed.count == stored.count && Set(indexed) == Set(stored), "every stored document of the group is in the new index")
    }
}

extension DocumentStoreConformance {
    /// The string of document `i` of ``longIndexKeys``: most are 3–9 KB of "x" and a tail, many
    /// alike in their first kilobytes; every fifth is short (a prefix of the long ones); two are 600 KB.
    static func longString(_ i: Int) -> String {
        if i == 7 { return String(repeating: "x", count: 600_000) + "a" }
        if i == 8 { return String(repeating: "x", count: 599_999) + "b" }
        if i % 5 == 0 { return String(repeating: "x", count: i % 11) }
        let tails = ["", "a", "b", "x", "\u{7F}", "é"]
        return String(repeating: "x", count: 3000 + (i % 13) * 500) + tails[i % tails.count] + (i % 3 == 0 ? "" : String(i))
    }

    static func longIndexKeys(_ store: any DocumentStore) async throws {
        let docs = (0..<300).map { i in
            Document(
                path: path("k/d" + String(1000 + i).dropFirst()), fields: ["s": .string(longString(i))],
                createTime: Timestamp(microseconds: 10), updateTime: Timestamp(microseconds: 10))
        }
        try await store.commit(Self.request(10, writing: docs.map(\.path.text))) { _, _ in (docs.map { Self.put($0) }, ()) }

        let byS = IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, field("s"))
        let source = DocumentScanSource.index(scope: IndexScope.collection(path("k")).key)
        /// The documents' entries in the index on s, in byte order of their keys: what a scan must return.
        func sortedEntries(_ docs: [Document]) -> [IndexEntry] {
            docs.flatMap { IndexEntries.all($0, []) }.filter { $0.key.starts(with: byS) }
                .sorted { $0.key.lexicographicallyPrecedes($1.key) }
        }
        var entries = sortedEntries(docs)
        #expect(entries.count == 300 && entries.filter { $0.key.count > 3000 }.count > 200 && entries.contains { $0.key.count > 600_000 })
        var expected = entries.map(\.document)
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byS))) == expected, "byte order across pages")
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byS), reverse: true)) == expected.reversed())
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byS), limit: 7)) == Array(expected.prefix(7)))
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byS), reverse: true, limit: 7)) == Array(expected.suffix(7).reversed()))
        // Ranges bounded by long keys (the upper bound is excluded).
        for (lo, hi) in [(40, 290), (1, 299), (120, 121), (200, 200)] {
            let range = KeyRange(lower: entries[lo].key, upper: entries[hi].key)
            #expect(try await scan(store, DocumentScan(source, range: range)) == Array(expected[lo..<hi]), "\(lo)..<\(hi)")
            #expect(try await scan(store, DocumentScan(source, range: range, reverse: true)) == Array(expected[lo..<hi].reversed()), "\(lo)..<\(hi) reversed")
            #expect(try await scan(store, DocumentScan(source, range: range, reverse: true, limit: 3)) == Array(expected[lo..<hi].suffix(3).reversed()))
        }
        let everyThird: @Sendable (Document) -> Bool = { d in d.path.text.hasSuffix("0") || d.path.text.hasSuffix("3") || d.path.text.hasSuffix("6") }
        let kept = expected.filter { $0.hasSuffix("0") || $0.hasSuffix("3") || $0.hasSuffix("6") }
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byS), limit: 90, filter: everyThird)) == Array(kept.prefix(90)))

        // Replacing long values removes their old entries (by exact key) and adds the new ones.
        var replaced = docs
        for i in [7, 8, 21, 22, 35] {
            replaced[i].fields = ["s": .string(longString(i) + "z")]
            replaced[i].updateTime = Timestamp(microseconds: 11)
        }
        replaced[8].fields = ["s": .string(longString(101))]
        let changed = [7, 8, 21, 22, 35]
        let mutations = changed.map { Self.put(replaced[$0], previous: docs[$0]) }
        try await store.commit(Self.request(11, writing: changed.map { docs[$0].path.text })) { _, _ in (mutations, ()) }
        entries = sortedEntries(replaced)
        expected = entries.map(\.document)
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byS))) == expected, "no entry of the old values is left")
        #expect(try await scan(store, DocumentScan(source, range: .prefix(byS), reverse: true)) == expected.reversed())
        #expect(try await stored(store, docs[7].path.text) == replaced[7])
    }
}

extension DocumentStoreConformance {
    /// 6,000 pseudo-random letters and digits: long names a B-tree cannot compress into a row
    /// (PostgreSQL compresses index rows, so 6 KB of one letter would fit).
    static let noiseText: String = {
        let symbols = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        return String((0..<6000).map { _ in
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return symbols[Int(x >> 33) % symbols.count]
        })
    }()

    /// The first `count` characters of ``noiseText``.
    static func noise(_ count: Int) -> String { String(noiseText.prefix(count)) }

    /// The name of document `i` of a collection of ``longDocumentNames``: 1–6 KiB of noise with a
    /// tail, many alike in their first kilobytes (some across the 1024th byte), and every tenth
    /// short (a prefix of the long ones).
    static func longName(_ i: Int) -> String {
        let tails = ["", "a", "b", "x", "\u{7F}", "é", "~"]
        switch i % 10 {
        case 0: return noise(1 + i * 20)
        case 1: return noise(6000) + tails[i % tails.count] + String(i)
        case 2: return noise(1023) + String(i)
        case 3: return String(repeating: "é", count: 700) + String(i)
        default: return noise(1000 + (i % 9) * 500) + tails[i % tails.count] + String(i)
        }
    }

    /// `paths` in byte order of their name keys: the order of collection and collection-group scans.
    static func inNameOrder(_ paths: [String]) -> [String] {
        paths.map { ($0, IndexKey.encodePath(path($0))) }.sorted { $0.1.lexicographicallyPrecedes($1.1) }.map { $0.0 }
    }

    static func longDocumentNames(_ store: any DocumentStore) async throws {
        let p3 = "s/" + noise(3000)  // a document path of 3 KB
        let big = p3 + "/c"  // 300 documents: scans past a page
        let collections: [(String, Int)] = [
            (big, 300), (p3 + "x/c", 20), ("s/" + noise(4000) + "/c", 10), ("c", 12),
            // Parents of 255, 256 and 257 characters: around the indexed prefix of parents.
            ("s/" + noise(251) + "/c", 6), ("s/" + noise(252) + "/c", 6), ("s/" + noise(253) + "/c", 6),
        ]
        var paths = collections.flatMap { c, n in (0..<n).map { c + "/" + longName($0) } }
        let longIds = ["i", "i" + noise(299), "i" + noise(1499), "i" + noise(1499) + "j", "j"]
        paths += longIds.map { "s/q/" + $0 + "/" + longName(11) }
        // Beside and below the big collection: other collections of its parent, documents deeper in it.
        let deep = big + "/" + longName(21) + "/deep/" + longName(31)
        paths += [p3 + "/b/" + longName(41), p3 + "/d" + noise(1499) + "/" + longName(1), deep, big + "/" + longName(22) + "/deep/z"]
        #expect(Set(paths).count == paths.count && paths.contains { $0.utf8.count > 9000 })
        let docs = paths.enumerated().map { i, p in Self.doc(p, Int64(i), at: 10) }
        try await store.commit(Self.request(10, writing: paths)) { _, _ in (docs.map { Self.put($0) }, ()) }
        let byPath = Dictionary(docs.map { ($0.path.text, $0) }, uniquingKeysWith: { first, _ in first })

        // Point reads, one by one and all at once.
        for p in [big + "/" + longName(1), big + "/" + longName(299), deep, "c/" + longName(3), paths.last!] {
            #expect(try await stored(store, p) == byPath[p])
        }
        #expect(try await store.documents(Self.db, docs.map(\.path), at: nil) == docs)
        #expect(try await store.documents(Self.db, [path(big + "/" + longName(1) + "y"), path(p3 + "x/c/" + longName(1))], at: nil) == [nil, byPath[p3 + "x/c/" + longName(1)]])

        // The big collection: name order both ways, limits, ranges, paging past 256 rows.
        let bigSource = DocumentScanSource.documents(.collection(path(big)))
        let inBig = inNameOrder(paths.filter { $0.hasPrefix(big + "/") && path($0).parent.text == big })
        #expect(inBig.count == 300)
        #expect(try await scan(store, DocumentScan(bigSource)) == inBig)
        #expect(try await scan(store, DocumentScan(bigSource, reverse: true)) == inBig.reversed())
        #expect(try await scan(store, DocumentScan(bigSource, limit: 7)) == Array(inBig.prefix(7)))
        #expect(try await scan(store, DocumentScan(bigSource, reverse: true, limit: 270)) == Array(inBig.reversed().prefix(270)))
        for (lo, hi) in [(40, 290), (1, 299), (120, 121), (200, 200)] {
            let range = KeyRange(lower: IndexKey.encodePath(path(inBig[lo])), upper: IndexKey.encodePath(path(inBig[hi])))
            #expect(try await scan(store, DocumentScan(bigSource, range: range)) == Array(inBig[lo..<hi]), "\(lo)..<\(hi)")
            #expect(try await scan(store, DocumentScan(bigSource, range: range, reverse: true, limit: 3)) == Array(inBig[lo..<hi].reversed().prefix(3)))
        }
        for (c, _) in collections {
            let inC = inNameOrder(paths.filter { path($0).parent.text == c })
            #expect(try await scan(store, DocumentScan(.documents(.collection(path(c))))) == inC, "\(c.prefix(12))… (\(c.count))")
        }

        // The collection group "c": every collection of that id, in name key order.
        let inGroup = inNameOrder(paths.filter { path($0).collectionId == "c" })
        #expect(inGroup.count == 360, "300 + 20 + 10 + 12 + 3 × 6")
        #expect(try await scan(store, DocumentScan(.documents(.group("c")))) == inGroup)
        #expect(try await scan(store, DocumentScan(.documents(.group("c")), reverse: true, limit: 300)) == Array(inGroup.reversed().prefix(300)))
        let longId = "i" + noise(1499)
        #expect(try await scan(store, DocumentScan(.documents(.group(longId)))) == ["s/q/" + longId + "/" + longName(11)])

        // Descendants (kindless: unordered), each once.
        let belowP3 = try await scan(store, DocumentScan(.documents(.descendants(path(p3)))))
        let expectedBelowP3 = Set(paths.filter { $0.hasPrefix(p3 + "/") })
        #expect(belowP3.count == expectedBelowP3.count)
        #expect(Set(belowP3) == expectedBelowP3)
        let everything = try await scan(store, DocumentScan(.documents(.descendants(.root))))
        #expect(everything.count == paths.count)
        #expect(Set(everything) == Set(paths))
        #expect(try await scan(store, DocumentScan(.documents(.descendants(path(big + "/" + longName(21)))))) == [deep])

        // Collection ids in byte order, over long parents and long ids.
        #expect(try await store.collectionIds(Self.db, parent: .root) == ["c", "s"])
        #expect(try await store.collectionIds(Self.db, parent: path(p3)) == ["b", "c", "d" + noise(1499)])
        #expect(try await store.collectionIds(Self.db, parent: path("s/q")) == longIds)
        #expect(try await store.collectionIds(Self.db, parent: path(big + "/" + longName(21))) == ["deep"])
        for k in [251, 252, 253] {
            #expect(try await store.collectionIds(Self.db, parent: path("s/" + noise(k))) == ["c"])
        }

        // Parents of documents one level below a collection.
        let underS = try await store.snapshot(DocumentSnapshotRead(database: db, parentsBelow: path("s"))).parents
        let expectedUnderS = Set(collections.map { $0.0 }.filter { $0.hasPrefix("s/") }.map { path($0).parent } + [path("s/q")])
        #expect(Set(underS) == expectedUnderS)
        let underBig = try await store.snapshot(DocumentSnapshotRead(database: db, parentsBelow: path(big))).parents
        #expect(Set(underBig) == [path(big + "/" + longName(21)), path(big + "/" + longName(22))])

        // At 20: rewrite some, delete some, create one; reads at 15 see the state before.
        let rewritten = [1, 2, 5, 150, 299].map { big + "/" + longName($0) }
        let deleted = [3, 11, 200].map { big + "/" + longName($0) } + [deep]
        let created = Self.doc(big + "/" + longName(1) + "y", 1000, at: 20)
        var mutations = rewritten.map { Self.put(Self.doc($0, 500, at: 20, created: 10), previous: byPath[$0]) }
        mutations += deleted.map { p in
            DocumentMutation(path: path(p), document: nil, entries: [], oldEntries: IndexEntries.all(byPath[p]!, []), previous: byPath[p])
        }
        mutations.append(Self.put(created))
        let planned = mutations
        try await store.commit(Self.request(20, writing: planned.map(\.path.text))) { _, _ in (planned, ()) }
        #expect(try await store.documents(Self.db, (rewritten + deleted).map(path), at: Timestamp(microseconds: 15)) == (rewritten + deleted).map { byPath[$0] })
        #expect(try await store.documents(Self.db, [created.path], at: Timestamp(microseconds: 15)) == [nil])
        let rewrittenNow: [Document?] = rewritten.map { Self.doc($0, 500, at: 20, created: 10) }
        let deletedNow = [Document?](repeating: nil, count: deleted.count)
        #expect(try await store.documents(Self.db, (rewritten + deleted).map(path), at: nil) == rewrittenNow + deletedNow)
        for p in deleted { #expect(try await stored(store, p) == nil) }
        #expect(try await stored(store, created.path.text) == created)
        func at(_ t: Int64, _ scan: DocumentScan) async throws -> [String] {
            try await store.snapshot(DocumentSnapshotRead(database: db, at: Timestamp(microseconds: t), scans: [scan])).scans[0].map(\.path.text)
        }
        let inBigNow = inNameOrder(inBig.filter { !deleted.contains($0) } + [created.path.text])
        #expect(try await at(15, DocumentScan(bigSource)) == inBig)
        #expect(try await at(15, DocumentScan(bigSource, reverse: true, limit: 260)) == Array(inBig.reversed().prefix(260)))
        #expect(try await at(25, DocumentScan(bigSource)) == inBigNow)
        #expect(try await scan(store, DocumentScan(bigSource)) == inBigNow)
        #expect(try await scan(store, DocumentScan(bigSource, reverse: true)) == inBigNow.reversed())
        let belowP3Then = try await at(15, DocumentScan(.documents(.descendants(path(p3)))))
        #expect(belowP3Then.count == belowP3.count)
        #expect(Set(belowP3Then) == Set(belowP3))
        let belowP3Now = try await scan(store, DocumentScan(.documents(.descendants(path(p3)))))
        let expectedBelowP3Now: Set<String> = Set(belowP3).subtracting(deleted).union([created.path.text])
        #expect(Set(belowP3Now) == expectedBelowP3Now)
        #expect(belowP3Now.count == expectedBelowP3Now.count)
        #expect(try await scan(store, DocumentScan(.documents(.group("c")))) == inNameOrder(inGroup.filter { !deleted.contains($0) } + [created.path.text]))
        #expect(try await store.collectionIds(Self.db, parent: path(big + "/" + longName(21))).isEmpty)
        let underBigNow = try await store.snapshot(DocumentSnapshotRead(database: db, parentsBelow: path(big))).parents
        #expect(underBigNow == [path(big + "/" + longName(22))])
    }
}

private func path(_ text: String) -> ResourcePath { ResourcePath(parsing: text) }
private func field(_ text: String) -> FieldPath { try! FieldPath(parsing: text) }

extension [String] {
    /// Paths in the order of their stored keys (``IndexKey/encodePath(_:)``).
    fileprivate func sortedByKey() -> [String] {
        sorted { IndexKey.encodePath(path($0)).lexicographicallyPrecedes(IndexKey.encodePath(path($1))) }
    }
}

final class PlanCounter: Sendable {
    let count = Mutex(0)
}

/// The commit times a store assigned (handed to plans that went through).
final class AssignedTimes: Sendable {
    let times = Mutex<[(proposed: Int64, assigned: Timestamp)]>([])

    func record(_ proposed: Int64, _ assigned: Timestamp) { times.withLock { $0.append((proposed, assigned)) } }
    var latest: Timestamp? { times.withLock { $0.map(\.assigned).max() } }
    /// Every assigned time is at least the proposed one (a store with one clock of its own
    /// assigns exactly the proposed time; one shared by several engines may assign a later one).
    var noneEarlier: Bool { times.withLock { $0.allSatisfy { $0.assigned.microseconds >= $0.proposed } } }
}

extension StoreConformanceCase where Store == any DocumentStore {
    init(_ name: String, _ run: @escaping @Sendable (any DocumentStore) async throws -> Void) {
        self.init(name: name, store: run)
    }
}
