import Crypto

/// The digests behind `hashing.*`: CRC-32 and CRC-32C written out (swift-crypto has no CRC),
/// MD5 and SHA-256 from swift-crypto. CRC values are returned little-endian, as Google's implementation does
/// (`hashing.crc32('123456789').toHexString() == '2639F4CB'`).
enum Hashing {
    static let crc32Table: [UInt32] = table(0xEDB8_8320)
    static let crc32cTable: [UInt32] = table(0x82F6_3B78)

    static func table(_ poly: UInt32) -> [UInt32] {
        (0..<256).map { i -> UInt32 in
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? poly ^ (c >> 1) : c >> 1 }
            return c
        }
    }

    static func crc(_ data: [UInt8], _ table: [UInt32]) -> [UInt8] {
        var c: UInt32 = 0xFFFF_FFFF
        for b in data { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        c ^= 0xFFFF_FFFF
        return [UInt8(c & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c >> 16 & 0xFF), UInt8(c >> 24)]
    }

    static func crc32(_ data: [UInt8]) -> [UInt8] { crc(data, crc32Table) }
    static func crc32c(_ data: [UInt8]) -> [UInt8] { crc(data, crc32cTable) }

    // MD5 and SHA-256 come from swift-crypto (BoringSSL). The hand-written Swift versions they
    // replaced were slower in the same-run benchmark (release builds, docs/performance.md
    // "Password hashing"): 64-byte inputs ×65,536 — MD5 33–49 ms against ours 90–97 ms, SHA-256
    // 27–41 ms against 139–163 ms; 1 KiB ×4,096 — MD5 14–31 ms against 31–49, SHA-256 6–7 ms against 49–89.
    static func md5(_ message: [UInt8]) -> [UInt8] { Array(Insecure.MD5.hash(data: message)) }
    static func sha256(_ message: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: message)) }
}
