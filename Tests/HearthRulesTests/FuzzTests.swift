import Foundation
import HearthCore
import Testing
@testable import HearthRules

/// A small deterministic generator (SplitMix64), so a failing input can be reproduced.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Compiles (and, when it compiles, evaluates) arbitrary text; checks the parser's
/// promises: it returns, every diagnostic has a sane range, and nothing traps.
func exercise(_ text: String) {
    do {
        let r = try Ruleset.compile(text, fileName: "fuzz.rules")
        for d in r.warnings { checkRange(d, text) }
        let paths = ["a/b", "users/alice", "a/b/c/d", "x/y/z/w/v/u"]
        for p in paths {
            for m in [RulesMethod.get, .create, .update, .delete] {
                var ledger = DocumentAccessLedger.singleDocument
                let req = RulesRequest.firestore(m, path: ResourcePath(parsing: p), auth: RulesAuth(uid: "alice"),
                                                 time: Timestamp(seconds: 1_700_000_000, nanos: 0),
                                                 existing: ["a": .integer(1)], after: ["a": .integer(2)])
                _ = r.evaluate(req, documents: RulesDocumentSet(before: ["(default)/a/b": ["x": .string("y")]]), ledger: &ledger,
                               options: RulesEvaluationOptions(recordCoverage: true))
            }
            var ledger = DocumentAccessLedger.singleDocument
            _ = r.evaluate(.firestoreQuery(collection: ResourcePath(parsing: "a"), auth: nil, time: Timestamp(seconds: 0, nanos: 0),
                                           query: RulesQuery(filter: .field(try! FieldPath(parsing: "x"), .greaterThan, .integer(1)))),
                           ledger: &ledger)
        }
    } catch {
        #expect(!error.errors.isEmpty)
        for d in error.diagnostics { checkRange(d, text) }
        _ = error.rendered
    }
}

func checkRange(_ d: Diagnostic, _ text: String) {
    let n = text.utf8.count
    #expect(d.range.start.line >= 1 && d.range.start.column >= 1)
    #expect(d.range.start.offset >= 0 && d.range.start.offset <= n && d.range.end.offset <= n + 1)
}

@Suite("Fuzzing the lexer, parser and evaluator")
struct FuzzTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["HEARTH_FUZZ_ITERATIONS"] ?? "") ?? 1500

    static let fragments = [
        "rules_version = '2';", "rules_version", "service", "cloud.firestore", "firebase.storage", "match", "allow", "if",
        "function", "let", "return", "read", "write", "get", "list", "create", "update", "delete", "{", "}", "(", ")",
        "[", "]", ",", ";", ":", ".", "?", "!", "-", "+", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||",
        "=", "in", "is", "int", "string", "true", "false", "null", "request", "resource", "request.auth.uid",
        "resource.data", "$(", "$(x)", "/databases/{database}/documents", "/{doc=**}", "/{x}", "/a/b", "'str'", "\"s\"",
        "b'\\x41'", "'\\", "'", "\"", "0", "1", "9223372036854775808", "1.5", "1e9", "0x1F", "x", "f", "f(", "g()",
        "get(/databases/$(database)/documents/a/b)", "exists(", "math.abs(", "'a'.matches('a*')", "[1, 2]", "{'k': 1}",
        "//", "/*", "*/", "\n", " ", "\t", "é", "😀", "\u{0}", "$", "@", "#", "`", "~", "\\",
    ]

    @Test func randomTokenSoup() {
        var rng = SplitMix(state: 42)
        for _ in 0..<Self.iterations {
            let n = Int.random(in: 0...60, using: &rng)
            var text = ""
            for _ in 0..<n {
                text += Self.fragments.randomElement(using: &rng)!
                if Bool.random(using: &rng) { text += " " }
            }
            exercise(text)
        }
    }

    @Test func randomBytes() {
        var rng = SplitMix(state: 7)
        for _ in 0..<Self.iterations {
            let n = Int.random(in: 0...200, using: &rng)
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...127, using: &rng) }
            exercise(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// Mutations of every rules file in the fixtures: delete, duplicate, insert, swap.
    @Test func mutatedFixtureRules() {
        var rng = SplitMix(state: 2024)
        let sources = RulesCase.all().map(\.rules) + DiagnosticCase.all().compactMap { Fixtures.text($0.json["rules"]) }
        let unique = Array(Set(sources)).sorted()
        #expect(unique.count > 10)
        let perFile = max(10, Self.iterations / max(1, unique.count) * 2)
        for src in unique {
            let chars = Array(src.unicodeScalars)
            for _ in 0..<perFile {
                var c = chars
                for _ in 0..<Int.random(in: 1...4, using: &rng) where !c.isEmpty {
                    let i = Int.random(in: 0..<c.count, using: &rng)
                    let j = min(c.count, i + Int.random(in: 0...12, using: &rng))
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: c.removeSubrange(i..<j)
                    case 1: c.insert(contentsOf: c[i..<j], at: i)
                    case 2: c.insert(contentsOf: Self.fragments.randomElement(using: &rng)!.unicodeScalars, at: i)
                    default: if j > i { c.swapAt(i, j - 1) }
                    }
                }
                var s = ""
                s.unicodeScalars.append(contentsOf: c)
                exercise(s)
            }
        }
    }

    /// Inputs that once crashed or hung (none so far) plus pathological shapes.
    struct Input: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var testDescription: String { name }
    }

    @Test(arguments: FuzzTests.pathological())
    func pathologicalInput(_ input: Input) {
        let start = ContinuousClock.now
        exercise(input.text)
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    static func pathological() -> [Input] {
        let wrap = { (e: String) in "rules_version = '2';\nservice cloud.firestore {\n match /{d=**} { allow read: if \(e); }\n}\n" }
        let texts = [
            wrap(String(repeating: "(", count: 50_000)),
            wrap(String(repeating: "!", count: 50_000) + "true"),
            wrap(String(repeating: "-", count: 50_000) + "1"),
            wrap(String(repeating: "[", count: 30_000)),
            wrap(String(repeating: "{'a':", count: 20_000)),
            wrap(Array(repeating: "true", count: 20_000).joined(separator: " && ")),
            wrap(Array(repeating: "1", count: 20_000).joined(separator: " + ") + " > 0"),
            wrap(String(repeating: "f(", count: 20_000)),
            wrap(String(repeating: "true ? ", count: 20_000)),
            wrap(String(repeating: "a.", count: 30_000) + "b"),
            wrap(String(repeating: "/$(", count: 20_000)),
            wrap("'" + String(repeating: "a", count: 30_000) + "'.matches('(a*)*b')"),
            "service cloud.firestore {" + String(repeating: " match /a {", count: 20_000),
            String(repeating: "}", count: 50_000),
            String(repeating: "function f() { return 1; }\n", count: 5000),
        ]
        var out = texts.enumerated().map { i, t in
            Input(name: "shape \(i): " + String(t.prefix(60)).replacingOccurrences(of: "\n", with: " ") + "…", text: t)
        }
        if let regressions = Fixtures.load(prefix: "fuzz-").first.flatMap({ try? $0.1.get() }) {
            for (i, t) in (regressions["inputs"]?.arrayValue ?? []).compactMap(\.stringValue).enumerated() {
                out.append(Input(name: "regression \(i)", text: t))
            }
        }
        return out
    }

    /// Deep but legal nesting: on a generous stack it evaluates; on a small one (512 KiB, a
    /// secondary thread on macOS) the evaluator stops with a denial instead of overflowing.
    @Test(arguments: [8192, 512, 256])
    func deepExpressionOnAStackOf(kilobytes: Int) throws {
        // A left-deep sum 500 nodes high (chains do not recurse in the parser, only here),
        // at the bottom of 20 nested calls.
        let expr = "0" + String(repeating: " + 1", count: 500) + " == 500"
        let chain = (1..<21).map { "function f\($0)() { return f\($0 + 1)(); }" }.joined(separator: "\n")
            + "\nfunction f21() { return \(expr); }"
        let text = "rules_version = '2';\nservice cloud.firestore {\n\(chain)\n match /{d=**} { allow read: if f1(); }\n}\n"
        let ruleset = try Ruleset.compile(text)
        let decision = onThread(stackKilobytes: kilobytes) {
            var ledger = DocumentAccessLedger.singleDocument
            return ruleset.evaluate(.firestore(.get, path: ResourcePath(parsing: "a/b"), auth: nil,
                                               time: Timestamp(seconds: 0, nanos: 0), existing: nil), ledger: &ledger)
        }
        if kilobytes >= 8192 {
            #expect(decision.isAllowed, "\(decision.reason)")
        } else {
            #expect(decision.isAllowed || decision.reason.contains("nested too deeply"), "\(decision.reason)")
        }
    }

    /// Compiling pathological input on a small stack reports an error instead of crashing.
    @Test func compileOnASmallStack() {
        let text = "service cloud.firestore { match /{d=**} { allow read: if " + String(repeating: "(", count: 120)
            + "true" + String(repeating: ")", count: 120) + " && 'a'.matches('" + String(repeating: "(", count: 90) + "a"
            + String(repeating: ")", count: 90) + "'); } }"
        let ok = onThread(stackKilobytes: 256) { () -> Bool in
            exercise(text)
            return true
        }
        #expect(ok)
    }
}

/// Runs `body` on a new thread with the given stack size and waits for it.
func onThread<T>(stackKilobytes: Int, _ body: @escaping @Sendable () -> T) -> T {
    nonisolated(unsafe) var result: T?
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        result = body()
        done.signal()
    }
    thread.stackSize = stackKilobytes * 1024
    thread.start()
    done.wait()
    return result!
}
