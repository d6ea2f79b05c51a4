import HearthCore
import Testing
@testable import HearthRules

@Suite("Evaluation API")
struct RulesAPITests {
    static let rules = """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            function isOwner(uid) { return request.auth != null && request.auth.uid == uid; }
            match /users/{userId} {
              allow get: if isOwner(userId);
              allow update: if isOwner(userId) && debug(request.resource.data.size()) < 3;
            }
          }
        }
        """

    let ruleset: Ruleset
    let time = Timestamp(seconds: 1_704_067_200, nanos: 0)

    init() throws { ruleset = try Ruleset.compile(Self.rules, fileName: "firestore.rules") }

    func get(_ path: String, as uid: String?, options: RulesEvaluationOptions = .default) -> RulesDecision {
        var ledger = DocumentAccessLedger.singleDocument
        return ruleset.evaluate(.firestore(.get, path: ResourcePath(parsing: path), auth: uid.map { RulesAuth(uid: $0) },
                                           time: time, existing: ["a": .integer(1)]),
                                ledger: &ledger, options: options)
    }

    @Test func allowNamesTheDecidingRule() {
        let d = get("users/alice", as: "alice")
        #expect(d.isAllowed)
        #expect(d.rule?.start.line == 6)
        #expect(d.rule?.start.column == 7)
        #expect(d.reason == "Allowed by `allow get: if isOwner(userId)` at firestore.rules:6:7.")
        #expect(d.steps > 0)
    }

    @Test func denialNamesTheFailingSubexpression() throws {
        let d = get("users/alice", as: "bob")
        #expect(!d.isAllowed)
        #expect(d.rule == nil)
        let attempt = try #require(d.attempts.first)
        #expect(attempt.matchPath == "/databases/{database}/documents/users/{userId}")
        guard case .denied(let at, let text) = attempt.result else { Issue.record("\(attempt.result)"); return }
        #expect(text == "request.auth.uid == uid")
        #expect(at.start.line == 4)
        #expect(d.reason.contains("`request.auth.uid == uid` at firestore.rules:4:"))
    }

    @Test func errorsAreReportedWithTheirLocation() throws {
        var ledger = DocumentAccessLedger.singleDocument
        let d = ruleset.evaluate(.firestore(.update, path: ResourcePath(parsing: "users/alice"), auth: RulesAuth(uid: "alice"),
                                            time: time, existing: [:], after: nil), ledger: &ledger)
        guard case .error(let message, let at)? = d.attempts.first?.result else { Issue.record("\(d)"); return }
        #expect(message.contains("resource"))
        #expect(at.start.line == 7)
    }

    @Test func explainOffGivesAShortReason() {
        let d = get("users/alice", as: "bob", options: RulesEvaluationOptions(explain: false))
        #expect(!d.isAllowed)
        #expect(d.reason == "Denied: no allow statement for 'get' was true.")
    }

    @Test func debugOutputIsCollected() {
        var ledger = DocumentAccessLedger.singleDocument
        let d = ruleset.evaluate(.firestore(.update, path: ResourcePath(parsing: "users/alice"), auth: RulesAuth(uid: "alice"),
                                            time: time, existing: [:], after: ["a": .integer(1), "b": .integer(2)]),
                                 ledger: &ledger)
        #expect(d.isAllowed)
        #expect(d.debugOutput == ["firestore.rules:7:43: 2"])
    }

    @Test func coverageCountsEvaluationsAndOutcomes() throws {
        var total = RulesCoverage(expressionCount: ruleset.expressions.count)
        for uid in ["alice", "bob", "carol"] {
            let d = get("users/alice", as: uid, options: RulesEvaluationOptions(recordCoverage: true))
            total.merge(try #require(d.coverage))
        }
        let entries = total.entries(for: ruleset)
        let call = try #require(entries.first { $0.text == "isOwner(userId)" })
        #expect(call.counts.evaluations == 3)
        #expect(call.counts.trueCount == 1)
        #expect(call.counts.falseCount == 2)
        let comparison = try #require(entries.first { $0.text == "request.auth.uid == uid" })
        #expect(comparison.counts.evaluations == 3)
        let never = try #require(entries.first { $0.text.hasPrefix("debug(") })
        #expect(never.counts.evaluations == 0)
    }

    @Test func serviceMismatchDenies() {
        var ledger = DocumentAccessLedger.storage
        let d = ruleset.evaluate(RulesRequest(method: .get, target: .storageObject(bucket: "b", name: "x"), time: time),
                                 ledger: &ledger)
        #expect(!d.isAllowed)
        #expect(d.reason.contains("cloud.firestore"))
    }

    @Test func oneLedgerAcrossABatch() throws {
        let r = try Ruleset.compile("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /items/{id} {
                  allow update: if get(/databases/$(database)/documents/config/$(id)).data.open == true;
                }
              }
            }
            """)
        var before: [String: [String: Value]] = [:]
        for i in 0..<25 { before["(default)/config/\(i)"] = ["open": .boolean(true)] }
        let docs = RulesDocumentSet(before: before)
        var ledger = DocumentAccessLedger.batch
        var outcomes: [Bool] = []
        for i in 0..<22 {
            let req = RulesRequest.firestore(.update, path: ResourcePath(parsing: "items/\(i)"), auth: nil, time: time,
                                             existing: [:], after: [:])
            outcomes.append(r.evaluate(req, documents: docs, ledger: &ledger).isAllowed)
        }
        #expect(outcomes.prefix(20).allSatisfy { $0 })
        #expect(outcomes.suffix(2).allSatisfy { !$0 })
        #expect(ledger.total == 20)
        // The cache answers a repeated read without counting it.
        let again = RulesRequest.firestore(.update, path: ResourcePath(parsing: "items/3"), auth: nil, time: time,
                                           existing: [:], after: [:])
        #expect(r.evaluate(again, documents: docs, ledger: &ledger).isAllowed)
    }

    @Test func valuesConvertBothWays() throws {
        let doc: [String: Value] = [
            "n": .null, "b": .boolean(true), "i": .integer(-3), "d": .double(2.5),
            "t": .timestamp(Timestamp(seconds: 5, nanos: 6)), "s": .string("x"), "y": .bytes([1, 2]),
            "r": .reference("projects/p/databases/(default)/documents/a/b"), "g": .geoPoint(latitude: 1, longitude: 2),
            "a": .array([.integer(1), .string("z")]), "m": .map(["k": .double(1)]),
        ]
        let v = RulesValue.map(RulesValue.fields(doc))
        guard case .map(let m) = v else { Issue.record("not a map"); return }
        #expect(m["r"] == .path(RulesPath(["databases", "(default)", "documents", "a", "b"])))
        #expect(m["g"] == .latlng(latitude: 1, longitude: 2))
        #expect(m["i"] == .int(-3))
        #expect(v.toValue(project: "p") == .map(doc))
        #expect(RulesValue.duration(RulesDuration(seconds: 1, nanos: 0)!).toValue(project: "p") == nil)
        #expect(RulesValue.set(RulesSet([.int(1)])).toValue(project: "p") == .array([.integer(1)]))
    }

    @Test func authFromClaims() throws {
        let a = try #require(RulesAuth(claims: ["user_id": .string("u1"), "sub": .string("s1"), "admin": .boolean(true)]))
        #expect(a.uid == "u1")
        #expect(RulesAuth(claims: ["sub": .string("s1")])?.uid == "s1")
        #expect(RulesAuth(claims: [:]) == nil)
        guard case .map(let m) = a.rulesValue, case .map(let token)? = m["token"] else { Issue.record("shape"); return }
        #expect(token["admin"] == .bool(true))
    }

    @Test func concurrentEvaluationsAgree() async {
        let r = ruleset
        let time = time
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<200 {
                group.addTask {
                    var ledger = DocumentAccessLedger.singleDocument
                    let uid = i % 2 == 0 ? "alice" : "bob"
                    return r.evaluate(.firestore(.get, path: ResourcePath(parsing: "users/alice"), auth: RulesAuth(uid: uid),
                                                 time: time, existing: [:]), ledger: &ledger).isAllowed == (uid == "alice")
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 200 && results.allSatisfy { $0 })
    }

    @Test func collectionGroupQueriesNeedARecursiveWildcard() throws {
        let r = try Ruleset.compile("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /{path=**}/posts/{post} { allow list: if resource.data.public == true; }
              }
            }
            """)
        var ledger = DocumentAccessLedger.singleDocument
        let q = RulesQuery(filter: .field(try FieldPath(parsing: "public"), .equal, .boolean(true)), limit: 10)
        let group = RulesRequest(method: .list, target: .firestoreCollectionGroup(database: "(default)", parent: .root, collectionId: "posts"),
                                 time: time, query: q)
        #expect(r.evaluate(group, ledger: &ledger).isAllowed)
        let other = RulesRequest(method: .list, target: .firestoreCollectionGroup(database: "(default)", parent: .root, collectionId: "drafts"),
                                 time: time, query: q)
        #expect(!r.evaluate(other, ledger: &ledger).isAllowed)
    }
}
