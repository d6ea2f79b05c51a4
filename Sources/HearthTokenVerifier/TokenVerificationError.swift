import HearthJWT

/// Why a token was not accepted. Every case says what was wrong; none carries key material.
public enum TokenVerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not three base64url segments with JSON header and payload.
    case malformed
    /// `alg` is not RS256 (`none` included).
    case unsupportedAlgorithm(String?)
    /// The header has no `kid`.
    case missingKeyID
    /// No published key has this id, even after refetching the key set.
    case unknownKeyID(String)
    case invalidSignature
    case wrongIssuer(String?)
    case wrongAudience(String?)
    /// `exp` is at or before now (less the leeway).
    case expired(expiresAt: Int64, now: Int64)
    /// `iat` is after now (plus the leeway).
    case issuedInFuture(issuedAt: Int64, now: Int64)
    /// `auth_time` is after now (plus the leeway).
    case authTimeInFuture(authTime: Int64, now: Int64)
    /// A required numeric claim is missing or not a number.
    case missingClaim(String)
    /// `sub` is missing, empty or longer than 128 bytes.
    case invalidSubject
    /// The key set could not be fetched or read.
    case keySetUnavailable(String)

    public var description: String {
        switch self {
        case .malformed: "The token is not a well-formed JWT."
        case .unsupportedAlgorithm(let a): "The token's algorithm \(a.map { "\"\($0)\"" } ?? "(none given)") is not RS256."
        case .missingKeyID: "The token has no \"kid\" header."
        case .unknownKeyID(let k): "No published key has kid \"\(k)\"."
        case .invalidSignature: "The token's signature is invalid."
        case .wrongIssuer(let i): "The token has an incorrect \"iss\" (issuer) claim: \(i ?? "missing")."
        case .wrongAudience(let a): "The token has an incorrect \"aud\" (audience) claim: \(a ?? "missing")."
        case .expired(let e, let n): "The token expired at \(e) (now \(n))."
        case .issuedInFuture(let i, let n): "The token's \"iat\" \(i) is in the future (now \(n))."
        case .authTimeInFuture(let a, let n): "The token's \"auth_time\" \(a) is in the future (now \(n))."
        case .missingClaim(let c): "The token has no numeric \"\(c)\" claim."
        case .invalidSubject: "The token's \"sub\" claim is missing, empty or longer than 128 characters."
        case .keySetUnavailable(let why): "The public keys could not be loaded: \(why)"
        }
    }
}

extension TokenVerificationError {
    /// The library's case for a reason from HearthJWT's parser, signature check or time checks.
    init(_ error: JWTError) {
        switch error {
        case .malformed: self = .malformed
        case .unsupportedAlgorithm(let alg): self = .unsupportedAlgorithm(alg)
        case .missingKeyID, .unknownKeyID(nil): self = .missingKeyID
        case .unknownKeyID(let kid?): self = .unknownKeyID(kid)
        case .invalidSignature, .signingFailed: self = .invalidSignature
        case .missingClaim(let claim): self = .missingClaim(claim)
        case .expired(let exp, let now): self = .expired(expiresAt: exp, now: now)
        case .issuedInFuture(let iat, let now): self = .issuedInFuture(issuedAt: iat, now: now)
        // Not produced by the rules this library uses; kept total for the compiler.
        case .notYetValid, .lifetimeTooLong: self = .malformed
        }
    }
}
