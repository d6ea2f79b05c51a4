import Foundation
import Synchronization
import Testing

import HearthClientCore
@testable import HearthClientDatabase

/// The Realtime Database client's pure parts: JSON, values, Firebase's order, query windows,
/// event generation, hashes, push ids, and what a malformed server message does.
@Suite struct DatabaseModelTests {
    func node(_ json: String) throws -> DatabaseNode { DatabaseNode(json: try DatabaseJSON.parse(json)) }

    @Test func jsonRoundTripsAndRefusesBrokenText() throws {
        let text = #"{"a":[1,2.5,-3e2,true,null],"b":"x\"\\\n\u00e9\ud83d\ude00","c":{}}"#
        let parsed = try DatabaseJSON.parse(text)
        #expect(parsed["b"]?.stringValue == "x\"\\\n\u{e9}\u{1F600}")
        #expect(try DatabaseJSON.parse(parsed.serialized()) == parsed)
        #expect(DatabaseJSON.number(3).serialized() == "3")
        #expect(DatabaseJSON.number(0.1).serialized() == "0.1")
        for broken in ["", "{", #"{"a":}"#, "[1,]", "tru", #""\ud800""#, "1 2", "NaN", #"{"a" 1}"#, "01x"] {
            #expect(throws: DatabaseJSON.ParseError.self) { try DatabaseJSON.parse(broken) }
        }
    }

    @Test func exportFormatPrioritiesAndArrays() throws {
        let n = try node(#"{"b":"hi","a":{".value":1,".priority":5},".priority":"p","gone":null,"empty":{}}"#)
        #expect(n.children.keys.sorted() == ["a", "b"])
        #expect(n.priority == .string("p"))
        #expect(n.child("a").priority == .number(5))
        #expect(n.exportJSON().serialized() == #"{"a":{".value":1,".priority":5},"b":"hi",".priority":"p"}"#)
        let list = try node(#"{"0":"a","1":"b","3":"d"}"#).appValue() as? [Any]
        #expect(list?.count == 4)
        #expect(list?[2] is NSNull)
        #expect(try node(#"{"0":"a","5":"b"}"#).appValue() is [String: Any])
        #expect(try node("null").appValue() is NSNull)
        #expect(try node("3").appValue() as? Int == 3)
        #expect(try node("3.5").appValue() as? Double == 3.5)
        // setting below a leaf makes an object; deleting the last child removes the parent
        let set = try node(#"{"x":1}"#).setting(["x", "y"], to: DatabaseNode(leaf: .bool(true)))
        #expect(set.exportJSON().serialized() == #"{"x":{"y":true}}"#)
        #expect(set.setting(["x", "y"], to: .empty).isEmpty)
    }

    @Test func appValuesBecomeWireJSON() throws {
        let value: [String: Any] = [
            "s": "text", "i": 42, "d": 1.5, "b": true, "n": NSNumber(value: 7), "f": NSNumber(value: false),
            "list": [1, "two"], "nested": ["k": NSNull()], "none": Optional<Int>.none as Any,
        ]
        let json = try DatabaseValues.json(value)
        #expect(json["s"] == .string("text"))
        #expect(json["i"] == .number(42))
        #expect(json["b"] == .bool(true))
        #expect(json["n"] == .number(7))
        #expect(json["f"] == .bool(false))
        #expect(json["list"] == .array([.number(1), .string("two")]))
        #expect(json["none"] == .null)
        #expect(try DatabaseValues.json(ServerValue.increment(2)) == .object([(".sv", .object([("increment", .number(2))]))]))
        #expect(throws: DatabaseError.self) { try DatabaseValues.json(["bad.key": 1]) }
        #expect(throws: DatabaseError.self) { try DatabaseValues.json(Date()) }
        #expect(throws: DatabaseError.self) { try DatabaseValues.json(Double.nan) }
    }

    @Test func firebaseOrderForKeysAndValues() throws {
        let keys = ["b", "10", "a", "-5", "2", "002", "[MAX_NAME]", "Z", "[MIN_NAME]", "2147483648"]
        let sorted = keys.sorted { DatabaseOrdering.compareNames($0, $1) < 0 }
        #expect(sorted == ["[MIN_NAME]", "-5", "2", "002", "10", "2147483648", "Z", "a", "b", "[MAX_NAME]"])
        let values = try ["{\"o\":1}", "\"b\"", "\"a\"", "10", "-1", "true", "false", "null"].map(node)
        let ordered = values.sorted { DatabaseOrdering.compareValues($0, $1) < 0 }.map { $0.exportJSON().serialized() }
        #expect(ordered == ["null", "false", "true", "-1", "10", "\"a\"", "\"b\"", #"{"o":1}"#])
    }

    @Test func queryWindowsMatchFirebase() throws {
        let dinos = try node(#"{"bruhathkayosaurus":{"height":25},"lambeosaurus":{"height":2.1},"linhenykus":{"height":0.6},"pterodactyl":{"height":0.6},"stegosaurus":{"height":4},"triceratops":{"height":3},"nemo":{"name":"nemo"}}"#)
        func keys(_ change: (inout DatabaseQueryParams) -> Void) -> [String] {
            var params = DatabaseQueryParams()
            params.index = .child(["height"])
            change(&params)
            return params.window(dinos).map(\.key)
        }
        #expect(keys { _ in } == ["nemo", "linhenykus", "pterodactyl", "lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"])
        #expect(keys { $0.limit = .first(2) } == ["nemo", "linhenykus"])
        #expect(keys { $0.limit = .last(2) } == ["stegosaurus", "bruhathkayosaurus"])
        #expect(keys { $0.start = .init(value: .number(3), name: nil, inclusive: true) } == ["triceratops", "stegosaurus", "bruhathkayosaurus"])
        #expect(keys { $0.start = .init(value: .number(3), name: nil, inclusive: false) } == ["stegosaurus", "bruhathkayosaurus"])
        #expect(keys { $0.end = .init(value: .number(2.1), name: nil, inclusive: false) } == ["nemo", "linhenykus", "pterodactyl"])
        #expect(keys {
            $0.start = .init(value: .number(0.6), name: "pterodactyl", inclusive: true)
            $0.end = .init(value: .number(0.6), name: nil, inclusive: true)
        } == ["pterodactyl"])
        #expect(keys {
            $0.start = .init(value: .number(0.6), name: nil, inclusive: true)
            $0.end = .init(value: .number(0.6), name: nil, inclusive: true)
        } == ["linhenykus", "pterodactyl"])
        var byKey = DatabaseQueryParams()
        byKey.index = .key
        byKey.start = .init(value: .string("p"), name: nil, inclusive: true)
        byKey.limit = .first(2)
        #expect(byKey.window(dinos).map(\.key) == ["pterodactyl", "stegosaurus"])
        #expect(byKey.wire?.serialized() == #"{"sp":"p","sin":true,"l":2,"vf":"l","i":".key"}"#)
        var after = DatabaseQueryParams()
        after.index = .child(["height"])
        after.start = .init(value: .number(3), name: nil, inclusive: false)
        #expect(after.wire?.serialized() == #"{"sp":3,"sn":"[MAX_NAME]","sin":false,"i":"height"}"#)
        #expect(DatabaseQueryParams().wire == nil)
    }

    @Test func childEventsInFirebaseOrder() throws {
        var params = DatabaseQueryParams()
        params.index = .child(["n"])
        let old = try node(#"{"a":{"n":1},"b":{"n":2},"c":{"n":3}}"#)
        let new = try node(#"{"b":{"n":5},"c":{"n":3},"d":{"n":0},"e":{"n":4,"x":1}}"#)
        let added = DatabaseEventGenerator.events(for: .childAdded, old: old, new: new, params: params)
        #expect(added.map(\.childKey) == ["d", "e"])
        #expect(added.map(\.previousSiblingKey) == [nil, "c"])
        let removed = DatabaseEventGenerator.events(for: .childRemoved, old: old, new: new, params: params)
        #expect(removed.map(\.childKey) == ["a"])
        let changed = DatabaseEventGenerator.events(for: .childChanged, old: old, new: new, params: params)
        #expect(changed.map(\.childKey) == ["b"])
        #expect(changed.first?.previousSiblingKey == "e")
        let moved = DatabaseEventGenerator.events(for: .childMoved, old: old, new: new, params: params)
        #expect(moved.map(\.childKey) == ["b"])
        #expect(DatabaseEventGenerator.events(for: .value, old: new, new: new, params: params).isEmpty)
        #expect(DatabaseEventGenerator.events(for: .value, old: nil, new: .empty, params: params).count == 1)
        // the first view: every child is added, in order
        let first = DatabaseEventGenerator.events(for: .childAdded, old: nil, new: old, params: params)
        #expect(first.map(\.childKey) == ["a", "b", "c"])
    }

    @Test func hashesAreTheSDKs() throws {
        #expect(DatabaseNode.empty.hash == "")
        #expect(try node("1").hash == "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ=")
        #expect(try node(#""hi""#).hash == "jrODRP7VX0SYea22x77RsWRrgcQ=")
        #expect(try node("true").hash == "E5z61QM0lN/U2WsOnusszCTkR8M=")
        // children in priority order: b (no priority) before a (priority 5)
        #expect(try node(#"{"a":{".value":1,".priority":5},"b":"hi"}"#).hash == "ywL22/GWIBVQuERwVrr75PbuRnA=")
    }

    @Test func pushIDsAreTimeOrdered() {
        let ids = (0..<200).map { _ in PushID.make() }
        #expect(ids.allSatisfy { $0.count == 20 })
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
        #expect(PushID.make(now: 1_000).prefix(8) < PushID.make(now: 2_000).prefix(8))
        #expect(DatabaseValues.isValidKey(ids[0]))
    }

    @Test func malformedServerMessagesEndObserversWithAnError() async throws {
        var options = HearthOptions(projectID: "demo-malformed")
        options.databasePort = 1
        let name = "malformed-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: options)
        let database = Database.database(app: HearthApp.app(name: name)!)
        database.goOffline()  // no socket: the messages below are fed in by hand
        let errors = Mutex<[NSError]>([])
        database.reference(withPath: "a").observe(.value, with: { _ in }, withCancel: { error in errors.withLock { $0.append(error as NSError) } })
        database.reference(withPath: "b").queryLimited(toFirst: 1).observe(.childAdded, with: { _ in }, withCancel: { error in
            errors.withLock { $0.append(error as NSError) }
        })
        let repo = database.repo
        // goOffline ended the (never opened) socket's generation: frames are fed as the current one
        let generation = repo.state.withLock { $0.generation }
        #expect(repo.receive(#"{"t":"d","d":{"a":"d","b":{"p":"a","d":1}}}"#, generation: generation))  // fine (not yet complete)
        #expect(!repo.receive(#"{"t":"d","d":{"a":"d","b":{"d":1}}}"#, generation: generation))  // a push without a path
        try await databaseEventually { errors.withLock { $0.count } == 2 }
        #expect(errors.withLock { $0.allSatisfy { $0.domain == DatabaseErrorDomain && $0.code == 9999 } })
        // every other kind of unreadable text is refused the same way, never a crash
        for text in ["not json", "[]", #"{"t":"x","d":{}}"#, #"{"t":"d","d":{"r":1}}"#, #"{"t":"d","d":{"a":"m","b":{"p":"a","d":3}}}"#, #"{"t":"c","d":{}}"#,
            #"{"t":"d","d":{"r":1e300,"b":{"s":"ok"}}}"#, #"{"t":"d","d":{"a":"d","b":{"p":"a","d":1,"t":1.5}}}"#,
        ] {
            #expect(!repo.receive(text, generation: generation))
        }
        // counted frames are joined before parsing
        #expect(repo.receive("2", generation: generation))
        #expect(repo.receive(#"{"t":"c","d":{"t":"#, generation: generation))
        #expect(repo.receive(#""e","d":"x"}}"#, generation: generation))
    }
}

/// Polls `condition` until it holds (10 s at most).
func databaseEventually(_ what: String = "condition", _ condition: @Sendable () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    // A last look: on a loaded machine the sleep itself may outlast the deadline.
    if try await condition() { return }
    Issue.record("timed out waiting for \(what)")
    throw CancellationError()
}
