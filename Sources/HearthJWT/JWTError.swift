/// Why a JWT was not accepted: a typed reason each caller maps to its own protocol's error
/// (Auth's INVALID_ID_TOKEN texts, App Check's, OAuth2's `invalid_grant`, the verifier
/// library's ``TokenVerificationError``). None carries key material.
public enum JWTError: Error, Sendable, Equatable {
    /// Not three canonical base64url segments with JSON object header and payload.
    case malformed
    /// `alg` is not one the caller accepts (`none` included); the header's value.
    case unsupportedAlgorithm(String?)
    /// The header has no `kid` and the caller requires one.
    case missingKeyID
    /// No key the caller trusts has this `kid` (nil: the header named none).
    case unknownKeyID(String?)
    /// No candidate key verifies the signature.
    case invalidSignature
    /// A required time claim is missing or not a number.
    case missingClaim(String)
    /// `exp` is at or before now (with the caller's leeway).
    case expired(expiresAt: Int64, now: Int64)
    /// `iat` is after now (with the caller's leeway).
    case issuedInFuture(issuedAt: Int64, now: Int64)
    /// `nbf` is after now (with the caller's leeway).
    case notYetValid(notBefore: Int64, now: Int64)
    /// `exp` − `iat` exceeds the caller's longest lifetime.
    case lifetimeTooLong(seconds: Int64, limit: Int64)
    /// A signature could not be made (the key failed); carries no key material.
    case signingFailed(String)
}
