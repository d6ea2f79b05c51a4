import Foundation
import HearthCore
import Synchronization
import Testing

@testable import HearthDatabase

final class RecordingSubscriber: DatabaseChangeSubscriber {
    let changes = Mutex<[DatabaseChange]>([])
    func deliver(_ change: DatabaseChange) { changes.withLock { $0.append(change) } }
}

struct EngineFixture {
    let engine: DatabaseEngine
    let ns = "test"

    init(emulator: Bool = true, now: Int64 = 1_700_000_000_000) {
        engine = DatabaseEngine(store: InMemoryDatabaseTreeStore(), authorizer: DefaultDatabaseAuthorizer(emulator: emulator), clock: { now })
    }

    func set(_ p: String, _ json: String, auth: DatabaseAuthContext = .admin) async throws {
        _ = try await engine.set(namespace: ns, path: path(p), value: try JSON.parse(json), auth: auth)
    }

    func get(_ p: String, query: DatabaseQuery? = nil) async throws -> String {
        try await engine.read(namespace: ns, path: path(p), query: query, auth: .admin).node.plainJSON().serialized()
    }
}

@Suite struct DatabaseEngineTests {
    @Test func pushIDsAreTwentyCharactersAndStrictlyIncreasing() {
        let generator = PushIDGenerator()
        var previous = generator.next(now: 1_000)
        #expect(previous.count == 20)
        for _ in 0..<5000 {
            let id = generator.next(now: 1_000)
            #expect(id.count == 20 && id > previous)
            previous = id
        }
        let later = generator.next(now: 2_000)
        #expect(later > previous)
        #expect(later.prefix(8) != previous.prefix(8))
    }

    @Test func setReplacesAndScalarAncestorsBecomeObjects() async throws {
        let db = EngineFixture()
        try await db.set("a", "1")
        try await db.set("a/b/c", #""x""#)
        #expect(try await db.get("") == #"{"a":{"b":{"c":"x"}}}"#)
        try await db.set("a/b", "null")
        #expect(try await db.get("") == "null")
        try await db.set("list", #"[1,2,null,4]"#)
        #expect(try await db.get("list") == "[1,2,null,4]")
        #expect(try await db.get("list/3") == "4")
    }

    @Test(arguments: [
        (#"{"a.b":1}"#, "a.b"), (#"{"a$":1}"#, "a$"), (#"{"a#":1}"#, "a#"), (#"{"[":1}"#, "["), (#"{"x\u0001":1}"#, "x\u{1}"),
        (#"{"":1}"#, ""),
    ])
    func invalidKeysAreRefusedAndNothingIsWritten(_ body: String, _ key: String) async throws {
        let db = EngineFixture()
        await #expect(throws: DatabaseError.self) { try await db.set("p", body) }
        #expect(try await db.get("") == "null")
    }

    @Test func depthLimitIsThirtyTwo() async throws {
        let db = EngineFixture()
        let ok = (0..<31).map { "k\($0)" }.joined(separator: "/")
        try await db.set(ok, #"{"last":1}"#)  // 32 levels
        await #expect(throws: DatabaseError.self) { try await db.set(ok, #"{"last":{"too":1}}"#) }
        #expect(throws: DatabaseError.self) { try DatabasePath.parse((0..<33).map { "k\($0)" }.joined(separator: "/")) }
    }

    @Test func serverValues() async throws {
        let db = EngineFixture(now: 1234)
        try await db.set("t", #"{".sv":"timestamp"}"#)
        #expect(try await db.get("t") == "1234")
        try await db.set("n", #"{".sv":{"increment":5}}"#)
        try await db.set("n", #"{".sv":{"increment":2.5}}"#)
        #expect(try await db.get("n") == "7.5")
        await #expect(throws: DatabaseError.self) { try await db.set("x", #"{".sv":"nope"}"#) }
    }

    @Test func prioritiesAreKeptAndExported() async throws {
        let db = EngineFixture()
        try await db.set("a", #"{".value":"hi",".priority":3}"#)
        try await db.set("b", #"{"c":1,".priority":"p"}"#)
        let node = try await db.engine.read(namespace: db.ns, path: .root, auth: .admin).node
        #expect(node.exportJSON().serialized() == #"{"a":{".value":"hi",".priority":3},"b":{"c":1,".priority":"p"}}"#)
        #expect(node.plainJSON().serialized() == #"{"a":"hi","b":{"c":1}}"#)
        var query = DatabaseQuery(order: .priority)
        query.limitToFirst = 1
        #expect(try await db.get("", query: query) == #"{"a":"hi"}"#)
    }

    @Test func aNodeThatStopsExistingLosesItsPriority() async throws {
        let db = EngineFixture()
        try await db.set("a", #"{"b":1,".priority":5}"#)
        try await db.set("a/b", "null")
        try await db.set("a/c", "2")
        let node = try await db.engine.read(namespace: db.ns, path: path("a"), auth: .admin).node
        #expect(node.exportJSON().serialized() == #"{"c":2}"#)
        try await db.set("x", #"{"y":{"z":1,".priority":1},".priority":2}"#)
        _ = try await db.engine.update(namespace: db.ns, path: path("x"), values: [("y/z", .null)], auth: .admin)
        try await db.set("x/y/w", "3")
        let x = try await db.engine.read(namespace: db.ns, path: path("x"), auth: .admin).node
        #expect(x.exportJSON().serialized() == #"{"y":{"w":3}}"#)
    }

    @Test func multiPathUpdateIsAtomic() async throws {
        let db = EngineFixture()
        try await db.set("u", #"{"a":{"since":1},"b":{"since":2}}"#)
        _ = try await db.engine.update(namespace: db.ns, path: path("u"), values: [("a/since", .number(10)), ("b/since", .number(20))], auth: .admin)
        #expect(try await db.get("u") == #"{"a":{"since":10},"b":{"since":20}}"#)
        await #expect(throws: DatabaseError.self) {
            _ = try await db.engine.update(namespace: db.ns, path: path("u"), values: [("a/since", .number(1)), ("b", try JSON.parse(#"{"x.y":1}"#))], auth: .admin)
        }
        #expect(try await db.get("u") == #"{"a":{"since":10},"b":{"since":20}}"#)
        await #expect(throws: DatabaseError.self) {
            _ = try await db.engine.update(namespace: db.ns, path: path("u"), values: [("a", .number(1)), ("a/b", .number(2))], auth: .admin)
        }
    }

    @Test func etagPreconditions() async throws {
        let db = EngineFixture()
        try await db.set("e", #"{"v":1}"#)
        let current = try await db.engine.read(namespace: db.ns, path: path("e"), auth: .admin).node
        let stale = try await db.engine.set(namespace: db.ns, path: path("e"), value: .number(2), auth: .admin, options: .init(ifMatch: "nope"))
        guard case .preconditionFailed(let node, let etag) = stale else { Issue.record("expected a precondition failure"); return }
        #expect(node == current && etag == current.etag)
        let fresh = try await db.engine.set(namespace: db.ns, path: path("e"), value: .number(2), auth: .admin, options: .init(ifMatch: etag))
        guard case .written(let written, _) = fresh else { Issue.record("expected a write"); return }
        #expect(written.etag != etag)
        #expect(try await db.get("e") == "2")
    }

    @Test func queriesOrderMixedTypesAsTheRealtimeDatabase() async throws {
        let db = EngineFixture()
        try await db.set("m", #"{"o":{"x":1},"s":"a","n2":2,"n1":1,"t":true,"f":false,"z":null,"s0":"0"}"#)
        let node = try await db.engine.read(namespace: db.ns, path: path("m"), auth: .admin).node
        #expect(DatabaseQuery(order: .value).selectedKeys(node) == ["f", "t", "n1", "n2", "s0", "s", "o"])
        var range = DatabaseQuery(order: .value)
        range.startAt = .some(.number(1.5))
        range.endAt = .some(.string("0"))
        #expect(range.selectedKeys(node) == ["n2", "s0"])
        var after = DatabaseQuery(order: .value)
        after.startAfter = .some(.number(1))
        after.endBefore = .some(.string("a"))
        #expect(after.selectedKeys(node) == ["n2", "s0"])
        var keys = DatabaseQuery(order: .key)
        keys.limitToLast = 2
        #expect(keys.selectedKeys(node) == ["s0", "t"])
        #expect(DatabaseOrdering.keyPrecedes("2", "10") && DatabaseOrdering.keyPrecedes("10", "a") && DatabaseOrdering.keyPrecedes("-1", "0"))
        var child = DatabaseQuery(order: .child(path("h/w")))
        child.equalTo = .some(.number(3))
        try await db.set("c", #"{"a":{"h":{"w":3}},"b":{"h":{"w":4}},"c":{"h":{"w":3}}}"#)
        #expect(try await db.get("c", query: child) == #"{"a":{"h":{"w":3}},"c":{"h":{"w":3}}}"#)
        var bad = DatabaseQuery(order: .key)
        bad.startAt = .some(.number(1))
        #expect(throws: DatabaseError.self) { try bad.validated() }
    }

    @Test func feedDeliversEveryWriteOnceInCommitOrder() async throws {
        let db = EngineFixture()
        let recorder = RecordingSubscriber()
        _ = db.engine.feed.subscribe(namespace: db.ns, recorder)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask { try await db.set("c/k\(i % 5)", "\(i)") }
            }
            try await group.waitForAll()
        }
        let changes = recorder.changes.withLock { $0 }
        #expect(changes.map(\.revision) == Array(1...50))
        // The last change to each key is the stored value.
        var last: [String: String] = [:]
        for change in changes {
            guard case .set(let p, let node) = change.kind else { continue }
            last[p.last!] = node.plainJSON().serialized()
        }
        for (key, value) in last { #expect(try await db.get("c/\(key)") == value) }
    }

    @Test func listenEventsAreAsFineGrainedAsTheWrite() throws {
        let push = DatabaseChange(namespace: "n", revision: 1, kind: .set(path: path("p/users/-K1"), node: DatabaseNode(value: .string(""))))
        #expect(DatabaseListenEvent.events(for: push, at: path("p")) == [DatabaseListenEvent(kind: .put, path: path("users/-K1"), data: .string(""))])
        #expect(DatabaseListenEvent.events(for: push, at: path("q")).isEmpty)
        let above = DatabaseChange(
            namespace: "n", revision: 2, kind: .set(path: path("p"), node: DatabaseNode(children: ["users": DatabaseNode(value: .number(1))])))
        #expect(DatabaseListenEvent.events(for: above, at: path("p/users")) == [DatabaseListenEvent(kind: .put, path: .root, data: .number(1))])
        let update = DatabaseChange(namespace: "n", revision: 3, kind: .update(path: path("p"), children: [(path("a"), DatabaseNode(value: .bool(true))), (path("b"), .empty)]))
        #expect(DatabaseListenEvent.events(for: update, at: .root) == [DatabaseListenEvent(kind: .patch, path: path("p"), data: try JSON.parse(#"{"a":true,"b":null}"#))])
        let rules = DatabaseChange(namespace: "n", revision: 0, kind: .rules)
        #expect(DatabaseListenEvent.events(for: rules, at: .root).isEmpty && !DatabaseListenEvent.touches(rules, .root))
    }

    @Test func defaultAuthorizerAllowsOnlyWhatFirebaseDefaultsAllow() async throws {
        let user = DatabaseAuthContext(isAdmin: false, auth: .object([("uid", .string("u1"))]))
        let emulator = EngineFixture(emulator: true)
        try await emulator.set("a", "1", auth: user)
        let production = EngineFixture(emulator: false)
        await #expect(throws: DatabaseError.self) { try await production.set("a", "1", auth: user) }
        try await production.set("a", "1", auth: .admin)
        try await emulator.engine.setRules(#"{"rules":{".read":true}}"#, namespace: emulator.ns, auth: .admin)
        await #expect(throws: DatabaseError.self) { try await emulator.set("a", "2", auth: user) }
        let recorder = RecordingSubscriber()
        _ = emulator.engine.feed.subscribe(namespace: emulator.ns, recorder)
        try await emulator.engine.setRules(#"{"rules":{".read":false}}"#, namespace: emulator.ns, auth: .admin)
        #expect(recorder.changes.withLock { changes in changes.count == 1 && { if case .rules = changes[0].kind { true } else { false } }() })
        await #expect(throws: DatabaseError.self) { try await emulator.engine.setRules("{}", namespace: emulator.ns, auth: .admin) }
        await #expect(throws: DatabaseError.self) { try await emulator.engine.setRules(#"{"rules":{}}"#, namespace: emulator.ns, auth: user) }
    }
}
