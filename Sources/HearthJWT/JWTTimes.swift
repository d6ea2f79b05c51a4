public import HearthCore

/// The time checks of a JWT's claims, with each caller's leeways (Firebase's rules differ per
/// token kind, so nothing here has a default a caller could forget to set):
///
/// - `exp` is required; the token is valid while `exp + expiryLeeway > now`.
/// - `iat`, when `issuedAtLeeway` is set, is required and must satisfy `iat <= now + leeway`.
/// - `nbf`, when `notBeforeLeeway` is set and the claim is present, must satisfy `nbf <= now + leeway`.
/// - `exp - iat`, when `maxLifetime` is set and `iat` is present, must not exceed it.
public struct JWTTimeRules: Sendable, Hashable {
    public var expiryLeeway: Int64
    public var issuedAtLeeway: Int64?
    public var notBeforeLeeway: Int64?
    public var maxLifetime: Int64?

    public init(expiryLeeway: Int64, issuedAtLeeway: Int64? = nil, notBeforeLeeway: Int64? = nil, maxLifetime: Int64? = nil) {
        self.expiryLeeway = expiryLeeway
        self.issuedAtLeeway = issuedAtLeeway
        self.notBeforeLeeway = notBeforeLeeway
        self.maxLifetime = maxLifetime
    }
}

/// The time claims of a payload that passed ``JWTTimeRules``.
public struct JWTTimes: Sendable, Hashable {
    public var expiresAt: Int64
    public var issuedAt: Int64?
    public var notBefore: Int64?

    /// Checks `claims` at `now` (seconds since the epoch) under `rules`; the first failing
    /// check's reason is thrown, in the order exp, iat, nbf, lifetime.
    public init(claims: JSON, now: Int64, rules: JWTTimeRules) throws(JWTError) {
        guard let exp = claims["exp"]?.int64Value else { throw .missingClaim("exp") }
        guard exp + rules.expiryLeeway > now else { throw .expired(expiresAt: exp, now: now) }
        let iat = claims["iat"]?.int64Value
        if let leeway = rules.issuedAtLeeway {
            guard let iat else { throw .missingClaim("iat") }
            guard iat <= now + leeway else { throw .issuedInFuture(issuedAt: iat, now: now) }
        }
        let nbf = claims["nbf"]?.int64Value
        if let leeway = rules.notBeforeLeeway, claims["nbf"] != nil {
            guard let nbf else { throw .missingClaim("nbf") }
            guard nbf <= now + leeway else { throw .notYetValid(notBefore: nbf, now: now) }
        }
        if let limit = rules.maxLifetime, let iat, exp - iat > limit { throw .lifetimeTooLong(seconds: exp - iat, limit: limit) }
        self.expiresAt = exp
        self.issuedAt = iat
        self.notBefore = nbf
    }
}
