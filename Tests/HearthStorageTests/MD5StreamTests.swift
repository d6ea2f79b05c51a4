import Crypto
import Foundation
import Testing

@testable import HearthStorage

/// Hearth's MD5 (the C compression function behind ``MD5Stream``) must agree with
/// swift-crypto's for every length and every way of cutting the input — padding boundaries
/// (55, 56, 63, 64 bytes) included. The tests run it in every build, optimized or not.
struct MD5StreamTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test(arguments: [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("The quick brown fox jumps over the lazy dog", "9e107d9d372bb6826bd81d3542a419d6"),
    ])
    func knownAnswers(text: String, expected: String) {
        var md5 = MD5Stream(shim: true)
        Array(text.utf8).withUnsafeBytes { md5.update($0) }
        #expect(Self.hex(md5.finalize()) == expected)
    }

    @Test(arguments: [1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 1000, (1 << 20) + 3])
    func agreesWithTheLibraryWhateverTheChunks(length: Int) {
        let data = BlobWriterTests.randomBytes(length)
        var rng = SystemRandomNumberGenerator()
        for chunked in [false, true] {
            var md5 = MD5Stream(shim: true)
            var i = 0
            while i < data.count {
                let n = chunked ? Int.random(in: 1...200, using: &rng) : data.count
                data[i..<min(data.count, i + n)].withUnsafeBytes { md5.update($0) }
                i += n
            }
            #expect(md5.finalize() == Array(Insecure.MD5.hash(data: data)), "length \(length), chunked \(chunked)")
        }
        var library = MD5Stream(shim: false)
        data.withUnsafeBytes { library.update($0) }
        #expect(library.finalize() == Array(Insecure.MD5.hash(data: data)))
    }
}
