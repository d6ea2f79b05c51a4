import HearthCore
import HearthDatabase
import Testing

@testable import HearthServer

@Suite("Realtime Database WebSocket codec")
struct DatabaseWebSocketCodecTests {
    // MARK: Frames

    @Test func shortMessagesAreOneFrame() {
        #expect(DatabaseWebSocketFrames.split("{\"t\":\"d\"}") == ["{\"t\":\"d\"}"])
        let exact = String(repeating: "x", count: 16384)
        #expect(DatabaseWebSocketFrames.split(exact) == [exact])
    }

    @Test func longMessagesAreCountedAndSplit() {
        let message = String(repeating: "a", count: 16384 * 2 + 5)
        let frames = DatabaseWebSocketFrames.split(message)
        #expect(frames.first == "3")
        #expect(frames.dropFirst().map(\.utf16.count) == [16384, 16384, 5])
        #expect(frames.dropFirst().joined() == message)
    }

    @Test func splittingNeverCutsASurrogatePair() {
        // 16383 ASCII then an emoji (2 UTF-16 units): the emoji must start the second frame.
        let message = String(repeating: "a", count: 16383) + "😀" + "b"
        let frames = DatabaseWebSocketFrames.split(message)
        #expect(frames == ["2", String(repeating: "a", count: 16383), "😀b"])
    }

    @Test func reassemblesCountedFramesAndIgnoresKeepalives() throws {
        var reassembler = DatabaseWebSocketFrames.Reassembler()
        #expect(try reassembler.receive("0") == nil)
        #expect(try reassembler.receive("{\"a\":1}") == "{\"a\":1}")
        #expect(try reassembler.receive("3") == nil)
        #expect(try reassembler.receive("{\"a\"") == nil)
        #expect(try reassembler.receive(":") == nil)
        #expect(try reassembler.receive("2}") == "{\"a\":2}")
        // A frame of digits inside a split message is data, not a count.
        #expect(try reassembler.receive("2") == nil)
        #expect(try reassembler.receive("12") == nil)
        #expect(try reassembler.receive("34") == "1234")
    }

    @Test func refusesOversizedMessages() {
        var reassembler = DatabaseWebSocketFrames.Reassembler()
        #expect(throws: DatabaseWebSocketProtocolError.self) { try reassembler.receive("999999") }
        var other = DatabaseWebSocketFrames.Reassembler()
        let big = String(repeating: "x", count: DatabaseWebSocketFrames.maxMessageBytes / 2 + 1)
        #expect(throws: DatabaseWebSocketProtocolError.self) {
            _ = try other.receive("3")
            _ = try other.receive(big)
            _ = try other.receive(big)
        }
    }

    // MARK: Messages

    @Test func parsesRequestsAndControlMessages() throws {
        #expect(
            try DatabaseWebSocketInbound.parse(#"{"t":"d","d":{"r":7,"a":"p","b":{"p":"/a","d":1}}}"#)
                == .request(id: 7, action: "p", body: .object([("p", .string("/a")), ("d", .number("1"))])))
        #expect(try DatabaseWebSocketInbound.parse(#"{"t":"c","d":{"t":"p","d":{}}}"#) == .control(type: "p", data: .object([])))
    }

    @Test(arguments: [
        "not json", "[]", #"{"t":"x","d":{}}"#, #"{"t":"d"}"#, #"{"t":"d","d":{"a":"p","b":{}}}"#,
        #"{"t":"d","d":{"r":"1","a":"p"}}"#, #"{"t":"d","d":{"r":1,"b":{}}}"#, #"{"t":"d","d":{"r":1,"a":"p","b":3}}"#,
        #"{"t":"d","d":{"r":-1,"a":"p"}}"#, #"{"t":"c","d":{}}"#,
    ])
    func refusesMalformedMessages(_ text: String) {
        #expect(throws: DatabaseWebSocketProtocolError.self) { try DatabaseWebSocketInbound.parse(text) }
    }

    @Test func outboundShapes() throws {
        #expect(
            DatabaseWebSocketOutbound.hello(timestamp: 1_767_225_600_000, host: "127.0.0.1:9000", session: "abc")
                == #"{"t":"c","d":{"t":"h","d":{"ts":1767225600000,"v":"5","h":"127.0.0.1:9000","s":"abc"}}}"#)
        #expect(DatabaseWebSocketOutbound.response(3, status: "ok", data: .string("")) == #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":""}}}"#)
        #expect(
            DatabaseWebSocketOutbound.data("d", path: DatabasePath(["a", "b"]), data: .null, tag: 2)
                == #"{"t":"d","d":{"a":"d","b":{"p":"a/b","d":null,"t":2}}}"#)
    }

    // MARK: Queries

    static func node(_ json: String) throws -> DatabaseNode {
        var node = DatabaseNode()
        guard case .object(let members) = try JSON.parse(json) else { return node }
        for (key, value) in members {
            var child = DatabaseNode()
            if case .object(let fields) = value {
                for (name, field) in fields { child.children[name] = DatabaseNode(value: DatabaseScalar(field)) }
            } else {
                child.value = DatabaseScalar(value)
            }
            node.children[key] = child
        }
        return node
    }

    static func keys(_ query: String, _ data: String) throws -> [String] {
        let applied = try DatabaseWireQuery.parse(JSON.parse(query)).apply(node(data))
        return applied.children.keys.sorted { DatabaseOrdering.keyPrecedes($0, $1) }
    }

    @Test func appliesLimitsAndChildIndexes() throws {
        let data = #"{"a":{"x":3},"b":{"x":1},"c":{"x":2},"d":{"y":0}}"#
        #expect(try Self.keys(#"{"i":"x","l":2,"vf":"l"}"#, data) == ["b", "d"])  // d (no x) sorts first: null
        #expect(try Self.keys(#"{"i":"x","l":2,"vf":"r"}"#, data) == ["a", "c"])
        #expect(try Self.keys(#"{"i":"x","sp":2,"ep":3}"#, data) == ["a", "c"])
        #expect(try Self.keys(#"{"i":"x","sp":2,"sn":"[MAX_NAME]"}"#, data) == ["a"])  // startAfter(2)
        #expect(try Self.keys(#"{"i":"x","ep":2,"en":"[MIN_NAME]"}"#, data) == ["b", "d"])  // endBefore(2)
        #expect(try Self.keys(#"{"i":".key","sp":"b","ep":"c"}"#, data) == ["b", "c"])
    }

    @Test func honoursKeyTieBreakers() throws {
        let data = #"{"a":{"x":1},"b":{"x":1},"c":{"x":1},"d":{"x":2}}"#
        #expect(try Self.keys(#"{"i":"x","sp":1,"sn":"b"}"#, data) == ["b", "c", "d"])
        #expect(try Self.keys(#"{"i":"x","sp":1,"sn":"b","l":1,"vf":"l"}"#, data) == ["b"])
        #expect(try Self.keys(#"{"i":"x","ep":1,"en":"b"}"#, data) == ["a", "b"])
        #expect(try Self.keys(#"{"i":"x","sp":1,"sn":"b","sin":false}"#, data) == ["c", "d"])
    }

    @Test(arguments: [
        #"{"l":0}"#, #"{"l":"3"}"#, #"{"vf":"x","l":1}"#, #"{"i":3}"#, #"{"sp":{}}"#, #"{"zz":1}"#, #"{"sn":"a"}"#,
        #"{"i":".key","sp":1}"#, "[]",
    ])
    func refusesInvalidQueries(_ text: String) throws {
        let json = try JSON.parse(text)
        #expect(throws: DatabaseError.self) { try DatabaseWireQuery.parse(json) }
    }

    // MARK: Hash

    @Test func hashesAsTheSDKsDo() {
        // Expected values computed independently (Python: SHA-1 of the SDK's hash text).
        #expect(DatabaseWireHash.hash(.empty) == "")
        #expect(DatabaseWireHash.hash(DatabaseNode(value: .number(1))) == "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ=")
        #expect(DatabaseWireHash.hash(DatabaseNode(value: .string("hi"))) == "jrODRP7VX0SYea22x77RsWRrgcQ=")
        #expect(DatabaseWireHash.hash(DatabaseNode(value: .bool(true))) == "E5z61QM0lN/U2WsOnusszCTkR8M=")
        let object = DatabaseNode(children: [
            "b": DatabaseNode(value: .string("hi"), priority: .number(5)), "a": DatabaseNode(value: .number(1)),
        ])
        #expect(DatabaseWireHash.hash(object) == "D3Tm2X4+EYZCqNNfvt9PzEY6iKU=")
    }
}
