import HearthCore
import HearthRules
import HearthTesting
import Testing

let profileRules = """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        function signedIn() { return request.auth != null; }
        match /users/{userId} {
          allow read: if signedIn() && request.auth.uid == userId;
          allow create, update: if signedIn() && request.auth.uid == userId
                                && request.resource.data.owner == userId;
          allow delete: if request.auth.token.admin == true;
        }
        match /posts/{postId} {
          allow list: if resource.data.owner == request.auth.uid && request.query.limit <= 20;
          allow get: if get(/databases/$(database)/documents/users/$(request.auth.uid)).data.member == true;
          allow create: if getAfter(/databases/$(database)/documents/posts/$(postId)).data.owner == request.auth.uid;
        }
      }
    }
    """

let storageRules = """
    rules_version = '2';
    service firebase.storage {
      match /b/{bucket}/o {
        match /avatars/{uid}/{file} {
          allow read;
          allow write: if request.auth.uid == uid && request.resource.size < 1024 * 1024
                       && request.resource.contentType.matches('image/.*');
          allow delete: if request.auth.uid == uid;
        }
      }
    }
    """

@Suite("RulesTestBed: allow/deny expectations for users' tests")
struct RulesTestBedTests {
    func bed() throws -> RulesTestBed {
        try RulesTestBed(rules: profileRules, documents: [
            "users/alice": ["owner": .string("alice"), "member": .boolean(true)],
            "users/bob": ["owner": .string("bob"), "member": .boolean(false)],
        ])
    }

    @Test func ownerReadsOwnProfile() throws {
        let bed = try bed()
        let d = try bed.expectAllowed(.get, "/users/alice", as: "alice")
        #expect(d.rule != nil)
        try bed.expectAllowed(.read, "users/alice", as: "alice")
        try bed.expectDenied(.get, "/users/alice", as: "bob")
        try bed.expectDenied(.get, "/users/alice")
    }

    @Test func writesSeeTheirData() throws {
        let bed = try bed()
        try bed.expectAllowed(.update, "/users/alice", as: "alice", data: ["owner": .string("alice")])
        try bed.expectDenied(.update, "/users/bob", as: "alice", data: ["owner": .string("alice")])
        try bed.expectDenied(.update, "/users/alice", as: "alice", data: ["owner": .string("mallory")],
                             reason: "request.resource.data.owner == userId")
        // write resolves to create (no document) or update (a document exists).
        try bed.expectAllowed(.write, "/users/carol", as: "carol", data: ["owner": .string("carol")])
        #expect(bed.resolvedMethod(RulesTestRequest(.write, "/users/carol", data: [:])) == .create)
        #expect(bed.resolvedMethod(RulesTestRequest(.write, "/users/alice", data: [:])) == .update)
        #expect(bed.resolvedMethod(RulesTestRequest(.write, "/users/alice")) == .delete)
    }

    @Test func claimsReachTheToken() throws {
        let bed = try bed()
        try bed.expectDenied(.delete, "/users/bob", as: "alice")
        try bed.expectAllowed(.delete, "/users/bob", as: "alice", claims: ["admin": .boolean(true)])
    }

    @Test func getAndGetAfterSeeTheDocuments() throws {
        let bed = try bed()
        try bed.expectAllowed(.get, "/posts/p1", as: "alice")
        try bed.expectDenied(.get, "/posts/p1", as: "bob")
        try bed.expectAllowed(.create, "/posts/p2", as: "alice", data: ["owner": .string("alice")])
        try bed.expectDenied(.create, "/posts/p2", as: "alice", data: ["owner": .string("bob")])
    }

    @Test func queriesAreJudgedAsConstraints() throws {
        let bed = try bed()
        let mine = RulesQuery(filter: .field(FieldPath(["owner"]), .equal, .string("alice")), limit: 10)
        try bed.expectAllowed(.list, "/posts", as: "alice", query: mine)
        try bed.expectDenied(.list, "/posts", as: "bob", query: mine)
        try bed.expectDenied(.list, "/posts", as: "alice", query: RulesQuery(limit: 10))
        let tooMany = RulesQuery(filter: .field(FieldPath(["owner"]), .equal, .string("alice")), limit: 100)
        try bed.expectDenied(.list, "/posts", as: "alice", query: tooMany)
    }

    @Test func storageUploads() throws {
        let bed = try RulesTestBed(rules: storageRules, fileName: "storage.rules")
        let png = RulesStorageObject(name: "", bucket: "", size: 2048, contentType: "image/png")
        let huge = RulesStorageObject(name: "", bucket: "", size: 5 << 20, contentType: "image/png")
        try bed.expectAllowed(.create, object: "avatars/alice/me.png", as: "alice", upload: png)
        try bed.expectDenied(.create, object: "avatars/alice/me.png", as: "alice", upload: huge)
        try bed.expectDenied(.create, object: "avatars/alice/me.png", as: "bob", upload: png)
        try bed.expectAllowed(.get, object: "avatars/alice/me.png", existing: png)
        try bed.expectAllowed(.delete, object: "avatars/alice/me.png", as: "alice", existing: png)
    }

    /// A wrong expectation fails, and the failure names the rule or the reason.
    @Test func wrongExpectationsFailWithTheDecidingRule() throws {
        let bed = try bed()
        do {
            try bed.expectDenied(.get, "/users/alice", as: "alice")
            Issue.record("expectDenied passed for an allowed request")
        } catch {
            #expect(error.expected == .deny)
            #expect(error.decision.isAllowed)
            #expect(error.description.contains("expected deny, but allowed by firestore.rules:6:7"), "\(error)")
            #expect(error.description.contains("allow read: if signedIn()"), "\(error)")
            #expect(error.description.contains("RulesTestBedTests.swift"), "\(error)")
        }
        do {
            try bed.expectAllowed(.get, "/users/alice", as: "bob")
            Issue.record("expectAllowed passed for a denied request")
        } catch {
            #expect(error.description.contains("expected allow, but denied:"), "\(error)")
            #expect(error.description.contains("request.auth.uid == userId"), "\(error)")
        }
        do {
            try bed.expectDenied(.get, "/users/alice", as: "bob", reason: "no such words")
            Issue.record("expectDenied passed with a reason the denial lacks")
        } catch {
            #expect(error.message.contains("reason does not contain \"no such words\""), "\(error)")
        }
    }

    @Test func compileErrorsAreThrownWithLocations() {
        do {
            _ = try RulesTestBed(rules: "service cloud.firestore { match /a { allow read: if ; } }")
            Issue.record("bad rules compiled")
        } catch {
            #expect(error.rendered.contains("firestore.rules:1:"), "\(error.rendered)")
        }
    }

    @Test func coverageAccumulates() throws {
        let bed = try bed()
        try bed.expectAllowed(.get, "/users/alice", as: "alice")
        try bed.expectDenied(.get, "/users/alice", as: "bob")
        let report = bed.coverageReport
        let cond = report.entries.first { $0.text == "request.auth.uid == userId" && $0.range.start.line == 6 }
        #expect(cond?.counts.trueCount == 1)
        #expect(cond?.counts.falseCount == 1)
        #expect(report.summary.evaluated > 0 && report.summary.evaluated < report.summary.expressions)
    }
}

@Suite("RulesTestBed: collection-group queries")
struct RulesTestBedGroupTests {
    @Test func collectionGroupNeedsARecursiveMatch() throws {
        let bed = try RulesTestBed(rules: """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /{path=**}/comments/{c} { allow list: if resource.data.visible == true; }
                match /notes/{n} { allow list: if true; }
              }
            }
            """)
        let visible = RulesQuery(filter: .field(FieldPath(["visible"]), .equal, .boolean(true)))
        try bed.expect(.allow, RulesTestRequest(.list, "/", auth: RulesTestRequest.auth("alice"), query: visible,
                                                collectionGroup: "comments"))
        try bed.expect(.deny, RulesTestRequest(.list, "/", auth: RulesTestRequest.auth("alice"), query: RulesQuery(),
                                               collectionGroup: "comments"))
        // `/notes/{n}` has no recursive wildcard, so it cannot cover a collection-group query.
        try bed.expect(.deny, RulesTestRequest(.list, "/", query: RulesQuery(), collectionGroup: "notes"))
        try bed.expectAllowed(.list, "/notes")
    }
}
