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
        guard case .cascade(_, let when, let prefixes, _) = rules.rules[0] else { Issue.record("not a cascade"); return }
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

    @Test func parsesDatabasePathsAndDatabaseCascades() throws {
        let json = try JSON.parse(
            #"""
            {"rules": [
              {"cascade": "database:/bottles/{bottleId}", "when": [{"field": "meta.expiresAt", "op": "<", "value": "now"}],
               "storagePrefixes": ["bottles/{bottleId}/"], "documents": ["bottleOwners/{bottleId}"], "database": ["/chats/{bottleId}"]},
              {"cascade": "bottles/{bottleId}", "when": [{"field": "status", "op": "==", "value": "dead"}], "database": ["/b/{bottleId}"]},
              {"onAccountDeletion": "users/{uid}", "database": ["/users/{uid}", "/presence/{uid}"]}]}
            """#)
        let rules = try LifecycleRules.parse(json, source: "test")
        guard case .databaseCascade(let pattern, let when, let prefixes, let documents, let database) = rules.rules[0] else {
            Issue.record("not a database cascade")
            return
        }
        #expect(pattern.description == "/bottles/{bottleId}" && when[0].field.segments == ["meta", "expiresAt"])
        #expect(prefixes == ["bottles/{bottleId}/"] && documents == ["bottleOwners/{bottleId}"])
        #expect(database.map { $0.expand(["bottleId": "b1"]) } == [["chats", "b1"]])
        guard case .cascade(_, _, _, let listed) = rules.rules[1], case .onAccountDeletion(_, let docs, let storage, let paths) = rules.rules[2] else {
            Issue.record("wrong rules")
            return
        }
        #expect(listed.map(\.description) == ["/b/{bottleId}"] && docs.isEmpty && storage.isEmpty && paths.count == 2)
    }

    @Test func databasePathsNeverExpandToAnotherPlace() throws {
        let pattern = try LifecycleRules.DatabasePattern(parsing: "/users/{uid}/profile")
        #expect(pattern.expand(["uid": "u1"]) == ["users", "u1", "profile"])
        for bad in ["a/b", "..", ".", "", "x$", "a#b", "a[0]", "tab\t"] { #expect(pattern.expand(["uid": bad]) == nil) }
        #expect(pattern.expand([:]) == nil)
        for text in ["users/{uid}", "/", "/a//b", "/a/b.c", "/a/{x"] {
            #expect(throws: HearthError.self) { try LifecycleRules.DatabasePattern(parsing: text) }
        }
    }

    @Test(arguments: [
        #"{"rules": [{"cascade": "database:/{a}/{b}", "when": [{"field": "x", "op": "==", "value": 1}]}]}"#,
        #"{"rules": [{"cascade": "database:/bottles/fixed", "when": [{"field": "x", "op": "==", "value": 1}]}]}"#,
        #"{"rules": [{"cascade": "database:bottles/{id}", "when": [{"field": "x", "op": "==", "value": 1}]}]}"#,
        #"{"rules": [{"onAccountDeletion": "users/{uid}", "database": "/users/{uid}"}]}"#,
        #"{"rules": [{"onAccountDeletion": "users/{uid}", "database": ["users/{uid}"]}]}"#,
    ])
    func badDatabaseRulesAreRefused(_ text: String) throws {
        let json = try JSON.parse(text)
        #expect(throws: HearthError.self) { try LifecycleRules.parse(json, source: "test") }
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
