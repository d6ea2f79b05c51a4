import Foundation
import HearthCore
import HearthDocuments
import Synchronization
import Testing

@testable import HearthPostgres

/// What the conformance suite cannot see of ``PostgresDocumentStore``: how it behaves with
/// several pools (servers) over one database.
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresDocumentStoreTests {
    final class Counter: Sendable {
        let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    static func request(_ time: Int64, _ paths: [String]) -> DocumentCommitRequest {
        DocumentCommitRequest(
            database: "(default)", time: Timestamp(microseconds: time), writing: paths.map(ResourcePath.init(parsing:)), expectations: [],
            indexVersion: 15)
    }

    @Test("Writers of one hot document on two servers queue for it: none is refused for contention, each plans about once")
    func hotDocumentWritersQueue() async throws {
        let first = try await TestPostgres.shared.freshBackend()
        let second = await TestPostgres.shared.start(first.settings)
        let stores = [PostgresDocumentStore(backend: first), PostgresDocumentStore(backend: second)]
        let runs = Counter()
        let writers = 24
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<writers {
                group.addTask {
                    let time = Int64(100 + i)
                    try await stores[i % 2].commit(Self.request(time, ["hot/doc"])) { current, _ in
                        runs.add()
                        var n: Int64 = 0
                        if case .integer(let stored)? = current[0]?.fields["n"] { n = stored }
                        let doc = Document(
                            path: ResourcePath(parsing: "hot/doc"), fields: ["n": .integer(n + 1)],
                            createTime: current[0]?.createTime ?? Timestamp(microseconds: time), updateTime: Timestamp(microseconds: time))
                        return ([DocumentMutation(path: doc.path, document: doc, entries: [], oldEntries: [], previous: current[0])], ())
                    }
                }
            }
            try await group.waitForAll()
        }
        let stored = try await stores[0].documents("(default)", [ResourcePath(parsing: "hot/doc")], at: nil)
        #expect(stored[0]?.fields["n"] == .integer(Int64(writers)))
        #expect(runs.count < writers + writers / 4, "each writer began after the one before it had committed")
    }

    @Test("Commits of two servers proposing equal or earlier times get unique, increasing times from the database's one clock")
    func oneClockForEveryServer() async throws {
        let first = try await TestPostgres.shared.freshBackend()
        let second = await TestPostgres.shared.start(first.settings)
        let stores = [PostgresDocumentStore(backend: first, sharedClock: true), PostgresDocumentStore(backend: second, sharedClock: true)]
        func put(_ store: PostgresDocumentStore, _ proposed: Int64, _ name: String) async throws -> Timestamp {
            try await store.commit(Self.request(proposed, [name])) { current, time in
                let doc = Document(path: ResourcePath(parsing: name), fields: [:], createTime: time, updateTime: time)
                return ([DocumentMutation(path: doc.path, document: doc, entries: [], oldEntries: [], previous: current[0])], time)
            }
        }
        // One after another: a proposal at or below the last time gets the next one.
        #expect(try await put(stores[0], 100, "c/a").microseconds == 100)
        #expect(try await put(stores[1], 100, "c/b").microseconds == 101)
        #expect(try await put(stores[0], 50, "c/c").microseconds == 102)
        #expect(try await put(stores[1], 500, "c/d").microseconds == 500)
        // At once, from both servers, all proposing one time: each gets its own, none skipped.
        let times = try await withThrowingTaskGroup(of: Timestamp.self) { group in
            for i in 0..<32 { group.addTask { try await put(stores[i % 2], 1000, "d/\(i)") } }
            var times: [Int64] = []
            for try await time in group { times.append(time.microseconds) }
            return times
        }
        #expect(times.sorted() == Array(1000..<1032))
        #expect(try await stores[1].lastCommitTime() == Timestamp(microseconds: 1031))
        // Without the shared clock (the default for now), the proposed time is kept, as with SQLite.
        let own = PostgresDocumentStore(backend: first)
        #expect(try await put(own, 700, "f/g").microseconds == 700)
        #expect(try await own.lastCommitTime() == Timestamp(microseconds: 1031))
    }

    @Test("Pruning drops history past the retention and commit times below the highest, nothing else")
    func pruning() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        let store = PostgresDocumentStore(backend: backend, historyRetentionMicros: 60_000_000)
        let path = ResourcePath(parsing: "c/a")
        func doc(_ n: Int64, at time: Int64) -> Document {
            Document(path: path, fields: ["n": .integer(n)], createTime: Timestamp(microseconds: 10), updateTime: Timestamp(microseconds: time))
        }
        // Two commits long ago (times 10 and 20) and one a moment ago.
        let recent = Int64(Date().timeIntervalSince1970 * 1_000_000)
        var previous: Document?
        for (n, time) in [(1, Int64(10)), (2, 20), (3, recent)] as [(Int64, Int64)] {
            let d = doc(n, at: time)
            let before = previous
            try await store.commit(Self.request(time, ["c/a"])) { _, _ in
                ([DocumentMutation(path: path, document: d, entries: [], oldEntries: [], previous: before)], ())
            }
            previous = d
        }
        #expect(try await store.documents("(default)", [path], at: Timestamp(microseconds: 15)) == [doc(1, at: 10)])
        try await store.prune()
        // The rows until 10 and 20 are gone (past the retention, a read at 15 sees the oldest state
        // kept); the row until `recent` is kept, so a read just before it still sees n = 2.
        #expect(try await store.documents("(default)", [path], at: Timestamp(microseconds: 15)) == [doc(2, at: 20)])
        #expect(try await store.documents("(default)", [path], at: Timestamp(microseconds: recent - 1)) == [doc(2, at: 20)])
        #expect(try await store.lastCommitTime() == Timestamp(microseconds: recent))
        let times = try await backend.read { session in try await session.value("SELECT count(*) FROM firestore_commit_times", as: Int64.self) }
        #expect(times == 1)
    }
}

extension PostgresDocumentStoreTests {
    @Test("Concurrent creates of documents of one collection on two servers neither wait for nor refuse each other")
    func concurrentCreatesInOneCollection() async throws {
        let first = try await TestPostgres.shared.freshBackend()
        let second = await TestPostgres.shared.start(first.settings)
        let stores = [PostgresDocumentStore(backend: first), PostgresDocumentStore(backend: second)]
        let runs = Counter()
        let writers = 8, each = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    for i in 0..<each {
                        let name = "c/w\(w)-\(i)"
                        let time = Int64(1000 + w * each + i)
                        try await stores[w % 2].commit(Self.request(time, [name])) { _, _ in
                            runs.add()
                            let doc = Document(
                                path: ResourcePath(parsing: name), fields: ["n": .integer(Int64(i))], createTime: Timestamp(microseconds: time),
                                updateTime: Timestamp(microseconds: time))
                            return ([DocumentMutation(path: doc.path, document: doc, entries: IndexEntries.all(doc, []), oldEntries: [], previous: nil)], ())
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await stores[0].countDocuments("(default)", upTo: 1000) == writers * each)
        #expect(runs.count == writers * each, "no commit was rolled back and planned again")
    }
}

extension PostgresDocumentStoreTests {
    static func put(_ n: Int64, at time: Int64, previous: Document?) -> (DocumentMutation, Document) {
        let doc = Document(
            path: ResourcePath(parsing: "c/a"), fields: ["n": .integer(n)], createTime: previous?.createTime ?? Timestamp(microseconds: time),
            updateTime: Timestamp(microseconds: time))
        return (DocumentMutation(path: doc.path, document: doc, entries: IndexEntries.all(doc, []), oldEntries: previous.map { IndexEntries.all($0, []) } ?? [], previous: previous), doc)
    }

    /// The connection ends while PostgreSQL runs a commit's COMMIT (a deferred trigger holds it
    /// open): the commit is reported as UNAVAILABLE, never as done, nothing of it is stored, and
    /// the next commit of the document (its locks released) goes through.
    @Test("A connection lost during a commit's COMMIT is never a success, and leaves nothing and no lock behind")
    func connectionLostDuringCommit() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let store = PostgresDocumentStore(backend: await TestPostgres.shared.start(settings))
        let (first, stored) = Self.put(1, at: 10, previous: nil)
        try await store.commit(Self.request(10, ["c/a"])) { _, _ in ([first], ()) }
        try await TestPostgres.cutOffDuringCommit(settings, trigger: "AFTER INSERT ON firestore_commit_times") {
            try await store.commit(Self.request(20, ["c/a"])) { current, _ in ([Self.put(2, at: 20, previous: current[0]).0], ()) }
            return "()"
        }
        #expect(try await store.documents("(default)", [ResourcePath(parsing: "c/a")], at: nil) == [stored], "the cut-off commit left nothing")
        #expect(try await store.lastCommitTime() == Timestamp(microseconds: 10))
        try await store.commit(Self.request(30, ["c/a"])) { current, _ in ([Self.put(3, at: 30, previous: current[0]).0], ()) }
        #expect(try await store.documents("(default)", [ResourcePath(parsing: "c/a")], at: nil).first??.fields["n"] == .integer(3))
    }

    @Test("Migration 6 (firestore-long-names) keeps the documents and history stored before it: point reads, scans, past times, updates")
    func longNamesMigrationKeepsRows() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        _ = try await PostgresSchema.migrate(settings, migrations: Array(PostgresSchema.migrations.prefix(5)), logger: TestPostgres.logger)
        let names = ["c/a", "c/b", "c/b/s/x"]
        let old = names.enumerated().map { i, p in
            Document(
                path: ResourcePath(parsing: p), fields: ["n": .integer(Int64(i))], createTime: Timestamp(microseconds: 10),
                updateTime: Timestamp(microseconds: 10))
        }
        // Rows as the store wrote them under migration 5, and a history row: c/a had n = -1 until 10.
        try await TestPostgres.withConnection(settings) { connection in
            for doc in old {
                _ = try await connection.query(
                    """
                    INSERT INTO firestore_documents (db, parent, name_key, path, collection_id, data, create_us, update_us)
                    VALUES ('(default)', \(doc.path.parent.text), \(PostgresDocumentStore.bytes(IndexKey.encodePath(doc.path))), \(doc.path.text),
                        \(doc.path.collectionId), \(PostgresDocumentStore.bytes(ValueCodec.encode(doc.fields))), 10, 10)
                    """, logger: TestPostgres.logger
                ).collect()
            }
            _ = try await connection.query(
                """
                INSERT INTO firestore_history (until_us, db, path, data, create_us, update_us)
                VALUES (10, '(default)', 'c/a', \(PostgresDocumentStore.bytes(ValueCodec.encode(["n": .integer(-1)]))), 5, 5)
                """, logger: TestPostgres.logger
            ).collect()
        }
        #expect(try await PostgresSchema.migrate(settings, logger: TestPostgres.logger) == Array(6...PostgresSchema.currentVersion))
        let store = PostgresDocumentStore(backend: await TestPostgres.shared.start(settings))
        #expect(try await store.documents("(default)", old.map(\.path), at: nil) == old)
        let before = try await store.documents("(default)", [ResourcePath(parsing: "c/a")], at: Timestamp(microseconds: 7))
        #expect(before.first??.fields["n"] == .integer(-1), "the history row is found by its new key")
        let scan = try await store.snapshot(DocumentSnapshotRead(database: "(default)", scans: [DocumentScan(.documents(.collection(ResourcePath(parsing: "c"))))]))
        #expect(scan.scans[0] == Array(old.prefix(2)))
        #expect(try await store.collectionIds("(default)", parent: .root) == ["c"])
        #expect(try await store.collectionIds("(default)", parent: ResourcePath(parsing: "c/b")) == ["s"])
        // An update of a migrated row replaces it (the new primary key): one row, the new state.
        try await store.commit(Self.request(20, ["c/a"])) { current, _ in
            var doc = current[0]!
            doc.fields = ["n": .integer(9)]
            doc.updateTime = Timestamp(microseconds: 20)
            return ([DocumentMutation(path: doc.path, document: doc, entries: [], oldEntries: [], previous: current[0])], ())
        }
        let after = try await store.documents("(default)", [ResourcePath(parsing: "c/a")], at: nil)
        #expect(after.first??.fields["n"] == .integer(9) && after.first??.createTime == Timestamp(microseconds: 10))
        #expect(try await store.countDocuments("(default)", upTo: 10) == 3)
    }
}
