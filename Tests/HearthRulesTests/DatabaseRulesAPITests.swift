import HearthCore
import Synchronization
import Testing
@testable import HearthRules

/// A data source that counts lookups and can fail, to check what the rules ask of the engine.
final class CountingTree: DatabaseRulesData {
    let tree: DatabaseRulesTree
    let lookups = Mutex<[[String]]>([])
    let failing: Bool

    init(_ root: JSON?, failing: Bool = false) {
        tree = DatabaseRulesTree(root)
        self.failing = failing
    }

    struct StoreDown: Error {}

    func node(at path: [String]) async throws -> JSON? {
        lookups.withLock { $0.append(path) }
        if failing { throw StoreDown() }
        return try await tree.node(at: path)
    }
}

@Suite("Realtime Database rules: API")
struct DatabaseRulesAPITests {
    static let rules = """
        {
          "rules": {
            "users": {
              ".indexOn": ["age", "name"],
              "$uid": {
                ".read": "auth.uid === $uid",
                ".write": "auth.uid === $uid",
                "name": { ".validate": "newData.isString()" }
              }
            },
            "posts": { ".indexOn": "date", "$post": { ".indexOn": ".value" } }
          }
        }
        """

    @Test func indexOnFollowsNamedChildrenAndWildcards() throws {
        let ruleset = try DatabaseRuleset.parse(Self.rules, fileName: "database.rules.json")
        #expect(ruleset.indexOn(path: ["users"]) == ["age", "name"])
        #expect(ruleset.indexOn(path: ["posts"]) == ["date"])
        #expect(ruleset.indexOn(path: ["posts", "p1"]) == [".value"])
        #expect(ruleset.indexOn(path: ["users", "alice"]).isEmpty)
        #expect(ruleset.indexOn(path: ["nothing", "here"]).isEmpty)
        #expect(ruleset.indexOn(path: []).isEmpty)
    }

    @Test func decisionsNameTheRuleAndWhere() async throws {
        let ruleset = try DatabaseRuleset.parse(Self.rules, fileName: "database.rules.json")
        let tree = DatabaseRulesTree(nil)
        let allowed = try await ruleset.read(path: ["users", "alice"], auth: DatabaseRulesAuth(uid: "alice", provider: "password"),
                                             root: tree, now: 0)
        #expect(allowed.isAllowed)
        #expect(allowed.location == "database.rules.json:6:18")
        #expect(allowed.reason == "read of /users/alice allowed by /users/$uid/.read at database.rules.json:6:18")

        let denied = try await ruleset.read(path: ["users", "alice"], auth: DatabaseRulesAuth(uid: "bob", provider: "password"),
                                            root: tree, now: 0)
        #expect(denied.outcome == .deny)
        #expect(denied.reason.contains("/users/$uid/.read at database.rules.json:6:18 for /users/alice was false"))
        #expect(denied.attempts.count == 1)

        let newRoot = DatabaseRulesTree(.object([("users", .object([("alice", .object([("name", .number(1))]))]))]))
        let invalid = try await ruleset.write(path: ["users", "alice", "name"], auth: DatabaseRulesAuth(uid: "alice", provider: "password"),
                                              root: tree, newRoot: newRoot, now: 0)
        #expect(invalid.outcome == .validationFailed)
        #expect(invalid.location == "database.rules.json:8:32")
        #expect(invalid.reason.contains("validation failed; /users/$uid/name/.validate at database.rules.json:8:32 for /users/alice/name"))
    }

    @Test func defaultsForNoRulesLoaded() async throws {
        let tree = DatabaseRulesTree(nil)
        let open = DatabaseRuleset.noRulesLoaded(emulator: true)
        let locked = DatabaseRuleset.noRulesLoaded(emulator: false)
        #expect(try await open.read(path: ["a"], auth: nil, root: tree, now: 0).isAllowed)
        #expect(try await open.write(path: ["a"], auth: nil, root: tree, newRoot: tree, now: 0).isAllowed)
        let lockedRead = try await locked.read(path: ["a"], auth: nil, root: tree, now: 0)
        #expect(!lockedRead.isAllowed)
        let lockedWrite = try await locked.write(path: [], auth: DatabaseRulesAuth(uid: "u", provider: "password"), root: tree,
                                                 newRoot: tree, now: 0)
        #expect(!lockedWrite.isAllowed)
    }

    @Test func dataErrorsPropagateInsteadOfDenying() async throws {
        let ruleset = try DatabaseRuleset.parse(#"{"rules": {".read": "data.exists()"}}"#, fileName: "r.json")
        await #expect(throws: CountingTree.StoreDown.self) {
            _ = try await ruleset.read(path: ["x"], auth: nil, root: CountingTree(nil, failing: true), now: 0)
        }
    }

    @Test func lookupsAreCachedAndReuseAncestors() async throws {
        let ruleset = try DatabaseRuleset.parse(
            #"{"rules": {"a": {".read": "data.child('b').val() === 1 && data.child('b').exists() && data.child('c/d').val() === 2"}}}"#,
            fileName: "r.json")
        let source = CountingTree(.object([("a", .object([("b", .number(1)), ("c", .object([("d", .number(2))]))]))]))
        let decision = try await ruleset.read(path: ["a"], auth: nil, root: source, now: 0)
        #expect(decision.isAllowed)
        // child('b') read once; child('c/d') comes from its own lookup; no lookup repeats.
        let lookups = source.lookups.withLock { $0 }
        #expect(Set(lookups).count == lookups.count)

        // The validate walk reads the written subtree once and walks it in memory.
        let validating = try DatabaseRuleset.parse(
            #"{"rules": {".write": true, "$a": {"$b": {".validate": "newData.isNumber()"}}}}"#, fileName: "r.json")
        var members: [(String, JSON)] = []
        for i in 0..<50 { members.append(("k\(i)", .number(i))) }
        let after = CountingTree(.object([("x", .object(members))]))
        let written = try await validating.write(path: ["x"], auth: nil, root: DatabaseRulesTree(nil), newRoot: after, now: 0)
        #expect(written.isAllowed)
        #expect(written.attempts.filter { $0.kind == ".validate" }.count == 50)
        #expect(after.lookups.withLock { $0 } == [["x"]])
    }

    @Test func longChainsEvaluateWithoutDeepRecursionTrouble() async throws {
        let sum = Array(repeating: "1", count: 2_000).joined(separator: " + ")
        let ruleset = try DatabaseRuleset.parse("{\"rules\": {\".read\": \"\(sum) === 2000\"}}", fileName: "r.json")
        let decision = try await ruleset.read(path: [], auth: nil, root: DatabaseRulesTree(nil), now: 0)
        #expect(decision.isAllowed, "\(decision.reason)")
        #expect(decision.steps > 2_000)
    }

    @Test func theStepBudgetDeniesTheWholeRequest() async throws {
        let ruleset = try DatabaseRuleset.parse(#"{"rules": {".read": "1 + 1 + 1 + 1 === 4"}}"#, fileName: "r.json",
                                                limits: DatabaseRulesLimits(maxSteps: 3))
        let decision = try await ruleset.read(path: [], auth: nil, root: DatabaseRulesTree(nil), now: 0)
        #expect(decision.outcome == .deny)
        #expect(decision.reason.contains("more than 3 evaluation steps"))
    }

    @Test func strictJSONDropsCommentsAndKeepsOrder() throws {
        let text = """
            // comment
            { /* block */ "rules": { "b": { ".read": "auth != null" }, "a": { ".indexOn": ["x", "y"], ".write": true } } }
            """
        let ruleset = try DatabaseRuleset.parse(text, fileName: "r.json")
        #expect(ruleset.strictJSON.serialized()
            == #"{"rules":{"b":{".read":"auth != null"},"a":{".indexOn":["x","y"],".write":true}}}"#)
        #expect(try DatabaseRuleset.parse(ruleset.strictJSON.serialized(), fileName: "strict.json").strictJSON == ruleset.strictJSON)
    }

    @Test func authFromClaimsAndOverride() {
        let claims = JSON.object([
            ("sub", .string("u1")), ("email", .string("a@b.c")),
            ("firebase", .object([("sign_in_provider", .string("google.com"))])),
        ])
        let auth = DatabaseRulesAuth(claims: claims)
        #expect(auth?.uid == "u1")
        #expect(auth?.provider == "google")
        #expect(auth?.token["email"]?.stringValue == "a@b.c")
        #expect(DatabaseRulesAuth(claims: .object([])) == nil)
        #expect(DatabaseRulesAuth(authVariable: .null) == nil)
        #expect(DatabaseRulesAuth(authVariable: .object([("uid", .string("svc"))]))?.uid == "svc")
    }

    @Test func priorityWrappersAndArrays() async throws {
        let ruleset = try DatabaseRuleset.parse(
            #"{"rules": {"p": {".read": "data.val() === 3 && data.getPriority() === 'hi'"},"#
                + #" "arr": {".read": "data.child('1').val() === 'b' && data.hasChildren(['0'])"}}}"#,
            fileName: "r.json")
        let tree = DatabaseRulesTree(.object([
            ("p", .object([(".value", .number(3)), (".priority", .string("hi"))])),
            ("arr", .array([.string("a"), .string("b")])),
        ]))
        #expect(try await ruleset.read(path: ["p"], auth: nil, root: tree, now: 0).isAllowed)
        #expect(try await ruleset.read(path: ["arr"], auth: nil, root: tree, now: 0).isAllowed)
    }
}
