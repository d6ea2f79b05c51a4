import HearthCShims

/// CRC-32C (Castagnoli), as Cloud Storage reports it in `crc32c` (base64 of the big-endian
/// value). Uses the CPU's CRC-32C instructions when it has them (SSE4.2 `crc32` on x86-64,
/// the CRC extension on ARMv8; checked once at run time), else slicing-by-8 over 8 tables.
/// Both give the same value for every input (tested against each other).
public struct CRC32C: Sendable {
    public private(set) var value: UInt32 = 0
    private var crc: UInt32 = 0xFFFF_FFFF

    public init() {}

    /// Whether this process computes CRC-32C with CPU instructions.
    public static let usesHardware: Bool = hearth_crc32c_hardware_available() != 0

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        crc = Self.usesHardware ? hearth_crc32c_hardware_update(crc, base, bytes.count) : Self.softwareUpdate(crc, bytes)
        value = ~crc
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

    // MARK: Portable implementation

    /// The portable implementation's tables (Castagnoli's polynomial, reflected).
    static let software = SlicingBy8(polynomial: 0x82F6_3B78)

    /// Continues the running register `state` over `bytes` without CPU CRC instructions.
    static func softwareUpdate(_ state: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 { software.update(state, bytes) }

    /// The checksum of `bytes` by the portable implementation only (tests compare it with
    /// the hardware one).
    static func softwareChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 { ~softwareUpdate(0xFFFF_FFFF, bytes) }

    /// The checksum of `bytes` by the CPU instructions; nil if this CPU has none.
    static func hardwareChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt32? {
        guard usesHardware else { return nil }
        guard let base = bytes.baseAddress else { return 0 }
        return ~hearth_crc32c_hardware_update(0xFFFF_FFFF, base, bytes.count)
    }
}
