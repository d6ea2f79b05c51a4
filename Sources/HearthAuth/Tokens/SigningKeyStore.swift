import HearthCore
import Synchronization

/// A signing key as a ``SigningKeyStore`` keeps it.
public struct StoredSigningKey: Sendable, Hashable {
    /// The key id (``KeyRing/keyID(_:)`` of its public key).
    public var kid: String
    /// Seconds since the epoch at which it starts signing.
    public var activatesAt: Int64
    /// The RSA private key, PKCS#8 PEM.
    public var privateKeyPEM: String

    public init(kid: String, activatesAt: Int64, privateKeyPEM: String) {
        self.kid = kid
        self.activatesAt = activatesAt
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Where a ``KeyRing`` keeps its keys when several servers must sign and verify with the same
/// ones (`PostgresSigningKeyStore` in HearthPostgres; one server keeps them as files instead,
/// ``KeyRing/init(directory:policy:clock:)``). Each ring (Auth's, App Check's) has its own name.
///
/// The schedule is decided by whichever server gets there first: ``add(_:ring:ifLatestActivation:)``
/// stores a key only if the ring's latest activation is still the one its caller planned on, so
/// of servers that find a key due at once exactly one adds it, and every one adopts the stored set.
/// Every implementation passes `SigningKeyStoreConformance` (the HearthStoreConformance target).
public protocol SigningKeyStore: Sendable {
    /// The ring's keys, earliest activation first.
    func keys(ring: String) async throws -> [StoredSigningKey]
    /// Adds `key` if the ring's latest activation is `latest` (nil: the ring is empty); returns
    /// the ring's keys afterwards either way, earliest activation first.
    func add(_ key: StoredSigningKey, ring: String, ifLatestActivation latest: Int64?) async throws -> [StoredSigningKey]
    /// Removes the ring's keys with these ids (ids it does not hold are ignored).
    func remove(kids: [String], ring: String) async throws
}

/// A ``SigningKeyStore`` in process memory (tests; several key rings in one process).
public final class InMemorySigningKeyStore: SigningKeyStore {
    let rings = Mutex<[String: [StoredSigningKey]]>([:])

    public init() {}

    public func keys(ring: String) async throws -> [StoredSigningKey] { rings.withLock { $0[ring] ?? [] } }

    public func add(_ key: StoredSigningKey, ring: String, ifLatestActivation latest: Int64?) async throws -> [StoredSigningKey] {
        rings.withLock { rings in
            var keys = rings[ring] ?? []
            if keys.last?.activatesAt == latest, !keys.contains(where: { $0.kid == key.kid || $0.activatesAt == key.activatesAt }) {
                keys.append(key)
                keys.sort { $0.activatesAt < $1.activatesAt }
                rings[ring] = keys
            }
            return keys
        }
    }

    public func remove(kids: [String], ring: String) async throws {
        rings.withLock { rings in rings[ring]?.removeAll { kids.contains($0.kid) } }
    }
}
