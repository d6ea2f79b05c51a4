import HearthCore
import Testing
@testable import HearthRules

/// A rules file of `Fixtures/database-diagnostics.json` and the first diagnostic it must produce.
struct DatabaseRulesDiagnosticCase: Sendable, CustomTestStringConvertible {
    var name: String
    var json: JSON
    var testDescription: String { name }

    static func all() -> [DatabaseRulesDiagnosticCase] {
        Fixtures.load(prefix: "database-diagnostics").flatMap { file, result -> [DatabaseRulesDiagnosticCase] in
            guard case .success(let document) = result else { return [DatabaseRulesDiagnosticCase(name: "load \(file)", json: .null)] }
            return (document["cases"]?.arrayValue ?? []).map {
                DatabaseRulesDiagnosticCase(name: $0["name"]?.stringValue ?? "?", json: $0)
            }
        }
    }
}

@Suite("Realtime Database rules: diagnostics")
struct DatabaseRulesDiagnosticTests {
    @Test("database-diagnostics.json", arguments: DatabaseRulesDiagnosticCase.all())
    func diagnostic(_ c: DatabaseRulesDiagnosticCase) throws {
        let text = DatabaseRulesCase.rulesText(c.json["rules"])
        #expect(!text.isEmpty, "fixture failed to load")
        do throws(RulesCompileError) {
            _ = try DatabaseRuleset.parse(text, fileName: "database.rules.json")
            Issue.record("compiled, but expected \(c.json["message"]?.stringValue ?? "")")
        } catch {
            let first = try #require(error.errors.first)
            #expect("\(first.range.start.line):\(first.range.start.column)"
                == "\(c.json["line"]?.intValue ?? 0):\(c.json["column"]?.intValue ?? 0)", "\(error.rendered)")
            #expect(first.message == c.json["message"]?.stringValue, "\(error.rendered)")
            if let rendered = c.json["rendered"]?.arrayValue {
                #expect(first.rendered(in: error.source) == rendered.compactMap(\.stringValue).joined(separator: "\n"))
            }
        }
    }

    @Test func everyProblemOfAFileIsReported() {
        let text = """
            {
              "rules": {
                "a": { ".read": "nope" },
                "b": { ".write": 3 },
                "c": { ".validate": "newData.val() =" }
              }
            }
            """
        do throws(RulesCompileError) {
            _ = try DatabaseRuleset.parse(text, fileName: "r.json")
            Issue.record("compiled")
        } catch {
            #expect(error.errors.map { "\($0.range.start.line):\($0.range.start.column)" } == ["3:22", "4:22", "5:40"])
            #expect(error.rendered.hasPrefix("r.json:3:22: unknown variable 'nope'\n"))
        }
    }
}
