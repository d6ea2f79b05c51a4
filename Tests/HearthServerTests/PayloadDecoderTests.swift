import Foundation
import HearthCore
@testable import HearthStorage
import Testing

@testable import HearthServer

/// aws-chunked bodies as the AWS SDKs send them — signed chunks chained from the request's
/// signature, unsigned chunks with checksum trailers — fed to the decoder cut at random
/// points: the object bytes come out unchanged and every lie is caught.
struct PayloadDecoderTests {
    static let scope = SigV4.Scope(date: "20261124", region: "us-east-1")
    static let key = SigV4.signingKey(secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", scope: scope)
    static let amzDate = "20261124T080000Z"
    static let seed = String(repeating: "ab", count: 32)

    static func data(_ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) } }

    /// A signed aws-chunked body: chunks of `chunk` bytes, then the empty final chunk.
    static func signedBody(_ data: [UInt8], chunk: Int) -> [UInt8] {
        var out: [UInt8] = []
        var previous = seed
        var pieces = stride(from: 0, to: data.count, by: chunk).map { Array(data[$0..<min(data.count, $0 + chunk)]) }
        pieces.append([])
        for piece in pieces {
            let signature = SigV4.chunkSignature(signingKey: key, amzDate: amzDate, scope: scope, previous: previous, chunk: piece)
            out += Array("\(String(piece.count, radix: 16));chunk-signature=\(signature)\r\n".utf8) + piece + Array("\r\n".utf8)
            previous = signature
        }
        return out
    }

    /// An unsigned aws-chunked body with trailers.
    static func trailerBody(_ data: [UInt8], chunk: Int, trailers: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for start in stride(from: 0, to: data.count, by: chunk) {
            let piece = Array(data[start..<min(data.count, start + chunk)])
            out += Array("\(String(piece.count, radix: 16))\r\n".utf8) + piece + Array("\r\n".utf8)
        }
        out += Array("0\r\n".utf8)
        for (k, v) in trailers { out += Array("\(k):\(v)\r\n".utf8) }
        return out + Array("\r\n".utf8)
    }

    static var signedMode: PayloadDecoder.Mode { .chunked(signing: (key, amzDate, scope, seed), trailer: false) }

    /// Feeds `body` cut at random points; the decoded bytes.
    static func decode(_ body: [UInt8], _ mode: PayloadDecoder.Mode, trailer: String? = nil, length: Int64? = nil) throws -> [UInt8] {
        var decoder = PayloadDecoder(mode: mode, declaredTrailer: trailer)
        var out: [UInt8] = []
        var rng = SystemRandomNumberGenerator()
        var i = 0
        while i < body.count {
            let n = Int.random(in: 1...9_000, using: &rng)
            let piece = Array(body[i..<min(body.count, i + n)])
            try piece.withUnsafeBytes { raw in
                try decoder.feed(raw) { bytes in out.append(contentsOf: bytes) }
            }
            i += n
        }
        try decoder.finish(decodedLengthHeader: length)
        return out
    }

    static func crc32(_ bytes: [UInt8]) -> String {
        var c = CRC32()
        c.update(bytes)
        return Data(c.bigEndianBytes).base64EncodedString()
    }

    @Test func crc32KnownAnswerAndSlicingAgreeWithBytewise() {
        #expect(Self.crc32(Array("123456789".utf8)) == Data([0xCB, 0xF4, 0x39, 0x26]).base64EncodedString())
        let data = Self.data(1_000)
        var bytewise: UInt32 = 0xFFFF_FFFF
        for b in data { bytewise = CRC32.tables.tables[Int((bytewise ^ UInt32(b)) & 0xFF)] ^ (bytewise >> 8) }
        for cut in [0, 1, 7, 8, 9, 500, 999] {
            var c = CRC32()
            c.update(data[..<cut])
            c.update(data[cut...])
            #expect(c.value == ~bytewise)
        }
    }

    @Test(arguments: [0, 1, 8_191, 65_536, 200_003])
    func signedChunksDecode(size: Int) throws {
        let data = Self.data(size)
        #expect(try Self.decode(Self.signedBody(data, chunk: 65_536), Self.signedMode, length: Int64(size)) == data)
    }

    /// AWS's published example of a streaming upload (66,560 bytes of "a" in a 64 KiB and a
    /// 1 KiB chunk, "Signature Calculations for the Authorization Header: Transferring
    /// Payload in Multiple Chunks").
    @Test func awsPublishedExampleDecodes() throws {
        let scope = SigV4.Scope(date: "20130524", region: "us-east-1")
        let key = SigV4.signingKey(secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", scope: scope)
        let signatures = [
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
        ]
        var body: [UInt8] = []
        for (size, signature) in zip([65_536, 1_024, 0], signatures) {
            body += Array("\(String(size, radix: 16));chunk-signature=\(signature)\r\n".utf8) + [UInt8](repeating: 97, count: size) + Array("\r\n".utf8)
        }
        let mode = PayloadDecoder.Mode.chunked(
            signing: (key, "20130524T000000Z", scope, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"), trailer: false)
        #expect(try Self.decode(body, mode, length: 66_560) == [UInt8](repeating: 97, count: 66_560))
    }

    @Test func aTamperedChunkIsRefused() throws {
        var body = Self.signedBody(Self.data(100_000), chunk: 65_536)
        body[body.count / 2] ^= 1
        #expect(throws: HearthError.self) { _ = try Self.decode(body, Self.signedMode) }
        // Chunks out of order: each signature chains from the one before.
        let a = Self.signedBody(Self.data(10), chunk: 5)
        let header = Array(a[0..<(a.firstIndex(of: 10)! + 1)])
        let swapped = Array(a[(header.count + 7)...])
        #expect(throws: HearthError.self) { _ = try Self.decode(swapped, Self.signedMode) }
        let unsigned = Array("5\r\nhello\r\n0\r\n\r\n".utf8)
        #expect(throws: HearthError.self) { _ = try Self.decode(unsigned, Self.signedMode) }
    }

    @Test func trailersAreChecked() throws {
        let data = Self.data(150_000)
        let mode = PayloadDecoder.Mode.chunked(signing: nil, trailer: true)
        let good = Self.trailerBody(data, chunk: 65_536, trailers: [("x-amz-checksum-crc32", Self.crc32(data))])
        #expect(try Self.decode(good, mode, trailer: "x-amz-checksum-crc32", length: 150_000) == data)
        #expect(try Self.decode(good, mode, length: 150_000) == data, "no x-amz-trailer: every kind is computed")
        let wrong = Self.trailerBody(data, chunk: 65_536, trailers: [("x-amz-checksum-crc32", Self.crc32(Array(data.dropFirst())))])
        #expect(throws: HearthError.self) { _ = try Self.decode(wrong, mode, trailer: "x-amz-checksum-crc32") }
        var crc32c = CRC32C()
        crc32c.update(data)
        let c = Self.trailerBody(data, chunk: 65_536, trailers: [("x-amz-checksum-crc32c", Data(crc32c.bigEndianBytes).base64EncodedString())])
        #expect(try Self.decode(c, mode, trailer: "x-amz-checksum-crc32c") == data)
        #expect(throws: HearthError.self, "a trailer x-amz-trailer did not declare") {
            _ = try Self.decode(c, mode, trailer: "x-amz-checksum-crc32")
        }
    }

    @Test func incompleteAndOverlongBodiesAreRefused() throws {
        let data = Self.data(70_000)
        let body = Self.signedBody(data, chunk: 65_536)
        #expect(throws: HearthError.self, "no final chunk") { _ = try Self.decode(Array(body.dropLast(90)), Self.signedMode) }
        #expect(throws: HearthError.self, "data after the final chunk") { _ = try Self.decode(body + Array("x".utf8), Self.signedMode) }
        #expect(throws: HearthError.self, "decoded length") { _ = try Self.decode(body, Self.signedMode, length: 69_999) }
        let long = Array("3\r\nhello\r\n0\r\n\r\n".utf8)
        #expect(throws: HearthError.self, "a chunk longer than its size") {
            _ = try Self.decode(long, .chunked(signing: nil, trailer: false))
        }
        let badSize = Array("zz\r\nhello\r\n".utf8)
        #expect(throws: HearthError.self) { _ = try Self.decode(badSize, .chunked(signing: nil, trailer: false)) }
    }

    @Test func plainBodiesPassThrough() throws {
        let data = Self.data(100_000)
        #expect(try Self.decode(data, .raw) == data)
        let hash = SigV4.sha256Hex(data)
        #expect(try Self.decode(data, .sha256(expected: hash)) == data)
        #expect(throws: HearthError.self) { _ = try Self.decode(data, .sha256(expected: SigV4.sha256Hex([1]))) }
    }
}
