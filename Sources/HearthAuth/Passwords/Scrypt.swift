public import HearthCore
import _CryptoExtras

/// scrypt (RFC 7914) through swift-crypto's `KDF.Scrypt` (BoringSSL), behind Hearth's own
/// parameter checks and memory cap. It replaced a hand-written Swift ROMix/BlockMix/Salsa20/8:
/// in the same-run benchmark (release builds, docs/performance.md "Password hashing") BoringSSL
/// was faster — N=2^15, r=8: 189–203 ms against ours 217–234 ms; N=2^14: 71–87 ms against 80–93 ms.
public enum Scrypt {
    /// The most memory one derivation may use (128 · r · N bytes for V), 1 GiB.
    public static let maxMemory = 1 << 30

    /// Derives `length` bytes. `n` must be a power of two greater than 1.
    public static func derive(
        password: some Collection<UInt8>, salt: some Collection<UInt8>, n: Int, r: Int, p: Int, length: Int
    ) throws(HearthError) -> [UInt8] {
        guard n > 1, n & (n - 1) == 0 else { throw .invalidArgument("scrypt N must be a power of two greater than 1.") }
        guard r >= 1, p >= 1, r * p < 1 << 30 else { throw .invalidArgument("scrypt r and p are out of range.") }
        guard length >= 1, length <= 1 << 20 else { throw .invalidArgument("scrypt output length is out of range.") }
        guard r <= Scrypt.maxMemory / 128 / n else { throw .invalidArgument("scrypt parameters need too much memory.") }
        do {
            let key = try KDF.Scrypt.deriveKey(
                from: Array(password), salt: Array(salt), outputByteCount: length, rounds: n, blockSize: r, parallelism: p)
            return key.withUnsafeBytes { Array($0) }
        } catch {
            throw HearthError(.internal, "scrypt failed.", cause: error)
        }
    }
}
