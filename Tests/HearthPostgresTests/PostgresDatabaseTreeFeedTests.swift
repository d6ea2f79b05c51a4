import Foundation
import HearthCore
import HearthDatabase
import PostgresNIO
import Synchronization
import Testing

@testable import HearthPostgres

/// The Realtime Database across replicas: two engines over two pools on one database, each with
/// its sequenced feed filled by a ``PostgresDatabaseTreeFeed`` (docs/postgres.md, "Several replicas").
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresDatabaseTreeFeedTests {
    /// What a listener at the root was told, change by change.
    final class Recorder: DatabaseChangeSubscriber {
        let changes = Mutex<[DatabaseChange]>([])
        func deliver(_ change: DatabaseChange) { changes.withLock { $0.append(change) } }

        var writes: [DatabaseChange] { changes.withLock { $0.filter { if case .rules = $0.kind { false } else { true } } } }
        var rulesChanges: Int { changes.withLock { $0.filter { if case .rules = $0.kind { true } else { false } }.count } }
        /// Each write as (revision, the events a root listener gets), comparable across replicas.
        var events: [String] {
            writes.map { change in
                "\(change.revision) " + DatabaseListenEvent.events(for: change, at: .root).map { "\($0.kind.rawValue) \($0.json.serialized())" }.joined(separator: "; ")
            }
        }

        /// Waits (up to 20 s) until the last write recorded has `revision`.
        func wait(forRevision revision: Int64) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while (writes.last?.revision ?? 0) < revision {
                guard ContinuousClock.now < deadline else {
                    Issue.record("timed out waiting for revision \(revision); got \(writes.map(\.revision))")
                    throw CancellationError()
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Allows reads and writes of non-admins as the rules' root `.read` / `.write` booleans say.
    struct RootBooleanAuthorizer: DatabaseAuthorizer {
        func compile(_ text: String) throws(DatabaseError) -> any DatabaseRulesProgram { try StoredDatabaseRules(text: text) }
        func defaultRules() -> any DatabaseRulesProgram { StoredDatabaseRules(default: true) }
        func decide(_ key: String, _ auth: DatabaseAuthContext, _ rules: any DatabaseRulesProgram) -> DatabaseAccessDecision {
            let allowed = auth.isAdmin || rules.document["rules"]?[key] == .bool(true)
            return DatabaseAccessDecision(allowed: allowed, reason: "root \(key)")
        }
        func authorizeRead(_ request: DatabaseReadRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
            decide(".read", request.auth, rules)
        }
        func authorizeWrite(_ request: DatabaseWriteRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
            decide(".write", request.auth, rules)
        }
    }

    /// One server: a pool, its engine, its sequenced feed and the commit-log reader feeding it.
    struct Replica {
        let backend: PostgresBackend
        let feed: DatabaseChangeFeed
        let log: PostgresDatabaseTreeFeed
        let engine: DatabaseEngine

        init(_ settings: PostgresSettings, pollInterval: Duration = .seconds(1), reconnectDelay: Duration = .milliseconds(100)) async {
            backend = await TestPostgres.shared.start(settings)
            feed = DatabaseChangeFeed(sequenced: true)
            log = PostgresDatabaseTreeFeed(
                backend: backend, feed: feed, logger: TestPostgres.logger, pollInterval: pollInterval, reconnectDelay: reconnectDelay)
            engine = DatabaseEngine(store: PostgresDatabaseTreeStore(backend: backend), authorizer: RootBooleanAuthorizer(), feed: feed)
        }

        /// Starts the feed at the database's revisions, then keeps it running until the task is cancelled.
        func start() async throws -> Task<Void, any Error> {
            try await log.catchUp()
            let log = log
            return Task { try await log.run() }
        }

        func listen(_ namespace: String = "ns") -> Recorder {
            let recorder = Recorder()
            _ = feed.subscribe(namespace: namespace, recorder)
            return recorder
        }

        func set(_ path: String, _ json: String, ifMatch: String? = nil, auth: DatabaseAuthContext = .admin) async throws -> DatabaseEngine.WriteOutcome {
            try await engine.set(
                namespace: "ns", path: DatabasePath.parse(path), value: try JSON.parse(json), auth: auth, options: .init(ifMatch: ifMatch))
        }

        func update(_ path: String, _ values: [(String, String)]) async throws {
            _ = try await engine.update(namespace: "ns", path: DatabasePath.parse(path), values: try values.map { ($0.0, try JSON.parse($0.1)) }, auth: .admin)
        }

        func read(_ path: String, auth: DatabaseAuthContext = .admin) async throws -> DatabaseEngine.Snapshot {
            try await engine.read(namespace: "ns", path: DatabasePath.parse(path), auth: auth)
        }
    }

    static func twoReplicas(pollInterval: Duration = .seconds(1), reconnectDelay: Duration = .milliseconds(100)) async throws -> (Replica, Replica) {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        return (
            await Replica(settings, pollInterval: pollInterval, reconnectDelay: reconnectDelay),
            await Replica(settings, pollInterval: pollInterval, reconnectDelay: reconnectDelay)
        )
    }

    static let user = DatabaseAuthContext(isAdmin: false, auth: .object([("uid", .string("u1"))]))

    @Test("A listener on B hears A's sets, updates, multi-path updates, deletes and transactions once each, in revision order")
    func listenerOnBHearsA() async throws {
        let (a, b) = try await Self.twoReplicas()
        let (runA, runB) = (try await a.start(), try await b.start())
        defer { runA.cancel(); runB.cancel() }
        let onA = a.listen()
        let onB = b.listen()
        _ = try await a.set("users/alice", #"{"name":"Alice","age":30}"#)
        try await a.update("users/alice", [("age", "31"), ("city", #""Paris""#)])
        try await a.update("", [("users/bob/name", #""Bob""#), ("counters/visits", "1"), ("users/alice/city", "null")])
        _ = try await a.set("users/bob", "null")
        // A transaction: read, then write only if unchanged (what the SDKs' transactions send).
        let current = try await a.read("counters/visits")
        guard case .written = try await a.set("counters/visits", "2", ifMatch: current.node.etag) else {
            Issue.record("the transaction's precondition failed")
            return
        }
        guard case .preconditionFailed = try await a.set("counters/visits", "3", ifMatch: current.node.etag) else {
            Issue.record("a stale transaction applied")
            return
        }
        try await onB.wait(forRevision: 5)
        #expect(onB.writes.map(\.revision) == [1, 2, 3, 4, 5])
        #expect(onB.events == onA.events, "B's listener heard what A's heard")
        #expect(
            onB.events == [
                #"1 put {"path":"/users/alice","data":{"age":30,"name":"Alice"}}"#,
                #"2 patch {"path":"/users/alice","data":{"age":31,"city":"Paris"}}"#,
                #"3 put {"path":"/users/bob/name","data":"Bob"}; put {"path":"/counters/visits","data":1}; put {"path":"/users/alice/city","data":null}"#,
                #"4 put {"path":"/users/bob","data":null}"#,
                #"5 put {"path":"/counters/visits","data":2}"#,
            ])
        // Nothing more arrives later (no echo of A's own commits through the log on A, no repeat on B).
        try await Task.sleep(for: .milliseconds(1500))
        #expect(onA.writes.map(\.revision) == [1, 2, 3, 4, 5])
        #expect(onB.writes.map(\.revision) == [1, 2, 3, 4, 5])
    }

    @Test("Concurrent writers on both replicas: every listener hears every revision once, in order, and the same events")
    func concurrentWritersOnBoth() async throws {
        let (a, b) = try await Self.twoReplicas()
        let (runA, runB) = (try await a.start(), try await b.start())
        defer { runA.cancel(); runB.cancel() }
        let onA = a.listen()
        let onB = b.listen()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                let replica = i % 2 == 0 ? a : b
                group.addTask { _ = try await replica.set("items/k\(i % 7)", "\(i)") }
            }
            try await group.waitForAll()
        }
        try await onA.wait(forRevision: 40)
        try await onB.wait(forRevision: 40)
        #expect(onA.writes.map(\.revision) == Array(1...40))
        #expect(onB.writes.map(\.revision) == Array(1...40))
        #expect(onA.events == onB.events)
        // The last event of each key is what both replicas read.
        #expect(try await a.read("items").node == b.read("items").node)
    }

    @Test("Rules set on A hold on B from B's next request, and B's listeners re-check")
    func rulesSetOnAHoldOnB() async throws {
        let (a, b) = try await Self.twoReplicas()
        let (runA, runB) = (try await a.start(), try await b.start())
        defer { runA.cancel(); runB.cancel() }
        try await b.engine.setRules(#"{"rules":{".read":true,".write":true}}"#, namespace: "ns", auth: .admin)
        // B compiles and keeps these rules.
        _ = try await b.set("open", "1", auth: Self.user)
        _ = try await b.read("open", auth: Self.user)
        let onB = b.listen()
        try await a.engine.setRules(#"{"rules":{".read":false,".write":false}}"#, namespace: "ns", auth: .admin)
        await #expect(throws: DatabaseError.self) { _ = try await b.set("open", "2", auth: Self.user) }
        await #expect(throws: DatabaseError.self) { _ = try await b.read("open", auth: Self.user) }
        #expect(try await b.read("open").node.plainJSON() == .number("1"), "the denied write stored nothing")
        try await a.engine.setRules(#"{"rules":{".read":true,".write":true}}"#, namespace: "ns", auth: .admin)
        _ = try await b.set("open", "3", auth: Self.user)
        #expect(try await b.read("open", auth: Self.user).node.plainJSON() == .number("3"))
        // B's listeners were told of both rules changes (to re-check what they read).
        let deadline = ContinuousClock.now + .seconds(20)
        while onB.rulesChanges < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(onB.rulesChanges == 2)
    }

    @Test("A killed LISTEN connection reconnects and catches up on what was written meanwhile")
    func killedListenConnectionCatchesUp() async throws {
        // No polling: only LISTEN's (re)start and notifications wake the feed. B reconnects after
        // 10 s: the writes below are made while nobody listens (on any but a very loaded machine;
        // if not, the test still checks that B hears everything once, in order), their
        // notifications are lost.
        let (a, b) = try await Self.twoReplicas(pollInterval: .seconds(3600), reconnectDelay: .seconds(10))
        try await a.log.catchUp()  // A's feed starts (it is not run: A only writes).
        let runB = try await b.start()
        defer { runB.cancel() }
        let onB = b.listen()
        _ = try await a.set("x", "1")
        try await onB.wait(forRevision: 1)
        // End B's LISTEN connection and write in the same transaction: its notification is lost.
        try await a.backend.writeCommitted { session in
            let ended = try await session.rows(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
                """
            ).count
            #expect(ended == 1)
        }
        _ = try await a.set("x", "2")
        _ = try await a.set("y", "3")
        try await onB.wait(forRevision: 3)
        #expect(onB.events == [#"1 put {"path":"/x","data":1}"#, #"2 put {"path":"/x","data":2}"#, #"3 put {"path":"/y","data":3}"#])
    }

    @Test("A replica further behind than the log re-reads: its listeners get the current value at the root, then what follows")
    func prunedLogResynchronizes() async throws {
        let (a, b) = try await Self.twoReplicas()
        try await a.log.catchUp()  // A's feed starts (it is not run: A only writes).
        try await b.log.catchUp()  // B's feed starts; it is then caught up only by hand.
        let onB = b.listen()
        _ = try await a.set("x", "1")
        try await b.log.catchUp()
        _ = try await a.set("x", "2")
        try await a.update("", [("y", "3"), ("z/w", "4")])
        try await a.log.prune(olderThan: .zero)
        #expect(try await a.backend.read { try await $0.value("SELECT count(*) FROM rtdb_commit_log", as: Int64.self) } == 0)
        try await b.log.catchUp()
        _ = try await a.set("x", "5")
        try await b.log.catchUp()
        #expect(
            onB.events == [
                #"1 put {"path":"/x","data":1}"#,
                #"3 put {"path":"/","data":{"x":2,"y":3,"z":{"w":4}}}"#,
                #"4 put {"path":"/x","data":5}"#,
            ])
        // The pruned rows are gone for good; the feed goes on from the new ones.
        #expect(try await a.backend.read { try await $0.value("SELECT min(seq) FROM rtdb_commit_log", as: Int64.self) } == 4)
    }

    @Test("An import (a commit made outside the engine) makes other replicas' listeners re-read")
    func commitWithoutEventResynchronizes() async throws {
        let (a, b) = try await Self.twoReplicas()
        try await b.log.catchUp()
        let onB = b.listen()
        let store = PostgresDatabaseTreeStore(backend: a.backend)
        #expect(
            try await store.apply(
                DatabaseTreeCommit(
                    namespace: "ns", expectedRevision: 0, clearedSubtrees: [.root], clearedLeaves: [],
                    writtenLeaves: [DatabaseLeaf(path: try DatabasePath.parse("a/b"), value: "7")])) == 1)
        try await b.log.catchUp()
        #expect(onB.events == [#"1 put {"path":"/","data":{"a":{"b":7}}}"#])
    }

    @Test("A write on B that follows A's commit waits until B's listeners heard A's")
    func localWriteAfterRemoteCommitIsHeardInOrder() async throws {
        let (a, b) = try await Self.twoReplicas(pollInterval: .seconds(3600))
        try await a.log.catchUp()
        try await b.log.catchUp()
        let onB = b.listen()
        _ = try await a.set("first", "1")
        // B's feed has not read A's commit; B's own write is revision 2 and is held, then released
        // once the log reader delivers revision 1.
        let write = Task { try await b.set("second", "2") }
        try await Task.sleep(for: .milliseconds(200))
        #expect(onB.writes.isEmpty, "revision 2 waits for revision 1")
        try await b.log.catchUp()
        _ = try await write.value
        #expect(onB.events == [#"1 put {"path":"/first","data":1}"#, #"2 put {"path":"/second","data":2}"#])
        try await b.log.catchUp()
        #expect(onB.writes.count == 2, "B's own commit, read back from the log, is not delivered again")
    }
}
