import Foundation
import HearthCore
import Testing
@testable import HearthRules

/// Checks that a diagnostic's range is real: inside the text, start before end, and its
/// line and column agree with its byte offset (columns count Unicode scalars).
func checkRangeExactly(_ d: Diagnostic, _ source: RulesSource, _ label: String) {
    let bytes = Array(source.text.utf8)
    let r = d.range
    #expect(r.start.offset >= 0 && r.start.offset <= r.end.offset && r.end.offset <= bytes.count,
            "\(label): range \(r.start.offset)..<\(r.end.offset) outside 0...\(bytes.count): \(d.message)")
    guard r.start.offset >= 0, r.start.offset <= bytes.count else { return }
    var line = 1
    var lineStart = 0
    for i in 0..<r.start.offset where bytes[i] == 10 {
        line += 1
        lineStart = i + 1
    }
    let column = String(decoding: bytes[lineStart..<r.start.offset], as: UTF8.self).unicodeScalars.count + 1
    #expect(r.start.line == line && r.start.column == column,
            "\(label): \(r.start.line):\(r.start.column) but offset \(r.start.offset) is \(line):\(column): \(d.message)")
    _ = d.rendered(in: source)
}

/// Compiles `text`; on failure every diagnostic must carry an exact range, on success every
/// request must be decided (never trap) within a small step budget.
@discardableResult
func compileAndEvaluate(_ text: String, label: String, rng: inout SplitMix) -> (compiled: Bool, allowed: Int) {
    var allowed = 0
    do {
        let ruleset = try Ruleset.compile(text, fileName: "mutant.rules")
        for w in ruleset.warnings { checkRangeExactly(w, ruleset.source, label) }
        let time = Timestamp(seconds: 1_700_000_000, nanos: 0)
        let docs = RulesDocumentSet(before: ["(default)/users/alice": ["owner": .string("alice"), "n": .integer(1)]])
        for _ in 0..<3 {
            let method = RulesMethod.allCases.randomElement(using: &rng)!
            let path = ["users/alice", "users/bob", "a/b/c/d", "posts/p1"].randomElement(using: &rng)!
            let auth: RulesAuth? = Bool.random(using: &rng) ? RulesAuth(uid: "alice") : nil
            var options = RulesEvaluationOptions(maxSteps: Int.random(in: 1...200, using: &rng), recordCoverage: true)
            options.explain = Bool.random(using: &rng)
            var ledger = DocumentAccessLedger.singleDocument
            let request: RulesRequest
            if ruleset.service == .storage {
                request = RulesRequest(method: method, target: .storageObject(bucket: "b", name: path), auth: auth, time: time,
                                       newResource: RulesStorageObject(name: path, bucket: "b", size: 10).rulesValue)
            } else if method == .list {
                request = .firestoreQuery(collection: ResourcePath(["users"]), auth: auth, time: time,
                                          query: RulesQuery(filter: .field(FieldPath(["owner"]), .equal, .string("alice")), limit: 5))
            } else {
                request = .firestore(method, path: ResourcePath(parsing: path), auth: auth, time: time,
                                     existing: ["owner": .string("alice")], after: ["owner": .string("bob")])
            }
            let d = ruleset.evaluate(request, documents: docs, ledger: &ledger, options: options)
            #expect(d.steps <= options.maxSteps + 1, "\(label): \(d.steps) steps over a budget of \(options.maxSteps)")
            #expect(d.isAllowed == (d.rule != nil), "\(label): \(d.reason)")
            if let c = d.coverage { _ = RulesCoverageReport(ruleset: ruleset, coverage: c).html() }
            if d.isAllowed { allowed += 1 }
        }
        return (true, allowed)
    } catch {
        #expect(!error.errors.isEmpty, "\(label): a compile error without errors")
        for d in error.diagnostics { checkRangeExactly(d, error.source, label) }
        return (false, 0)
    }
}

@Suite("Mutation fuzzing of real rules files")
struct MutationFuzzTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["HEARTH_FUZZ_ITERATIONS"] ?? "") ?? 1500

    /// A token of a fixture file with the whitespace before it, and a class: tokens of one
    /// class can replace each other without breaking the grammar most of the time.
    struct Piece {
        var text: String
        var kind: String
    }

    static func tokenClass(_ k: Token.Kind) -> String {
        switch k {
        case .plus, .minus, .star, .slash, .percent, .eq, .ne, .lt, .le, .gt, .ge, .and, .or: "binary"
        case .int, .float, .string, .bytes: "literal"
        default: "\(k)"
        }
    }

    /// The fixture rules files, split into tokens.
    static func tokenizedSources() -> [[Piece]] {
        let sources = RulesCase.all().map(\.rules) + DiagnosticCase.all().compactMap { Fixtures.text($0.json["rules"]) }
        return Array(Set(sources)).sorted().map { text in
            let bytes = Array(text.utf8)
            var lexer = Lexer(bytes: bytes)
            var pieces: [Piece] = []
            var last = 0
            var guardCount = 0
            while guardCount < 100_000 {
                guardCount += 1
                let t = lexer.next()
                if t.kind == .eof { break }
                let end = max(last, min(bytes.count, t.range.end.offset))
                pieces.append(Piece(text: String(decoding: bytes[last..<end], as: UTF8.self), kind: tokenClass(t.kind)))
                last = end
            }
            if last < bytes.count { pieces.append(Piece(text: String(decoding: bytes[last...], as: UTF8.self), kind: "tail")) }
            return pieces
        }
    }

    /// Token-level mutations of every fixture file: delete, duplicate, swap and move tokens,
    /// and replace a token with another of its class (an operator, a literal, a name), which
    /// mostly keeps the file compiling so the evaluator runs the mutant.
    @Test func tokenMutations() {
        var rng = SplitMix(state: 0x5EED)
        let files = Self.tokenizedSources()
        #expect(files.count > 10)
        let perFile = max(4, Self.rounds / files.count)
        var compiled = 0
        var total = 0
        for (f, tokens) in files.enumerated() where !tokens.isEmpty {
            var byClass: [String: [Piece]] = [:]
            for p in tokens { byClass[p.kind, default: []].append(p) }
            for round in 0..<perFile {
                var t = tokens
                for _ in 0..<Int.random(in: 1...3, using: &rng) where !t.isEmpty {
                    let i = Int.random(in: 0..<t.count, using: &rng)
                    let j = Int.random(in: 0..<t.count, using: &rng)
                    switch Int.random(in: 0..<8, using: &rng) {
                    case 0: t.remove(at: i)
                    case 1: t.insert(t[i], at: i)
                    case 2: t.swapAt(i, j)
                    case 3: t.insert(t[i], at: j)
                    default:
                        // Keep the whitespace before the token, take another's text.
                        let other = byClass[t[i].kind]!.randomElement(using: &rng)!
                        let lead = t[i].text.prefix { $0.isWhitespace }
                        t[i].text = String(lead) + String(other.text.drop { $0.isWhitespace })
                    }
                }
                if compileAndEvaluate(t.map(\.text).joined(), label: "file \(f) round \(round)", rng: &rng).compiled { compiled += 1 }
                total += 1
            }
        }
        // Both paths are exercised: many mutants still compile (and are evaluated), many do not.
        #expect(compiled > total / 10 && compiled < total)
        print("tokenMutations: \(compiled) of \(total) mutants compiled")
    }

    /// Random bytes (including invalid UTF-8, NUL and control characters) written over
    /// fixture files.
    @Test func byteMutations() {
        var rng = SplitMix(state: 0xB17E)
        let files = Self.tokenizedSources().map { Array($0.map(\.text).joined().utf8) }
        let perFile = max(4, Self.rounds / files.count)
        for (f, original) in files.enumerated() where !original.isEmpty {
            for round in 0..<perFile {
                var b = original
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
                    let i = Int.random(in: 0..<b.count, using: &rng)
                    b[i] = UInt8.random(in: 0...255, using: &rng)
                }
                compileAndEvaluate(String(decoding: b, as: UTF8.self), label: "bytes file \(f) round \(round)", rng: &rng)
            }
        }
    }

    /// Random well-formed expressions over the request, the resource and the built-ins,
    /// evaluated with small budgets.
    @Test func randomExpressions() {
        var rng = SplitMix(state: 0xE4B2)
        var compiled = 0
        var allowed = 0
        for round in 0..<Self.rounds {
            let e = Self.expression(depth: 0, &rng)
            let text = """
                rules_version = '2';
                service cloud.firestore {
                  match /databases/{database}/documents {
                    function f(x) { let y = x; return y; }
                    match /{coll}/{id} { allow read, write: if \(e); }
                  }
                }
                """
            let r = compileAndEvaluate(text, label: "expression \(round): \(e)", rng: &rng)
            if r.compiled { compiled += 1 }
            allowed += r.allowed
        }
        // The generator must reach the evaluator, not only the checker: most expressions
        // compile, and some requests are allowed.
        #expect(compiled > Self.rounds / 2, "only \(compiled) of \(Self.rounds) expressions compiled")
        #expect(allowed > 0)
        print("randomExpressions: \(compiled) of \(Self.rounds) compiled, \(allowed) requests allowed")
    }

    static let atoms = [
        "1", "0", "-1", "2.5", "'a'", "''", "true", "false", "null", "[1, 'a']", "{'k': 1}", "b'\\x00'",
        "request.auth", "request.auth.uid", "request.time", "request.path", "request.resource.data",
        "resource.data", "resource.data.owner", "resource.id", "id", "coll", "database", "request.query.limit",
        "duration.value(1, 's')", "timestamp.date(2024, 1, 1)", "latlng.value(1, 2)", "math.abs(-3)",
        "get(/databases/$(database)/documents/users/alice).data", "exists(/databases/$(database)/documents/users/$(id))",
        "hashing.sha256('x')", "f(1)", "path('/a/b')", "request.resource.data.diff(resource.data)",
    ]
    static let binaries = ["==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&&", "||", "in", "is"]
    static let methods = [
        ".size()", ".keys()", ".values()", ".toSet()", ".lower()", ".matches('a.*')", ".split('/')", ".hasAll([1])",
        ".hasAny(['a'])", ".get('k', 0)", ".affectedKeys()", ".join(',')", "[0]", "['k']", ".data", ".seconds()",
        ".toMillis()", ".trim()", ".replace('a', 'b')", ".concat([1])", ".removeAll([1])",
    ]

    static func expression(depth: Int, _ rng: inout SplitMix) -> String {
        if depth > 4 || Int.random(in: 0..<3, using: &rng) == 0 { return atoms.randomElement(using: &rng)! }
        switch Int.random(in: 0..<6, using: &rng) {
        case 0, 1:
            let op = binaries.randomElement(using: &rng)!
            if op == "is" {
                return "(\(expression(depth: depth + 1, &rng)) is \(["int", "string", "map", "list", "bool"].randomElement(using: &rng)!))"
            }
            return "(\(expression(depth: depth + 1, &rng)) \(op) \(expression(depth: depth + 1, &rng)))"
        case 2: return "!\(expression(depth: depth + 1, &rng))"
        case 3: return "\(expression(depth: depth + 1, &rng))\(methods.randomElement(using: &rng)!)"
        case 4:
            return "(\(expression(depth: depth + 1, &rng)) ? \(expression(depth: depth + 1, &rng)) : \(expression(depth: depth + 1, &rng)))"
        default: return "debug(\(expression(depth: depth + 1, &rng)))"
        }
    }

    // MARK: Oversized and deeply nested rulesets are refused with a diagnostic

    @Test func oversizedRulesetIsRefused() {
        let body = String(repeating: "    match /c/{d} { allow read: if request.auth != null && d == 'x'; }\n", count: 4000)
        let text = "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n\(body)  }\n}\n"
        #expect(text.utf8.count > HearthRules.maxSourceBytes)
        do {
            _ = try Ruleset.compile(text)
            Issue.record("an oversized ruleset compiled")
        } catch {
            #expect(error.errors.count == 1)
            #expect(error.rendered.hasPrefix("firestore.rules:1:1: The ruleset is \(text.utf8.count) bytes; the limit is 262144 bytes."),
                    "\(error.rendered)")
        }
    }

    @Test(arguments: [
        (String(repeating: "(", count: 200) + "true" + String(repeating: ")", count: 200), "nested too deeply"),
        (String(repeating: "!", count: 300) + "true", "nested too deeply"),
        (Array(repeating: "[1]", count: 1).joined() + String(repeating: "[0]", count: 600) + " == 1", "too complex"),
    ])
    func deeplyNestedExpressionIsRefused(_ expression: String, _ message: String) {
        let text = "service cloud.firestore {\n  match /{d=**} {\n    allow read: if \(expression);\n  }\n}\n"
        do {
            _ = try Ruleset.compile(text)
            Issue.record("a deeply nested expression compiled")
        } catch {
            #expect(error.errors.contains { $0.message.contains(message) }, "\(error.rendered.prefix(400))")
            #expect(error.errors.allSatisfy { $0.range.start.line == 3 }, "\(error.rendered.prefix(400))")
            for d in error.diagnostics { checkRangeExactly(d, error.source, "nested") }
        }
    }

    @Test func deeplyNestedMatchesAreRefused() {
        let opens = (0..<12).map { "match /m\($0) {" }.joined(separator: "\n")
        let text = "service cloud.firestore {\n" + opens + "\nallow read;\n" + String(repeating: "}\n", count: 13)
        do {
            _ = try Ruleset.compile(text)
            Issue.record("12 nested match blocks compiled")
        } catch {
            #expect(error.errors.contains { $0.message.contains("nested more than 10 levels deep") }, "\(error.rendered)")
            #expect(error.rendered.contains("firestore.rules:12:1"), "\(error.rendered)")
        }
    }
}
