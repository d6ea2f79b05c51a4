public import HearthCore
public import _CryptoExtras
import Crypto
import HearthJWT
public import Foundation
import Synchronization

/// The RSA keys that sign ID tokens. Keys are generated on first use, persisted as PEM files
/// under a directory (`keys/` in the data dir), and rotated on a schedule with overlap:
///
/// 1. The *active* key signs; the *next* key is published a full rotation interval before it
///    starts signing, so a verifier that cached the key set still knows it.
/// 2. A retired key stays published until every token it signed has expired
///    (the successor's activation + the longest token lifetime + clock skew).
/// 3. File names carry the activation time: `<activatesAt>-<kid>.pem` — no separate index to corrupt.
/// 4. Several servers share one ring through a ``SigningKeyStore`` instead of a directory
///    (``init(store:ring:policy:clock:)``): the store holds the keys, the schedule is kept by
///    ``synchronize()`` (a key due is added by whichever server gets there first, the others
///    adopt it), and signing never generates a key of its own — every server signs with the
///    stored active key and verifies every stored key. Since the next key is stored a full
///    rotation interval before it signs, synchronizing every ``synchronizationInterval`` keeps
///    each server's copy current with time to spare.
public final class KeyRing: Sendable {
    public struct Policy: Sendable {
        /// How long a key signs before its successor takes over, in seconds.
        public var rotationInterval: Int64
        /// The longest lifetime of a token a key signs (ID tokens: 1 h; session cookies: up to 14 days).
        public var maxTokenLifetime: Int64
        /// Extra time a retired key stays published for verifiers with skewed clocks.
        public var clockSkew: Int64
        public var keySize: Int

        public init(rotationInterval: Int64 = 6 * 3600, maxTokenLifetime: Int64 = 3600, clockSkew: Int64 = 300, keySize: Int = 2048) {
            self.rotationInterval = rotationInterval
            self.maxTokenLifetime = maxTokenLifetime
            self.clockSkew = clockSkew
            self.keySize = keySize
        }
    }

    public struct Key: Sendable {
        public let kid: String
        /// Seconds since the epoch at which this key starts signing.
        public let activatesAt: Int64
        public let privateKey: _RSA.Signing.PrivateKey
        /// Derived once: deriving it per verification copies the key in BoringSSL.
        public let publicKey: _RSA.Signing.PublicKey

        init(kid: String, activatesAt: Int64, privateKey: _RSA.Signing.PrivateKey) {
            self.kid = kid
            self.activatesAt = activatesAt
            self.privateKey = privateKey
            self.publicKey = privateKey.publicKey
        }
    }

    public let policy: Policy
    let directory: URL?
    /// Where the keys live when servers share them (nil: `directory` or memory).
    let store: (any SigningKeyStore)?
    /// This ring's name in `store`.
    let ringName: String
    let clock: AuthClock
    let keys: Mutex<[Key]>

    /// Loads the keys under `directory` (nil keeps them in memory only) and brings them up to date.
    public init(directory: URL?, policy: Policy = .init(), clock: AuthClock = .system) throws(HearthError) {
        self.policy = policy
        self.directory = directory
        self.store = nil
        self.ringName = ""
        self.clock = clock
        var loaded: [Key] = []
        if let directory {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                loaded = try Self.keyFiles(directory)
            } catch {
                throw HearthError(.internal, "Cannot load signing keys.", cause: error)
            }
        }
        keys = Mutex(loaded.sorted { $0.activatesAt < $1.activatesAt })
        try rotate()
    }

    /// A ring kept in `store` under the name `ring` (`"auth"`, `"app-check"`), shared by every
    /// server over that store: loads it, adding the keys the schedule needs if no server has yet.
    /// Keep it current with ``runSynchronization(onError:)``.
    public init(store: any SigningKeyStore, ring: String, policy: Policy = .init(), clock: AuthClock = .system) async throws {
        self.policy = policy
        self.directory = nil
        self.store = store
        self.ringName = ring
        self.clock = clock
        keys = Mutex([])
        try await synchronize()
    }

    /// The keys of a file-based ring's directory (`<activatesAt>-<kid>.pem`), in no order.
    static func keyFiles(_ directory: URL) throws -> [Key] {
        var loaded: [Key] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".pem") {
            let stem = name.dropLast(4)
            guard let dash = stem.firstIndex(of: "-"), let at = Int64(stem[..<dash]) else { continue }
            let pem = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            let key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
            loaded.append(Key(kid: Self.keyID(key.publicKey), activatesAt: at, privateKey: key))
        }
        return loaded
    }

    /// A server moving from its files to a shared store (`hearth serve --database-url` over a
    /// data directory that has `keys/`): copies the keys of the file-based ring in `directory`
    /// into `store`'s ring `ring` if that ring holds no key yet, so the tokens they signed keep
    /// verifying. Returns how many were copied: none when the directory has no keys, the ring
    /// had keys already (another server's, or an earlier start's — the files are ignored then),
    /// or another server stored its keys first. Keys whose tokens have all expired go at the
    /// ring's next ``synchronize()``.
    public static func importFiles(_ directory: URL, into store: any SigningKeyStore, ring: String) async throws -> Int {
        guard FileManager.default.fileExists(atPath: directory.path) else { return 0 }
        let files: [Key]
        do {
            files = try keyFiles(directory).sorted { $0.activatesAt < $1.activatesAt }
        } catch {
            throw HearthError(.internal, "Cannot load signing keys from \(directory.path).", cause: error)
        }
        guard !files.isEmpty, try await store.keys(ring: ring).isEmpty else { return 0 }
        var latest: Int64? = nil
        var copied = 0
        for key in files where key.activatesAt != latest {
            let stored = try await store.add(
                StoredSigningKey(kid: key.kid, activatesAt: key.activatesAt, privateKeyPEM: key.privateKey.pkcs8PEMRepresentation), ring: ring,
                ifLatestActivation: latest)
            // Another server's key got there first: its ring is everyone's.
            guard stored.last?.kid == key.kid else { break }
            latest = key.activatesAt
            copied += 1
        }
        return copied
    }

    /// How often a store-backed ring should ``synchronize()``: a quarter of the rotation
    /// interval, at most a minute (the next key is stored a whole interval before it signs).
    public var synchronizationInterval: Duration { .seconds(max(1, min(60, policy.rotationInterval / 4))) }

    /// Brings the stored ring up to the schedule and adopts it: adds the key that is due (the
    /// active one, then the next), unless another server added one first — then its key is
    /// everyone's — removes the keys whose tokens have all expired, and replaces this process's
    /// copy by the stored keys. A ring over a directory just rotates.
    public func synchronize() async throws {
        guard let store else { return try rotate() }
        var stored = try await store.keys(ring: ringName)
        // At most two keys are ever due at once (the active one and the next); the bound only
        // stops a store that never takes a key from looping.
        for _ in 0..<4 {
            let now = clock.seconds
            let latest = stored.last?.activatesAt
            let due: Int64
            if let latest, latest + policy.rotationInterval > now {
                guard latest <= now else { break }
                due = latest + policy.rotationInterval
            } else {
                due = now
            }
            let key = try generate(activatesAt: due)
            stored = try await store.add(
                StoredSigningKey(kid: key.kid, activatesAt: due, privateKeyPEM: key.privateKey.pkcs8PEMRepresentation), ring: ringName,
                ifLatestActivation: latest)
        }
        var loaded = try stored.map(Self.decode).sorted { $0.activatesAt < $1.activatesAt }
        guard !loaded.isEmpty else { throw HearthError(.internal, "The signing key store holds no key for \(ringName).") }
        let now = clock.seconds
        var retired: [String] = []
        while loaded.count > 2, loaded[1].activatesAt <= now, loaded[1].activatesAt + policy.maxTokenLifetime + policy.clockSkew <= now {
            retired.append(loaded.removeFirst().kid)
        }
        if !retired.isEmpty { try await store.remove(kids: retired, ring: ringName) }
        keys.withLock { $0 = loaded }
    }

    /// Runs ``synchronize()`` every ``synchronizationInterval`` until the task is cancelled. A
    /// failed run (the store unreachable) goes to `onError`, and the ring keeps signing with the
    /// keys it has: the active one and the next cover a whole rotation interval.
    public func runSynchronization(onError: @Sendable (any Error) -> Void = { _ in }) async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: synchronizationInterval)
            } catch {
                return
            }
            do {
                try await synchronize()
            } catch {
                onError(error)
            }
        }
    }

    /// A stored key as a ring key; its id must be its public key's.
    static func decode(_ stored: StoredSigningKey) throws(HearthError) -> Key {
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: stored.privateKeyPEM)
        } catch {
            throw HearthError(.dataLoss, "Unreadable signing key \(stored.kid).", cause: error)
        }
        guard keyID(key.publicKey) == stored.kid else { throw HearthError(.dataLoss, "Signing key \(stored.kid) does not match its id.") }
        return Key(kid: stored.kid, activatesAt: stored.activatesAt, privateKey: key)
    }

    /// A key id: the first 20 bytes of SHA-256 over the public key's DER, in hex (40 characters, like Google's).
    public static func keyID(_ key: _RSA.Signing.PublicKey) -> String {
        SHA256.hash(data: key.derRepresentation).prefix(20).map { String(format: "%02x", $0) }.joined()
    }

    /// Generates, activates and retires keys as the schedule says for the current time. A
    /// store-backed ring never generates a key here (that would give this server a key of its
    /// own): ``synchronize()`` keeps its schedule.
    public func rotate() throws(HearthError) {
        guard store == nil else { return }
        let now = clock.seconds
        let current = keys.withLock { $0 }
        var next = current
        if next.isEmpty || next.last!.activatesAt + policy.rotationInterval <= now {
            next.append(try generate(activatesAt: now))
        }
        if next.last!.activatesAt <= now {
            next.append(try generate(activatesAt: next.last!.activatesAt + policy.rotationInterval))
        }
        var removed: [Key] = []
        while next.count > 2, next[1].activatesAt <= now,
            next[1].activatesAt + policy.maxTokenLifetime + policy.clockSkew <= now
        {
            removed.append(next.removeFirst())
        }
        guard next.count != current.count || removed.count > 0 else { return }
        for k in next where !current.contains(where: { $0.kid == k.kid }) { try persist(k) }
        for k in removed { unpersist(k) }
        keys.withLock { $0 = next }
    }

    func generate(activatesAt: Int64) throws(HearthError) -> Key {
        do {
            let key = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: policy.keySize))
            return Key(kid: Self.keyID(key.publicKey), activatesAt: activatesAt, privateKey: key)
        } catch {
            throw HearthError(.internal, "Cannot generate a signing key.", cause: error)
        }
    }

    func fileURL(_ key: Key) -> URL? { directory?.appendingPathComponent("\(key.activatesAt)-\(key.kid).pem") }

    func persist(_ key: Key) throws(HearthError) {
        guard let url = fileURL(key), let directory else { return }
        let tmp = directory.appendingPathComponent(".\(key.kid).tmp")
        let fm = FileManager.default
        guard fm.createFile(atPath: tmp.path, contents: Data(key.privateKey.pkcs8PEMRepresentation.utf8), attributes: [.posixPermissions: 0o600])
        else { throw HearthError(.internal, "Cannot write a signing key.") }
        guard rename(tmp.path, url.path) == 0 else { throw HearthError(.internal, "Cannot write a signing key.") }
    }

    func unpersist(_ key: Key) {
        guard let url = fileURL(key) else { return }
        try? FileManager.default.removeItem(at: url)
    }

    /// The key that signs now (rotating first if the schedule says so).
    public func activeKey() throws(HearthError) -> Key {
        let now = clock.seconds
        if let k = keys.withLock({ ks in ks.last(where: { $0.activatesAt <= now }) }),
            keys.withLock({ ks in ks.last!.activatesAt > now })
        {
            return k
        }
        try rotate()
        // A store-backed ring whose first key another server activated by a clock a little
        // ahead of ours signs with it (it is published) rather than with none.
        return keys.withLock { ks in ks.last(where: { $0.activatesAt <= now }) ?? ks[0] }
    }

    /// The published (not yet expired) key with this id.
    public func publicKey(kid: String) -> _RSA.Signing.PublicKey? {
        // Every verification asks: look the key up and check that no rotation is due under
        // one lock, and run `rotate()` (which copies the key list) only when one is.
        let now = clock.seconds
        let (current, key) = keys.withLock { ks in
            (Self.isCurrent(ks, now: now, policy: policy), ks.first(where: { $0.kid == kid })?.publicKey)
        }
        if current { return key }
        try? rotate()
        return keys.withLock { ks in ks.first(where: { $0.kid == kid })?.publicKey }
    }

    /// Whether `rotate()` at `now` would leave `keys` as they are (no key to add or retire).
    static func isCurrent(_ keys: [Key], now: Int64, policy: Policy) -> Bool {
        guard let last = keys.last, last.activatesAt + policy.rotationInterval > now, last.activatesAt > now else { return false }
        if keys.count > 2, keys[1].activatesAt <= now, keys[1].activatesAt + policy.maxTokenLifetime + policy.clockSkew <= now { return false }
        return true
    }

    /// Every published key, oldest first: retired ones still verifying, the active one and the next one.
    public var publishedKeys: [Key] {
        try? rotate()
        return keys.withLock { $0 }
    }

    /// How long verifiers may cache the published set (the `Cache-Control: max-age`, seconds):
    /// half the rotation interval, so the next key is always seen before it signs.
    public var cacheMaxAge: Int64 { max(60, policy.rotationInterval / 2) }

    /// The JWKS document (`{"keys":[{kty,alg,use,kid,n,e}]}`).
    public func jwks() -> JSON {
        RSAKeySet.jwks(publishedKeys.map { (kid: $0.kid, key: $0.publicKey) })
    }

    /// Signs `input` with the active key (RS256: RSASSA-PKCS1-v1_5 over SHA-256); returns kid and signature.
    public func sign(_ input: [UInt8]) throws(HearthError) -> (kid: String, signature: [UInt8]) {
        let key = try activeKey()
        do throws(JWTError) {
            return (key.kid, try RS256.sign(input, with: key.privateKey))
        } catch {
            throw HearthError(.internal, "Cannot sign a token.", cause: error)
        }
    }

    /// Signs `claims` as an RS256 JWT with the active key (header `alg`, `kid`, `typ`).
    public func signJWT(_ claims: JSON, type: String = "JWT") throws(HearthError) -> String {
        let key = try activeKey()
        do throws(JWTError) {
            return try JWT.signRS256(header: JWT.rs256Header(keyID: key.kid, type: type), payload: claims, key: key.privateKey)
        } catch {
            throw HearthError(.internal, "Cannot sign a token.", cause: error)
        }
    }
}
