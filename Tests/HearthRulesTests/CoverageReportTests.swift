import Foundation
import HearthCore
import Testing
@testable import HearthRules

@Suite("Coverage reports: JSON and HTML")
struct CoverageReportTests {
    let rules = """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /notes/{id} {
              allow read: if request.auth != null && resource.data.owner == request.auth.uid;
              allow write: if request.resource.data.text.size() < 10 && '<b>' != "&";
            }
          }
        }
        """

    func report() throws -> RulesCoverageReport {
        let ruleset = try Ruleset.compile(rules, fileName: "notes<1>.rules")
        var coverage = RulesCoverage(expressionCount: ruleset.expressions.count)
        let time = Timestamp(seconds: 0, nanos: 0)
        let requests: [RulesRequest] = [
            .firestore(.get, path: ResourcePath(["notes", "a"]), auth: RulesAuth(uid: "u"), time: time, existing: ["owner": .string("u")]),
            .firestore(.get, path: ResourcePath(["notes", "a"]), auth: RulesAuth(uid: "v"), time: time, existing: ["owner": .string("u")]),
            .firestore(.get, path: ResourcePath(["notes", "a"]), auth: RulesAuth(uid: "v"), time: time, existing: [:]),
        ]
        for r in requests {
            var ledger = DocumentAccessLedger.singleDocument
            let d = ruleset.evaluate(r, ledger: &ledger, options: RulesEvaluationOptions(recordCoverage: true))
            coverage.merge(d.coverage!)
        }
        return RulesCoverageReport(ruleset: ruleset, coverage: coverage)
    }

    @Test func statuses() throws {
        let r = try report()
        func entry(_ text: String) -> RulesCoverage.Entry? { r.entries.first { $0.text == text } }
        #expect(RulesCoverageReport.status(entry("request.auth != null")!.counts) == .alwaysTrue)
        #expect(RulesCoverageReport.status(entry("resource.data.owner == request.auth.uid")!.counts) == .error)
        #expect(entry("resource.data.owner == request.auth.uid")!.counts.evaluations == 3)
        #expect(entry("resource.data.owner == request.auth.uid")!.counts.trueCount == 1)
        #expect(entry("resource.data.owner == request.auth.uid")!.counts.falseCount == 1)
        #expect(RulesCoverageReport.status(entry("request.resource.data.text.size() < 10")!.counts) == .unevaluated)
        let s = r.summary
        #expect(s.evaluated > 0 && s.evaluated < s.expressions)
    }

    @Test func jsonReport() throws {
        let r = try report()
        let j = try JSON.parse(r.json())
        #expect(j["file"]?.stringValue == "notes<1>.rules")
        let entries = j["report"]?.arrayValue ?? []
        #expect(entries.count == r.entries.count)
        let cond = entries.first { $0["text"]?.stringValue == "request.auth != null" }
        #expect(cond?["status"]?.stringValue == "true")
        #expect(cond?["evaluations"] == .number(3))
        #expect(cond?["start"]?["line"] == .number(5))
        #expect(cond?["start"]?["column"] == .number(22))
        #expect(j["source"]?.stringValue == rules)
    }

    @Test func htmlReport() throws {
        let html = try report().html()
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<style>"))
        #expect(!html.contains("<script"))
        // Everything from the rules text is escaped.
        #expect(html.contains("notes&lt;1&gt;.rules"))
        #expect(html.contains("&#39;&lt;b&gt;&#39; != &quot;&amp;&quot;"))
        #expect(!html.contains("'<b>'"))
        #expect(html.contains("class=\"x true\" title=\"5:22 3 evaluations, 3 true\""))
        #expect(html.contains("class=\"x unevaluated\""))
        #expect(html.contains("class=\"x error\""))
        // Spans are balanced.
        let opens = html.components(separatedBy: "<span").count - 1
        let closes = html.components(separatedBy: "</span>").count - 1
        #expect(opens == closes)
    }

    @Test func emptyCoverageRendersEveryExpressionUnevaluated() throws {
        let ruleset = try Ruleset.compile(rules)
        let r = RulesCoverageReport(ruleset: ruleset, coverage: RulesCoverage(expressionCount: 0))
        #expect(r.entries.allSatisfy { $0.counts.evaluations == 0 })
        #expect(r.html().contains("0 of \(r.entries.count) expressions evaluated"))
    }
}
