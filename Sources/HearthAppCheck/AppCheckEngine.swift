public import HearthCore
public import HearthAuth
import Crypto
import HearthJWT
import Foundation

/// Hearth's App Check issuer and verifier. It mints RS256 App Check tokens in Firebase's
/// format (issuer `https://firebaseappcheck.googleapis.com/<project number>`, subject the app
/// id, audience `["projects/<number>", "projects/<id>"]`, a `jti`), publishes their keys as a
/// JWKS, exchanges registered debug tokens and service-account-signed custom tokens for them,
/// verifies them, and remembers consumed limited-use tokens. No HTTP.
public struct AppCheckEngine: Sendable {
    public let projectID: String
    public let projectNumber: String
    public let keyRing: KeyRing
    public let store: any AppCheckStore
    /// Service accounts whose custom tokens `exchangeCustomToken` accepts.
    /// The service accounts whose custom tokens `exchangeCustomToken` accepts, as of now.
    public var customTokenSigners: [CustomTokenSigner] { signerSource?() ?? signers }
    let signers: [CustomTokenSigner]
    /// Where the signers are read at each exchange, when they change while serving (Auth's).
    let signerSource: (@Sendable () -> [CustomTokenSigner])?
    /// Lifetime of tokens from exchanges that do not ask for one.
    public let tokenTTL: Int64
    let clock: AuthClock

    public static let issuerPrefix = "https://firebaseappcheck.googleapis.com/"
    public static let customTokenAudience = "https://firebaseappcheck.googleapis.com/google.firebase.appcheck.v1.TokenExchangeService"
    /// Custom tokens may ask for a token lifetime in this range (the Admin SDKs' limits).
    public static let customTTLRange: ClosedRange<Int64> = 1800...(7 * 86400)
    /// Tolerated clock difference for `iat` of custom tokens.
    static let clockSkew: Int64 = 60
    /// Custom tokens: not expired, `iat` not in the future (give or take the skew), at most one hour long.
    static let customTokenTimes = JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: clockSkew, maxLifetime: 3600)

    public init(
        projectID: String, projectNumber: String? = nil, keyRing: KeyRing, store: any AppCheckStore, customTokenSigners: [CustomTokenSigner] = [],
        customTokenSignerSource: (@Sendable () -> [CustomTokenSigner])? = nil, tokenTTL: Int64 = 3600, clock: AuthClock = .system
    ) {
        self.projectID = projectID
        self.projectNumber = projectNumber ?? Self.derivedProjectNumber(projectID)
        self.keyRing = keyRing
        self.store = store
        self.signers = customTokenSigners
        self.signerSource = customTokenSignerSource
        self.tokenTTL = tokenTTL
        self.clock = clock
    }

    /// A stable 12-digit number for a project id, for servers not configured with one.
    public static func derivedProjectNumber(_ projectID: String) -> String {
        let digest = SHA256.hash(data: Array(projectID.utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return String(100_000_000_000 + value % 900_000_000_000)
    }

    public var issuer: String { Self.issuerPrefix + projectNumber }

    /// Firebase app ids: `1:<project number>:<ios|android|web>:<hex>`.
    public static func validateAppID(_ appID: String) throws(AppCheckError) {
        let parts = appID.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "1", !parts[1].isEmpty, parts[1].utf8.count <= 20, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
            ["ios", "android", "web"].contains(parts[2]), !parts[3].isEmpty, parts[3].utf8.count <= 64, parts[3].allSatisfy({ $0.isASCII && $0.isHexDigit })
        else {
            throw AppCheckError(.invalidAppID, "Invalid app id \(appID.prefix(80)): expected 1:<project number>:<ios|android|web>:<hex>.")
        }
    }

    // MARK: Administration

    public func addApp(_ appID: String) async throws {
        try Self.validateAppID(appID)
        try await store.addApp(appID, at: now)
    }

    /// Registers a debug token for an app (the secret the debug provider logs); a new random
    /// one if `token` is nil. Returns the secret, which is kept only as a digest.
    public func addDebugToken(appID: String, token: String?, name: String) async throws -> String {
        guard try await store.isRegistered(appID) else { throw AppCheckError(.unknownApp, "App \(appID) is not registered.") }
        let secret = token ?? UUID().uuidString
        guard (8...256).contains(secret.utf8.count) else {
            throw AppCheckError(.invalidArgument, "A debug token must have 8 to 256 characters.")
        }
        try await store.addDebugToken(appID: appID, digest: Self.digest(secret), name: name, at: now)
        return secret
    }

    public static func digest(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Array(secret.utf8))) }

    var now: Timestamp { Timestamp(microseconds: clock.millis() * 1000) }

    // MARK: Exchange

    /// An issued token and its lifetime in seconds (`ttl` of Firebase's `AppCheckToken`).
    public struct IssuedToken: Sendable {
        public var token: String
        public var ttlSeconds: Int64
    }

    /// `exchangeDebugToken`: a token for an app whose debug token is registered.
    public func exchangeDebugToken(appID: String, debugToken: String, limitedUse: Bool) async throws -> IssuedToken {
        try await requireApp(appID)
        guard !debugToken.isEmpty, debugToken.utf8.count <= 256, try await store.hasDebugToken(appID: appID, digest: Self.digest(debugToken)) else {
            throw AppCheckError(.debugTokenRejected, "App attestation failed.")
        }
        return try mint(appID: appID, ttl: tokenTTL, limitedUse: limitedUse)
    }

    /// `exchangeCustomToken`: a token for an app, vouched for by a custom token that a
    /// registered service account signed (what the Admin SDKs' `createToken` sends).
    public func exchangeCustomToken(appID: String, customToken: String, limitedUse: Bool) async throws -> IssuedToken {
        try await requireApp(appID)
        let rejected = AppCheckError(.customTokenRejected, "The custom token is invalid.")
        guard let jwt = JWT.parse(customToken), (try? jwt.checkHeader(requireKeyID: false)) != nil else { throw rejected }
        let claims = jwt.payload
        guard let issuer = claims["iss"]?.stringValue, claims["sub"]?.stringValue == issuer else { throw rejected }
        // A registered signer with this client email (and this kid, when both name one).
        let signed = try? jwt.verifySignature(requireKeyID: false) { keyID in
            customTokenSigners.filter { $0.clientEmail == issuer && (keyID == nil || $0.keyID == nil || $0.keyID == keyID) }.map(\.publicKey)
        }
        guard signed != nil else { throw rejected }
        guard claims["aud"]?.stringValue == Self.customTokenAudience, claims["app_id"]?.stringValue == appID,
            (try? JWTTimes(claims: claims, now: clock.seconds, rules: Self.customTokenTimes)) != nil
        else { throw rejected }
        var ttl = tokenTTL
        if let requested = claims["ttl"] {
            guard let text = requested.stringValue, text.hasSuffix("s"), let value = Double(text.dropLast()), value.isFinite,
                Self.customTTLRange.contains(Int64(value))
            else {
                throw AppCheckError(.customTokenRejected, "ttl must be between 30 minutes and 7 days.")
            }
            ttl = Int64(value)
        }
        return try mint(appID: appID, ttl: ttl, limitedUse: limitedUse)
    }

    func requireApp(_ appID: String) async throws {
        try Self.validateAppID(appID)
        guard try await store.isRegistered(appID) else { throw AppCheckError(.unknownApp, "App \(appID) is not registered.") }
    }

    /// Signs a token for an app. Every token has a `jti`, so limited-use tokens can be consumed.
    public func mint(appID: String, ttl: Int64, limitedUse: Bool) throws -> IssuedToken {
        let issuedAt = clock.seconds
        let claims: JSON = .object([
            ("sub", .string(appID)),
            ("aud", .array([.string("projects/\(projectNumber)"), .string("projects/\(projectID)")])),
            ("provider", .string(limitedUse ? "limited_use" : "hearth")),
            ("iss", .string(issuer)),
            ("exp", .number(String(issuedAt + ttl))),
            ("iat", .number(String(issuedAt))),
            ("jti", .string(Base64.urlEncode(SecureRandom.bytes(16)))),
        ])
        let key = try keyRing.activeKey()
        // Firebase's App Check header order: kid, typ, alg.
        let header: JSON = .object([("kid", .string(key.kid)), ("typ", .string("JWT")), ("alg", .string(RS256.algorithm))])
        let token = try JWT.signRS256(header: header, payload: claims, key: key.privateKey)
        return IssuedToken(token: token, ttlSeconds: ttl)
    }

    // MARK: Verification

    /// The verified claims of an App Check token.
    public struct VerifiedToken: Sendable {
        public var appID: String
        public var tokenID: String?
        public var expires: Int64
        public var claims: JSON
        /// A limited-use token (`provider` `limited_use`): meant to be used once.
        public var isLimitedUse: Bool { claims["provider"]?.stringValue == "limited_use" }
    }

    /// Checks a token as the Admin SDKs do, and more strictly: header `alg` RS256 and `typ`
    /// JWT, a key of this server, the signature, `exp` in the future, `iat` not in the future,
    /// `aud` a list holding `projects/<project id>`, `iss` exactly this server's issuer, and
    /// `sub` an app that is (still) registered.
    public func verify(_ token: String) async throws -> VerifiedToken {
        let invalid = AppCheckError(.invalidToken, "Invalid App Check token.")
        guard token.utf8.count <= 8192, let jwt = JWT.parse(token), jwt.type == "JWT",
            (try? jwt.verifySignature { keyID in keyID.flatMap { keyRing.publicKey(kid: $0) }.map { [$0] } ?? [] }) != nil
        else { throw invalid }
        let claims = jwt.payload
        let exp: Int64
        do throws(JWTError) {
            exp = try JWTTimes(claims: claims, now: clock.seconds, rules: JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: Self.clockSkew)).expiresAt
        } catch {
            switch error {
            case .missingClaim("exp"), .expired: throw AppCheckError(.invalidToken, "The App Check token has expired.")
            default: throw invalid
            }
        }
        guard let audience = claims["aud"]?.arrayValue, audience.contains(.string("projects/\(projectID)")),
            claims["iss"]?.stringValue == issuer,
            let appID = claims["sub"]?.stringValue, !appID.isEmpty
        else { throw invalid }
        guard try await store.isRegistered(appID) else { throw invalid }
        return VerifiedToken(appID: appID, tokenID: claims["jti"]?.stringValue, expires: exp, claims: claims)
    }

    /// `verifyAppCheckToken`: verifies the token and marks it consumed; answers whether it had
    /// been consumed before (`alreadyConsumed`).
    public func consume(_ token: String) async throws -> Bool {
        try await consume(verified: try await verify(token))
    }

    /// Marks a verified token consumed; answers whether it had been consumed before.
    public func consume(verified: VerifiedToken) async throws -> Bool {
        guard let tokenID = verified.tokenID, !tokenID.isEmpty else { throw AppCheckError(.invalidToken, "The App Check token has no jti.") }
        return try await store.consume(tokenID: tokenID, expires: verified.expires, now: clock.seconds)
    }
}
