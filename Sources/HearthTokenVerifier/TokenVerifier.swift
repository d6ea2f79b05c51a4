import HearthCore
import _CryptoExtras
import HearthJWT
public import Foundation
import Synchronization

/// Verifies Hearth and Firebase ID tokens for a project, with keys from a `PublicKeySource`:
///
/// 1. Only RS256 with a `kid` is accepted — `alg: none` and every other algorithm are rejected.
/// 2. Keys are cached for the source's `max-age` (or `defaultMaxAge`), and refetched once the
///    cache is stale.
/// 3. A `kid` the cache does not know triggers a refetch (key rotation), at most once per
///    `minimumRefetchInterval`, so forged kids cannot make the verifier hammer the source.
/// 4. `iss` must be `https://securetoken.google.com/<project>`, `aud` the project, `exp` after
///    now, `iat` and `auth_time` not after now (each give or take `leeway`), `sub` non-empty
///    and at most 128 bytes.
/// 5. A token whose signature verified is remembered (up to a few thousand), so presenting it
///    again skips the RSA check; its key must still be published and its claims are checked
///    again each time.
public final class TokenVerifier: Sendable {
    public struct Configuration: Sendable {
        public var projectID: String
        /// Clock difference tolerated on `exp`, `iat` and `auth_time`, seconds.
        public var leeway: Int64
        /// Cache lifetime when the source gives no max-age, seconds.
        public var defaultMaxAge: Int64
        /// Least time between two fetches caused by unknown key ids, seconds.
        public var minimumRefetchInterval: Int64
        /// The issuer expected; Firebase's for the project unless set.
        public var issuer: String
        /// How many verified tokens to remember (0: verify every signature every time).
        public var verifiedTokenCacheSize: Int

        public init(
            projectID: String, leeway: Int64 = 5, defaultMaxAge: Int64 = 3600, minimumRefetchInterval: Int64 = 30, issuer: String? = nil,
            verifiedTokenCacheSize: Int = 4096
        ) {
            self.verifiedTokenCacheSize = verifiedTokenCacheSize
            self.projectID = projectID
            self.leeway = leeway
            self.defaultMaxAge = defaultMaxAge
            self.minimumRefetchInterval = minimumRefetchInterval
            self.issuer = issuer ?? "https://securetoken.google.com/\(projectID)"
        }
    }

    struct Cache {
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        var expiresAt: Int64 = .min
        var lastFetch: Int64?
    }

    public let configuration: Configuration
    public let source: any PublicKeySource
    /// Seconds since the epoch; injected by tests.
    let now: @Sendable () -> Int64
    let cache = Mutex(Cache())
    let verified: VerifiedTokenCache<SignedPayload>

    public init(configuration: Configuration, source: any PublicKeySource, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.configuration = configuration
        self.verified = VerifiedTokenCache(capacity: configuration.verifiedTokenCacheSize)
        self.source = source
        self.now = now
    }

    /// A verifier for a project's Firebase ID tokens, keys fetched from Google's JWKS.
    public convenience init(firebaseProjectID: String) {
        self.init(configuration: .init(projectID: firebaseProjectID), source: HTTPPublicKeySource(url: HTTPPublicKeySource.firebaseJWKSURL))
    }

    /// Verifies `token` and returns who it names, or throws why not.
    public func verify(_ token: String) async throws(TokenVerificationError) -> VerifiedToken {
        if let seen = verified.value(for: token) {
            // Verified before: the key must still be published; the claims are checked again.
            _ = try await publicKey(kid: seen.keyID)
            return try check(seen.payload, kid: seen.keyID)
        }
        guard let jwt = JWT.parse(token) else { throw .malformed }
        // HearthJWT's verifier: RS256 only, a kid required; the key is fetched between the
        // header check and the signature check (it may need a network round trip).
        do throws(JWTError) { try jwt.checkHeader() } catch { throw TokenVerificationError(error) }
        guard let kid = jwt.keyID else { throw .missingKeyID }
        let key = try await publicKey(kid: kid)
        do throws(JWTError) { try jwt.verifySignature { _ in [key] } } catch { throw TokenVerificationError(error) }
        let result = try check(jwt.payload, kid: kid)
        verified.insert(SignedPayload(keyID: kid, payload: jwt.payload), for: token)
        return result
    }

    /// A token whose signature verified, remembered so its next presentation skips RSA.
    struct SignedPayload: Sendable {
        var keyID: String
        var payload: JSON
    }

    /// The claim checks, after the signature.
    func check(_ c: JSON, kid: String) throws(TokenVerificationError) -> VerifiedToken {
        let iss = c["iss"]?.stringValue
        guard iss == configuration.issuer else { throw .wrongIssuer(iss) }
        let aud = c["aud"]?.stringValue
        guard aud == configuration.projectID else { throw .wrongAudience(aud) }
        guard let sub = c["sub"]?.stringValue, !sub.isEmpty, sub.utf8.count <= 128 else { throw .invalidSubject }
        guard let exp = c["exp"]?.int64Value else { throw .missingClaim("exp") }
        guard let iat = c["iat"]?.int64Value else { throw .missingClaim("iat") }
        let authTime: Int64
        if let a = c["auth_time"] {
            guard let s = a.int64Value else { throw .missingClaim("auth_time") }
            authTime = s
        } else {
            authTime = iat
        }
        let t = now()
        do throws(JWTError) {
            _ = try JWTTimes(claims: c, now: t, rules: JWTTimeRules(expiryLeeway: configuration.leeway, issuedAtLeeway: configuration.leeway))
        } catch {
            throw TokenVerificationError(error)
        }
        guard authTime <= t + configuration.leeway else { throw .authTimeInFuture(authTime: authTime, now: t) }
        return VerifiedToken(
            uid: sub, claims: c, email: c["email"]?.stringValue, emailVerified: c["email_verified"]?.boolValue ?? false,
            signInProvider: c["firebase"]?["sign_in_provider"]?.stringValue, authTime: authTime, issuedAt: iat,
            expiresAt: exp, keyID: kid)
    }

    /// The cached key for `kid`, fetching when the cache is stale or (rate-limited) does not know it.
    func publicKey(kid: String) async throws(TokenVerificationError) -> _RSA.Signing.PublicKey {
        enum Next { case found(_RSA.Signing.PublicKey), fetch, unknown }
        let t = now()
        let minimum = configuration.minimumRefetchInterval
        let next: Next = cache.withLock { c in
            if c.expiresAt > t, let k = c.keys[kid] { return .found(k) }
            if c.expiresAt > t, let last = c.lastFetch, last + minimum > t { return .unknown }
            c.lastFetch = t
            return .fetch
        }
        switch next {
        case .found(let k): return k
        case .unknown: throw .unknownKeyID(kid)
        case .fetch:
            let set = try await source.fetchKeys()
            let maxAge = set.maxAge ?? configuration.defaultMaxAge
            let fetchedAt = now()
            cache.withLock { c in
                c.keys = set.keys
                c.expiresAt = fetchedAt + maxAge
            }
            guard let k = set.keys[kid] else { throw .unknownKeyID(kid) }
            return k
        }
    }

    /// Fetches the keys now (at start-up, so the first request does not wait).
    public func refreshKeys() async throws(TokenVerificationError) {
        let set = try await source.fetchKeys()
        let t = now()
        let maxAge = set.maxAge ?? configuration.defaultMaxAge
        cache.withLock { c in
            c.keys = set.keys
            c.expiresAt = t + maxAge
            c.lastFetch = t
        }
    }

}
