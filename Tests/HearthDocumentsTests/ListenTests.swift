import Foundation
import HearthCore
@testable import HearthDocuments
import Synchronization
import Testing

/// What a Firestore client makes of a Listen stream: per target, the documents it holds,
/// and the snapshots raised at each global NO_CHANGE.
final class ListenClient: Sendable {
    struct State {
        var targets: [Int32: [ResourcePath: Document]] = [:]
        var current: Set<Int32> = []
        var snapshots: [(readTime: Timestamp, targets: [Int32: [ResourcePath: Document]])] = []
        var sends = 0
        var removed: [Int32: ListenCause?] = [:]
        var filters: [(Int32, Int32)] = []
        var all: [ListenOutput] = []
    }

    let state = Mutex(State())

    func receive(_ outputs: [ListenOutput]) {
        state.withLock { s in
            s.sends += 1
            s.all += outputs
            for o in outputs {
                switch o {
                case .targetChange(.add, let ids, _, _, _):
                    for id in ids { s.targets[id] = [:] }
                case .targetChange(.remove, let ids, let cause, _, _):
                    for id in ids {
                        s.targets[id] = nil
                        s.removed[id] = cause
                    }
                case .targetChange(.reset, let ids, _, _, _):
                    for id in ids {
                        s.targets[id] = [:]
                        s.current.remove(id)
                    }
                case .targetChange(.current, let ids, _, _, _):
                    s.current.formUnion(ids)
                case .targetChange(.noChange, let ids, _, _, let readTime?) where ids.isEmpty:
                    s.snapshots.append((readTime, s.targets.filter { s.current.contains($0.key) }))
                case .targetChange:
                    break
                case .document(let d, let ids, let removed):
                    for id in ids { s.targets[id]?[d.path] = d }
                    for id in removed { s.targets[id]?[d.path] = nil }
                case .documentDelete(let p, let removed, _), .documentRemove(let p, let removed, _):
                    for id in removed { s.targets[id]?[p] = nil }
                case .existenceFilter(let id, let count, _):
                    s.filters.append((id, count))
                }
            }
        }
    }

    /// Waits (polling) until the condition holds; records an issue after `timeout` seconds.
    func wait(
        _ what: String, timeout: Double = 180, sourceLocation: SourceLocation = #_sourceLocation, _ condition: (State) -> Bool
    ) async {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if state.withLock({ condition($0) }) { return }
            try? await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
    }

    var lastSnapshot: (readTime: Timestamp, targets: [Int32: [ResourcePath: Document]])? { state.withLock { $0.snapshots.last } }
}

/// A Listen stream on an engine, driven like a client: `add`/`remove` commands, outputs
/// collected by a ``ListenClient``.
struct ListenHarness {
    let client = ListenClient()
    let commands: AsyncStream<ListenCommand>.Continuation
    let task: Task<Void, any Error>

    init(
        _ db: Hearth, configuration: ListenConfiguration = .init(),
        authorize: (@Sendable (ListenTargetSpec, [Document]) async throws -> Void)? = nil
    ) {
        let (stream, continuation) = AsyncStream<ListenCommand>.makeStream()
        commands = continuation
        let client = self.client
        task = Task {
            try await db.engine.listen(
                database: db.database, commands: stream, authorize: authorize, configuration: configuration,
                send: { client.receive($0) })
        }
    }

    func add(_ id: Int32, _ spec: ListenTargetSpec) { commands.yield(.add(ListenTarget(id: id, spec: spec))) }

    func finish() async throws {
        commands.finish()
        try await task.value
    }
}

@Suite("Listen streams on the engine")
struct ListenTests {
    @Test("A query target sees its initial results, then every commit, each commit in one consistent batch", arguments: Backend.allCases)
    func basic(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("rooms/a", ["open": .boolean(true), "n": .integer(1)])
            try await db.set("rooms/b", ["open": .boolean(false), "n": .integer(2)])
            let listen = ListenHarness(db)
            listen.add(1, .query(Query(collectionId: "rooms", filter: .field(field("open"), .equal, .boolean(true)))))
            await listen.client.wait("initial snapshot") { $0.snapshots.count == 1 }
            #expect(listen.client.lastSnapshot?.targets[1]?.keys.map(\.text) == ["rooms/a"])
            // One commit opening b and closing a: the client must never see both or neither.
            try await db.commit([.set(path("rooms/b"), ["open": .boolean(true)]), .set(path("rooms/a"), ["open": .boolean(false)])])
            await listen.client.wait("second snapshot") { $0.snapshots.count == 2 }
            #expect(listen.client.lastSnapshot?.targets[1]?.keys.map(\.text) == ["rooms/b"])
            try await db.commit([.delete(path("rooms/b"))])
            await listen.client.wait("third snapshot") { $0.snapshots.count == 3 }
            #expect(listen.client.lastSnapshot?.targets[1]?.isEmpty == true)
            try await listen.finish()
            #expect(db.engine.listeners.targetCount == 0)
            #expect(db.engine.listeners.streamCount == 0)
        }
    }

    @Test("Under concurrent writers every snapshot equals the query at its read time, with increasing read times")
    func consistency() async throws {
        try await withHearth(.sqliteFile) { (db) async throws in
            let q = Query(collectionId: "items", filter: .field(field("color"), .equal, .string("red")), orderBy: [Query.Order(field("rank"))])
            var limited = q
            limited.limit = 3
            let listen = ListenHarness(db)
            listen.add(1, .query(q))
            listen.add(2, .query(limited))
            listen.add(3, .documents([path("items/i0"), path("items/i1")]))
            await listen.client.wait("targets current") { $0.current.count == 3 }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<4 {
                    group.addTask {
                        var rng = SeededGenerator(seed: UInt64(w + 1))
                        for _ in 0..<40 {
                            let id = "items/i\(Int.random(in: 0..<12, using: &rng))"
                            if rng.chance(0.2) {
                                try await db.commit([.delete(path(id))])
                            } else {
                                let color: Value = .string(rng.pick(["red", "blue"]))
                                try await db.set(id, ["color": color, "rank": .integer(Int64(Int.random(in: 0..<5, using: &rng)))])
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let last = db.engine.feed.position
            // The last commits may concern no target: a heartbeat moves the stream on.
            db.engine.listenHeartbeat()
            await listen.client.wait("final snapshot") { s in s.snapshots.last.map { $0.readTime >= last } ?? false }
            let snapshots = listen.client.state.withLock { $0.snapshots }
            #expect(zip(snapshots, snapshots.dropFirst()).allSatisfy { $0.readTime <= $1.readTime })
            // Every snapshot is the state of the database at its read time.
            for snap in snapshots {
                let at = ReadConsistency.readTime(snap.readTime)
                for (id, view) in snap.targets {
                    let want: [ResourcePath]
                    switch id {
                    case 1: want = try await db.query(q, consistency: at).map(\.path)
                    case 2: want = try await db.query(limited, consistency: at).map(\.path)
                    default:
                        want = try await db.engine.batchGet(db.database, [path("items/i0"), path("items/i1")], consistency: at)
                            .documents.compactMap { $0?.path }
                    }
                    #expect(Set(view.keys) == Set(want), "target \(id) at \(snap.readTime.microseconds): got \(view.keys.map(\.text).sorted()), want \(want.map(\.text).sorted())")
                    for (p, d) in view {
                        #expect(try await db.engine.get(db.database, p, consistency: at).0?.updateTime == d.updateTime)
                    }
                }
            }
            try await listen.finish()
        }
    }

    @Test("A stream whose client falls behind is re-synced within its budget and ends up right")
    func slowConsumer() async throws {
        try await withHearth(.sqliteInMemory) { (db) async throws in
            let listen = ListenHarness(db, configuration: ListenConfiguration(feedBudget: 2))
            listen.add(5, .query(Query(collectionId: "c")))
            await listen.client.wait("current") { $0.current.contains(5) }
            for i in 0..<60 {
                try await db.set("c/d\(i % 7)", ["i": .integer(Int64(i))])
            }
            let last = db.engine.feed.position
            await listen.client.wait("caught up") { s in s.snapshots.last.map { $0.readTime >= last } ?? false }
            let view = try #require(listen.client.lastSnapshot?.targets[5])
            let expected = try await db.query(Query(collectionId: "c"))
            #expect(Set(view.keys) == Set(expected.map(\.path)))
            for d in expected { #expect(view[d.path]?.updateTime == d.updateTime) }
            try await listen.finish()
        }
    }

    @Test("Resuming from a resume token sends only what changed since")
    func resume() async throws {
        try await withHearth(.sqliteInMemory) { (db) async throws in
            try await db.set("r/a", ["v": .integer(1)])
            try await db.set("r/b", ["v": .integer(1)])
            let first = ListenHarness(db)
            first.add(1, .query(Query(collectionId: "r")))
            await first.client.wait("snapshot") { $0.snapshots.count == 1 }
            let token = try #require(first.client.lastSnapshot?.readTime)
            try await first.finish()
            try await db.set("r/b", ["v": .integer(2)])
            try await db.commit([.delete(path("r/a"))])
            try await db.set("r/c", ["v": .integer(1)])
            let second = ListenHarness(db)
            second.commands.yield(.add(ListenTarget(id: 1, spec: .query(Query(collectionId: "r")), resumeAfter: token)))
            await second.client.wait("snapshot") { $0.snapshots.count == 1 }
            let sent = second.client.state.withLock { $0.all }
            let docs = sent.compactMap { o -> String? in if case .document(let d, _, _) = o { d.path.text } else { nil } }
            let removed = sent.compactMap { o -> String? in if case .documentRemove(let p, _, _) = o { p.text } else { nil } }
            #expect(docs.sorted() == ["r/b", "r/c"])
            #expect(removed == ["r/a"])
            try await second.finish()
        }
    }

    @Test("A target the authorizer refuses is removed with PERMISSION_DENIED; the stream goes on")
    func refused() async throws {
        try await withHearth(.sqliteInMemory) { (db) async throws in
            let listen = ListenHarness(db) { spec, _ in
                if case .query(let q) = spec, q.collectionId == "secret" {
                    throw HearthError(.permissionDenied, "Missing or insufficient permissions.")
                }
            }
            listen.add(1, .query(Query(collectionId: "secret")))
            listen.add(2, .query(Query(collectionId: "public")))
            await listen.client.wait("removed and current") { $0.removed[1] != nil && $0.current.contains(2) }
            #expect(listen.client.state.withLock { $0.removed[1]??.code } == .permissionDenied)
            try await listen.finish()
        }
    }

    @Test("A document the rules stop allowing removes its documents target")
    func reauthorized() async throws {
        try await withHearth(.sqliteInMemory) { (db) async throws in
            try await db.set("notes/n", ["private": .boolean(false), "v": .integer(1)])
            let listen = ListenHarness(db) { _, docs in
                if docs.contains(where: { $0.fields["private"] == .boolean(true) }) {
                    throw HearthError(.permissionDenied, "Missing or insufficient permissions.")
                }
            }
            listen.add(1, .documents([path("notes/n")]))
            await listen.client.wait("current") { $0.current.contains(1) }
            try await db.set("notes/n", ["private": .boolean(false), "v": .integer(2)])
            await listen.client.wait("the update") { $0.snapshots.last?.targets[1]?[path("notes/n")]?.fields["v"] == .integer(2) }
            try await db.set("notes/n", ["private": .boolean(true), "v": .integer(3)])
            await listen.client.wait("the removal") { $0.removed[1] != nil }
            #expect(listen.client.state.withLock { s in s.all.contains { o in
                if case .document(let d, _, _) = o { d.fields["v"] == .integer(3) } else { false }
            } } == false)
            try await listen.finish()
        }
    }

    @Test("A duplicate target id ends the stream with INVALID_ARGUMENT")
    func duplicate() async throws {
        try await withHearth(.sqliteInMemory) { (db) async throws in
            let listen = ListenHarness(db)
            listen.add(1, .query(Query(collectionId: "x")))
            listen.add(1, .query(Query(collectionId: "y")))
            await expectError(.invalidArgument) { try await listen.task.value }
            #expect(db.engine.listeners.targetCount == 0)
        }
    }
}

@Suite("Change feed and listener hub")
struct ChangeFeedTests {
    final class Recorder: ChangeFeedSubscriber {
        let seen = Mutex<[Int64]>([])
        func deliver(_ batch: CommittedChanges) { seen.withLock { $0.append(batch.commitTime.microseconds) } }
        func advance(to time: Timestamp) {}
    }

    @Test("Commits are delivered once, in commit order, only when every earlier one is settled")
    func ordering() {
        let feed = ChangeFeed(position: Timestamp(microseconds: 0))
        let r = Recorder()
        feed.subscribe(r)
        let clock = CommitClock(after: Timestamp(microseconds: 9), now: { 0 })
        for _ in 0..<4 { _ = feed.reserve(clock) }
        feed.publish(CommittedChanges(database: "d", commitTime: Timestamp(microseconds: 12), changes: []))
        feed.publish(CommittedChanges(database: "d", commitTime: Timestamp(microseconds: 11), changes: []))
        #expect(r.seen.withLock { $0 } == [])
        feed.publish(CommittedChanges(database: "d", commitTime: Timestamp(microseconds: 10), changes: []))
        #expect(r.seen.withLock { $0 } == [10, 11, 12])
        feed.abandon(Timestamp(microseconds: 13))
        #expect(r.seen.withLock { $0 } == [10, 11, 12])
        #expect(feed.position == Timestamp(microseconds: 12))
    }

    @Test("Fed externally: only deliver and advance move the feed — once per commit, in order; the engine's reservations publish nothing")
    func externallyFed() {
        let feed = ChangeFeed(position: Timestamp(microseconds: 5), external: true)
        let r = Recorder()
        feed.subscribe(r)
        let clock = CommitClock(after: Timestamp(microseconds: 9), now: { 0 })
        let reserved = feed.reserve(clock)
        #expect(reserved == Timestamp(microseconds: 10), "a reservation is the clock's proposal")
        feed.publish(CommittedChanges(database: "d", commitTime: reserved, changes: []))
        feed.abandon(Timestamp(microseconds: 11))
        feed.advanceIfIdle(clock)
        #expect(r.seen.withLock { $0 } == [] && feed.position == Timestamp(microseconds: 5))
        for t: Int64 in [7, 8, 8, 6, 12] { feed.deliver(CommittedChanges(database: "d", commitTime: Timestamp(microseconds: t), changes: [])) }
        #expect(r.seen.withLock { $0 } == [7, 8, 12], "each commit once; a time at or below the position is not delivered again")
        feed.advance(to: Timestamp(microseconds: 11))
        #expect(feed.position == Timestamp(microseconds: 12))
        feed.advance(to: Timestamp(microseconds: 20))
        feed.deliver(CommittedChanges(database: "d", commitTime: Timestamp(microseconds: 19), changes: []))
        #expect(feed.position == Timestamp(microseconds: 20) && r.seen.withLock { $0 } == [7, 8, 12])
    }

    @Test("A replicated engine publishes none of its commits itself and keeps no document cache", arguments: Backend.allCases)
    func replicatedEngine(_ backend: Backend) async throws {
        try await withHearth(backend, configure: { $0.replicated = true }) { db in
            let r = Recorder()
            db.engine.feed.subscribe(r)
            try await db.set("c/a", ["v": .integer(1)])
            _ = try await db.engine.get(db.database, path("c/a"))
            try await db.engine.clear(db.database)
            db.engine.listenHeartbeat()
            #expect(r.seen.withLock { $0 } == [])
            #expect(db.engine.cache.state.withLock { $0.entries.isEmpty }, "nothing cached")
            #expect(db.engine.feed.position == db.engine.feed.startPosition)
        }
    }

    @Test("A commit reaches only the streams whose targets it can affect (equality routing)")
    func routing() {
        let hub = ListenerHub(position: Timestamp(microseconds: 0))
        let sinks = (0..<1000).map { _ in ListenSink(budget: 100) }
        for (i, sink) in sinks.enumerated() {
            _ = hub.register(
                sink, database: "(default)",
                target: .query(Query(collectionId: "rooms", filter: .field(field("roomId"), .equal, .integer(Int64(i))))))
        }
        let other = ListenSink(budget: 100)
        _ = hub.register(other, database: "(default)", target: .query(Query(collectionId: "rooms")))
        let before = Document(path: path("rooms/x"), fields: ["roomId": .integer(5)], createTime: .init(microseconds: 1), updateTime: .init(microseconds: 1))
        let after = Document(path: path("rooms/x"), fields: ["roomId": .integer(7)], createTime: .init(microseconds: 1), updateTime: .init(microseconds: 2))
        hub.deliver(CommittedChanges(
            database: "(default)", commitTime: Timestamp(microseconds: 2),
            changes: [DocumentChange(path: path("rooms/x"), before: before, after: after, index: 0)]))
        let reached = sinks.indices.filter { !sinks[$0].state.withLock { $0.queue.isEmpty } }
        #expect(reached == [5, 7])
        #expect(!other.state.withLock { $0.queue.isEmpty })
        // Another collection reaches nobody.
        hub.deliver(CommittedChanges(
            database: "(default)", commitTime: Timestamp(microseconds: 3),
            changes: [DocumentChange(path: path("halls/x"), before: nil, after: after, index: 0)]))
        #expect(other.state.withLock { $0.queue.count } == 1)
    }
}
