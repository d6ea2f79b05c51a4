public import HearthCore
public import Foundation
import PostgresNIO

/// The replicas' registry in `replicas` and `replica_roles` (migration 13 of ``PostgresSchema``):
/// every server over the database announces where its ports are reached; liveness is judged on
/// the database's clock (`now()`), so the replicas' own clocks do not matter.
public struct PostgresReplicaRegistry: ReplicaRegistry {
    let backend: PostgresBackend

    /// A registry over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    static func encode(_ ports: [String: Int]) -> String {
        String(decoding: JSON.object(ports.sorted { $0.key < $1.key }.map { ($0.key, .number($0.value)) }).serializedBytes(), as: UTF8.self)
    }

    static func decode(_ text: String) -> [String: Int] {
        guard let json = try? JSON.parse(Array(text.utf8)), let object = json.objectValue else { return [:] }
        var ports: [String: Int] = [:]
        for (name, value) in object { if case .number(let n) = value, let port = Int(n) { ports[name] = port } }
        return ports
    }

    public func announce(_ replica: ReplicaRecord) async throws {
        let ports = Self.encode(replica.ports)
        try await backend.writeCommitted { db in
            try await db.execute(
                """
                INSERT INTO replicas (id, address, ports, tls, heartbeat_at) VALUES (\(replica.id), \(replica.address), \(ports), \(replica.tls), now())
                ON CONFLICT (id) DO UPDATE SET address = excluded.address, ports = excluded.ports, tls = excluded.tls, heartbeat_at = now()
                """)
        }
    }

    public func withdraw(id: String) async throws {
        try await backend.writeCommitted { db in
            try await db.execute("DELETE FROM replica_roles WHERE replica_id = \(id)")
            try await db.execute("DELETE FROM replicas WHERE id = \(id)")
        }
    }

    public func replica(id: String, liveWithin: TimeInterval) async throws -> ReplicaRecord? {
        return try await backend.read { db in
            try await db.rows(
                """
                SELECT id, address, ports, tls FROM replicas
                WHERE id = \(id) AND heartbeat_at >= now() - make_interval(secs => \(liveWithin))
                """
            ).first.map(Self.record)
        }
    }

    public func claim(role: String, by id: String) async throws {
        try await backend.writeCommitted { db in
            try await db.execute(
                """
                INSERT INTO replica_roles (role, replica_id, since) VALUES (\(role), \(id), now())
                ON CONFLICT (role) DO UPDATE SET replica_id = excluded.replica_id,
                    since = CASE WHEN replica_roles.replica_id = excluded.replica_id THEN replica_roles.since ELSE now() END
                """)
        }
    }

    public func holder(of role: String, liveWithin: TimeInterval) async throws -> ReplicaRecord? {
        return try await backend.read { db in
            try await db.rows(
                """
                SELECT r.id, r.address, r.ports, r.tls FROM replica_roles o JOIN replicas r ON r.id = o.replica_id
                WHERE o.role = \(role) AND r.heartbeat_at >= now() - make_interval(secs => \(liveWithin))
                """
            ).first.map(Self.record)
        }
    }

    static func record(_ row: PostgresRow) throws -> ReplicaRecord {
        let (id, address, ports, tls) = try row.decode((String, String, String, Bool).self)
        return ReplicaRecord(id: id, address: address, ports: decode(ports), tls: tls)
    }
}
