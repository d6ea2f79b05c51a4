public import HearthAuth
import HearthCore
import PostgresNIO

/// HearthAuth's ``SigningKeyStore`` over PostgreSQL (`auth_signing_keys`, migration 4 of
/// ``PostgresSchema``): the key rings every server signs and verifies with. A key is added in a
/// SERIALIZABLE transaction that first checks the ring's latest activation, so of servers adding
/// the key that is due at once exactly one succeeds (the others are rolled back by PostgreSQL or
/// find the key there, and adopt it); `(ring, activates_at)` is unique besides.
///
/// The private keys are stored as PKCS#8 PEM: whoever can read this table can sign tokens, as
/// whoever can read the data directory's `keys/` can on one server.
public struct PostgresSigningKeyStore: SigningKeyStore {
    let backend: PostgresBackend

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    public func keys(ring: String) async throws -> [StoredSigningKey] {
        try await backend.read { session in try await Self.keys(session, ring) }
    }

    static func keys(_ session: PostgresSession, _ ring: String) async throws -> [StoredSigningKey] {
        try await session.rows(
            "SELECT kid, activates_at, private_key_pem FROM auth_signing_keys WHERE ring = \(ring) ORDER BY activates_at"
        ).map { row in
            let (kid, activatesAt, pem) = try row.decode((String, Int64, String).self)
            return StoredSigningKey(kid: kid, activatesAt: activatesAt, privateKeyPEM: pem)
        }
    }

    public func add(_ key: StoredSigningKey, ring: String, ifLatestActivation latest: Int64?) async throws -> [StoredSigningKey] {
        do {
            return try await backend.write { session in
                let current = try await session.value(
                    "SELECT max(activates_at) FROM auth_signing_keys WHERE ring = \(ring)", as: Int64?.self) ?? nil
                if current == latest {
                    try await session.execute(
                        """
                        INSERT INTO auth_signing_keys (ring, kid, activates_at, private_key_pem)
                        VALUES (\(ring), \(key.kid), \(key.activatesAt), \(key.privateKeyPEM))
                        """)
                }
                return try await Self.keys(session, ring)
            }
        } catch let error as HearthError {
            // Another server's key for this activation (or with this id) got there first: adopt the stored ring.
            guard let cause = error.cause as? PostgresBackendError, cause.reason == .server(sqlState: "23505") else { throw error }
            return try await keys(ring: ring)
        }
    }

    public func remove(kids: [String], ring: String) async throws {
        guard !kids.isEmpty else { return }
        try await backend.writeCommitted { session in
            try await session.execute("DELETE FROM auth_signing_keys WHERE ring = \(ring) AND kid = ANY(\(kids))")
        }
    }
}
