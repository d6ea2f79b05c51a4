public import _CryptoExtras
public import HearthCore
import Foundation

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
        guard let json = try? JSON.parse(body), let members = json.objectValue else {
            throw .keySetUnavailable("The key document is not a JSON object.")
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        if let list = json["keys"]?.arrayValue {
            for jwk in list {
                guard jwk["kty"]?.stringValue == "RSA", let kid = jwk["kid"]?.stringValue,
                    jwk["use"].map({ $0.stringValue == "sig" }) ?? true,
                    jwk["alg"].map({ $0.stringValue == "RS256" }) ?? true,
                    let n = jwk["n"]?.stringValue.flatMap(Self.base64URLDecode),
                    let e = jwk["e"]?.stringValue.flatMap(Self.base64URLDecode),
                    let key = try? _RSA.Signing.PublicKey(n: n, e: e)
                else { continue }
                keys[kid] = key
            }
        } else {
            for (kid, value) in members {
                guard let pem = value.stringValue, let der = Self.pemCertificateDER(pem),
                    let spki = DER.subjectPublicKeyInfo(certificate: der),
                    let key = try? _RSA.Signing.PublicKey(derRepresentation: spki)
                else { continue }
                keys[kid] = key
            }
        }
        guard !keys.isEmpty else { throw .keySetUnavailable("The key document holds no RSA signing key.") }
        return PublicKeySet(keys: keys, maxAge: maxAge)
    }

    /// The DER bytes of the first `CERTIFICATE` block of a PEM text.
    static func pemCertificateDER(_ pem: String) -> [UInt8]? {
        let begin = "-----BEGIN CERTIFICATE-----", end = "-----END CERTIFICATE-----"
        guard let b = pem.range(of: begin), let e = pem.range(of: end, range: b.upperBound..<pem.endIndex) else { return nil }
        let body = pem[b.upperBound..<e.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map(Array.init)
    }

    static func base64URLDecode(_ text: String) -> [UInt8]? { Base64.urlDecode(text) }

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
