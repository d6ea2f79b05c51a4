public import HearthCore
import Foundation
public import Testing

/// The behaviour every ``ReplicaRegistry`` must have, run unchanged against each one: in memory
/// (HearthServerTests), PostgreSQL (HearthPostgresTests).
public enum ReplicaRegistryConformance {
    public typealias Case = StoreConformanceCase<any ReplicaRegistry>

    public static let all: [Case] = [
        Case(name: "an announced replica is found until it withdraws", store: announceAndWithdraw),
        Case(name: "announcing again replaces the record", store: reannounce),
        Case(name: "a role names its last claimant while it lives", store: roles),
        Case(name: "a replica that stops announcing is not found", store: liveness),
    ]

    static func record(_ id: String, port: Int = 8080) -> ReplicaRecord {
        ReplicaRecord(id: id, address: "10.0.0.\(id.count)", ports: ["firestore": port, "storage": port + 1], tls: false)
    }

    static func announceAndWithdraw(_ registry: any ReplicaRegistry) async throws {
        #expect(try await registry.replica(id: "0011223344556677", liveWithin: 60) == nil)
        try await registry.announce(record("0011223344556677"))
        try await registry.announce(record("8899aabbccddeeff", port: 9000))
        #expect(try await registry.replica(id: "0011223344556677", liveWithin: 60) == record("0011223344556677"))
        #expect(try await registry.replica(id: "8899aabbccddeeff", liveWithin: 60)?.ports["firestore"] == 9000)
        try await registry.withdraw(id: "0011223344556677")
        #expect(try await registry.replica(id: "0011223344556677", liveWithin: 60) == nil)
        #expect(try await registry.replica(id: "8899aabbccddeeff", liveWithin: 60) != nil)
        try await registry.withdraw(id: "missing")
    }

    static func reannounce(_ registry: any ReplicaRegistry) async throws {
        try await registry.announce(record("a1"))
        var moved = record("a1", port: 7000)
        moved.address = "replica-a.internal"
        moved.tls = true
        try await registry.announce(moved)
        #expect(try await registry.replica(id: "a1", liveWithin: 60) == moved)
    }

    static func roles(_ registry: any ReplicaRegistry) async throws {
        #expect(try await registry.holder(of: "firestore-transactions", liveWithin: 60) == nil)
        try await registry.announce(record("a1"))
        try await registry.announce(record("b2"))
        try await registry.claim(role: "firestore-transactions", by: "a1")
        #expect(try await registry.holder(of: "firestore-transactions", liveWithin: 60)?.id == "a1")
        #expect(try await registry.holder(of: "other-role", liveWithin: 60) == nil)
        try await registry.claim(role: "firestore-transactions", by: "b2")
        #expect(try await registry.holder(of: "firestore-transactions", liveWithin: 60)?.id == "b2")
        // A withdrawn holder holds nothing.
        try await registry.withdraw(id: "b2")
        #expect(try await registry.holder(of: "firestore-transactions", liveWithin: 60) == nil)
    }

    static func liveness(_ registry: any ReplicaRegistry) async throws {
        try await registry.announce(record("a1"))
        try await registry.claim(role: "r", by: "a1")
        try await Task.sleep(for: .milliseconds(2500))
        #expect(try await registry.replica(id: "a1", liveWithin: 2) == nil)
        #expect(try await registry.holder(of: "r", liveWithin: 2) == nil)
        #expect(try await registry.replica(id: "a1", liveWithin: 60) != nil)
        // Announcing again makes it live again.
        try await registry.announce(record("a1"))
        #expect(try await registry.replica(id: "a1", liveWithin: 2) != nil)
    }
}
