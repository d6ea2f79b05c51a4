/// CRC-32 (IEEE 802.3, as zlib), which the AWS SDKs send as `x-amz-checksum-crc32`.
public struct CRC32: Sendable {
    public private(set) var value: UInt32 = 0
    private var crc: UInt32 = 0xFFFF_FFFF

    public init() {}

    static let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var c = UInt32(i)
        for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
        return c
    }

    public mutating func update<C: Collection<UInt8>>(_ bytes: C) {
        var c = crc
        Self.table.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        crc = c
        value = ~c
    }

    public var bigEndianBytes: [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
}
