import HearthCore
import Synchronization
import Testing

@testable import HearthDatabase

/// The sequenced change feed (several servers) and changes rebuilt from commits (the commit log).
@Suite struct DatabaseChangeFeedTests {
    static func change(_ revision: Int64, _ key: String = "k", namespace: String = "ns") -> DatabaseChange {
        DatabaseChange(namespace: namespace, revision: revision, kind: .set(path: DatabasePath([key]), node: DatabaseNode(value: .number(Double(revision)))))
    }

    func revisions(_ recorder: RecordingSubscriber) -> [Int64] { recorder.changes.withLock { $0.map(\.revision) } }

    @Test func unsequencedFeedHandsEveryChangeOnAtOnce() {
        let feed = DatabaseChangeFeed()
        let recorder = RecordingSubscriber()
        _ = feed.subscribe(namespace: "ns", recorder)
        #expect(feed.publish(Self.change(2)) && feed.publish(Self.change(1)))
        #expect(revisions(recorder) == [2, 1])
    }

    @Test func sequencedFeedDeliversEachRevisionOnceInOrder() {
        let feed = DatabaseChangeFeed(sequenced: true)
        let recorder = RecordingSubscriber()
        _ = feed.subscribe(namespace: "ns", recorder)
        // Held until the feed knows where the namespaces stand.
        #expect(!feed.publish(Self.change(6)))
        #expect(revisions(recorder).isEmpty)
        feed.synchronize(revisions: ["ns": 4])
        #expect(revisions(recorder).isEmpty, "6 waits for 5")
        #expect(feed.publish(Self.change(4)), "at or below the start: already in the listeners' reads")
        #expect(!feed.publish(Self.change(7)))
        #expect(feed.publish(Self.change(5)))
        #expect(revisions(recorder) == [5, 6, 7])
        // Both sources (the engine, the log) bring each revision: the second is dropped.
        #expect(feed.publish(Self.change(6)) && feed.publish(Self.change(7)))
        #expect(feed.publish(Self.change(8)) && feed.publish(Self.change(8)))
        #expect(revisions(recorder) == [5, 6, 7, 8])
        #expect(feed.deliveredRevision(namespace: "ns") == 8)
        // A namespace created after the start begins at 1; rules changes go out at once.
        #expect(feed.publish(Self.change(1, namespace: "other")))
        #expect(feed.publish(DatabaseChange(namespace: "ns", revision: 0, kind: .rules)))
        #expect(revisions(recorder) == [5, 6, 7, 8, 0])
    }

    @Test func resynchronizingSendsTheResetAndDropsWhatItCovers() {
        let feed = DatabaseChangeFeed(sequenced: true)
        feed.synchronize(revisions: ["ns": 2])
        let recorder = RecordingSubscriber()
        _ = feed.subscribe(namespace: "ns", recorder)
        #expect(!feed.publish(Self.change(5)))
        #expect(!feed.publish(Self.change(7)))
        let root = DatabaseChange(namespace: "ns", revision: 5, kind: .set(path: .root, node: DatabaseNode(value: .bool(true))))
        feed.synchronize(revisions: ["ns": 5], resets: [root])
        #expect(revisions(recorder) == [5], "the reset replaces 3…5; 7 still waits for 6")
        #expect(feed.publish(Self.change(6)))
        #expect(revisions(recorder) == [5, 6, 7])
    }

    @Test func aWaitingWriterReturnsOnceItsRevisionIsDelivered() async {
        let feed = DatabaseChangeFeed(sequenced: true)
        feed.synchronize(revisions: [:])
        #expect(!feed.publish(Self.change(2)))
        // The timeout only bounds a broken feed: the wait must end because revision 2 went out
        // (its answer), however slow the machine is.
        async let waited = feed.waitUntilDelivered(namespace: "ns", revision: 2, timeout: .seconds(600))
        try? await Task.sleep(for: .milliseconds(50))
        #expect(feed.deliveredRevision(namespace: "ns") == 0)
        #expect(feed.publish(Self.change(1)))
        #expect(await waited, "the wait ended by delivery, not by its timeout")
        #expect(feed.deliveredRevision(namespace: "ns") == 2)
    }

    /// The changes another server rebuilds from a commit are the engine's own, event for event.
    @Test func changesRebuiltFromCommitsAreTheEnginesChanges() async throws {
        final class Recording: DatabaseTreeStore {
            let inner = InMemoryDatabaseTreeStore()
            let commits = Mutex<[(DatabaseTreeCommit, Int64)]>([])
            func subtree(namespace: String, at path: DatabasePath) async throws -> DatabaseSubtree { try await inner.subtree(namespace: namespace, at: path) }
            func leaves(namespace: String, at paths: [DatabasePath]) async throws -> [DatabaseLeaf] { try await inner.leaves(namespace: namespace, at: paths) }
            func apply(_ commit: DatabaseTreeCommit) async throws -> Int64? {
                let revision = try await inner.apply(commit)
                if let revision { commits.withLock { $0.append((commit, revision)) } }
                return revision
            }
            func rules(namespace: String) async throws -> String? { try await inner.rules(namespace: namespace) }
            func setRules(_ text: String, namespace: String) async throws { try await inner.setRules(text, namespace: namespace) }
        }
        let store = Recording()
        let engine = DatabaseEngine(store: store, authorizer: DefaultDatabaseAuthorizer(emulator: true))
        let recorder = RecordingSubscriber()
        _ = engine.feed.subscribe(namespace: "ns", recorder)
        func set(_ p: String, _ json: String) async throws { _ = try await engine.set(namespace: "ns", path: path(p), value: try JSON.parse(json), auth: .admin) }
        try await set("", #"{"a":{"b":1,"c":"x"},"d":[1,2,3]}"#)
        try await set("a/b", #"{".value":5,".priority":2}"#)
        _ = try await engine.update(namespace: "ns", path: path("a"), values: [("c", .null), ("e", try JSON.parse(#"{"f":true}"#))], auth: .admin)
        _ = try await engine.update(namespace: "ns", path: .root, values: [("a/e/f", .number("2")), ("g/h", .string("y"))], auth: .admin)
        try await set("a", "null")
        _ = try await engine.push(namespace: "ns", path: path("list"), value: .string("p"), auth: .admin)
        func rendered(_ change: DatabaseChange) -> [String] {
            [DatabasePath.root, path("a"), path("a/e"), path("list")].flatMap { location in
                DatabaseListenEvent.events(for: change, at: location).map { "\(location) \($0.kind.rawValue) \($0.json.serialized())" }
            } + (DatabaseListenEvent.touches(change, path("a/b")) ? ["touches a/b"] : [])
        }
        let published = recorder.changes.withLock { $0 }
        let rebuilt = store.commits.withLock { $0 }.compactMap { DatabaseChange($0.0, revision: $0.1) }
        #expect(published.count == 6 && rebuilt.count == 6)
        #expect(rebuilt.map(\.revision) == published.map(\.revision))
        #expect(rebuilt.map(rendered) == published.map(rendered))
        // A commit that does not say what it is (an import) rebuilds nothing: readers re-read instead.
        #expect(DatabaseChange(DatabaseTreeCommit(namespace: "ns", expectedRevision: 0, clearedSubtrees: [.root], clearedLeaves: [], writtenLeaves: []), revision: 1) == nil)
    }
}

/// A store shared by two engines (two servers over one database) that versions its rules, counts
/// the version reads and makes each last `delay`.
final class VersionedRulesStore: DatabaseTreeStore {
    let inner = InMemoryDatabaseTreeStore()
    let version = Mutex<Int64>(0)
    let reads = Mutex(0)
    let delay: Duration

    init(delay: Duration = .zero) { self.delay = delay }

    func subtree(namespace: String, at path: DatabasePath) async throws -> DatabaseSubtree { try await inner.subtree(namespace: namespace, at: path) }
    func leaves(namespace: String, at paths: [DatabasePath]) async throws -> [DatabaseLeaf] { try await inner.leaves(namespace: namespace, at: paths) }
    func apply(_ commit: DatabaseTreeCommit) async throws -> Int64? { try await inner.apply(commit) }
    func rules(namespace: String) async throws -> String? { try await inner.rules(namespace: namespace) }
    func setRules(_ text: String, namespace: String) async throws {
        try await inner.setRules(text, namespace: namespace)
        version.withLock { $0 += 1 }
    }
    func rulesVersion(namespace: String) async throws -> Int64? {
        reads.withLock { $0 += 1 }
        let current = version.withLock { $0 }
        if delay > .zero { try await Task.sleep(for: delay) }
        return current
    }
}

@Suite struct DatabaseEngineRulesVersionTests {
    /// Allows non-admins what the rules' root `.write` says.
    struct RootWriteAuthorizer: DatabaseAuthorizer {
        func compile(_ text: String) throws(DatabaseError) -> any DatabaseRulesProgram { try StoredDatabaseRules(text: text) }
        func defaultRules() -> any DatabaseRulesProgram { StoredDatabaseRules(default: true) }
        func decide(_ auth: DatabaseAuthContext, _ rules: any DatabaseRulesProgram) -> DatabaseAccessDecision {
            DatabaseAccessDecision(allowed: auth.isAdmin || rules.document["rules"]?[".write"] == .bool(true), reason: "root .write")
        }
        func authorizeRead(_ request: DatabaseReadRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
            DatabaseAccessDecision(allowed: true, reason: "reads allowed")
        }
        func authorizeWrite(_ request: DatabaseWriteRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
            decide(request.auth, rules)
        }
    }

    static let user = DatabaseAuthContext(isAdmin: false, auth: .object([("uid", .string("u"))]))

    @Test func rulesSetThroughOneEngineHoldInTheOtherFromItsNextRequest() async throws {
        let store = VersionedRulesStore()
        let a = DatabaseEngine(store: store, authorizer: RootWriteAuthorizer())
        let b = DatabaseEngine(store: store, authorizer: RootWriteAuthorizer())
        try await b.setRules(#"{"rules":{".write":true}}"#, namespace: "ns", auth: .admin)
        _ = try await b.set(namespace: "ns", path: path("x"), value: .number("1"), auth: Self.user)
        try await a.setRules(#"{"rules":{".write":false}}"#, namespace: "ns", auth: .admin)
        await #expect(throws: DatabaseError.self) { _ = try await b.set(namespace: "ns", path: path("x"), value: .number("2"), auth: Self.user) }
        try await a.setRules(#"{"rules":{".write":true}}"#, namespace: "ns", auth: .admin)
        _ = try await b.set(namespace: "ns", path: path("x"), value: .number("3"), auth: Self.user)
        #expect(try await b.read(namespace: "ns", path: path("x"), auth: .admin).node.plainJSON() == .number("3"))
    }

    @Test func aBurstOfRequestsSharesVersionReadsThatBeganAfterThem() async throws {
        let store = VersionedRulesStore(delay: .milliseconds(50))
        let engine = DatabaseEngine(store: store, authorizer: RootWriteAuthorizer())
        _ = try await engine.rules(namespace: "ns")
        store.reads.withLock { $0 = 0 }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { _ = try await engine.rules(namespace: "ns") } }
            try await group.waitForAll()
        }
        let reads = store.reads.withLock { $0 }
        #expect(reads >= 1 && reads <= 20, "200 concurrent checks took \(reads) reads")
        // A change made while a read is in flight is seen by every call that began after it.
        store.reads.withLock { $0 = 0 }
        async let first = engine.rules(namespace: "ns")
        try await Task.sleep(for: .milliseconds(10))
        try await store.setRules(#"{"rules":{".write":false}}"#, namespace: "ns")
        let later = try await engine.rules(namespace: "ns")
        _ = try await first
        #expect(later.document["rules"]?[".write"] == .bool(false))
        #expect(store.reads.withLock { $0 } == 2)
    }

    @Test func aStoreWithoutRulesVersionsIsAskedOnce() async throws {
        final class Counting: DatabaseTreeStore {
            let inner = InMemoryDatabaseTreeStore()
            let reads = Mutex(0)
            func subtree(namespace: String, at path: DatabasePath) async throws -> DatabaseSubtree { try await inner.subtree(namespace: namespace, at: path) }
            func leaves(namespace: String, at paths: [DatabasePath]) async throws -> [DatabaseLeaf] { try await inner.leaves(namespace: namespace, at: paths) }
            func apply(_ commit: DatabaseTreeCommit) async throws -> Int64? { try await inner.apply(commit) }
            func rules(namespace: String) async throws -> String? {
                reads.withLock { $0 += 1 }
                return try await inner.rules(namespace: namespace)
            }
            func setRules(_ text: String, namespace: String) async throws { try await inner.setRules(text, namespace: namespace) }
        }
        let store = Counting()
        let engine = DatabaseEngine(store: store, authorizer: RootWriteAuthorizer())
        for _ in 0..<10 { _ = try await engine.rules(namespace: "ns") }
        #expect(store.reads.withLock { $0 } == 1, "the compiled rules stay cached, as before")
        #expect(await engine.storeVersionsRules == false)
    }
}
