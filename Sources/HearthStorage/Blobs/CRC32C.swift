/// CRC-32C (Castagnoli), as Cloud Storage reports it in `crc32c` (base64 of the big-endian
/// value). Slicing-by-8 over 8 tables: a few GB/s, so checksumming never limits an upload.
public struct CRC32C: Sendable {
    public private(set) var value: UInt32 = 0
    private var crc: UInt32 = 0xFFFF_FFFF

    public init() {}

    static let tables: [[UInt32]] = {
        var t = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[0][i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 { t[k][i] = (t[k - 1][i] >> 8) ^ t[0][Int(t[k - 1][i] & 0xFF)] }
        }
        return t
    }()

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var c = crc
        Self.tables.withUnsafeBufferPointer { tables in
            let t0 = tables[0], t1 = tables[1], t2 = tables[2], t3 = tables[3]
            let t4 = tables[4], t5 = tables[5], t6 = tables[6], t7 = tables[7]
            var i = 0
            let n = bytes.count
            while n - i >= 8 {
                let lo = c ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
                let hi = UInt32(bytes[i + 4]) | UInt32(bytes[i + 5]) << 8 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 24
                c = t7[Int(lo & 0xFF)] ^ t6[Int((lo >> 8) & 0xFF)] ^ t5[Int((lo >> 16) & 0xFF)] ^ t4[Int(lo >> 24)]
                    ^ t3[Int(hi & 0xFF)] ^ t2[Int((hi >> 8) & 0xFF)] ^ t1[Int((hi >> 16) & 0xFF)] ^ t0[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                c = t0[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
                i += 1
            }
        }
        crc = c
        value = ~c
    }

    public mutating func update<C: Collection<UInt8>>(_ bytes: C) {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) { return done }
        let copy = Array(bytes)
        copy.withUnsafeBytes { update($0) }
    }

    /// The checksum's 4 bytes, big-endian (what `crc32c` base64-encodes).
    public var bigEndianBytes: [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }

    public static func checksum<C: Collection<UInt8>>(_ bytes: C) -> UInt32 {
        var c = CRC32C()
        c.update(bytes)
        return c.value
    }
}
