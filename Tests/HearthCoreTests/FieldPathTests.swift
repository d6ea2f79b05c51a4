import HearthCore
import Testing

@Suite("FieldPath")
struct FieldPathTests {
    struct Parse: Sendable, CustomTestStringConvertible {
        var text: String
        var segments: [String]
        var testDescription: String { text }
    }

    @Test(
        "Parses dotted paths, backtick-quoted segments and escapes",
        arguments: [
            Parse(text: "a", segments: ["a"]),
            Parse(text: "a.b.c", segments: ["a", "b", "c"]),
            Parse(text: "_x1.Y_2", segments: ["_x1", "Y_2"]),
            Parse(text: "`a.b`.c", segments: ["a.b", "c"]),
            Parse(text: "a.`b c`", segments: ["a", "b c"]),
            Parse(text: "`1a`", segments: ["1a"]),
            Parse(text: "`a\\`b`", segments: ["a`b"]),
            Parse(text: "`a\\\\b`", segments: ["a\\b"]),
            Parse(text: "`\u{E9}t\u{E9}`", segments: ["\u{E9}t\u{E9}"]),
            Parse(text: "`~*/[]`", segments: ["~*/[]"]),
            Parse(text: "`a`.`b`", segments: ["a", "b"]),
            Parse(text: "__name__", segments: ["__name__"]),
        ])
    func parses(_ c: Parse) throws {
        let path = try FieldPath(parsing: c.text)
        #expect(path.segments == c.segments)
    }

    @Test(
        "Rejects malformed paths with INVALID_ARGUMENT",
        arguments: [
            "", ".", "a.", ".a", "a..b", "1a", "a.1b", "a b", "a-b", "a~b", "a*", "a/b", "a[0]", "a]", "`a", "`a`b", "a`b`",
            "`a\\", "`a`.", "\u{E9}", "a.`b`c", "``a``",
        ])
    func rejects(_ text: String) {
        do {
            let p = try FieldPath(parsing: text)
            Issue.record("\"\(text)\" parsed as \(p.segments)")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test(
        "Canonical form quotes only what is not a simple identifier",
        arguments: [
            (["a", "b"], "a.b"),
            (["a.b", "c"], "`a.b`.c"),
            (["1a"], "`1a`"),
            (["a`b"], "`a\\`b`"),
            (["a\\b"], "`a\\\\b`"),
            (["b c", "_ok"], "`b c`._ok"),
            (["\u{1F600}"], "`\u{1F600}`"),
            (["__name__"], "__name__"),
        ])
    func canonical(_ segments: [String], _ expected: String) throws {
        let path = FieldPath(segments)
        #expect(path.canonical == expected)
        #expect(try FieldPath(parsing: expected).segments == segments)
        #expect(path.description == expected)
    }

    @Test("canonical → parse round-trips for random segments")
    func roundTrip() throws {
        var g = SeededGenerator(seed: 5)
        let alphabet: [String] = ["a", "Z", "_", "0", ".", "`", "\\", " ", "~", "\u{E9}", "\u{1F600}", "/"]
        for _ in 0..<500 {
            let segments = (0..<Int.random(in: 1...3, using: &g)).map { _ in
                (0..<Int.random(in: 1...4, using: &g)).map { _ in g.pick(alphabet) }.joined()
            }
            let path = FieldPath(segments)
            #expect(try FieldPath(parsing: path.canonical).segments == segments, "\(segments) → \(path.canonical)")
        }
    }

    @Test("Document name, prefixes and ordering")
    func helpers() throws {
        #expect(try FieldPath(parsing: "__name__").isDocumentName)
        #expect(!FieldPath(["a", "__name__"]).isDocumentName)
        #expect(FieldPath(["a"]).isPrefix(of: FieldPath(["a", "b"])))
        #expect(FieldPath(["a", "b"]).isPrefix(of: FieldPath(["a", "b"])))
        #expect(!FieldPath(["a", "b"]).isPrefix(of: FieldPath(["a"])))
        #expect(!FieldPath(["a"]).isPrefix(of: FieldPath(["ab"])))
        #expect(FieldPath(["a"]) < FieldPath(["a", "b"]))
        #expect(FieldPath(["a", "z"]) < FieldPath(["b"]))
        #expect(FieldPath(["\u{FFFF}"]) < FieldPath(["\u{1F600}"]))
        #expect(FieldPath(["a"]).appending("b") == FieldPath(["a", "b"]))
    }
}
