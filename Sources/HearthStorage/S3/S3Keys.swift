public import HearthCore
import Foundation

/// S3 access keys (`hearth admin s3-keys`): an id, a secret, optionally the only buckets they
/// may touch. SigV4 needs the secret itself to check a signature (as AWS does), so it is
/// stored — in the data directory's `storage.sqlite`, which only the server's user can read
/// — and shown once, at creation.
public struct S3AccessKey: Sendable, Hashable {
    public var id: String
    public var secret: String
    /// Buckets the key may use; empty = every bucket.
    public var buckets: [String]
    public var created: Timestamp
    public var revoked: Bool
    public var note: String?

    package init(id: String, secret: String, buckets: [String], created: Timestamp, revoked: Bool, note: String?) {
        self.id = id
        self.secret = secret
        self.buckets = buckets
        self.created = created
        self.revoked = revoked
        self.note = note
    }

    public func allows(bucket: String?) -> Bool {
        guard let bucket else { return buckets.isEmpty }
        return buckets.isEmpty || buckets.contains(bucket)
    }
}

extension ObjectStore {
    public func createAccessKey(buckets: [String] = [], note: String? = nil) async throws -> S3AccessKey {
        for b in buckets { try StorageNames.validateBucket(b) }
        func random(_ n: Int, _ alphabet: String) -> String {
            let a = Array(alphabet)
            var rng = SystemRandomNumberGenerator()
            return String((0..<n).map { _ in a[Int.random(in: 0..<a.count, using: &rng)] })
        }
        let key = S3AccessKey(
            id: "HRTH" + random(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
            secret: random(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"), buckets: buckets,
            created: Self.now(), revoked: false, note: note)
        try await metadata.addAccessKey(key)
        accessKeyCache.withLock { _ = $0.removeValue(forKey: key.id) }
        return key
    }

    public func accessKeys() async throws -> [S3AccessKey] {
        try await metadata.accessKeys()
    }

    /// The key with this id (nil if none). Answers from memory for a second after reading it,
    /// so a revocation by `hearth admin s3-keys revoke` in another process takes effect within
    /// a second; one made through this store, at once. Without the cache (`metadataCacheSize` 0:
    /// several servers), every call reads the store.
    public func accessKey(_ id: String) async throws -> S3AccessKey? {
        guard cachesAccessKeys else { return try await metadata.accessKey(id) }
        let now = ContinuousClock.now
        if let hit = accessKeyCache.withLock({ $0[id] }), now - hit.read < .seconds(1) { return hit.key }
        let key = try await metadata.accessKey(id)
        accessKeyCache.withLock { cache in
            if cache.count >= 1024 { cache.removeAll(keepingCapacity: true) }  // a flood of unknown ids stays bounded
            cache[id] = (key, now)
        }
        return key
    }

    /// Revokes a key: requests signed with it fail from now on. NOT_FOUND if there is no such key.
    public func revokeAccessKey(_ id: String) async throws {
        guard try await metadata.revokeAccessKey(id) else { throw HearthError(.notFound, "No access key \(id).") }
        accessKeyCache.withLock { _ = $0.removeValue(forKey: id) }
    }
}
