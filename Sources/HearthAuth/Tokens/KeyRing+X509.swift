public import HearthCore
import Crypto
import _CryptoExtras
import Foundation

extension KeyRing {
    /// The subject and issuer of the published certificates (Google's are named like this too).
    static let certificateSubject = "securetoken.system.gserviceaccount.com"

    /// A self-signed X.509 v3 certificate (DER) for `key`: sha256WithRSAEncryption, serial from
    /// the kid, valid from a day before the key activates until every token it signs has expired.
    /// Deterministic (PKCS#1 v1.5 signatures are), so verifiers that compare documents see no churn.
    public func certificate(for key: Key) throws(HearthError) -> [UInt8] {
        let sha256WithRSA = DER.sequence(DER.oid([1, 2, 840, 113_549, 1, 1, 11]), DER.null)
        let name = DER.sequence(DER.set(DER.sequence(DER.oid([2, 5, 4, 3]), DER.utf8String(Self.certificateSubject))))
        let serial = DER.unsignedInteger([0x01] + Array(key.kid.utf8.prefix(16)))
        let notBefore = key.activatesAt - 86_400
        let notAfter = key.activatesAt + 2 * policy.rotationInterval + policy.maxTokenLifetime + policy.clockSkew + 86_400
        let tbs = DER.sequence(
            DER.explicit(0, DER.integer(2)), serial, sha256WithRSA, name,
            DER.sequence(DER.time(notBefore), DER.time(notAfter)), name, Array(key.publicKey.derRepresentation))
        do {
            let sig = try key.privateKey.signature(for: SHA256.hash(data: tbs), padding: .insecurePKCS1v1_5)
            return DER.sequence(tbs, sha256WithRSA, DER.bitString(Array(sig.rawRepresentation)))
        } catch {
            throw HearthError(.internal, "Cannot sign a certificate.", cause: error)
        }
    }

    /// The x509 JSON document Google publishes for ID tokens: `{"<kid>": "-----BEGIN CERTIFICATE-----\n…"}`.
    public func x509Document() throws(HearthError) -> JSON {
        var members: [(String, JSON)] = []
        for key in publishedKeys {
            let b64 = Data(try certificate(for: key)).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            members.append((key.kid, .string("-----BEGIN CERTIFICATE-----\n\(b64)\n-----END CERTIFICATE-----\n")))
        }
        return .object(members)
    }
}
