import HearthCore
import HearthRules
import Synchronization
import Testing

@testable import HearthServer

/// The rules evaluated over documents fetched between rounds decide exactly as over a lookup
/// that reads in place, and fetch each document they read once.
@Suite("FetchingLookup")
struct FetchingLookupTests {
    static let prefix = "/databases/$(database)/documents"

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var condition: String
        var documents: [String: [String: Value]]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "one get, allowed", condition: "get(\(prefix)/users/alice).data.role == 'admin'",
            documents: ["users/alice": ["role": .string("admin")]]),
        Case(
            name: "one get, denied", condition: "get(\(prefix)/users/alice).data.role == 'admin'",
            documents: ["users/alice": ["role": .string("user")]]),
        Case(name: "missing document", condition: "get(\(prefix)/users/alice).data.role == 'admin'", documents: [:]),
        Case(
            name: "a chain: the second path comes from the first document",
            condition: "get(\(prefix)/links/$(get(\(prefix)/links/start).data.next)).data.ok == true",
            documents: ["links/start": ["next": .string("b")], "links/b": ["ok": .boolean(true)]]),
        Case(
            name: "either exists", condition: "exists(\(prefix)/a/p) || exists(\(prefix)/a/q)",
            documents: ["a/q": [:]]),
        Case(
            name: "neither exists", condition: "exists(\(prefix)/a/p) || exists(\(prefix)/a/q)",
            documents: [:]),
        Case(
            name: "over the budget of 10 accesses",
            condition: (1...11).map { "exists(\(prefix)/many/d\($0))" }.joined(separator: " && "),
            documents: Dictionary(uniqueKeysWithValues: (1...11).map { ("many/d\($0)", [String: Value]()) })),
    ]

    @Test("Same decision and accesses as an in-place lookup, each document fetched once", arguments: cases)
    func sameDecision(_ c: Case) async throws {
        let ruleset = try Ruleset.compile(
            """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /c/{id} { allow read: if \(c.condition); }
              }
            }
            """)
        let request = RulesRequest.firestore(.get, path: ResourcePath(parsing: "c/doc"), auth: nil, time: Timestamp(microseconds: 1), existing: nil)
        let inPlace = RulesDocumentSet(before: Dictionary(uniqueKeysWithValues: c.documents.map { ("(default)/" + $0.key, $0.value) }))
        var ledger = DocumentAccessLedger.singleDocument
        let expected = ruleset.evaluate(request, documents: inPlace, ledger: &ledger)

        let fetches = Mutex<[String]>([])
        let decision = try await FetchingLookup().settle({ lookup in
            var ledger = DocumentAccessLedger.singleDocument
            return ruleset.evaluate(request, documents: lookup, ledger: &ledger)
        }, fetch: { key in
            fetches.withLock { $0.append(key.path.text) }
            return c.documents[key.path.text]
        })
        #expect(decision.outcome == expected.outcome)
        #expect(decision.documentAccesses == expected.documentAccesses)
        #expect(decision.reason == expected.reason)
        let fetched = fetches.withLock { $0 }
        #expect(Set(fetched).count == fetched.count, "fetched twice: \(fetched)")
    }

    @Test("A fetch that fails fails its lookup, as a failed storage read does")
    func failedFetch() async throws {
        let ruleset = try Ruleset.compile(
            """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /c/{id} { allow read: if !exists(\(Self.prefix)/a/p); }
              }
            }
            """)
        struct Unavailable: Error {}
        let request = RulesRequest.firestore(.get, path: ResourcePath(parsing: "c/doc"), auth: nil, time: Timestamp(microseconds: 1), existing: nil)
        let decision = try await FetchingLookup().settle({ lookup in
            var ledger = DocumentAccessLedger.singleDocument
            return ruleset.evaluate(request, documents: lookup, ledger: &ledger)
        }, fetch: { _ in throw Unavailable() })
        #expect(!decision.isAllowed)
    }
}
