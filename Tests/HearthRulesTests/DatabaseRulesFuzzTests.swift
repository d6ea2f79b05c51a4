import Foundation
import HearthCore
import Testing
@testable import HearthRules

/// Parses arbitrary text as a rules file and, when it compiles, runs reads and writes against
/// it: it must return (never trap), and every diagnostic must have a sane range.
func exerciseDatabaseRules(_ text: String) async {
    let ruleset: DatabaseRuleset
    do throws(RulesCompileError) {
        ruleset = try DatabaseRuleset.parse(text, fileName: "fuzz.json", limits: DatabaseRulesLimits(maxSteps: 20_000))
    } catch {
        #expect(!error.errors.isEmpty)
        for d in error.diagnostics { checkRange(d, text) }
        _ = error.rendered
        return
    }
    let before = DatabaseRulesTree(.object([("a", .object([("b", .string("x")), ("n", .number(1))])), ("u", .string("alice"))]))
    let after = DatabaseRulesTree(.object([("a", .object([("b", .string("y")), ("c", .object([("d", .bool(true))]))]))]))
    let auth = DatabaseRulesAuth(uid: "alice", provider: "password", token: .object([("admin", .bool(true))]))
    for path in [[], ["a"], ["a", "b"], ["a", "c", "d"], ["x", "y", "z"]] {
        for who in [auth, nil] {
            _ = try? await ruleset.read(path: path, auth: who, root: before,
                                        query: DatabaseRulesQuery(orderBy: .child("b"), equalTo: .string("x"), limitToFirst: 3), now: 5)
            _ = try? await ruleset.write(path: path, auth: who, root: before, newRoot: after, now: 5)
        }
        _ = ruleset.indexOn(path: path)
    }
}

@Suite("Realtime Database rules: fuzzing the reader, parser and evaluator")
struct DatabaseRulesFuzzTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["HEARTH_FUZZ_ITERATIONS"] ?? "") ?? 800

    /// Pieces of rules files and expressions, recombined at random.
    static let fragments = [
        "{", "}", "[", "]", ":", ",", "\"", "\"rules\"", "\".read\"", "\".write\"", "\".validate\"", "\".indexOn\"", "\"$uid\"",
        "\"a\"", "true", "false", "null", "1", "-2.5e3", "//", "/*", "*/", "\n", " ", "\\", "\\\"", "\\u00e9", "\\ud800",
        "auth", "auth.uid", "auth.token.x", "$uid", "root", "data", "newData", "now", "query", "query.limitToFirst",
        ".child('a')", ".parent()", ".val()", ".exists()", ".hasChildren(['a'])", ".hasChildren([])", ".hasChild('b')",
        ".getPriority()", ".isString()", ".length", ".contains('x')", ".matches(/a+/)", ".matches(/[/)", "/x/i", ".replace('a','b')",
        "(", ")", "==", "===", "!=", "!==", "<", ">=", "+", "-", "*", "/", "%", "!", "&&", "||", "?", "'s'", "'", "é", "😀",
        "\u{0}", ";", "=", "**", "$", "#",
    ]

    @Test func randomFragmentSoup() async {
        var rng = SplitMix(state: 0xD47A_BA5E)
        for _ in 0..<Self.iterations {
            var text = ""
            for _ in 0..<Int.random(in: 1...40, using: &rng) { text += Self.fragments.randomElement(using: &rng)! }
            await exerciseDatabaseRules(text)
        }
    }

    /// Well-formed files whose expressions are random: the expression parser and evaluator
    /// get most of the work.
    @Test func randomExpressionsInAValidFile() async {
        var rng = SplitMix(state: 0x5EED_0001)
        let expressionFragments = Self.fragments.filter { !["{", "}", "\"", "\\", "\n", "\"rules\""].contains($0) }
        for _ in 0..<Self.iterations {
            var expression = ""
            for _ in 0..<Int.random(in: 1...16, using: &rng) { expression += expressionFragments.randomElement(using: &rng)! }
            let escaped = expression.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\u{0}", with: "\\u0000")
            let kind = [".read", ".write", ".validate"].randomElement(using: &rng)!
            await exerciseDatabaseRules("{\"rules\": {\"a\": {\"$x\": {\"\(kind)\": \"\(escaped)\"}}, \"\(kind)\": \"\(escaped)\"}}")
        }
    }

    @Test func randomBytes() async {
        var rng = SplitMix(state: 0xB17E5)
        for _ in 0..<Self.iterations {
            let bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            await exerciseDatabaseRules(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// Every fixture rules file with one byte changed, removed or duplicated.
    @Test func mutatedFixtureRules() async {
        var rng = SplitMix(state: 0x3A7)
        let sources = Set(DatabaseRulesCase.all().map(\.rules)).sorted()
        for source in sources {
            let bytes = Array(source.utf8)
            guard !bytes.isEmpty else { continue }
            for _ in 0..<20 {
                var mutated = bytes
                let i = Int.random(in: 0..<mutated.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: mutated[i] = UInt8.random(in: 0...255, using: &rng)
                case 1: mutated.remove(at: i)
                default: mutated.insert(mutated[i], at: i)
                }
                await exerciseDatabaseRules(String(decoding: mutated, as: UTF8.self))
            }
        }
    }

    static func pathologicalInputs() -> [String] {
        func rule(_ expression: String) -> String { "{\"rules\": {\".read\": \"" + expression + "\"}}" }
        func chain(_ term: String, _ count: Int, _ separator: String) -> String {
            Array(repeating: term, count: count).joined(separator: separator)
        }
        var inputs: [String] = []
        inputs.append(String(repeating: "[", count: 10_000))
        inputs.append(rule(String(repeating: "(", count: 5_000) + "true" + String(repeating: ")", count: 5_000)))
        inputs.append(rule(String(repeating: "!", count: 3_000) + "true"))
        inputs.append(rule(chain("true", 600, " && ")))
        inputs.append(rule(chain("1", 600, " + ") + " > 0"))
        inputs.append(rule(chain("1", 2_000, " + ") + " > 0"))
        inputs.append(rule(chain("false", 2_000, " || ") + " || true"))
        inputs.append(rule(chain("'x'", 2_000, " + ") + " === 'x'"))
        inputs.append(rule("'a'.matches(/" + String(repeating: "(a*)*", count: 200) + "b/)"))
        inputs.append(rule(String(repeating: "data.child('a').", count: 300) + "exists()"))
        inputs.append(rule(String(repeating: "true ? ", count: 600) + "true" + String(repeating: " : false", count: 600)))
        inputs.append(String(repeating: "{\"a\": ", count: 300) + "{}" + String(repeating: "}", count: 300))
        inputs.append(rule("'" + String(repeating: "x", count: 20_000) + "' === 'x'"))
        return inputs
    }

    @Test("pathological inputs return", arguments: pathologicalInputs())
    func pathological(_ text: String) async {
        await exerciseDatabaseRules(text)
    }
}
