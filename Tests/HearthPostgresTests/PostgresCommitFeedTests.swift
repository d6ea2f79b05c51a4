import Foundation
import HearthCore
import HearthDocuments
import Synchronization
import Testing

@testable import HearthPostgres

/// The change feed across servers: two engines (two servers) over two pools on one database,
/// each fed by its ``PostgresCommitFeed`` from the commit log (docs/postgres.md, "Several replicas").
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresCommitFeedTests {
    static let database = DatabaseName(project: "demo", database: "(default)")

    static func path(_ text: String) -> ResourcePath { ResourcePath(parsing: text) }

    /// What one engine's change feed delivered, in delivery order.
    final class Recorder: ChangeFeedSubscriber {
        let batches = Mutex<[CommittedChanges]>([])
        let position = Mutex(Timestamp(microseconds: 0))
        let resynced = Mutex<[Timestamp]>([])

        func resynchronize(at time: Timestamp) { resynced.withLock { $0.append(time) } }

        func deliver(_ batch: CommittedChanges) { batches.withLock { $0.append(batch) } }
        func advance(to time: Timestamp) { position.withLock { $0 = max($0, time) } }

        var times: [Timestamp] { batches.withLock { $0.map(\.commitTime) } }

        /// Waits (polling) until `condition` holds; records an issue after `timeout` seconds.
        func wait(_ what: String, timeout: Double = 60, sourceLocation: SourceLocation = #_sourceLocation, _ condition: ([CommittedChanges]) -> Bool) async {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if batches.withLock({ condition($0) }) { return }
                try? await Task.sleep(for: .milliseconds(10))
            }
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
        }
    }

    /// One server: a pool, an engine over it on the shared clock (replicated), its commit feed
    /// running, and a recorder on its change feed.
    struct Server {
        let backend: PostgresBackend
        let engine: DocumentEngine
        let feed: PostgresCommitFeed
        let task: Task<Void, Never>
        let recorder = Recorder()

        /// `interval`: how often the feed catches up without a notification.
        init(_ backend: PostgresBackend, interval: Duration = .milliseconds(200)) async throws {
            self.backend = backend
            var configuration = DocumentEngine.Configuration(replicated: true)
            // Writers of one document queue on its lock; on a loaded machine (the whole suite in
            // parallel, other builds) 20 s was not always enough for 40 commits of 10 documents.
            configuration.lockWaitLimit = .seconds(120)
            engine = try await DocumentEngine(store: PostgresDocumentStore(backend: backend, sharedClock: true), configuration: configuration)
            feed = PostgresCommitFeed(backend: backend, engine: engine, interval: interval)
            engine.feed.subscribe(recorder)
            let feed = self.feed
            task = Task { await feed.run() }
        }

        func set(_ path: String, _ fields: [String: Value]) async throws -> Timestamp {
            try await engine.commit(PostgresCommitFeedTests.database, [.set(PostgresCommitFeedTests.path(path), fields)]).commitTime
        }
    }

    /// Two servers over one fresh database.
    static func twoServers() async throws -> (Server, Server) {
        let first = try await TestPostgres.shared.freshBackend()
        let second = await TestPostgres.shared.start(first.settings)
        return (try await Server(first), try await Server(second))
    }

    @Test("A listener on B hears A's writes in commit order, exactly once, with each commit's net changes")
    func writesOfAReachB() async throws {
        let (a, b) = try await Self.twoServers()
        defer { a.task.cancel(); b.task.cancel() }
        var times: [Timestamp] = []
        times.append(try await a.set("rooms/r1", ["n": .integer(1)]))
        times.append(try await a.set("rooms/r2", ["n": .integer(2)]))
        // Two writes to one document in one commit: one change, from missing to the last state.
        let batch = try await a.engine.commit(
            Self.database,
            [.set(Self.path("rooms/r3"), ["n": .integer(3)]), .update(Self.path("rooms/r3"), ["m": .integer(4)], mask: [try FieldPath(parsing: "m")]),
             .delete(Self.path("rooms/r1"))])
        times.append(batch.commitTime)
        // A write that changes nothing is a commit too (its time passes), with no change.
        times.append(try await a.set("rooms/r2", ["n": .integer(2)]))
        for i in 0..<20 { times.append(try await a.set("rooms/many\(i)", ["i": .integer(Int64(i))])) }

        await b.recorder.wait("every commit of A on B") { $0.count >= times.count }
        await a.recorder.wait("every commit of A on A itself") { $0.count >= times.count }
        try await Task.sleep(for: .milliseconds(500))  // nothing more may come
        #expect(b.recorder.times == times, "B: each commit once, in commit order")
        #expect(a.recorder.times == times, "A hears its own commits through the log too")
        let third = b.recorder.batches.withLock { $0[2] }
        #expect(third.changes.map(\.path.text) == ["rooms/r3", "rooms/r1"])
        #expect(third.changes[0].before == nil && third.changes[0].after?.fields == ["n": .integer(3), "m": .integer(4)])
        #expect(third.changes[1].before?.fields == ["n": .integer(1)] && third.changes[1].after == nil)
        #expect(b.recorder.batches.withLock { $0[3].changes.isEmpty })
        let first = b.recorder.batches.withLock { $0[0] }
        #expect(first.changes.count == 1 && first.changes[0].after?.updateTime == times[0])
    }

    @Test("Concurrent writers on A and B get unique, increasing times, and both feeds deliver the same sequence")
    func concurrentWriters() async throws {
        let (a, b) = try await Self.twoServers()
        defer { a.task.cancel(); b.task.cancel() }
        let servers = [a, b]
        let times = try await withThrowingTaskGroup(of: Timestamp.self) { group in
            for i in 0..<40 {
                group.addTask { try await servers[i % 2].set("shared/d\(i % 10)", ["i": .integer(Int64(i))]) }
            }
            var out: [Timestamp] = []
            for try await t in group { out.append(t) }
            return out
        }
        #expect(Set(times).count == times.count, "every commit has its own time")
        await a.recorder.wait("every commit on A") { $0.count >= times.count }
        await b.recorder.wait("every commit on B") { $0.count >= times.count }
        let sequence = a.recorder.times
        #expect(sequence == times.sorted(), "A's feed: every commit once, in time order")
        #expect(b.recorder.times == sequence, "B's feed: the same sequence")
        // Each delivered change of a document follows from the one before it.
        var last: [ResourcePath: Timestamp] = [:]
        for batch in b.recorder.batches.withLock({ $0 }) {
            for change in batch.changes {
                #expect(change.before?.updateTime == last[change.path], "\(change.path.text) at \(batch.commitTime)")
                last[change.path] = change.after?.updateTime
            }
        }
    }

    /// A Listen stream on an engine, its outputs collected.
    final class Stream: Sendable {
        final class Outputs: Sendable {
            let all = Mutex<[ListenOutput]>([])

            func withLock<R>(_ body: (inout [ListenOutput]) -> R) -> R { all.withLock { body(&$0) } }
        }

        let outputs = Outputs()
        let commands: AsyncStream<ListenCommand>.Continuation
        let task: Task<Void, any Error>

        init(_ engine: DocumentEngine, _ target: ListenTarget) {
            let (stream, commands) = AsyncStream<ListenCommand>.makeStream()
            self.commands = commands
            let outputs = self.outputs
            task = Task {
                try await engine.listen(database: PostgresCommitFeedTests.database, commands: stream, authorize: nil) { out in
                    outputs.withLock { $0 += out }
                }
            }
            commands.yield(.add(target))
        }

        /// The documents the stream sent (path → the last state), and the last global resume token.
        var documents: [String: Int64] {
            var docs: [String: Int64] = [:]
            for case .document(let d, _, _) in outputs.withLock({ $0 }) { docs[d.path.text] = d.updateTime.microseconds }
            return docs
        }

        var deleted: Set<String> {
            var out = Set<String>()
            for o in outputs.withLock({ $0 }) {
                if case .documentDelete(let p, _, _) = o { out.insert(p.text) }
                if case .documentRemove(let p, _, _) = o { out.insert(p.text) }
            }
            return out
        }

        var token: Timestamp? {
            outputs.withLock { all in
                all.reversed().lazy.compactMap { o -> Timestamp? in
                    if case .targetChange(.noChange, let ids, _, let token?, _) = o, ids.isEmpty { return token }
                    return nil
                }.first
            }
        }

        func wait(_ what: String, timeout: Double = 60, sourceLocation: SourceLocation = #_sourceLocation, _ condition: (Stream) -> Bool) async {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if condition(self) { return }
                try? await Task.sleep(for: .milliseconds(10))
            }
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
        }

        func finish() async {
            commands.finish()
            _ = try? await task.value
        }
    }

    @Test("A listener resuming on B with a resume token from A misses nothing")
    func resumeOnAnotherServer() async throws {
        let (a, b) = try await Self.twoServers()
        defer { a.task.cancel(); b.task.cancel() }
        let query = ListenTargetSpec.query(Query(collectionId: "items"))
        _ = try await a.set("items/i0", ["v": .integer(0)])
        _ = try await a.set("items/gone", ["v": .integer(0)])
        let first = Stream(a.engine, ListenTarget(id: 1, spec: query))
        await first.wait("A's initial snapshot") { $0.documents.count == 2 && $0.token != nil }
        let written = try await a.set("items/i1", ["v": .integer(1)])
        await first.wait("A's snapshot of i1") { $0.documents["items/i1"] != nil && ($0.token ?? Timestamp(microseconds: 0)) >= written }
        let token = try #require(first.token)
        await first.finish()

        // Meanwhile, on both servers: a change, a delete, a new document.
        var later: [String: Int64] = [:]
        later["items/i0"] = try await b.set("items/i0", ["v": .integer(10)]).microseconds
        _ = try await a.engine.commit(Self.database, [.delete(Self.path("items/gone"))])
        later["items/i2"] = try await a.set("items/i2", ["v": .integer(2)]).microseconds

        // Resumed on B (whose feed may not have reached the token yet): only what changed since.
        let resumed = Stream(b.engine, ListenTarget(id: 1, spec: query, resumeAfter: token))
        await resumed.wait("B's resumed snapshot") { $0.documents == later && $0.deleted == ["items/gone"] }
        #expect(resumed.documents["items/i1"] == nil, "unchanged since the token: not sent again")
        // And what follows, written on A, reaches the resumed stream on B.
        let after = try await a.set("items/i3", ["v": .integer(3)])
        await resumed.wait("i3 on B") { $0.documents["items/i3"] == after.microseconds }
        await resumed.finish()
    }

    @Test("A feed whose LISTEN connection is terminated catches up with what was committed meanwhile")
    func terminatedListenerCatchesUp() async throws {
        let first = try await TestPostgres.shared.freshBackend()
        let second = await TestPostgres.shared.start(first.settings)
        let a = try await Server(first)
        // B catches up only on notifications and reconnects: a long interval rules the tick out.
        let b = try await Server(second, interval: .seconds(3600))
        let recorder = b.recorder
        defer { a.task.cancel(); b.task.cancel() }
        let before = try await a.set("k/before", ["n": .integer(1)])
        await recorder.wait("the first commit on B") { $0.map(\.commitTime) == [before] }

        // End B's LISTEN connection, then commit at once: those notifications reach no one.
        var times = [before]
        let terminated = try await second.writeCommitted { session in
            try await session.rows(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
                """
            ).count
        }
        #expect(terminated == 2, "A's and B's listening connections")
        for i in 0..<5 { times.append(try await a.set("k/during\(i)", ["n": .integer(Int64(i))])) }
        await recorder.wait("the commits made while B did not listen") { $0.count >= times.count }
        times.append(try await a.set("k/after", ["n": .integer(9)]))
        await recorder.wait("the commit after") { $0.count >= times.count }
        #expect(recorder.times == times, "each once, in order")
    }

    @Test("A feed further behind than the history re-syncs every Listen stream from storage, then follows the log")
    func furtherBehindThanTheHistory() async throws {
        let first = try await TestPostgres.shared.freshBackend()
        let second = await TestPostgres.shared.start(first.settings)
        let a = try await Server(first)
        let bEngine = try await DocumentEngine(
            store: PostgresDocumentStore(backend: second, sharedClock: true), configuration: .init(replicated: true))
        let recorder = Recorder()
        bEngine.feed.subscribe(recorder)
        let stream = Stream(bEngine, ListenTarget(id: 1, spec: .query(Query(collectionId: "far"))))
        _ = try await a.set("far/x1", ["n": .integer(1)])
        _ = try await a.set("far/x2", ["n": .integer(2)])
        // The history and the log are pruned up to now (a retention of zero): B's feed, which has
        // not read them yet, is behind the horizon.
        try await PostgresDocumentStore(backend: first, historyRetentionMicros: 0, sharedClock: true).prune()
        #expect(try await first.read { try await $0.value("SELECT count(*) FROM firestore_commit_log", as: Int64.self) } == 0)
        let bFeed = PostgresCommitFeed(backend: second, engine: bEngine, interval: .milliseconds(200))
        let bTask = Task { await bFeed.run() }
        defer { a.task.cancel(); bTask.cancel() }
        await stream.wait("B's stream re-synced from storage") { $0.documents.keys.sorted() == ["far/x1", "far/x2"] && $0.token != nil }
        #expect(recorder.batches.withLock { $0.isEmpty }, "nothing delivered commit by commit from beyond the history")
        #expect(recorder.resynced.withLock { $0.count } >= 1)
        let later = try await a.set("far/x3", ["n": .integer(3)])
        await stream.wait("a later write through B's feed") { $0.documents["far/x3"] == later.microseconds }
        await stream.finish()
    }

    @Test("An index created on A is used by B's queries once B's feed read its log row")
    func indexesReachOtherServers() async throws {
        let (a, b) = try await Self.twoServers()
        defer { a.task.cancel(); b.task.cancel() }
        let definition = IndexDefinition(
            id: 0, database: "(default)", collectionGroup: "users", groupScope: false,
            fields: [.init(try FieldPath(parsing: "city"), .ascending), .init(try FieldPath(parsing: "age"), .descending)], automatic: false)
        try await a.engine.createIndex(definition)
        let deadline = Date().addingTimeInterval(30)
        while try await b.engine.compositeIndexes(database: "(default)").isEmpty && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await b.engine.compositeIndexes(database: "(default)").count == 1)
    }

    @Test("With the document cache off, B reads A's write as soon as A acknowledged it")
    func noStaleReads() async throws {
        let (a, b) = try await Self.twoServers()
        defer { a.task.cancel(); b.task.cancel() }
        _ = try await a.set("c/doc", ["v": .integer(1)])
        #expect(try await b.engine.get(Self.database, Self.path("c/doc")).0?.fields["v"] == .integer(1))
        for v in 2..<10 {
            _ = try await a.set("c/doc", ["v": .integer(Int64(v))])
            #expect(try await b.engine.get(Self.database, Self.path("c/doc")).0?.fields["v"] == .integer(Int64(v)))
        }
    }
}
