public import HearthCore
public import _CryptoExtras
import Crypto

extension JWT {
    /// The header Hearth writes on RS256 tokens: `{"alg":"RS256","kid":…,"typ":…}`.
    public static func rs256Header(keyID: String, type: String = "JWT") -> JSON {
        .object([("alg", .string(RS256.algorithm)), ("kid", .string(keyID)), ("typ", .string(type))])
    }

    /// A compact RS256 JWT of `payload` under `header` (which names `alg` RS256 and the key's `kid`).
    public static func signRS256(header: JSON, payload: JSON, key: _RSA.Signing.PrivateKey) throws(JWTError) -> String {
        try encode(header: header, payload: payload) { (input) throws(JWTError) in try RS256.sign(input, with: key) }
    }

    /// The signature check every verifier runs first, in this order:
    ///
    /// 1. `alg` must be one of `algorithms` (algorithm pinning: RS256 where Firebase accepts only
    ///    RS256; `none` only when a caller lists it, and then only with an empty signature).
    /// 2. With `requireKeyID`, the header must name a `kid`.
    /// 3. `keys(kid)` gives the candidate keys (by `kid`, or every key of an issuer when the
    ///    header names none); none is ``JWTError/unknownKeyID(_:)``.
    /// 4. One candidate must verify the signature over the signing input.
    ///
    /// Returns the algorithm that was accepted (`RS256`, or `none` for an unsigned token).
    @discardableResult
    public func verifySignature(
        algorithms: Set<String> = [RS256.algorithm], requireKeyID: Bool = true,
        keys: (String?) throws(JWTError) -> [_RSA.Signing.PublicKey]
    ) throws(JWTError) -> String {
        let alg = try checkHeader(algorithms: algorithms, requireKeyID: requireKeyID)
        if alg == "none" { return alg }
        let candidates = try keys(keyID)
        guard !candidates.isEmpty else { throw .unknownKeyID(keyID) }
        guard RS256.isValid(_RSA.Signing.RSASignature(rawRepresentation: signature), digest: SHA256.hash(data: signingInput), keys: candidates)
        else { throw .invalidSignature }
        return alg
    }

    /// Steps 1 and 2 of ``verifySignature(algorithms:requireKeyID:keys:)`` alone, for callers
    /// that look their key up asynchronously between the header check and the signature check.
    /// `none` passes only when listed and only with an empty signature.
    @discardableResult
    public func checkHeader(algorithms: Set<String> = [RS256.algorithm], requireKeyID: Bool = true) throws(JWTError) -> String {
        guard let alg = algorithm, algorithms.contains(alg) else { throw .unsupportedAlgorithm(algorithm) }
        if alg == "none" {
            guard signature.isEmpty else { throw .unsupportedAlgorithm(alg) }
            return alg
        }
        // RS256 is the only signing algorithm this module implements.
        guard alg == RS256.algorithm else { throw .unsupportedAlgorithm(alg) }
        if requireKeyID, keyID == nil { throw .missingKeyID }
        return alg
    }
}
