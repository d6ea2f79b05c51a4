import HearthCore
import Testing

@testable import HearthFiles

@Suite struct LifecycleRulesTests {
    @Test func patternsMatchAndBindVariables() throws {
        let pattern = try LifecycleRules.Pattern(parsing: "bottles/{bottleId}/chat/{messageId}")
        #expect(pattern.collectionID == "chat")
        #expect(pattern.match(ResourcePath(["bottles", "b1", "chat", "m1"])) == ["bottleId": "b1", "messageId": "m1"])
        #expect(pattern.match(ResourcePath(["bottles", "b1"])) == nil)
        #expect(pattern.match(ResourcePath(["other", "b1", "chat", "m1"])) == nil)
        #expect(pattern.description == "bottles/{bottleId}/chat/{messageId}")
    }

    @Test(arguments: ["bottles", "{c}/x", "bottles/{id}/chat", "", "a//b", "bottles/{id}/{c}/x"])
    func badPatternsAreRefused(_ text: String) {
        #expect(throws: HearthError.self) { try LifecycleRules.Pattern(parsing: text) }
    }

    @Test func prefixesExpandOnlyKnownVariables() {
        #expect(LifecycleRules.expand("bottles/{bottleId}/", ["bottleId": "b1"]) == "bottles/b1/")
        #expect(LifecycleRules.expand("users/{uid}/avatar.png", ["bottleId": "b1"]) == nil)
        #expect(LifecycleRules.expand("static/", [:]) == "static/")
    }

    @Test func parsesTheDocumentedExample() throws {
        let json = try JSON.parse(
            #"""
            {"intervalSeconds": 30, "batchSize": 100, "rules": [
              {"cascade": "bottles/{bottleId}", "when": [{"field": "expiresAt", "op": "<", "value": "now"},
                {"field": "status", "op": "==", "value": "dead"}], "storagePrefixes": ["bottles/{bottleId}/"]},
              {"ttl": "sessions/{id}", "field": "expireAt"}, {"storageAge": "tmp/", "maxAgeSeconds": 60}]}
            """#)
        let rules = try LifecycleRules.parse(json, source: "test")
        #expect(rules.intervalSeconds == 30 && rules.batchSize == 100 && rules.rules.count == 3)
        guard case .cascade(_, let when, let prefixes) = rules.rules[0] else { Issue.record("not a cascade"); return }
        #expect(when.count == 2 && when[0].value == nil && when[1].value == .string("dead") && prefixes == ["bottles/{bottleId}/"])
        #expect(rules.rules[2] == .storageAge(prefix: "tmp/", maxAgeSeconds: 60))
    }

    @Test func parsesAccountDeletionRules() throws {
        let json = try JSON.parse(#"{"rules": [{"onAccountDeletion": "users/{uid}", "documents": ["users/{uid}"], "storage": ["users/{uid}/"]}]}"#)
        let rules = try LifecycleRules.parse(json, source: "test")
        #expect(rules.rules == [.onAccountDeletion(pattern: try .init(parsing: "users/{uid}"), documents: ["users/{uid}"], storage: ["users/{uid}/"])])
        for bad in [#"{"rules": [{"onAccountDeletion": "users/{uid}"}]}"#, #"{"rules": [{"onAccountDeletion": "users/{uid}/x/y", "storage": ["a/"]}]}"#] {
            let parsed = try JSON.parse(bad)
            #expect(throws: HearthError.self) { try LifecycleRules.parse(parsed, source: "test") }
        }
    }

    @Test(arguments: [
        #"{"rules": [{"cascade": "bottles/{id}", "when": []}]}"#, #"{"rules": [{"ttl": "s/{id}"}]}"#, #"{"rules": [{"storageAge": "tmp/"}]}"#,
        #"{"rules": [{"x": 1}]}"#, #"{"batchSize": 501, "rules": []}"#, #"{"surprise": 1, "rules": []}"#, #"[]"#,
        #"{"rules": [{"cascade": "b/{id}", "when": [{"field": "a", "op": ">", "value": 1}]}]}"#,
    ])
    func badFilesAreRefused(_ text: String) throws {
        let json = try JSON.parse(text)
        #expect(throws: HearthError.self) { try LifecycleRules.parse(json, source: "test") }
    }
}
