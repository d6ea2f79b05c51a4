public import HearthCore
import Crypto

/// scrypt (RFC 7914): PBKDF2-HMAC-SHA256 around ROMix, BlockMix and Salsa20/8.
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
        let pw = Array(password)
        let blockWords = 32 * r
        let bytes = PBKDF2.derive(SHA256.self, password: pw, salt: salt, iterations: 1, length: p * 128 * r)
        var words = [UInt32](repeating: 0, count: p * blockWords)
        for i in words.indices {
            let o = i * 4
            words[i] = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
        }
        var v = [UInt32](repeating: 0, count: n * blockWords)
        var scratch = [UInt32](repeating: 0, count: 2 * blockWords + 16)
        words.withUnsafeMutableBufferPointer { b in
            v.withUnsafeMutableBufferPointer { v in
                scratch.withUnsafeMutableBufferPointer { s in
                    for i in 0..<p {
                        roMix(b.baseAddress! + i * blockWords, n: n, r: r, v: v.baseAddress!, scratch: s.baseAddress!)
                    }
                }
            }
        }
        var mixed = [UInt8](repeating: 0, count: bytes.count)
        for (i, w) in words.enumerated() {
            mixed[i * 4] = UInt8(truncatingIfNeeded: w)
            mixed[i * 4 + 1] = UInt8(truncatingIfNeeded: w >> 8)
            mixed[i * 4 + 2] = UInt8(truncatingIfNeeded: w >> 16)
            mixed[i * 4 + 3] = UInt8(truncatingIfNeeded: w >> 24)
        }
        return PBKDF2.derive(SHA256.self, password: pw, salt: mixed, iterations: 1, length: length)
    }

    /// ROMix on one block of 32·r words in place; `v` holds N blocks, `scratch` 2 blocks + 16 words.
    static func roMix(_ b: UnsafeMutablePointer<UInt32>, n: Int, r: Int, v: UnsafeMutablePointer<UInt32>, scratch: UnsafeMutablePointer<UInt32>) {
        let words = 32 * r
        let x = scratch
        let y = scratch + words
        let t = scratch + 2 * words
        x.update(from: b, count: words)
        for i in 0..<n {
            (v + i * words).update(from: x, count: words)
            blockMix(x, into: y, r: r, t: t)
            x.update(from: y, count: words)
        }
        let last = (2 * r - 1) * 16
        for _ in 0..<n {
            let j = Int(x[last]) & (n - 1)
            let vj = v + j * words
            for k in 0..<words { x[k] ^= vj[k] }
            blockMix(x, into: y, r: r, t: t)
            x.update(from: y, count: words)
        }
        b.update(from: x, count: words)
    }

    /// BlockMix_salsa20/8: `b` (2r 64-byte blocks) into `y`, using 16 words at `t`.
    static func blockMix(_ b: UnsafeMutablePointer<UInt32>, into y: UnsafeMutablePointer<UInt32>, r: Int, t: UnsafeMutablePointer<UInt32>) {
        t.update(from: b + (2 * r - 1) * 16, count: 16)
        for i in 0..<(2 * r) {
            let bi = b + i * 16
            for k in 0..<16 { t[k] ^= bi[k] }
            salsa8(t)
            let dest = y + ((i & 1 == 0) ? (i / 2) : (r + i / 2)) * 16
            dest.update(from: t, count: 16)
        }
    }

    @inline(__always) static func rotl(_ a: UInt32, _ n: UInt32) -> UInt32 { (a << n) | (a >> (32 - n)) }

    /// The Salsa20/8 core on 16 words in place.
    static func salsa8(_ b: UnsafeMutablePointer<UInt32>) {
        var x0 = b[0], x1 = b[1], x2 = b[2], x3 = b[3], x4 = b[4], x5 = b[5], x6 = b[6], x7 = b[7]
        var x8 = b[8], x9 = b[9], x10 = b[10], x11 = b[11], x12 = b[12], x13 = b[13], x14 = b[14], x15 = b[15]
        for _ in 0..<4 {
            x4 ^= rotl(x0 &+ x12, 7); x8 ^= rotl(x4 &+ x0, 9); x12 ^= rotl(x8 &+ x4, 13); x0 ^= rotl(x12 &+ x8, 18)
            x9 ^= rotl(x5 &+ x1, 7); x13 ^= rotl(x9 &+ x5, 9); x1 ^= rotl(x13 &+ x9, 13); x5 ^= rotl(x1 &+ x13, 18)
            x14 ^= rotl(x10 &+ x6, 7); x2 ^= rotl(x14 &+ x10, 9); x6 ^= rotl(x2 &+ x14, 13); x10 ^= rotl(x6 &+ x2, 18)
            x3 ^= rotl(x15 &+ x11, 7); x7 ^= rotl(x3 &+ x15, 9); x11 ^= rotl(x7 &+ x3, 13); x15 ^= rotl(x11 &+ x7, 18)
            x1 ^= rotl(x0 &+ x3, 7); x2 ^= rotl(x1 &+ x0, 9); x3 ^= rotl(x2 &+ x1, 13); x0 ^= rotl(x3 &+ x2, 18)
            x6 ^= rotl(x5 &+ x4, 7); x7 ^= rotl(x6 &+ x5, 9); x4 ^= rotl(x7 &+ x6, 13); x5 ^= rotl(x4 &+ x7, 18)
            x11 ^= rotl(x10 &+ x9, 7); x8 ^= rotl(x11 &+ x10, 9); x9 ^= rotl(x8 &+ x11, 13); x10 ^= rotl(x9 &+ x8, 18)
            x12 ^= rotl(x15 &+ x14, 7); x13 ^= rotl(x12 &+ x15, 9); x14 ^= rotl(x13 &+ x12, 13); x15 ^= rotl(x14 &+ x13, 18)
        }
        b[0] &+= x0; b[1] &+= x1; b[2] &+= x2; b[3] &+= x3; b[4] &+= x4; b[5] &+= x5; b[6] &+= x6; b[7] &+= x7
        b[8] &+= x8; b[9] &+= x9; b[10] &+= x10; b[11] &+= x11; b[12] &+= x12; b[13] &+= x13; b[14] &+= x14; b[15] &+= x15
    }
}
