import HearthCore
import HearthRules
import HearthStoreConformance
import Testing

@testable import HearthServer

/// Rules loaded at run time shared by servers over one ``RuntimeRulesStore`` (emulator mode over
/// PostgreSQL; here two ``RulesStore``s over the in-memory store).
struct RuntimeRulesTests {
    static let allowAll = "rules_version = '2';\nservice cloud.firestore { match /databases/{d}/documents/{x=**} { allow read, write: if true; } }\n"
    static let denyAll = "rules_version = '2';\nservice cloud.firestore { match /databases/{d}/documents/{x=**} { allow read, write: if false; } }\n"
    static let storage = "rules_version = '2';\nservice firebase.storage { match /b/{bucket}/o/{p=**} { allow read: if true; } }\n"

    func loaded(_ text: String) throws -> RulesStore.Loaded {
        RulesStore.Loaded(try Ruleset.compile(text, fileName: "test.rules"), origin: "emulator endpoint")
    }

    @Test(arguments: RuntimeRulesStoreConformance.all)
    func conformance(_ scenario: RuntimeRulesStoreConformance.Case) async throws {
        try await scenario.run { InMemoryRuntimeRulesStore() }
    }

    @Test func rulesPublishedOnOneServerHoldOnTheOther() async throws {
        let shared = InMemoryRuntimeRulesStore()
        let a = RulesStore(service: "firestore", shared: shared), b = RulesStore(service: "firestore", shared: shared)
        try await a.publish(try loaded(Self.allowAll), source: Self.allowAll, fileName: "firestore.rules", scope: "p1")
        #expect(a.rules(for: "p1")?.ruleset.source.text == Self.allowAll)
        #expect(b.rules(for: "p1") == nil)
        try await b.synchronize()
        #expect(b.rules(for: "p1")?.ruleset.source.text == Self.allowAll)
        #expect(b.rules(for: "p2") == nil)
        // Replaced on B: A loads the new text.
        try await b.publish(try loaded(Self.denyAll), source: Self.denyAll, fileName: "firestore.rules", scope: "p1")
        try await a.synchronize()
        #expect(a.rules(for: "p1")?.ruleset.source.text == Self.denyAll)
    }

    @Test func anUnchangedEntryKeepsItsCompiledRulesAndCoverage() async throws {
        let shared = InMemoryRuntimeRulesStore()
        let a = RulesStore(service: "firestore", shared: shared), b = RulesStore(service: "firestore", shared: shared)
        try await a.publish(try loaded(Self.allowAll), source: Self.allowAll, fileName: "firestore.rules", scope: "p1")
        try await b.synchronize()
        let first = try #require(b.rules(for: "p1"))
        // Another project's rules move the version; p1's compiled rules stay the same object.
        try await a.publish(try loaded(Self.denyAll), source: Self.denyAll, fileName: "firestore.rules", scope: "p2")
        try await b.synchronize()
        #expect(b.rules(for: "p1") === first)
        #expect(b.rules(for: "p2")?.ruleset.source.text == Self.denyAll)
        // The publisher keeps its own compiled rules too.
        let own = try #require(a.rules(for: "p2"))
        try await a.synchronize()
        #expect(a.rules(for: "p2") === own)
    }

    @Test func servicesAreApartAndAResetClearsEverywhere() async throws {
        let shared = InMemoryRuntimeRulesStore()
        let firestore = RulesStore(service: "firestore", shared: shared)
        let a = RulesStore(service: "storage", shared: shared), b = RulesStore(service: "storage", shared: shared)
        try await a.publish(try loaded(Self.storage), source: Self.storage, fileName: "storage.rules", scope: "")
        try await firestore.synchronize()
        #expect(firestore.rules(for: "any") == nil)
        try await b.synchronize()
        // The empty scope holds for every project (Storage's rules replace the file's).
        #expect(b.rules(for: "any")?.ruleset.source.text == Self.storage)
        try await a.publish(nil, source: nil, fileName: "storage.rules", scope: "")
        try await b.synchronize()
        #expect(b.rules(for: "any") == nil)
    }

    @Test func withoutASharedStoreNothingIsRead() async throws {
        let alone = RulesStore(service: "firestore")
        try await alone.publish(try loaded(Self.allowAll), source: Self.allowAll, fileName: "firestore.rules", scope: "p1")
        try await alone.synchronize()
        #expect(alone.rules(for: "p1")?.ruleset.source.text == Self.allowAll)
    }
}

/// ``InMemoryReplicaRegistry`` against the suite every replica registry passes.
struct InMemoryReplicaRegistryTests {
    @Test(arguments: ReplicaRegistryConformance.all)
    func conformance(_ scenario: ReplicaRegistryConformance.Case) async throws {
        try await scenario.run { InMemoryReplicaRegistry() }
    }

    @Test func aTransactionIdNamesItsReplica() {
        let id: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        #expect(ReplicaDirectory.owner(ofTransaction: id + [UInt8](repeating: 9, count: 16)) == "0102030405060708")
        // One server's ids (16 random bytes) and anything else name no replica.
        #expect(ReplicaDirectory.owner(ofTransaction: [UInt8](repeating: 9, count: 16)) == nil)
        #expect(ReplicaDirectory.owner(ofTransaction: []) == nil)
    }
}
