import HearthCore
import Testing
@testable import HearthRules

/// One expression with its expected outcome, evaluated as `allow get: if <expr>;`.
struct ExpressionCase: Sendable, CustomTestStringConvertible {
    var file: String
    var version: String
    var expression: String
    /// "true", "false", "error" or "compile error".
    var expected: String
    var note: String?
    var loadError: String?

    var testDescription: String { "\(file): \(expression)" }

    static func all() -> [ExpressionCase] {
        Fixtures.load(prefix: "expr-").flatMap { name, result -> [ExpressionCase] in
            switch result {
            case .failure(let e):
                return [ExpressionCase(file: name, version: "2", expression: "", expected: "", loadError: "\(e)")]
            case .success(let j):
                let version = j["version"]?.stringValue ?? "2"
                return (j["expressions"]?.arrayValue ?? []).map { c in
                    ExpressionCase(file: name, version: version, expression: c["expr"]?.stringValue ?? "",
                                   expected: c["expect"]?.stringValue ?? "?", note: c["note"]?.stringValue)
                }
            }
        }
    }
}

/// The outcome of `allow get: if <expr>` for a request by `alice`.
func evaluateExpression(_ expr: String, version: String = "2") -> String {
    let rules = """
        rules_version = '\(version)';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /probe/{id} {
              allow get: if \(expr);
            }
          }
        }
        """
    let ruleset: Ruleset
    do {
        ruleset = try Ruleset.compile(rules, fileName: "probe.rules")
    } catch {
        return "compile error"
    }
    var ledger = DocumentAccessLedger.singleDocument
    // The token an emulator client sends (an unsigned ID token for alice).
    let auth = RulesAuth(uid: "alice", token: [
        "sub": .string("alice"), "user_id": .string("alice"),
        "firebase": .map(["sign_in_provider": .string("custom"), "identities": .map([:])]),
    ])
    let request = RulesRequest.firestore(.get, path: ResourcePath(parsing: "probe/p1"), auth: auth,
                                         time: Timestamp(seconds: 1_704_067_200, nanos: 0), existing: nil)
    let d = ruleset.evaluate(request, documents: RulesDocumentSet(), ledger: &ledger)
    switch d.attempts.first?.result {
    case .allowed?: return "true"
    case .denied?: return "false"
    case .error?: return "error"
    case .notBoolean?: return "error"
    case nil: return "no attempt: \(d.reason)"
    }
}

@Suite("Expressions (built-ins, operators, precedence, errors)")
struct ExpressionFixtureTests {
    @Test(arguments: ExpressionCase.all())
    func expression(_ c: ExpressionCase) {
        if let e = c.loadError { Issue.record("fixture \(c.file) failed to load: \(e)"); return }
        let got = evaluateExpression(c.expression, version: c.version)
        #expect(got == c.expected, "\(c.expression) gave \(got), expected \(c.expected)\(c.note.map { " (\($0))" } ?? "")")
    }

    @Test func fixturesArePresent() {
        #expect(ExpressionCase.all().count > 100)
    }
}
