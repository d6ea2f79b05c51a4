import Foundation
import HearthCore
import Testing

@testable import HearthDatabase

/// A small deterministic generator, so a failing sequence of writes can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state ^ (state >> 29)
    }
}

@Suite struct DatabaseIndexTests {
    static let scalars: [DatabaseScalar?] = [
        nil, .bool(false), .bool(true), .number(-1e300), .number(-2.5), .number(-0.0), .number(0), .number(1), .number(2),
        .number(10), .number(1e300), .string(""), .string("A"), .string("a"), .string("ab"), .string("b"), .string("\u{0}"),
        .string("é"), .string("😀"), .string("\u{FFFF}"),
    ]

    @Test func sortKeysOrderAsTheDatabaseOrdersValues() {
        var values: [(DatabaseScalar?, Bool)] = Self.scalars.map { ($0, false) }
        values.append((nil, true))
        for (a, aObject) in values {
            for (b, bObject) in values {
                let expected = DatabaseOrdering.compare(a, aIsObject: aObject, b, bIsObject: bObject)
                let ka = DatabaseIndexKey.sortKey(a, isObject: aObject), kb = DatabaseIndexKey.sortKey(b, isObject: bObject)
                let actual = ka == kb ? 0 : (ka.lexicographicallyPrecedes(kb) ? -1 : 1)
                #expect(actual == expected, "\(String(describing: a)) vs \(String(describing: b))")
            }
        }
    }

    @Test func childKeysOrderAsTheDatabaseOrdersKeys() {
        let keys = ["-2147483648", "-1", "0", "1", "9", "10", "2147483647", "2147483648", "01", "-", "A", "a", "aa", "b", "é", "😀", "\u{FFFD}"]
        for a in keys {
            for b in keys {
                let ka = DatabaseIndexKey.childKey(a), kb = DatabaseIndexKey.childKey(b)
                let actual = ka == kb ? 0 : (ka.lexicographicallyPrecedes(kb) ? -1 : 1)
                #expect(actual == DatabaseOrdering.compareKeys(a, b), "\(a) vs \(b)")
            }
        }
    }

    @Test func specsParseFromRulesAndRoundTripTheirNames() throws {
        let rules = try StoredDatabaseRules(
            text: #"{"rules":{"items":{".indexOn":["score","meta/rank"]},"users":{"$uid":{"posts":{".indexOn":".value"}}},"x":{".indexOn":".key"}}}"#)
        let expected: Set<DatabaseIndexSpec> = [
            DatabaseIndexSpec(location: ["items"], order: .child(path("score"))),
            DatabaseIndexSpec(location: ["items"], order: .child(path("meta/rank"))),
            DatabaseIndexSpec(location: ["users", nil, "posts"], order: .value),
        ]
        #expect(rules.indexes == expected)
        for spec in expected { #expect(DatabaseIndexSpec(name: spec.description) == spec) }
        let wildcard = DatabaseIndexSpec(location: ["users", nil, "posts"], order: .value)
        #expect(wildcard.matches(path("users/alice/posts")))
        #expect(!wildcard.matches(path("users/alice")))
        #expect(!wildcard.matches(path("people/alice/posts")))
    }

    /// Random writes of every kind under indexed locations; after each, every query is
    /// answered from the index exactly as a scan answers it.
    @Test(arguments: StoreKind.allCases)
    func indexedQueriesAnswerAsScansAfterRandomWrites(_ kind: StoreKind) async throws {
        let store = try kind.make()
        let engine = DatabaseEngine(store: store, authorizer: DefaultDatabaseAuthorizer(emulator: true))
        try await engine.setRules(
            #"{"rules":{"items":{".indexOn":["score","meta/rank",".value"]},"users":{"$uid":{"posts":{".indexOn":["score","meta/rank",".value"]}}}}}"#,
            namespace: "ns", auth: .admin)
        #expect(try await store.indexes(namespace: "ns").count == 6)
        var random = SeededGenerator(state: 42)
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

    @Test(arguments: StoreKind.allCases)
    func indexesFollowTheRulesAndAreBuiltFromExistingData(_ kind: StoreKind) async throws {
        let store = try kind.make()
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
}
