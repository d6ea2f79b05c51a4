import Foundation
import HearthCore
import HearthDocuments
import HearthRules
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import HearthServer

/// Security rules enforced on the REST API, end to end: who may read and write what, with
/// batches and transactions judged atomically ("can user A read user B?").
struct FirestoreRulesTests {
    static let root = TestFirestore.root
    static let name = "projects/demo-hearth/databases/(default)/documents"

    static let rules = """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /users/{userId} {
              allow read: if request.auth != null && request.auth.uid == userId;
              allow create: if request.auth.uid == userId && request.resource.data.keys().hasOnly(['name', 'at']);
              allow update: if request.auth.uid == userId && request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name', 'at']);
              allow delete: if false;
            }
            match /posts/{postId} {
              allow list: if request.query.limit <= 10 && resource.data.public == true;
              allow get: if resource.data.public == true || resource.data.owner == request.auth.uid;
              allow create: if request.resource.data.owner == request.auth.uid
                            && exists(/databases/$(database)/documents/users/$(request.auth.uid));
              allow update: if resource.data.owner == request.auth.uid && request.resource.data.updated == request.time;
            }
            match /rooms/{room} {
              allow create: if getAfter(/databases/$(database)/documents/roomIndex/$(room)).data.owner == request.auth.uid;
            }
            match /roomIndex/{room} {
              allow create: if request.resource.data.owner == request.auth.uid;
            }
            match /admins/{x} {
              allow read: if request.auth.token.admin == true;
            }
          }
        }
        """

    static func bearer(_ uid: String) -> HTTPFields { [.authorization: "Bearer " + TestFirestore.unsignedToken(uid: uid)] }

    static func status(_ r: TestResponse) throws -> String? {
        try JSON.parse(r.body.readableBytesView)["error"]?["status"]?.stringValue
    }

    static func update(_ path: String, _ fields: String, exists: Bool? = nil) -> String {
        let pre = exists.map { #","currentDocument":{"exists":\#($0)}"# } ?? ""
        return #"{"update":{"name":"\#(name)/\#(path)","fields":\#(fields)}\#(pre)}"#
    }

    static func commit(_ writes: [String], transaction: String? = nil) -> ByteBuffer {
        let txn = transaction.map { #","transaction":"\#($0)""# } ?? ""
        return ByteBuffer(string: #"{"writes":[\#(writes.joined(separator: ","))]\#(txn)}"#)
    }

    func seeded() async throws -> TestFirestore {
        let server = try await TestFirestore(rules: Self.rules)
        try await server.seed([
            "users/alice": ["name": .string("Alice")],
            "users/bob": ["name": .string("Bob")],
            "posts/p1": ["owner": .string("alice"), "public": .boolean(true)],
            "posts/p2": ["owner": .string("bob"), "public": .boolean(false)],
        ])
        return server
    }

    @Test func aUserReadsTheirOwnDocumentAndNotAnothers() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            #expect(try await client.execute(uri: "\(Self.root)/users/alice", method: .get, headers: Self.bearer("alice")).status == .ok)
            let other = try await client.execute(uri: "\(Self.root)/users/bob", method: .get, headers: Self.bearer("alice"))
            #expect(other.status == .forbidden)
            #expect(try Self.status(other) == "PERMISSION_DENIED")
            #expect(try await client.execute(uri: "\(Self.root)/users/bob", method: .get).status == .forbidden)
            // A missing document the caller may read is 404; one they may not read is 403 (no leak).
            #expect(try await client.execute(uri: "\(Self.root)/users/carol", method: .get, headers: Self.bearer("carol")).status == .notFound)
            #expect(try await client.execute(uri: "\(Self.root)/users/carol", method: .get, headers: Self.bearer("alice")).status == .forbidden)
            // The owner reads posts/p2; others may not; a public post is readable by anyone.
            #expect(try await client.execute(uri: "\(Self.root)/posts/p2", method: .get, headers: Self.bearer("bob")).status == .ok)
            #expect(try await client.execute(uri: "\(Self.root)/posts/p2", method: .get, headers: Self.bearer("alice")).status == .forbidden)
            #expect(try await client.execute(uri: "\(Self.root)/posts/p1", method: .get).status == .ok)
        }
    }

    @Test func emulatorDenialsExplainWhichRuleDecided() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            let r = try await client.execute(uri: "\(Self.root)/users/bob", method: .get, headers: Self.bearer("alice"))
            let message = try JSON.parse(r.body.readableBytesView)["error"]?["message"]?.stringValue ?? ""
            #expect(message.hasPrefix("Missing or insufficient permissions."))
            #expect(message.contains("firestore.rules:5:"), "message names file:line:col: \(message)")
        }
    }

    @Test func deniedWritesStoreNothing() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            let ok = try await client.execute(
                uri: "\(Self.root)/users?documentId=carol", method: .post, headers: Self.bearer("carol"),
                body: ByteBuffer(string: #"{"fields":{"name":{"stringValue":"C"}}}"#))
            #expect(ok.status == .ok)
            let extra = try await client.execute(
                uri: "\(Self.root)/users?documentId=dave", method: .post, headers: Self.bearer("dave"),
                body: ByteBuffer(string: #"{"fields":{"name":{"stringValue":"D"},"role":{"stringValue":"admin"}}}"#))
            #expect(extra.status == .forbidden)
            #expect(try await server.stored("users/dave") == nil)
            // Updating another user's document, or a field outside the allowed keys.
            let foreign = try await client.execute(
                uri: "\(Self.root)/users/bob?updateMask.fieldPaths=name", method: .patch, headers: Self.bearer("alice"),
                body: ByteBuffer(string: #"{"fields":{"name":{"stringValue":"hacked"}}}"#))
            #expect(foreign.status == .forbidden)
            let role = try await client.execute(
                uri: "\(Self.root)/users/alice?updateMask.fieldPaths=role", method: .patch, headers: Self.bearer("alice"),
                body: ByteBuffer(string: #"{"fields":{"role":{"stringValue":"admin"}}}"#))
            #expect(role.status == .forbidden)
            #expect(try await client.execute(uri: "\(Self.root)/users/alice", method: .delete, headers: Self.bearer("alice")).status == .forbidden)
            #expect(try await server.stored("users/bob")?.fields["name"] == .string("Bob"))
            #expect(try await server.stored("users/alice")?.fields == ["name": .string("Alice")])
        }
    }

    @Test func aFailedPreconditionIsNotRevealedToACallerTheRulesRefuse() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            // users/bob exists; alice may not write it, so she learns 403, not ALREADY_EXISTS.
            let r = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("alice"),
                body: Self.commit([Self.update("users/bob", #"{"name":{"stringValue":"x"}}"#, exists: false)]))
            #expect(try Self.status(r) == "PERMISSION_DENIED")
            // bob himself gets the precondition failure.
            let own = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("bob"),
                body: Self.commit([Self.update("users/bob", #"{"name":{"stringValue":"x"}}"#, exists: false)]))
            #expect(try Self.status(own) == "ALREADY_EXISTS")
        }
    }

    @Test func aBatchIsJudgedAsAWholeAndAppliedAllOrNothing() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            let mixed = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("carol"),
                body: Self.commit([
                    Self.update("users/carol", #"{"name":{"stringValue":"C"}}"#),
                    Self.update("users/bob", #"{"name":{"stringValue":"x"}}"#),
                ]))
            #expect(mixed.status == .forbidden)
            #expect(try await server.stored("users/carol") == nil)
            // getAfter() sees the other write of the same commit.
            let pair = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("alice"),
                body: Self.commit([
                    Self.update("rooms/r1", #"{"title":{"stringValue":"R"}}"#),
                    Self.update("roomIndex/r1", #"{"owner":{"stringValue":"alice"}}"#),
                ]))
            #expect(pair.status == .ok)
            let alone = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("alice"),
                body: Self.commit([Self.update("rooms/r2", #"{"title":{"stringValue":"R"}}"#)]))
            #expect(alone.status == .forbidden)
            #expect(try await server.stored("rooms/r2") == nil)
        }
    }

    @Test func batchWriteJudgesEachWriteAlone() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            let r = try await client.execute(
                uri: "\(Self.root):batchWrite", method: .post, headers: Self.bearer("carol"),
                body: Self.commit([
                    Self.update("users/carol", #"{"name":{"stringValue":"C"}}"#),
                    Self.update("users/bob", #"{"name":{"stringValue":"x"}}"#),
                ]))
            #expect(r.status == .ok)
            let body = try JSON.parse(r.body.readableBytesView)
            let statuses = body["status"]?.arrayValue ?? []
            #expect(statuses.count == 2)
            #expect(statuses.first?["code"] == nil)
            #expect(statuses.last?["code"] == .number(7))
            #expect(try await server.stored("users/carol") != nil)
            #expect(try await server.stored("users/bob")?.fields["name"] == .string("Bob"))
        }
    }

    @Test func rulesReadOtherDocumentsAndSeeTransformResults() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            let post = #"{"fields":{"owner":{"stringValue":"alice"},"public":{"booleanValue":true}}}"#
            let r1 = try await client.execute(
                uri: "\(Self.root)/posts?documentId=p3", method: .post, headers: Self.bearer("alice"), body: ByteBuffer(string: post))
            #expect(r1.status == .ok)
            // exists(users/dave) is false.
            let dave = #"{"fields":{"owner":{"stringValue":"dave"}}}"#
            let r2 = try await client.execute(
                uri: "\(Self.root)/posts?documentId=p4", method: .post, headers: Self.bearer("dave"), body: ByteBuffer(string: dave))
            #expect(r2.status == .forbidden)
            // request.resource.data.updated == request.time holds for a server timestamp only.
            let stamped = #"{"update":{"name":"\#(Self.name)/posts/p1","fields":{}},"updateMask":{"fieldPaths":[]},"updateTransforms":[{"fieldPath":"updated","setToServerValue":"REQUEST_TIME"}]}"#
            let r3 = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("alice"), body: Self.commit([stamped]))
            #expect(r3.status == .ok, "\(String(buffer: r3.body))")
            let forged = Self.update("posts/p1", #"{"owner":{"stringValue":"alice"},"public":{"booleanValue":true},"updated":{"timestampValue":"2020-01-01T00:00:00Z"}}"#)
            let r4 = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("alice"), body: Self.commit([forged]))
            #expect(r4.status == .forbidden)
        }
    }

    @Test func queriesAreAllowedOnlyWhenTheirConstraintsGuaranteeTheRule() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            func query(_ q: String) async throws -> TestResponse {
                try await client.execute(
                    uri: "\(Self.root):runQuery", method: .post, headers: Self.bearer("alice"),
                    body: ByteBuffer(string: #"{"structuredQuery":{"from":[{"collectionId":"posts"}]\#(q)}}"#))
            }
            let publicOnly = #","where":{"fieldFilter":{"field":{"fieldPath":"public"},"op":"EQUAL","value":{"booleanValue":true}}}"#
            let ok = try await query(publicOnly + #","limit":5"#)
            #expect(ok.status == .ok)
            #expect(try JSON.parse(ok.body.readableBytesView).arrayValue?.count == 1)
            #expect(try await query(#","limit":5"#).status == .forbidden)
            #expect(try await query(publicOnly + #","limit":20"#).status == .forbidden)
            #expect(try await query(publicOnly).status == .forbidden)
            let aggregate = try await client.execute(
                uri: "\(Self.root):runAggregationQuery", method: .post, headers: Self.bearer("alice"),
                body: ByteBuffer(string: #"{"structuredAggregationQuery":{"structuredQuery":{"from":[{"collectionId":"posts"}]},"aggregations":[{"alias":"n","count":{}}]}}"#))
            #expect(aggregate.status == .forbidden)
            #expect(try await client.execute(uri: "\(Self.root)/posts", method: .get, headers: Self.bearer("alice")).status == .forbidden)
            let r5 = try await client.execute(
                uri: "\(Self.root):listCollectionIds", method: .post, headers: Self.bearer("alice"), body: ByteBuffer(string: "{}"))
            #expect(r5.status == .forbidden)
        }
    }

    @Test func transactionsAreJudgedOnReadAndOnCommit() async throws {
        let server = try await seeded()
        try await server.app().test(.router) { client in
            let begin = try await client.execute(
                uri: "\(Self.root):beginTransaction", method: .post, headers: Self.bearer("alice"), body: ByteBuffer(string: "{}"))
            let txn = try JSON.parse(begin.body.readableBytesView)["transaction"]?.stringValue ?? ""
            let escaped = txn.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? txn
            let r6 = try await client.execute(
                uri: "\(Self.root)/users/alice?transaction=\(escaped)", method: .get, headers: Self.bearer("alice"))
            #expect(r6.status == .ok)
            let r7 = try await client.execute(
                uri: "\(Self.root)/users/bob?transaction=\(escaped)", method: .get, headers: Self.bearer("alice"))
            #expect(r7.status == .forbidden)
            let commit = try await client.execute(
                uri: "\(Self.root):commit", method: .post, headers: Self.bearer("alice"),
                body: Self.commit([
                    Self.update("users/alice", #"{"name":{"stringValue":"A2"}}"#),
                    Self.update("users/bob", #"{"name":{"stringValue":"B2"}}"#),
                ], transaction: txn))
            #expect(commit.status == .forbidden)
            #expect(try await server.stored("users/alice")?.fields["name"] == .string("Alice"))
        }
    }

    @Test func productionTrustsOnlySignedTokensAndDeniesWithoutRules() async throws {
        let server = try await TestFirestore(emulator: false, rules: Self.rules)
        try await server.seed(["admins/x": ["ok": .boolean(true)]])
        try await server.app().test(.router) { client in
            let admin = try server.signedToken(uid: "ann", claims: .object([("admin", .bool(true))]))
            let plain = try server.signedToken(uid: "ann")
            #expect(try await client.execute(uri: "\(Self.root)/admins/x", method: .get, headers: [.authorization: "Bearer \(admin)"]).status == .ok)
            #expect(try await client.execute(uri: "\(Self.root)/admins/x", method: .get, headers: [.authorization: "Bearer \(plain)"]).status == .forbidden)
            // Unsigned tokens, forged signatures and garbage are UNAUTHENTICATED in production.
            let unsigned = TestFirestore.unsignedToken(uid: "ann", claims: [("admin", .bool(true))])
            let forged = admin.dropLast(4) + "AAAA"
            for bad in [unsigned, String(forged), "garbage"] {
                let r = try await client.execute(uri: "\(Self.root)/admins/x", method: .get, headers: [.authorization: "Bearer \(bad)"])
                #expect(r.status == .unauthorized, "\(bad)")
                #expect(try Self.status(r) == "UNAUTHENTICATED")
            }
        }
        let bare = try await TestFirestore(emulator: false, adminToken: "s3cret")
        try await bare.app().test(.router) { client in
            let token = try bare.signedToken(uid: "ann")
            #expect(try await client.execute(uri: "\(Self.root)/admins/x", method: .get, headers: [.authorization: "Bearer \(token)"]).status == .forbidden)
            #expect(try await client.execute(uri: "\(Self.root)/admins/x", method: .get, headers: [.authorization: "Bearer s3cret"]).status == .notFound)
        }
    }

    @Test func theEmulatorEndpointReplacesRulesAndRejectsBrokenOnes() async throws {
        let server = try await TestFirestore()
        try await server.seed(["users/bob": ["name": .string("Bob")]])
        try await server.app().test(.router) { client in
            // Emulator mode without rules: everyone may do everything.
            #expect(try await client.execute(uri: "\(Self.root)/users/bob", method: .get, headers: Self.bearer("alice")).status == .ok)
            func put(_ rules: String) async throws -> TestResponse {
                let body = JSON.object([("rules", .object([("files", .array([.object([("name", .string("firestore.rules")), ("content", .string(rules))])]))]))])
                return try await client.execute(
                    uri: "/emulator/v1/projects/demo-hearth:securityRules", method: .put, body: ByteBuffer(bytes: body.serializedBytes()))
            }
            #expect(try await put(Self.rules).status == .ok)
            #expect(try await client.execute(uri: "\(Self.root)/users/bob", method: .get, headers: Self.bearer("alice")).status == .forbidden)
            let broken = try await put("service cloud.firestore { match /x { allow read: if foo(; } }")
            #expect(broken.status == .badRequest)
            let message = try JSON.parse(broken.body.readableBytesView)["error"]?["message"]?.stringValue ?? ""
            #expect(message.contains("firestore.rules:1:"), "\(message)")
            // The broken file changed nothing.
            #expect(try await client.execute(uri: "\(Self.root)/users/bob", method: .get, headers: Self.bearer("bob")).status == .ok)
            #expect(try await client.execute(uri: "\(Self.root)/users/bob", method: .get, headers: Self.bearer("alice")).status == .forbidden)
            // Coverage of what was evaluated so far, as JSON and HTML.
            let coverage = try await client.execute(uri: "/emulator/v1/projects/demo-hearth:ruleCoverage", method: .get)
            let report = try JSON.parse(coverage.body.readableBytesView)
            #expect(coverage.status == .ok)
            guard case .number(let evaluated)? = report["evaluated"] else { Issue.record("no evaluated count: \(report)"); return }
            #expect((Int(evaluated) ?? 0) > 0)
            let html = try await client.execute(uri: "/emulator/v1/projects/demo-hearth:ruleCoverage.html", method: .get)
            #expect(html.status == .ok && String(buffer: html.body).contains("request.auth.uid == userId"))
            // `owner` is admin and bypasses rules.
            #expect(try await client.execute(uri: "\(Self.root)/users/bob", method: .get, headers: [.authorization: "Bearer owner"]).status == .ok)
        }
    }

    @Test func aRulesFileIsReloadedWhenItChangesAndABrokenEditIsIgnored() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("firestore.rules").path
        let open = "rules_version = '2'; service cloud.firestore { match /databases/{d}/documents { match /{doc=**} { allow read: if true; } } }"
        let closed = "rules_version = '2'; service cloud.firestore { match /databases/{d}/documents { match /{doc=**} { allow read: if false; } } }"
        try open.write(toFile: file, atomically: true, encoding: .utf8)
        let store = RulesStore()
        let watcher = RulesFileWatcher(path: file, store: store, logger: .init(label: "test"), interval: .milliseconds(20))
        try watcher.load()
        func allowsRead() -> Bool? {
            guard let loaded = store.rules(for: "p") else { return nil }
            var ledger = DocumentAccessLedger.singleDocument
            let request = RulesRequest.firestore(.get, path: ResourcePath(parsing: "a/b"), auth: nil, time: Timestamp(microseconds: 0), existing: nil)
            return loaded.ruleset.evaluate(request, ledger: &ledger).isAllowed
        }
        #expect(allowsRead() == true)
        let task = Task { try await watcher.watch() }
        defer { task.cancel() }
        func waitFor(_ expected: Bool) async throws -> Bool {
            for _ in 0..<500 {
                if allowsRead() == expected { return true }
                try await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
        try closed.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await waitFor(false))
        try "service cloud.firestore { match /x { allow read: if foo(; } }".write(toFile: file, atomically: true, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(200))
        #expect(allowsRead() == false, "the broken edit left the previous rules in force")
        try open.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await waitFor(true))
    }
}
