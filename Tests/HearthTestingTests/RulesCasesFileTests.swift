import HearthCore
import HearthRules
import HearthTesting
import Testing

@Suite("Cases files for `hearth rules test`")
struct RulesCasesFileTests {
    let cases = """
        {
          "time": "2024-06-01T12:00:00Z",
          "documents": {
            "users/alice": {"owner": "alice", "member": true, "joined": {"$timestamp": "2020-01-01T00:00:00Z"},
                            "home": {"$latlng": [48.85, 2.35]}, "key": {"$bytes": "00ff"}, "friend": {"$ref": "users/bob"}},
            "/users/bob": {"owner": "bob", "member": false}
          },
          "cases": [
            {"name": "owner reads", "method": "get", "path": "/users/alice", "auth": "alice", "expect": "allow"},
            {"name": "stranger reads", "method": "get", "path": "/users/alice", "auth": {"uid": "eve"}, "expect": "deny",
             "reason": "request.auth.uid == userId"},
            {"name": "admin deletes", "method": "delete", "path": "/users/bob", "auth": {"uid": "root", "token": {"admin": true}},
             "expect": "allow"},
            {"name": "update keeps owner", "method": "update", "path": "/users/alice", "auth": "alice",
             "data": {"owner": "alice", "member": true}, "expect": "allow"},
            {"name": "member gets a post", "method": "get", "path": "/posts/p", "auth": "alice", "expect": "allow"},
            {"name": "query mine", "method": "list", "path": "/posts", "auth": "alice",
             "query": {"where": [["owner", "==", "alice"]], "limit": 5, "orderBy": [["owner", "desc"]]}, "expect": "allow"},
            {"name": "query all", "method": "list", "path": "/posts", "auth": "alice", "query": {"limit": 5}, "expect": "deny"},
            {"name": "wrong on purpose", "method": "get", "path": "/users/bob", "auth": "bob", "expect": "deny"}
          ]
        }
        """

    @Test func parsesAndRuns() throws {
        let file = try RulesCasesFile.parse(cases)
        #expect(file.cases.count == 8)
        #expect(file.documents["users/bob"] != nil)
        #expect(file.documents["users/alice"]?["joined"] == .timestamp(Timestamp(rfc3339: "2020-01-01T00:00:00Z")!))
        #expect(file.documents["users/alice"]?["key"] == .bytes([0, 255]))
        #expect(file.documents["users/alice"]?["friend"] == .reference("projects/demo-hearth/databases/(default)/documents/users/bob"))
        let bed = try RulesTestBed(rules: profileRules)
        let results = bed.run(file)
        #expect(results.map(\.passed) == [true, true, true, true, true, true, true, false])
        #expect(results[0].message.hasPrefix("allowed by firestore.rules:6:7 \"allow read: if"), "\(results[0].message)")
        #expect(results[1].message.hasPrefix("denied: "), "\(results[1].message)")
        #expect(results[7].message.hasPrefix("expected deny, but allowed by firestore.rules:6:7"), "\(results[7].message)")
    }

    @Test func storageCases() throws {
        let file = try RulesCasesFile.parse("""
            {"cases": [
              {"name": "upload", "method": "create", "path": "avatars/alice/a.png", "auth": "alice",
               "data": {"size": 100, "contentType": "image/png", "metadata": {"k": "v"}}, "expect": "allow"},
              {"name": "not an image", "method": "create", "path": "avatars/alice/a.txt", "auth": "alice",
               "data": {"size": 100, "contentType": "text/plain"}, "expect": "deny"},
              {"name": "overwrite", "method": "write", "path": "avatars/alice/a.png", "auth": "alice",
               "resource": {"size": 5}, "data": {"size": 100, "contentType": "image/jpeg"}, "expect": "allow"},
              {"name": "bad data", "method": "create", "path": "avatars/alice/a.png", "auth": "alice",
               "data": {"size": 100, "owner": "x"}, "expect": "allow"}
            ]}
            """)
        let bed = try RulesTestBed(rules: storageRules, fileName: "storage.rules")
        let results = bed.run(file)
        #expect(results.map(\.passed) == [true, true, true, false])
        #expect(results[3].message.contains("Storage case"), "\(results[3].message)")
    }

    @Test(arguments: [
        ("[]", "must hold a JSON object"),
        (#"{"cases": [{"method": "get", "path": "/a/b"}]}"#, "\"expect\" must be"),
        (#"{"cases": [{"method": "fetch", "path": "/a/b", "expect": "allow"}]}"#, "\"method\" must be one of"),
        (#"{"cases": [{"method": "get", "expect": "allow"}]}"#, "\"path\" is required"),
        (#"{"cases": [], "extra": 1}"#, "unknown top-level key"),
        (#"{"cases": [{"name": "x", "method": "get", "path": "a/b", "expect": "allow", "exepct": 1}]}"#, "cases[0] (x): unknown key"),
        (#"{"documents": {"users": {}}, "cases": []}"#, "not a document path"),
        (#"{"documents": {"a/b": {"t": {"$timestamp": "yesterday"}}}, "cases": []}"#, "RFC 3339"),
        (#"{"documents": {"a/b": {"t": {"$what": 1}}}, "cases": []}"#, "unknown typed value"),
        (#"{"documents": {"a/b": {"n": 99999999999999999999}}, "cases": []}"#, "64-bit integer"),
        (#"{"cases": [{"method": "list", "path": "a", "expect": "allow", "query": {"where": [["x", "~", 1]]}}]}"#, "unknown operator"),
        (#"{"cases": [{"method": "get", "path": "a/b", "expect": "allow", "auth": 5}]}"#, "\"auth\" must be"),
    ])
    func invalidFilesAreExplained(_ text: String, _ message: String) {
        do {
            _ = try RulesCasesFile.parse(text)
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(message), "\(error.message)")
        }
    }
}
