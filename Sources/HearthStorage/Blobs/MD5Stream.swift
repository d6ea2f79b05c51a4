import Crypto
import HearthCShims

/// MD5 of a stream of bytes, as objects' `md5Hash` and S3's ETag need it. MD5 is the one
/// computation no upload can spread over cores, so optimized builds use Hearth's own
/// compression function (``hearth_md5_blocks``, a few percent faster than the library's);
/// unoptimized builds, where that C code would be slow, use swift-crypto's. Both give the same
/// digest for every input (tested against each other).
struct MD5Stream: Sendable {
    static let usesShim = hearth_md5_optimized() != 0

    private var library: Insecure.MD5?
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476)
    /// Bytes short of a whole 64-byte block, waiting for more.
    private var partial: [UInt8] = []
    private var length: UInt64 = 0

    /// `shim` chooses the implementation (tests exercise both in any build).
    init(shim: Bool = MD5Stream.usesShim) {
        library = shim ? nil : Insecure.MD5()
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if library != nil {
            library!.update(bufferPointer: bytes)
            return
        }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        length &+= UInt64(bytes.count)
        var offset = 0
        if !partial.isEmpty {
            let take = min(64 - partial.count, bytes.count)
            partial.append(contentsOf: UnsafeRawBufferPointer(start: base, count: take))
            offset = take
            guard partial.count == 64 else { return }
            partial.withUnsafeBytes { compress($0.baseAddress!, blocks: 1) }
            partial.removeAll(keepingCapacity: true)
        }
        let whole = (bytes.count - offset) / 64
        if whole > 0 { compress(base + offset, blocks: whole) }
        offset += whole * 64
        if offset < bytes.count { partial.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: bytes.count - offset)) }
    }

    private mutating func compress(_ data: UnsafeRawPointer, blocks: Int) {
        withUnsafeMutableBytes(of: &state) { raw in
            hearth_md5_blocks(raw.baseAddress!.assumingMemoryBound(to: UInt32.self), data, blocks)
        }
    }

    /// The 16-byte digest (the stream is spent).
    mutating func finalize() -> [UInt8] {
        if let library { return Array(library.finalize()) }
        // RFC 1321 §3.1–3.2: 0x80, zeros to 56 mod 64, then the bit length, little-endian.
        let bits = length &* 8
        var tail = partial
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for i in 0..<8 { tail.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
        tail.withUnsafeBytes { compress($0.baseAddress!, blocks: $0.count / 64) }
        partial = []
        var out: [UInt8] = []
        for word in [state.0, state.1, state.2, state.3] {
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: word >> (8 * UInt32(i)))) }
        }
        return out
    }
}
