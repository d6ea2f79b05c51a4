import Foundation
import HearthCore
import HearthRules

/// The `rules` phase of `hearth bench`: the cost of one rules evaluation, single-threaded and
/// without I/O, for typical rules next to a trivial `if true` baseline measured in the same run.
struct RulesBench {
    let duration: Double

    struct Scenario {
        var name: String
        var rules: String
        var request: RulesRequest
        var documents: RulesDocumentSet?
    }

    static let header = "rules phase".padding(toLength: 46, withPad: " ", startingAt: 0)
        + "    evals/s    µs/eval     p50 µs     p99 µs"

    func scenarios() -> [Scenario] {
        let time = Timestamp(seconds: 1_700_000_000, nanos: 0)
        let alice = RulesAuth(uid: "alice", token: ["sub": .string("alice"), "email": .string("alice@example.com")])
        let doc: [String: Value] = ["owner": .string("alice"), "title": .string("hello"), "n": .integer(5)]
        func wrap(_ body: String) -> String {
            "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n\(body)\n  }\n}\n"
        }
        let get = RulesRequest.firestore(.get, path: ResourcePath(["users", "alice"]), auth: alice, time: time, existing: doc)
        let users = RulesDocumentSet(before: ["(default)/users/alice": ["role": .string("admin")]])
        let query = RulesRequest.firestoreQuery(
            collection: ResourcePath(["posts"]), auth: alice, time: time,
            query: RulesQuery(filter: .field(FieldPath(["owner"]), .equal, .string("alice")), limit: 20))
        return [
            Scenario(name: "baseline: allow read: if true", rules: wrap("    match /users/{userId} { allow read: if true; }"),
                     request: get),
            Scenario(name: "owner check (auth != null && uid == userId)",
                     rules: wrap("    match /users/{userId} { allow read, write: if request.auth != null && request.auth.uid == userId; }"),
                     request: get),
            Scenario(name: "one get() against an in-memory lookup",
                     rules: wrap("    match /users/{userId} { allow read: if get(/databases/$(database)/documents/users/$(request.auth.uid)).data.role == 'admin'; }"),
                     request: get, documents: users),
            Scenario(name: "list query judged (owner == uid, limit)",
                     rules: wrap("    match /posts/{postId} { allow list: if resource.data.owner == request.auth.uid && request.query.limit <= 50; }"),
                     request: query),
        ]
    }

    func run() throws {
        print(Self.header)
        for s in scenarios() {
            let ruleset = try Ruleset.compile(s.rules, fileName: "bench.rules")
            // Check the scenario decides as intended before timing it.
            var ledger = DocumentAccessLedger.singleDocument
            let first = ruleset.evaluate(s.request, documents: s.documents, ledger: &ledger)
            guard first.isAllowed else {
                print("\(s.name): unexpectedly denied: \(first.reason)")
                continue
            }
            print(measure(s.name, ruleset, s))
        }
    }

    func measure(_ name: String, _ ruleset: Ruleset, _ s: Scenario) -> String {
        // Evaluations are timed in batches of 16 so the clock's cost stays small next to them.
        let batch = 16
        var samples: [Double] = []
        var evaluations = 0
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .milliseconds(Int(duration * 1000 / 4))
        var sink = 0
        while clock.now < deadline {
            let t0 = clock.now
            for _ in 0..<batch {
                var ledger = DocumentAccessLedger.singleDocument
                let d = ruleset.evaluate(s.request, documents: s.documents, ledger: &ledger)
                sink &+= d.steps
            }
            samples.append(Self.seconds(clock.now - t0) / Double(batch))
            evaluations += batch
        }
        let elapsed = Self.seconds(clock.now - start)
        samples.sort()
        func pct(_ p: Double) -> Double { samples.isEmpty ? .nan : samples[min(samples.count - 1, Int(Double(samples.count) * p))] * 1e6 }
        precondition(sink >= 0)
        return name.padding(toLength: 46, withPad: " ", startingAt: 0)
            + String(format: " %10.0f %10.3f %10.3f %10.3f", Double(evaluations) / elapsed, elapsed / Double(evaluations) * 1e6,
                     pct(0.5), pct(0.99))
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
}
