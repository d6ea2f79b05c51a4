public import HearthCore
public import _CryptoExtras
import Crypto
import Foundation
import SwiftASN1
import X509

/// RSA signing keys by key id, read from and written to the two documents Google publishes
/// for its token issuers: a JWKS (`{"keys":[{kty,alg,use,kid,n,e}]}`, RFC 7517) and the x509
/// JSON document (`{"<kid>": "-----BEGIN CERTIFICATE-----…"}`). The one reader of both for
/// Auth's OIDC providers, the token-verifier library and the tests.
public enum RSAKeySet {
    /// The RSA signing keys of a JWKS by `kid`. A key is skipped unless `kty` is RSA, it has a
    /// `kid`, `use` (if present) is `sig`, `alg` (if present) is RS256, and `n` and `e` are
    /// base64 (url or standard alphabet, padded or not) of a usable RSA public key.
    public static func keys(jwks: JSON) -> [String: _RSA.Signing.PublicKey] {
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for jwk in jwks["keys"]?.arrayValue ?? [] {
            guard jwk["kty"]?.stringValue == "RSA", let kid = jwk["kid"]?.stringValue,
                jwk["use"].map({ $0.stringValue == "sig" }) ?? true,
                jwk["alg"].map({ $0.stringValue == RS256.algorithm }) ?? true,
                let n = jwk["n"]?.stringValue.flatMap(Base64.decode),
                let e = jwk["e"]?.stringValue.flatMap(Base64.decode),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            keys[kid] = key
        }
        return keys
    }

    /// The RSA keys of an x509 JSON document by `kid` (entries that are not an RSA certificate are skipped).
    public static func keys(x509Document: JSON) -> [String: _RSA.Signing.PublicKey] {
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for (kid, value) in x509Document.objectValue ?? [] {
            guard let pem = value.stringValue, let key = try? publicKey(certificatePEM: pem) else { continue }
            keys[kid] = key
        }
        return keys
    }

    /// The RSA public key of the first `CERTIFICATE` block of a PEM text (parsed by swift-certificates).
    public static func publicKey(certificatePEM pem: String) throws -> _RSA.Signing.PublicKey {
        guard let document = try PEMDocument.parseMultiple(pemString: pem).first(where: { $0.discriminator == "CERTIFICATE" }) else {
            throw ASN1Error.invalidPEMDocument(reason: "no CERTIFICATE block")
        }
        return try publicKey(certificateDER: document.derBytes)
    }

    /// The RSA public key of a DER X.509 certificate.
    public static func publicKey(certificateDER der: [UInt8]) throws -> _RSA.Signing.PublicKey {
        let certificate = try Certificate(derEncoded: der)
        guard let key = _RSA.Signing.PublicKey(certificate.publicKey) else { throw CertificateError.unsupportedPublicKey }
        return key
    }

    enum CertificateError: Error { case unsupportedPublicKey }

    /// A JWK for `key` (`{"kty":"RSA","alg":"RS256","use":"sig","kid","n","e"}`); nil if the key
    /// cannot give its primitives.
    public static func jwk(kid: String, key: _RSA.Signing.PublicKey) -> JSON? {
        guard let primitives = try? key.getKeyPrimitives() else { return nil }
        return .object([
            ("kty", .string("RSA")), ("alg", .string(RS256.algorithm)), ("use", .string("sig")), ("kid", .string(kid)),
            ("n", .string(Base64.urlEncode(stripLeadingZeros(primitives.modulus)))),
            ("e", .string(Base64.urlEncode(stripLeadingZeros(primitives.publicExponent)))),
        ])
    }

    /// A JWKS document of `keys`, in order.
    public static func jwks(_ keys: [(kid: String, key: _RSA.Signing.PublicKey)]) -> JSON {
        .object([("keys", .array(keys.compactMap { jwk(kid: $0.kid, key: $0.key) }))])
    }

    static func stripLeadingZeros(_ d: Data) -> [UInt8] {
        let bytes = Array(d)
        let first = bytes.firstIndex(where: { $0 != 0 }) ?? max(0, bytes.count - 1)
        return Array(bytes[first...])
    }

    /// A self-signed X.509 v3 certificate (DER, made by swift-certificates) for `key`:
    /// sha256WithRSAEncryption, subject and issuer `CN=<commonName>`, the given serial and
    /// validity. Deterministic (PKCS#1 v1.5 signatures are), so verifiers that compare
    /// documents see no churn.
    public static func selfSignedCertificate(
        key: _RSA.Signing.PrivateKey, commonName: String, serial: [UInt8], notBefore: Int64, notAfter: Int64
    ) throws -> [UInt8] {
        let name = try DistinguishedName { CommonName(commonName) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(bytes: serial), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: Date(timeIntervalSince1970: TimeInterval(notBefore)),
            notValidAfter: Date(timeIntervalSince1970: TimeInterval(notAfter)), issuer: name, subject: name,
            signatureAlgorithm: .sha256WithRSAEncryption, extensions: Certificate.Extensions(),
            issuerPrivateKey: Certificate.PrivateKey(key))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// A certificate's PEM text as Google publishes it (64-character lines, trailing newline).
    public static func pem(certificateDER der: [UInt8]) -> String {
        PEMDocument(type: "CERTIFICATE", derBytes: der).pemString + "\n"
    }
}
