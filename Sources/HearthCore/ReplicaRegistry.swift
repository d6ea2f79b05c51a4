public import Foundation
import Synchronization

/// A running server as the replicas' registry knows it: where its ports are reached.
public struct ReplicaRecord: Sendable, Equatable {
    /// 16 hex digits (8 random bytes, made at start): the prefix of the transaction ids it hands out.
    public var id: String
    /// The host name or address the other replicas reach it at (`--replica-address`, else `--host`).
    public var address: String
    /// Its bound ports by service name (`firestore`, `storage`, …).
    public var ports: [String: Int]
    /// Whether its ports speak TLS.
    public var tls: Bool

    public init(id: String, address: String, ports: [String: Int], tls: Bool = false) {
        self.id = id
        self.address = address
        self.ports = ports
        self.tls = tls
    }
}

/// Where servers sharing one database find each other (docs/postgres.md, "Transactions across
/// replicas"): each announces itself at start and every few seconds after, and withdraws when it
/// stops; one that stops announcing is no longer found once `liveWithin` has passed. A role (such
/// as `firestore-transactions`, the replica that orders every REST read-write transaction) names
/// the replica that holds it. Conformance: `ReplicaRegistryConformance`.
public protocol ReplicaRegistry: Sendable {
    /// Records `replica` as alive now (again).
    func announce(_ replica: ReplicaRecord) async throws
    /// Forgets the replica (a graceful stop); it also gives up its roles.
    func withdraw(id: String) async throws
    /// The replica with this id if it announced itself within `liveWithin`.
    func replica(id: String, liveWithin: TimeInterval) async throws -> ReplicaRecord?
    /// Records that `id` holds `role` now.
    func claim(role: String, by id: String) async throws
    /// The live replica (within `liveWithin`) that last claimed `role`, if any.
    func holder(of role: String, liveWithin: TimeInterval) async throws -> ReplicaRecord?
}

/// The registry of servers in one process (tests).
public final class InMemoryReplicaRegistry: ReplicaRegistry {
    private let state = Mutex<(replicas: [String: (ReplicaRecord, Date)], roles: [String: String])>(([:], [:]))
    private let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    public func announce(_ replica: ReplicaRecord) async throws {
        let at = now()
        state.withLock { $0.replicas[replica.id] = (replica, at) }
    }

    public func withdraw(id: String) async throws {
        state.withLock { s in
            s.replicas[id] = nil
            s.roles = s.roles.filter { $0.value != id }
        }
    }

    public func replica(id: String, liveWithin: TimeInterval) async throws -> ReplicaRecord? {
        let at = now()
        return state.withLock { s in
            guard let (record, seen) = s.replicas[id], at.timeIntervalSince(seen) <= liveWithin else { return nil }
            return record
        }
    }

    public func claim(role: String, by id: String) async throws {
        state.withLock { $0.roles[role] = id }
    }

    public func holder(of role: String, liveWithin: TimeInterval) async throws -> ReplicaRecord? {
        guard let id = state.withLock({ $0.roles[role] }) else { return nil }
        return try await replica(id: id, liveWithin: liveWithin)
    }
}
