import HearthCore
import Testing
@testable import HearthRules

struct DiagnosticCase: Sendable, CustomTestStringConvertible {
    var name: String
    var json: JSON
    var testDescription: String { name }

    static func all() -> [DiagnosticCase] {
        Fixtures.load(prefix: "diagnostics-").flatMap { file, result -> [DiagnosticCase] in
            guard case .success(let j) = result else { return [DiagnosticCase(name: "\(file) failed to load", json: .null)] }
            return (j["cases"]?.arrayValue ?? []).map { DiagnosticCase(name: $0["name"]?.stringValue ?? "?", json: $0) }
        }
    }
}

@Suite("Compile diagnostics")
struct DiagnosticTests {
    func diagnostics(_ text: String) -> (RulesSource, [Diagnostic], compiled: Bool) {
        do {
            let r = try Ruleset.compile(text, fileName: "test.rules")
            return (r.source, r.warnings, true)
        } catch {
            return (error.source, error.diagnostics, false)
        }
    }

    @Test(arguments: DiagnosticCase.all())
    func fixture(_ c: DiagnosticCase) {
        guard let text = Fixtures.text(c.json["rules"]) else { Issue.record("no rules in \(c.name)"); return }
        let (source, found, compiled) = diagnostics(text.hasSuffix("\n\n") ? String(text.dropLast()) : text)
        let expected = c.json["expect"]?.arrayValue ?? []
        #expect(compiled == !expected.contains { $0["severity"]?.stringValue == "error" },
                "compiled: \(compiled)\n\(found.map { $0.rendered(in: source) }.joined(separator: "\n"))")
        for e in expected {
            let line = e["line"]?.intValue, column = e["column"]?.intValue
            let severity = e["severity"]?.stringValue, message = e["message"]?.stringValue ?? ""
            #expect(found.contains { $0.severity.rawValue == severity && $0.range.start.line == line
                                     && $0.range.start.column == column && $0.message.contains(message) },
                    "missing \(severity ?? "") at \(line ?? 0):\(column ?? 0) '\(message)'; found:\n\(found.map { "\($0.severity) \($0)" }.joined(separator: "\n"))")
        }
        if let rendered = Fixtures.text(c.json["rendered"]) {
            #expect(found.first.map { $0.rendered(in: source) + "\n" } == rendered)
        }
        for d in found {
            #expect(d.range.start.line >= 1 && d.range.start.column >= 1 && d.range.start.offset <= d.range.end.offset)
        }
    }

    @Test func renderedErrorHasLocationSourceLineAndCaret() throws {
        let text = "rules_version = '2';\nservice cloud.firestore {\n  match /a/{b} {\n    allow read: if b ==;\n  }\n}\n"
        let error = try #require(throws: RulesCompileError.self) { try Ruleset.compile(text, fileName: "firestore.rules") }
        #expect(error.rendered == """
            firestore.rules:4:24: Expected an expression but found ';'.
                allow read: if b ==;
                                   ^
            """)
    }

    @Test func tabsAreKeptInTheCaretLine() throws {
        let text = "service cloud.firestore {\n\tmatch /a/{b} {\n\t\tallow read: if 1 +;\n\t}\n}\n"
        let error = try #require(throws: RulesCompileError.self) { try Ruleset.compile(text) }
        let lines = error.diagnostics[0].rendered(in: error.source).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[1] == "\t\tallow read: if 1 +;")
        #expect(lines[2] == "\t\t                  ^")
    }

    @Test func oversizedRulesetIsRefused() {
        let big = "service cloud.firestore {\n" + String(repeating: "// padding padding padding padding padding\n", count: 7000) + "}\n"
        #expect(throws: RulesCompileError.self) { try Ruleset.compile(big) }
    }

    @Test func warningsDoNotPreventLoading() throws {
        let r = try Ruleset.compile("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /a/{b} { allow read: if nope == 1; }
              }
            }
            """)
        #expect(r.warnings.count == 1)
        #expect(r.warnings[0].rendered(in: r.source).hasPrefix("firestore.rules:4:35: warning: Unknown variable 'nope'"))
    }
}
