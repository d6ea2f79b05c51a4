public import HearthCore
import HearthJWT

extension KeyRing {
    /// The subject and issuer of the published certificates (Google's are named like this too).
    static let certificateSubject = "securetoken.system.gserviceaccount.com"

    /// A self-signed X.509 v3 certificate (DER, made by swift-certificates through HearthJWT)
    /// for `key`: sha256WithRSAEncryption, serial from the kid, valid from a day before the key
    /// activates until every token it signs has expired. Deterministic (PKCS#1 v1.5 signatures
    /// are), so verifiers that compare documents see no churn.
    public func certificate(for key: Key) throws(HearthError) -> [UInt8] {
        let notBefore = key.activatesAt - 86_400
        let notAfter = key.activatesAt + 2 * policy.rotationInterval + policy.maxTokenLifetime + policy.clockSkew + 86_400
        do {
            return try RSAKeySet.selfSignedCertificate(
                key: key.privateKey, commonName: Self.certificateSubject, serial: [0x01] + Array(key.kid.utf8.prefix(16)),
                notBefore: notBefore, notAfter: notAfter)
        } catch {
            throw HearthError(.internal, "Cannot sign a certificate.", cause: error)
        }
    }

    /// The x509 JSON document Google publishes for ID tokens: `{"<kid>": "-----BEGIN CERTIFICATE-----\n…"}`.
    public func x509Document() throws(HearthError) -> JSON {
        var members: [(String, JSON)] = []
        for key in publishedKeys {
            members.append((key.kid, .string(RSAKeySet.pem(certificateDER: try certificate(for: key)))))
        }
        return .object(members)
    }
}
