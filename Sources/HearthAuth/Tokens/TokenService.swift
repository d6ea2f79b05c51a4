public import HearthCore
public import _CryptoExtras
import HearthJWT
import Synchronization
import Foundation

/// A verified ID token: who it names and everything it claims.
public struct VerifiedIDToken: Sendable {
    public var uid: String
    public var claims: JSON
    public var signInProvider: String?
    public var authTime: Int64
    public var issuedAt: Int64
    public var expiresAt: Int64
    public var token: String
    /// False for an unsigned (`alg: none`) token accepted in emulator mode.
    public var signed: Bool
}

/// A verified custom token (what `accounts:signInWithCustomToken` needs).
public struct VerifiedCustomToken: Sendable {
    public var uid: String
    /// The developer claims (`claims`), already checked for size and reserved names.
    public var claims: JSON?
}

/// A public key trusted to sign custom tokens: a service account's `client_email` and key.
public struct CustomTokenSigner: Sendable {
    public var clientEmail: String
    public var keyID: String?
    public var publicKey: _RSA.Signing.PublicKey

    public init(clientEmail: String, keyID: String? = nil, publicKey: _RSA.Signing.PublicKey) {
        self.clientEmail = clientEmail
        self.keyID = keyID
        self.publicKey = publicKey
    }
}

/// Mints and verifies Firebase-format ID tokens and verifies custom tokens. No I/O besides the key ring.
public final class TokenService: Sendable {
    public static let customTokenAudience =
        "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
    /// Names a developer may not use as custom claims (firebase-admin's list).
    public static let reservedClaims: Set<String> = [
        "acr", "amr", "at_hash", "aud", "auth_time", "azp", "cnf", "c_hash", "exp", "firebase", "iat", "iss", "jti", "nbf",
        "nonce", "sub",
    ]
    public static let maxClaimsBytes = 1000
    public static let idTokenLifetime: Int64 = 3600

    public let projectID: String
    public let keyRing: KeyRing
    public let clock: AuthClock
    /// Emulator mode: accept `alg: none` ID tokens and custom tokens (never in production).
    public let allowUnsigned: Bool
    /// The service accounts whose custom tokens are accepted (``setCustomTokenSigners(_:)`` replaces them).
    public var customTokenSigners: [CustomTokenSigner] { signers.withLock { $0 } }
    let signers: Mutex<[CustomTokenSigner]>
    /// Allowed clock difference for `iat`/`auth_time` in the future, seconds.
    public let clockSkew: Int64
    /// ID tokens whose signature verified (their claims are rechecked on each presentation).
    let verifiedIDTokens: VerifiedTokenCache<SignedPayload>

    public init(
        projectID: String, keyRing: KeyRing, clock: AuthClock = .system, allowUnsigned: Bool = false,
        customTokenSigners: [CustomTokenSigner] = [], clockSkew: Int64 = 0, verifiedTokenCacheSize: Int = 4096
    ) {
        self.verifiedIDTokens = VerifiedTokenCache(capacity: verifiedTokenCacheSize)
        self.projectID = projectID
        self.keyRing = keyRing
        self.clock = clock
        self.allowUnsigned = allowUnsigned
        self.signers = Mutex(customTokenSigners)
        self.clockSkew = clockSkew
    }

    public var issuer: String { "https://securetoken.google.com/\(projectID)" }

    /// Replaces the accepted custom-token signers (servers sharing a store read the registered
    /// service accounts again, so one registered through another server is accepted here too).
    public func setCustomTokenSigners(_ signers: [CustomTokenSigner]) {
        self.signers.withLock { $0 = signers }
    }

    // MARK: Minting

    /// The claims of an ID token for `account` (Firebase's layout and order).
    public func idTokenClaims(
        for account: Account, signInProvider: String, authTime: Int64, issuedAt: Int64, extraClaims: JSON? = nil
    ) -> JSON {
        var m: [(String, JSON)] = []
        if account.isAnonymous { m.append(("provider_id", .string("anonymous"))) }
        if let n = account.displayName { m.append(("name", .string(n))) }
        if let p = account.photoURL { m.append(("picture", .string(p))) }
        for source in [account.customClaims.flatMap { try? JSON.parse($0) }, extraClaims] {
            for (k, v) in source?.objectValue ?? [] where !Self.reservedClaims.contains(k) && !m.contains(where: { $0.0 == k }) {
                m.append((k, v))
            }
        }
        m.removeAll { ["iss", "aud", "auth_time", "user_id", "sub", "iat", "exp", "email", "email_verified", "phone_number"].contains($0.0) }
        m += [
            ("iss", .string(issuer)), ("aud", .string(projectID)), ("auth_time", .int(authTime)),
            ("user_id", .string(account.uid)), ("sub", .string(account.uid)), ("iat", .int(issuedAt)),
            ("exp", .int(issuedAt + Self.idTokenLifetime)),
        ]
        if let e = account.email {
            m.append(("email", .string(e)))
            m.append(("email_verified", .bool(account.emailVerified)))
        }
        if let p = account.phoneNumber { m.append(("phone_number", .string(p))) }
        m.append(("firebase", .object([("identities", account.identities), ("sign_in_provider", .string(signInProvider))])))
        return .object(m)
    }

    /// An RS256 ID token signed by the key ring's active key.
    public func mintIDToken(
        for account: Account, signInProvider: String, authTime: Int64, extraClaims: JSON? = nil
    ) throws(HearthError) -> String {
        let claims = idTokenClaims(
            for: account, signInProvider: signInProvider, authTime: authTime, issuedAt: clock.seconds, extraClaims: extraClaims)
        return try sign(claims)
    }

    /// Signs any claim set as an RS256 JWT with the active key.
    public func sign(_ claims: JSON) throws(HearthError) -> String {
        try keyRing.signJWT(claims)
    }

    // MARK: Verification

    /// Checks signature, algorithm, issuer, audience, times and subject. Revocation (validSince,
    /// disabled, deleted) needs the account and is the engine's `verifyIDToken(_:checkRevoked:)`.
    public func verifyIDToken(_ token: String, issuer expectedIssuer: String? = nil) throws(HearthError) -> VerifiedIDToken {
        let invalid = AuthErrorCode.invalidIDToken
        if let seen = verifiedIDTokens.value(for: token), keyRing.publicKey(kid: seen.keyID) != nil {
            return try checkClaims(seen.payload, token: token, signed: true, issuer: expectedIssuer)
        }
        guard let jwt = JWT.parse(token) else { throw invalid.error() }
        let signed = try checkSignature(jwt, invalid: invalid) { kid in kid.flatMap { keyRing.publicKey(kid: $0) }.map { [$0] } ?? [] }
        let verified = try checkClaims(jwt.payload, token: token, signed: signed, issuer: expectedIssuer)
        if signed, let kid = jwt.keyID { verifiedIDTokens.insert(SignedPayload(keyID: kid, payload: jwt.payload), for: token) }
        return verified
    }

    /// A token whose RS256 signature verified, remembered for its next presentation.
    struct SignedPayload: Sendable {
        var keyID: String
        var payload: JSON
    }

    /// The checks of an ID token's claims after its signature (redone on every presentation:
    /// they depend on the time).
    func checkClaims(_ c: JSON, token: String, signed: Bool, issuer expectedIssuer: String?) throws(HearthError) -> VerifiedIDToken {
        let invalid = AuthErrorCode.invalidIDToken
        guard c["aud"]?.stringValue == projectID else { throw invalid.error("Firebase ID token has incorrect \"aud\" (audience) claim.") }
        guard c["iss"]?.stringValue == (expectedIssuer ?? issuer) else {
            throw invalid.error("Firebase ID token has incorrect \"iss\" (issuer) claim.")
        }
        guard let sub = c["sub"]?.stringValue, !sub.isEmpty, sub.utf8.count <= 128 else {
            throw invalid.error("Firebase ID token has an invalid \"sub\" (subject) claim.")
        }
        guard let exp = c["exp"]?.int64Value, let iat = c["iat"]?.int64Value else { throw invalid.error() }
        let authTime = c["auth_time"]?.int64Value ?? iat
        let now = clock.seconds
        do throws(JWTError) {
            _ = try JWTTimes(claims: c, now: now, rules: JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: clockSkew))
        } catch {
            if case .expired = error { throw AuthErrorCode.tokenExpired.error() }
            throw invalid.error("Firebase ID token has \"iat\" or \"auth_time\" in the future.")
        }
        guard authTime <= now + clockSkew else {
            throw invalid.error("Firebase ID token has \"iat\" or \"auth_time\" in the future.")
        }
        return VerifiedIDToken(
            uid: sub, claims: c, signInProvider: c["firebase"]?["sign_in_provider"]?.stringValue, authTime: authTime,
            issuedAt: iat, expiresAt: exp, token: token, signed: signed)
    }

    /// Verifies a Firebase custom token (RS256 by a configured signer; unsigned in emulator mode).
    public func verifyCustomToken(_ token: String) throws(HearthError) -> VerifiedCustomToken {
        let invalid = AuthErrorCode.invalidCustomToken
        guard let jwt = JWT.parse(token) else { throw invalid.error() }
        let c = jwt.payload
        guard c["aud"]?.stringValue == Self.customTokenAudience else { throw invalid.error("The custom token has the wrong audience.") }
        let iss = c["iss"]?.stringValue
        _ = try checkSignature(jwt, invalid: invalid) { kid in
            customTokenSigners.filter { $0.clientEmail == iss && (kid == nil || $0.keyID == nil || $0.keyID == kid) }.map(\.publicKey)
        }
        guard let uid = c["uid"]?.stringValue, !uid.isEmpty, uid.utf8.count <= 128 else {
            throw invalid.error("The custom token has an invalid uid.")
        }
        if c["exp"]?.int64Value != nil {
            do throws(JWTError) {
                _ = try JWTTimes(claims: c, now: clock.seconds, rules: JWTTimeRules(expiryLeeway: 0, maxLifetime: 3600))
            } catch {
                if case .lifetimeTooLong = error { throw invalid.error("The custom token lives longer than one hour.") }
                throw invalid.error("The custom token has expired.")
            }
        } else if jwt.algorithm != "none" {
            throw invalid.error("The custom token has no expiry.")
        }
        var claims: JSON? = nil
        if let cl = c["claims"], !cl.isNull {
            guard cl.objectValue != nil else { throw AuthErrorCode.invalidClaims.error() }
            try Self.checkCustomClaims(cl)
            claims = cl
        }
        return VerifiedCustomToken(uid: uid, claims: claims)
    }

    /// Custom claims must be an object of ≤ 1,000 serialised bytes using no reserved name.
    public static func checkCustomClaims(_ claims: JSON) throws(HearthError) {
        guard let members = claims.objectValue else { throw AuthErrorCode.invalidClaims.error() }
        guard claims.serializedBytes().count <= maxClaimsBytes else { throw AuthErrorCode.claimsTooLarge.error() }
        if let bad = members.first(where: { reservedClaims.contains($0.0) }) { throw AuthErrorCode.forbiddenClaim.error(bad.0) }
    }

    /// Returns whether the token was signed; throws `invalid` for anything but a good RS256
    /// signature by one of `keys(kid)` — or, with `allowUnsigned`, `alg: none` and no signature.
    /// The check is HearthJWT's; this maps its reasons to Firebase's texts.
    func checkSignature(
        _ jwt: JWT, invalid: AuthErrorCode, keys: (String?) -> [_RSA.Signing.PublicKey]
    ) throws(HearthError) -> Bool {
        do throws(JWTError) {
            let algorithms: Set<String> = allowUnsigned ? [RS256.algorithm, "none"] : [RS256.algorithm]
            return try jwt.verifySignature(algorithms: algorithms, requireKeyID: invalid == .invalidIDToken, keys: keys) == RS256.algorithm
        } catch {
            switch error {
            case .missingKeyID: throw invalid.error("Firebase ID token has no \"kid\" claim.")
            case .unknownKeyID: throw invalid.error("The token was signed by an unknown key.")
            case .invalidSignature: throw invalid.error("The token has an invalid signature.")
            default: throw invalid.error("The token has an incorrect algorithm; RS256 is expected.")
            }
        }
    }
}
