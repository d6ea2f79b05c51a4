import Testing

@testable import HearthStorage

/// The CPU's CRC-32C instructions and the portable tables must agree on every input: known
/// vectors, every length 0…300 at every alignment 0…15, and random large buffers split at
/// random points.
struct CRC32CTests {
    static let vectors: [(String, UInt32)] = [
        ("", 0),
        ("a", 0xC1D0_4330),
        ("123456789", 0xE306_9283),
        ("The quick brown fox jumps over the lazy dog", 0x2262_0404),
    ]

    @Test(arguments: vectors)
    func knownAnswersBothImplementations(text: String, expected: UInt32) {
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { p in
            #expect(CRC32C.softwareChecksum(p) == expected)
            if let hw = CRC32C.hardwareChecksum(p) { #expect(hw == expected) }
        }
        #expect(CRC32C.checksum(bytes) == expected)
    }

    @Test func rfc3720Vectors() {
        // RFC 3720 B.4: 32 bytes of zeroes, of 0xFF, ascending and descending.
        let cases: [([UInt8], UInt32)] = [
            ([UInt8](repeating: 0, count: 32), 0x8A91_36AA),
            ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
            ((0..<32).map { UInt8($0) }, 0x46DD_794E),
            ((0..<32).reversed().map { UInt8($0) }, 0x113F_DB5C),
        ]
        for (bytes, expected) in cases {
            bytes.withUnsafeBytes { p in
                #expect(CRC32C.softwareChecksum(p) == expected)
                if let hw = CRC32C.hardwareChecksum(p) { #expect(hw == expected) }
            }
        }
    }

    @Test func hardwareMatchesSoftwareAtEveryLengthAndAlignment() {
        var rng = SystemRandomNumberGenerator()
        let data = (0..<(300 + 16)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        data.withUnsafeBytes { all in
            for offset in 0..<16 {
                for length in 0...300 {
                    let slice = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + length)])
                    let sw = CRC32C.softwareChecksum(slice)
                    if let hw = CRC32C.hardwareChecksum(slice) {
                        #expect(hw == sw, "offset \(offset), length \(length)")
                    }
                }
            }
        }
    }

    @Test func randomBuffersSplitAtRandomPointsAgree() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let n = Int.random(in: 0...200_000, using: &rng)
            let data = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let whole = data.withUnsafeBytes { CRC32C.softwareChecksum($0) }
            if let hw = data.withUnsafeBytes({ CRC32C.hardwareChecksum($0) }) { #expect(hw == whole) }
            var c = CRC32C()
            var i = 0
            while i < n {
                let step = Int.random(in: 1...70_000, using: &rng)
                c.update(data[i..<min(n, i + step)])
                i += step
            }
            #expect(c.value == whole)
        }
    }

    @Test func reportsWhichImplementationRuns() {
        #if arch(x86_64)
        // Every x86-64 CPU this project targets has SSE4.2; the check itself must not crash.
        _ = CRC32C.usesHardware
        #endif
        #expect(CRC32C.checksum([UInt8]()) == 0)
    }
}
