public import _CryptoExtras
import Crypto

/// RS256 (RSASSA-PKCS1-v1_5 over SHA-256, RFC 7518 §3.3): the one signer and the one
/// signature check of Hearth's JWTs.
public enum RS256 {
    public static let algorithm = "RS256"

    /// The signature of `input` with `key`.
    public static func sign(_ input: [UInt8], with key: _RSA.Signing.PrivateKey) throws(JWTError) -> [UInt8] {
        do {
            return Array(try key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        } catch {
            throw .signingFailed("RSA signing failed.")
        }
    }

    /// Whether `signature` is `key`'s over `input`.
    public static func isValid(_ signature: [UInt8], for input: [UInt8], key: _RSA.Signing.PublicKey) -> Bool {
        isValid(_RSA.Signing.RSASignature(rawRepresentation: signature), digest: SHA256.hash(data: input), keys: [key])
    }

    static func isValid(_ signature: _RSA.Signing.RSASignature, digest: SHA256Digest, keys: [_RSA.Signing.PublicKey]) -> Bool {
        keys.contains { $0.isValidSignature(signature, for: digest, padding: .insecurePKCS1v1_5) }
    }
}
