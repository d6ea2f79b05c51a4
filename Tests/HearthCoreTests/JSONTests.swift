import HearthCore
import Testing

@Suite("JSON")
struct JSONTests {
    @Test("Parses values, keeps key order and number lexemes")
    func parses() throws {
        let v = try JSON.parse(#" { "z": 1, "a": [true, false, null, -0, 1.5e-3, 12345678901234567890], "s": "x" } "#)
        guard case .object(let members) = v else { Issue.record("not an object"); return }
        #expect(members.map(\.0) == ["z", "a", "s"])
        #expect(v["a"] == .array([.bool(true), .bool(false), .null, .number("-0"), .number("1.5e-3"), .number("12345678901234567890")]))
        #expect(v["s"]?.stringValue == "x")
        #expect(v["missing"] == nil)
        #expect(try JSON.parse("[]") == .array([]))
        #expect(try JSON.parse("{}") == .object([]))
        #expect(try JSON.parse("\t\r\n 0 \n") == .number("0"))
        #expect(try JSON.parse(#""""#) == .string(""))
    }

    @Test(
        "Decodes string escapes",
        arguments: [
            (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
            (#""\u0041\u00e9\u00E9""#, "A\u{E9}\u{E9}"),
            (#""\u0000""#, "\u{0}"),
            (#""\ud83d\ude00""#, "\u{1F600}"),
            (#""\uFFFF""#, "\u{FFFF}"),
            ("\"\u{1F600}\u{E9}\"", "\u{1F600}\u{E9}"),
            (#""a\u0301""#, "a\u{301}"),
        ])
    func escapes(_ text: String, _ expected: String) throws {
        let parsed = try JSON.parse(text)
        guard case .string(let s) = parsed else { Issue.record("not a string"); return }
        #expect(Array(s.utf8) == Array(expected.utf8))
    }

    @Test(
        "Rejects malformed input with INVALID_ARGUMENT",
        arguments: [
            "", " ", "{", "}", "[", "]", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{a:1}", "{'a':1}", "{\"a\" 1}",
            "[1 2]", "nul", "tru", "fals", "True", "NaN", "Infinity", "-Infinity", "+1", "01", "-01", "1.", ".5", "-", "1e", "1e+",
            "0x10", "1 2", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"\\udc00\"",
            "\"a\nb\"", "\"\u{1}\"", "[1]x", "{} {}", "\u{FEFF}{}", "[\"\\\"]", "\"\\",
        ])
    func rejects(_ text: String) {
        do {
            let v = try JSON.parse(text)
            Issue.record("\(text.debugDescription) parsed as \(v)")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test("Rejects invalid UTF-8 in strings")
    func invalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0x5C, 0x6E, 0xC0, 0xAF, 0x22]] {
            #expect(throws: HearthError.self) { try JSON.parse(bytes) }
        }
    }

    @Test("Nesting is limited, and deep input throws instead of overflowing the stack")
    func nesting() throws {
        _ = try JSON.parse(String(repeating: "[", count: 500) + String(repeating: "]", count: 500))
        #expect(throws: HearthError.self) { try JSON.parse(String(repeating: "[", count: 600) + String(repeating: "]", count: 600)) }
        #expect(throws: HearthError.self) { try JSON.parse(String(repeating: "{\"a\":", count: 100_000)) }
    }

    @Test("serialized() output parses back to the same value, with control characters escaped")
    func serialization() throws {
        let v = JSON.object([
            ("s", .string("q\"b\\n\n\r\t\u{0}\u{1F}\u{7F}\u{1F600}")), ("n", .number("-1.5e10")), ("a", .array([.null, .bool(true), .object([])])),
        ])
        let text = v.serialized()
        #expect(!text.utf8.contains { $0 < 0x20 })
        #expect(try JSON.parse(text) == v)
        #expect(try JSON.parse(v.serializedBytes()) == v)
        #expect(JSON.array([.number(1), .string("a")]).serialized() == #"[1,"a"]"#)
    }

    @Test("Random and mutated bytes never crash the parser; what parses re-serializes stably")
    func fuzz() {
        var g = SeededGenerator(seed: 1234)
        let corpus = [
            #"{"a":[1,2.5e3,"x\u00e9\n",{"b":null}],"c":true}"#, #"[[[[]]],{},"\ud83d\ude00",-0.0e-0]"#, #""\\\"/""#,
        ].map { Array($0.utf8) }
        let alphabet = Array(#"{}[]:,"\/-+.0123456789eEtrufalsn ubdfx"#.utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xA9, 0xFF, 0xED]
        var parsed = 0
        for round in 0..<30_000 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0: bytes = (0..<Int.random(in: 0...16, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
            case 1: bytes = (0..<Int.random(in: 0...24, using: &g)).map { _ in g.pick(alphabet) }
            default:
                bytes = g.pick(corpus)
                for _ in 0..<Int.random(in: 1...3, using: &g) {
                    let i = Int.random(in: 0..<bytes.count, using: &g)
                    switch Int.random(in: 0..<3, using: &g) {
                    case 0: bytes[i] = g.pick(alphabet)
                    case 1: bytes.remove(at: i)
                    default: bytes.insert(g.pick(alphabet), at: i)
                    }
                    if bytes.isEmpty { break }
                }
            }
            do {
                let v = try JSON.parse(bytes)
                parsed += 1
                #expect(try JSON.parse(v.serializedBytes()) == v)
            } catch {
                #expect(error.code == .invalidArgument)
            }
        }
        #expect(parsed > 100)
    }
}
