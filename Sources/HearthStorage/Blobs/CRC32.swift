/// CRC-32 (IEEE 802.3, as zlib), which the AWS SDKs send as `x-amz-checksum-crc32`.
public struct CRC32: Sendable {
    public private(set) var value: UInt32 = 0
    private var crc: UInt32 = 0xFFFF_FFFF

    public init() {}

    static let tables = SlicingBy8(polynomial: 0xEDB8_8320)

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        crc = Self.tables.update(crc, bytes)
        value = ~crc
    }

    public mutating func update<C: Collection<UInt8>>(_ bytes: C) {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) { return done }
        let copy = Array(bytes)
        copy.withUnsafeBytes { update($0) }
    }

    public var bigEndianBytes: [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
}

/// A reflected CRC-32 in software, eight bytes per step ("slicing-by-8"): eight 256-entry
/// tables, one after the other (table k at offset 256·k). CRC-32 and CRC-32C differ only in
/// the polynomial.
struct SlicingBy8: Sendable {
    let tables: [UInt32]

    /// `polynomial`: reflected (CRC-32: 0xEDB88320, CRC-32C: 0x82F63B78).
    init(polynomial: UInt32) {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ polynomial : c >> 1 }
            t[i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 { t[k * 256 + i] = (t[(k - 1) * 256 + i] >> 8) ^ t[Int(t[(k - 1) * 256 + i] & 0xFF)] }
        }
        tables = t
    }

    /// Continues the running register `state` (start with 0xFFFFFFFF, complement at the end).
    func update(_ state: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var c = state
        tables.withUnsafeBufferPointer { tables in
            let t = tables.baseAddress!
            var i = 0
            let n = bytes.count
            while n - i >= 8 {
                let lo = c ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
                let hi = UInt32(bytes[i + 4]) | UInt32(bytes[i + 5]) << 8 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 24
                c = t[1792 + Int(lo & 0xFF)] ^ t[1536 + Int((lo >> 8) & 0xFF)] ^ t[1280 + Int((lo >> 16) & 0xFF)] ^ t[1024 + Int(lo >> 24)]
                    ^ t[768 + Int(hi & 0xFF)] ^ t[512 + Int((hi >> 8) & 0xFF)] ^ t[256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                c = t[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
                i += 1
            }
        }
        return c
    }
}
