import ArgumentParser
import Foundation
import HearthCore
import HearthRules
import HearthTesting

/// `hearth rules test RULES_FILE CASES_FILE`: decides every case of a cases file against a
/// rules file, without a server, and prints which rule decided each.
struct RulesTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Check a rules file against expected allow/deny decisions.",
        discussion: """
            CASES_FILE is JSON: optional "documents" (existing Firestore data, path → fields) and \
            "cases", each a request and the decision it must get:

              {"documents": {"users/alice": {"owner": "alice"}},
               "cases": [
                 {"name": "owner reads", "method": "get", "path": "/users/alice",
                  "auth": "alice", "expect": "allow"},
                 {"name": "others cannot", "method": "update", "path": "/users/alice",
                  "auth": {"uid": "bob", "token": {"admin": false}},
                  "data": {"owner": "bob"}, "expect": "deny", "reason": "false"}]}

            method: get, list, create, update, delete, read (= get) or write (create or update). \
            "data" is the document after a write (for update: the merged result); "query" \
            ({"where": [["f", "==", 1]], "orderBy": [["f", "desc"]], "limit": 10}) is for list. \
            Typed values: {"$timestamp": "2024-01-01T00:00:00Z"}, {"$bytes": "hex"}, \
            {"$latlng": [lat, lng]}, {"$ref": "users/alice"}, {"$float": 1}. For a Storage \
            rules file, "path" is the object name and "data"/"resource" are the uploaded/stored \
            object ({"size": 1024, "contentType": "image/png", "metadata": {…}}).

            Prints PASS/FAIL per case with the rule that allowed or the reason for a denial. \
            Exit status: 0 when every case passes, 1 when some fail, 2 when a file cannot be \
            read or the rules do not compile. The full format: docs/rules-testing.md.
            """
    )

    @Argument(help: "The rules file (firestore.rules or storage.rules).") var rulesFile: String
    @Argument(help: "The JSON cases file.") var casesFile: String
    @Option(name: .customLong("coverage-json"), help: "Write the expression coverage report as JSON to this file.")
    var coverageJSON: String?
    @Option(name: .customLong("coverage-html"), help: "Write the expression coverage report as HTML to this file.")
    var coverageHTML: String?
    @Flag(help: "Print only failures and the summary.") var quiet = false

    func run() throws {
        let rulesText = Self.read(rulesFile)
        let casesText = Self.read(casesFile)
        let bed: RulesTestBed
        do throws(RulesCompileError) {
            bed = try RulesTestBed(rules: rulesText, fileName: rulesFile)
        } catch {
            Self.fail(error.rendered + "\nerror: \(rulesFile) does not compile (\(error.errors.count) error\(error.errors.count == 1 ? "" : "s"))")
        }
        for w in bed.ruleset.warnings { Self.printError(w.rendered(in: bed.ruleset.source)) }
        let file: RulesCasesFile
        do throws(HearthError) {
            file = try RulesCasesFile.parse(casesText)
        } catch {
            Self.fail("\(casesFile): \(error.message)")
        }
        let results = bed.run(file)
        var failed = 0
        for r in results {
            if !r.passed { failed += 1 }
            guard !r.passed || !quiet else { continue }
            print("\(r.passed ? "PASS" : "FAIL") \(r.name) — \(r.message)")
        }
        let passed = results.count - failed
        let summary = bed.coverageReport.summary
        print("\(passed) passed, \(failed) failed, \(results.count) cases; \(summary.evaluated) of \(summary.expressions) expressions evaluated")
        do {
            if let path = coverageJSON { try bed.coverageReport.json().write(toFile: path, atomically: true, encoding: .utf8) }
            if let path = coverageHTML { try bed.coverageReport.html().write(toFile: path, atomically: true, encoding: .utf8) }
        } catch {
            Self.fail("error: cannot write the coverage report: \(error.localizedDescription)")
        }
        if failed > 0 { throw ExitCode(1) }
    }

    static func read(_ path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { fail("error: cannot read \(path)") }
        guard let text = String(data: data, encoding: .utf8) else { fail("error: \(path) is not UTF-8 text") }
        return text
    }

    static func printError(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    static func fail(_ message: String) -> Never {
        printError(message)
        Foundation.exit(2)
    }
}
