public import _CryptoExtras
import HearthCore
import Foundation
import HearthJWT

/// RSA public keys by key id, and how long they may be cached.
public struct PublicKeySet: Sendable {
    public var keys: [String: _RSA.Signing.PublicKey]
    /// Seconds the set may be cached (`Cache-Control: max-age`); nil when the source said nothing.
    public var maxAge: Int64?

    public init(keys: [String: _RSA.Signing.PublicKey], maxAge: Int64? = nil) {
        self.keys = keys
        self.maxAge = maxAge
    }

    /// Reads either format Google publishes: a JWKS (`{"keys":[{kty,kid,n,e,…}]}`) or the x509
    /// JSON document (`{"<kid>": "-----BEGIN CERTIFICATE-----…"}`). Entries that are not RSA
    /// signing keys are skipped; a document with no usable key is an error.
    public static func parse(_ body: [UInt8], maxAge: Int64? = nil) throws(TokenVerificationError) -> PublicKeySet {
        guard let json = try? JSON.parse(body), json.objectValue != nil else {
            throw .keySetUnavailable("The key document is not a JSON object.")
        }
        // One reader of both formats for every Hearth verifier (HearthJWT's RSAKeySet).
        let keys = json["keys"]?.arrayValue != nil ? RSAKeySet.keys(jwks: json) : RSAKeySet.keys(x509Document: json)
        guard !keys.isEmpty else { throw .keySetUnavailable("The key document holds no RSA signing key.") }
        return PublicKeySet(keys: keys, maxAge: maxAge)
    }

    /// The `max-age` of a `Cache-Control` header value, if any.
    public static func maxAge(cacheControl: String?) -> Int64? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0].lowercased() == "max-age", let v = Int64(parts[1].trimmingCharacters(in: ["\""])), v >= 0 {
                return v
            }
        }
        return nil
    }
}
