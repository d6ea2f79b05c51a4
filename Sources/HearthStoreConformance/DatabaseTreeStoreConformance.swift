public import HearthDatabase
import Testing
import HearthCore

/// The scenarios every ``DatabaseTreeStore`` passes — in-memory, SQLite, PostgreSQL — run by each
/// backend's test target with a factory for a fresh, empty store:
///
///     @Test(arguments: DatabaseTreeStoreConformance.all)
///     func conformance(_ scenario: DatabaseTreeStoreConformance.Case) async throws {
///         try await scenario.run { try makeStore() }
///     }
public enum DatabaseTreeStoreConformance {
    /// One scenario, named for the test report.
    public typealias Case = StoreConformanceCase<any DatabaseTreeStore>
    public typealias MakeStore = Case.MakeStore

    public static let all: [Case] = [
        Case(name: "subtreeIsExactlyTheNodeAndItsDescendants", body: subtreeIsExactlyTheNodeAndItsDescendants),
        Case(name: "applyChecksTheRevisionAndRemovesBeforeWriting", body: applyChecksTheRevisionAndRemovesBeforeWriting),
        Case(name: "rulesAreKeptPerNamespace", body: rulesAreKeptPerNamespace),
        Case(name: "engineRoundTripsThroughTheStore", body: engineRoundTripsThroughTheStore),
        Case(name: "indexedQueriesAnswerAsScansAfterRandomWrites", body: indexedQueriesAnswerAsScansAfterRandomWrites),
        Case(name: "indexesFollowTheRulesAndAreBuiltFromExistingData", body: indexesFollowTheRulesAndAreBuiltFromExistingData),
    ]

    /// Every scenario in turn, each on a fresh store.
    public static func runAll(make: MakeStore) async throws { try await Case.runAll(all, make: make) }

    static func subtreeIsExactlyTheNodeAndItsDescendants(_ make: MakeStore) async throws {
        let store = try await make()
        let commit = DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 0, clearedSubtrees: [], clearedLeaves: [],
            writtenLeaves: [leaf("a/b", "1"), leaf("a/c/d", "\"x\""), leaf("ab", "2"), leaf("a!", "3"), leaf("b", "true")])
        #expect(try await store.apply(commit) == 1)
        let a = try await store.subtree(namespace: "ns", at: path("a"))
        #expect(a.revision == 1)
        #expect(Set(a.leaves) == [leaf("a/b", "1"), leaf("a/c/d", "\"x\"")])
        let all = try await store.subtree(namespace: "ns", at: .root)
        #expect(all.leaves.count == 5)
        #expect(try await store.subtree(namespace: "other", at: .root).leaves.isEmpty)
        #expect(try await store.subtree(namespace: "other", at: .root).revision == 0)
    }

    static func applyChecksTheRevisionAndRemovesBeforeWriting(_ make: MakeStore) async throws {
        let store = try await make()
        _ = try await store.apply(DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 0, clearedSubtrees: [], clearedLeaves: [], writtenLeaves: [leaf("a/b", "1"), leaf("x", "5")]))
        // A stale revision changes nothing.
        #expect(try await store.apply(DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 0, clearedSubtrees: [.root], clearedLeaves: [], writtenLeaves: [])) == nil)
        #expect(try await store.subtree(namespace: "ns", at: .root).leaves.count == 2)
        // Clear a subtree and a scalar, write under both.
        #expect(try await store.apply(DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 1, clearedSubtrees: [path("a")], clearedLeaves: [path("x")],
            writtenLeaves: [leaf("a", "7"), leaf("x/y", "8")])) == 2)
        let all = try await store.subtree(namespace: "ns", at: .root)
        #expect(Set(all.leaves) == [leaf("a", "7"), leaf("x/y", "8")])
        #expect(try await store.leaves(namespace: "ns", at: [path("a"), path("x"), path("x/y")]) == [leaf("a", "7"), leaf("x/y", "8")])
    }

    static func rulesAreKeptPerNamespace(_ make: MakeStore) async throws {
        let store = try await make()
        #expect(try await store.rules(namespace: "ns") == nil)
        try await store.setRules("{\"rules\":{}}", namespace: "ns")
        #expect(try await store.rules(namespace: "ns") == "{\"rules\":{}}")
        #expect(try await store.rules(namespace: "other") == nil)
        #expect(try await store.subtree(namespace: "ns", at: .root).revision == 0)
    }

    static func engineRoundTripsThroughTheStore(_ make: MakeStore) async throws {
        let engine = DatabaseEngine(store: try await make(), authorizer: DefaultDatabaseAuthorizer(emulator: true))
        let value = try JSON.parse(#"{"users":{"alice":{"name":"Alice","age":30,".priority":2},"bob":true},"n":1.5}"#)
        _ = try await engine.set(namespace: "ns", path: .root, value: value, auth: .admin)
        let read = try await engine.read(namespace: "ns", path: .root, auth: .admin)
        #expect(read.node.plainJSON().serialized() == #"{"n":1.5,"users":{"alice":{"age":30,"name":"Alice"},"bob":true}}"#)
        #expect(read.node.exportJSON()["users"]?["alice"]?[".priority"] == .number("2"))
    }

    static func indexedQueriesAnswerAsScansAfterRandomWrites(_ make: MakeStore) async throws {
        let store = try await make()
        let engine = DatabaseEngine(store: store, authorizer: DefaultDatabaseAuthorizer(emulator: true))
        try await engine.setRules(
            #"{"rules":{"items":{".indexOn":["score","meta/rank",".value"]},"users":{"$uid":{"posts":{".indexOn":["score","meta/rank",".value"]}}}}}"#,
            namespace: "ns", auth: .admin)
        #expect(try await store.indexes(namespace: "ns").count == 6)
        var random = ReplayableGenerator(state: 42)
        func scalarJSON() -> JSON {
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2, 3: return .number(String(Int.random(in: -5...5, using: &random)))
            case 4: return .string(["a", "b", "B", "", "zz"].randomElement(using: &random)!)
            default: return .object([("deep", .number("1"))])
            }
        }
        func childJSON() -> JSON {
            switch Int.random(in: 0..<5, using: &random) {
            case 0: return scalarJSON()
            case 1: return .object([("score", scalarJSON()), (".priority", .number("3"))])
            default: return .object([("score", scalarJSON()), ("meta", .object([("rank", scalarJSON())])), ("name", .string("n"))])
            }
        }
        let locations = [path("items"), path("users/alice/posts"), path("users/bob/posts")]
        let queries: [DatabaseQuery] = {
            var out: [DatabaseQuery] = []
            for order in [DatabaseQuery.Order.child(path("score")), .child(path("meta/rank")), .value] {
                var q = DatabaseQuery(order: order)
                out.append(q)
                q.limitToFirst = 3
                out.append(q)
                q.limitToFirst = nil
                q.limitToLast = 2
                out.append(q)
                var r = DatabaseQuery(order: order)
                r.startAt = .some(.number(0))
                r.endBefore = .some(.string("b"))
                out.append(r)
                var e = DatabaseQuery(order: order)
                e.equalTo = .some(.number(1))
                out.append(e)
                var n = DatabaseQuery(order: order)
                n.startAfter = .some(nil)
                n.limitToFirst = 4
                out.append(n)
            }
            return out
        }()
        for step in 0..<120 {
            let location = locations[step % 3 == 0 ? 0 : Int.random(in: 0..<3, using: &random)]
            let child = "c\(Int.random(in: 0..<12, using: &random))"
            switch Int.random(in: 0..<7, using: &random) {
            case 0:  // the whole location
                let members = (0..<Int.random(in: 0..<6, using: &random)).map { ("c\($0)", childJSON()) }
                _ = try await engine.set(namespace: "ns", path: location, value: .object(members), auth: .admin)
            case 1:  // a field of a child
                _ = try await engine.set(namespace: "ns", path: location.child(child).child("score"), value: scalarJSON(), auth: .admin)
            case 2:  // a nested field
                _ = try await engine.set(namespace: "ns", path: path("\(location)/\(child)/meta/rank"), value: scalarJSON(), auth: .admin)
            case 3:  // a multi-path update across children and locations
                _ = try await engine.update(
                    namespace: "ns", path: .root,
                    values: [("\(location)/\(child)", childJSON()), ("\(locations[0])/c\(12 + step % 12)/score", scalarJSON())], auth: .admin)
            case 4:  // delete a child
                _ = try await engine.set(namespace: "ns", path: location.child(child), value: .null, auth: .admin)
            case 5:  // above the locations
                if step % 20 == 5 { _ = try await engine.set(namespace: "ns", path: path("users"), value: .null, auth: .admin) }
            default:
                _ = try await engine.set(namespace: "ns", path: location.child(child), value: childJSON(), auth: .admin)
            }
            for location in locations {
                let whole = try await engine.read(namespace: "ns", path: location, auth: .admin).node
                for query in queries {
                    let indexed = try await engine.read(namespace: "ns", path: location, query: query, auth: .admin, unindexed: .reject)
                    #expect(indexed.warning == nil)
                    let expected = query.apply(whole)
                    #expect(indexed.node == expected, "step \(step) \(location) \(query)")
                }
            }
        }
        // The index itself, not a scan, answered: the store serves the range without the engine.
        var top = DatabaseQuery(order: .child(path("score")))
        top.limitToFirst = 2
        let spec = DatabaseIndexSpec(location: ["items"], order: .child(path("score")))
        let subtree = try #require(try await store.indexedChildren(namespace: "ns", location: path("items"), index: spec, range: DatabaseIndexRange(top)))
        let whole = try await engine.read(namespace: "ns", path: path("items"), auth: .admin).node
        #expect(DatabaseNode(leaves: subtree.leaves, base: path("items")) == top.apply(whole))
    }

    static func indexesFollowTheRulesAndAreBuiltFromExistingData(_ make: MakeStore) async throws {
        let store = try await make()
        let engine = DatabaseEngine(store: store, authorizer: DefaultDatabaseAuthorizer(emulator: true))
        let items = JSON.object((0..<50).map { ("k\($0)", .object([("h", .number(String(($0 * 7) % 50)))])) })
        _ = try await engine.set(namespace: "ns", path: path("items"), value: items, auth: .admin)
        var query = DatabaseQuery(order: .child(path("h")))
        query.limitToFirst = 3
        // No .indexOn: a scan with Firebase's hint, or Firebase's error.
        let scanned = try await engine.read(namespace: "ns", path: path("items"), query: query, auth: .admin)
        #expect(scanned.warning == #"Index not defined, add ".indexOn": "h", for path "/items", to the rules"#)
        await #expect(throws: DatabaseError.self) {
            _ = try await engine.read(namespace: "ns", path: path("items"), query: query, auth: .admin, unindexed: .reject)
        }
        // Rules with the index build it from the data already there.
        try await engine.setRules(#"{"rules":{"items":{".indexOn":"h"}}}"#, namespace: "ns", auth: .admin)
        let indexed = try await engine.read(namespace: "ns", path: path("items"), query: query, auth: .admin, unindexed: .reject)
        #expect(indexed.warning == nil)
        #expect(indexed.node.plainJSON().serialized() == #"{"k0":{"h":0},"k36":{"h":2},"k43":{"h":1}}"#)
        #expect(Set(indexed.node.children.keys) == Set(scanned.node.children.keys))
        // Rules without it drop it.
        try await engine.setRules(#"{"rules":{".read":true}}"#, namespace: "ns", auth: .admin)
        #expect(try await store.indexes(namespace: "ns").isEmpty)
        #expect(try await store.indexedChildren(
            namespace: "ns", location: path("items"), index: DatabaseIndexSpec(location: ["items"], order: .child(path("h"))),
            range: DatabaseIndexRange(query)) == nil)
    }
    static func path(_ text: String) -> DatabasePath { DatabasePath(text.split(separator: "/").map(String.init)) }
    static func leaf(_ p: String, _ value: String) -> DatabaseLeaf { DatabaseLeaf(path: path(p), value: value) }
}

/// A small deterministic generator, so a failing sequence of writes can be replayed.
struct ReplayableGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state ^ (state >> 29)
    }
}
