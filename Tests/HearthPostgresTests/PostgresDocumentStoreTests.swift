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
                    try await stores[i % 2].commit(Self.request(time, ["hot/doc"])) { current in
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
            try await store.commit(Self.request(time, ["c/a"])) { _ in
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
                        try await stores[w % 2].commit(Self.request(time, [name])) { _ in
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
        try await store.commit(Self.request(10, ["c/a"])) { _ in ([first], ()) }
        try await TestPostgres.cutOffDuringCommit(settings, trigger: "AFTER INSERT ON firestore_commit_times") {
            try await store.commit(Self.request(20, ["c/a"])) { current in ([Self.put(2, at: 20, previous: current[0]).0], ()) }
            return "()"
        }
        #expect(try await store.documents("(default)", [ResourcePath(parsing: "c/a")], at: nil) == [stored], "the cut-off commit left nothing")
        #expect(try await store.lastCommitTime() == Timestamp(microseconds: 10))
        try await store.commit(Self.request(30, ["c/a"])) { current in ([Self.put(3, at: 30, previous: current[0]).0], ()) }
        #expect(try await store.documents("(default)", [ResourcePath(parsing: "c/a")], at: nil).first??.fields["n"] == .integer(3))
    }
}
