public import Crypto
import _CryptoExtras

/// PBKDF2 (RFC 8018) through swift-crypto's `KDF.Insecure.PBKDF2` (BoringSSL), for SHA-1,
/// SHA-256, SHA-384 and SHA-512. It replaced a loop over swift-crypto's HMAC: in the same-run
/// benchmark (release builds, docs/performance.md "Password hashing") BoringSSL was 7–15×
/// faster — 100,000 rounds of HMAC-SHA256: 26–56 ms against ours 375–401 ms.
public enum PBKDF2 {
    /// Derives `length` bytes from `password` and `salt` with `iterations` rounds of HMAC-`H`.
    public static func derive<H: HashFunction>(
        _ hash: H.Type, password: some Collection<UInt8>, salt: some Collection<UInt8>, iterations: Int, length: Int
    ) -> [UInt8] {
        precondition(iterations >= 1 && length >= 0)
        guard length > 0 else { return [] }
        do {
            let key = try KDF.Insecure.PBKDF2.deriveKey(
                from: Array(password), salt: Array(salt), using: function(hash), outputByteCount: length, unsafeUncheckedRounds: iterations)
            return key.withUnsafeBytes { Array($0) }
        } catch {
            // BoringSSL fails only when it cannot allocate; the parameters were checked above.
            preconditionFailure("PBKDF2 failed: \(error)")
        }
    }

    static func function<H: HashFunction>(_ hash: H.Type) -> KDF.Insecure.PBKDF2.HashFunction {
        if hash == SHA256.self { return .sha256 }
        if hash == SHA512.self { return .sha512 }
        if hash == SHA384.self { return .sha384 }
        if hash == Insecure.SHA1.self { return .insecureSHA1 }
        preconditionFailure("PBKDF2 over \(hash) is not offered.")
    }
}
