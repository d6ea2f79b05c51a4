import Crypto
import HearthCore
import HearthFirestoreProto
import NIOCore
import Testing

@testable import HearthServer

@Suite("gRPC message framing")
struct GRPCFramingTests {
    static func framed(_ messages: [[UInt8]]) -> [UInt8] {
        var buffer = ByteBuffer()
        for m in messages { GRPCFraming.frame(m, into: &buffer) }
        return Array(buffer.readableBytesView)
    }

    /// Feeds `bytes` in chunks of `size` and collects every message.
    static func deframe(_ bytes: [UInt8], chunk size: Int, max: Int = 1 << 20) throws(GRPCStatus) -> [[UInt8]] {
        var d = GRPCMessageDeframer(maxMessageSize: max)
        var out: [[UInt8]] = []
        var i = 0
        while i < bytes.count {
            d.append(ByteBuffer(bytes: bytes[i..<min(bytes.count, i + size)]))
            i += size
            while let m = try d.next() { out.append(m) }
        }
        try d.finish()
        return out
    }

    @Test func frameLayout() {
        #expect(Self.framed([[0xAB, 0xCD]]) == [0, 0, 0, 0, 2, 0xAB, 0xCD])
        #expect(Self.framed([[]]) == [0, 0, 0, 0, 0])
    }

    @Test(arguments: [1, 2, 3, 5, 7, 64, 100_000])
    func splitAndMergedFrames(chunk: Int) throws {
        let messages: [[UInt8]] = [[1, 2, 3], [], Array(repeating: 9, count: 300), [42]]
        #expect(try Self.deframe(Self.framed(messages), chunk: chunk) == messages)
    }

    @Test func oversizedIsRefusedFromItsHeader() {
        var d = GRPCMessageDeframer(maxMessageSize: 10)
        d.append(ByteBuffer(bytes: [0, 0, 0, 0, 11]))  // only the header: no need to wait for the bytes
        do {
            _ = try d.next()
            Issue.record("an oversized message was accepted")
        } catch {
            #expect(error.code == .resourceExhausted)
        }
        #expect((try? Self.deframe(Self.framed([Array(repeating: 1, count: 10)]), chunk: 4, max: 10))?.count == 1)
    }

    @Test func compressedIsUnimplemented() {
        var d = GRPCMessageDeframer()
        d.append(ByteBuffer(bytes: [1, 0, 0, 0, 1, 7]))
        do {
            _ = try d.next()
            Issue.record("a compressed message was accepted")
        } catch {
            #expect(error.code == .unimplemented)
        }
    }

    @Test func truncatedStreamIsAnError() {
        let bytes = Self.framed([[1, 2, 3, 4]])
        for cut in 1..<bytes.count {
            do {
                _ = try Self.deframe(Array(bytes[..<cut]), chunk: 2)
                Issue.record("truncated at \(cut) was accepted")
            } catch {
                #expect(error.code == .internal)
            }
        }
    }
}

@Suite("gRPC status and trailers")
struct GRPCStatusTests {
    @Test func engineErrorsKeepTheirCodeAndMessage() {
        for code in ErrorCode.allCases {
            let status = GRPCStatus(HearthError(code, "boom"))
            #expect(status.trailers[GRPCStatus.statusName] == String(code.rawValue))
        }
        let notFound = GRPCStatus(HearthError(.notFound, "Document \"projects/p/databases/(default)/documents/a/b\" not found."))
        #expect(notFound.trailers[GRPCStatus.statusName] == "5")
        #expect(notFound.trailers[GRPCStatus.messageName] == "Document \"projects/p/databases/(default)/documents/a/b\" not found.")
        #expect(GRPCStatus.ok.trailers[GRPCStatus.messageName] == nil)
    }

    @Test func messagesArePercentEncoded() {
        #expect(GRPCStatus.percentEncode("plain text: ok") == "plain text: ok")
        #expect(GRPCStatus.percentEncode("100% héllo\n") == "100%25 h%C3%A9llo%0A")
        for s in ["", "ünïcødé ✓ %%", "a\r\nb", "Missing or insufficient permissions."] {
            #expect(GRPCStatus.percentDecode(GRPCStatus.percentEncode(s)) == s)
        }
    }

    @Test func timeouts() {
        #expect(GRPCStatus.parseTimeout("1S") == .seconds(1))
        #expect(GRPCStatus.parseTimeout("250m") == .milliseconds(250))
        #expect(GRPCStatus.parseTimeout("2H") == .seconds(7200))
        #expect(GRPCStatus.parseTimeout("99999999n") == .nanoseconds(99_999_999))
        #expect(GRPCStatus.parseTimeout("S") == nil)
        #expect(GRPCStatus.parseTimeout("10x") == nil)
        #expect(GRPCStatus.parseTimeout("123456789S") == nil)
    }
}

@Suite("Listen bloom filters")
struct ListenBloomFilterTests {
    /// Whether `name` is in the filter, computed as the Firebase SDKs test it.
    static func contains(_ f: Google_Firestore_V1_BloomFilter, _ name: String) -> Bool {
        let bitmap = [UInt8](f.bits.bitmap)
        let bitCount = UInt64(bitmap.count * 8 - Int(f.bits.padding))
        guard bitCount > 0 else { return false }
        let digest = Array(Insecure.MD5.hash(data: Array(name.utf8)))
        let h1 = digest[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let h2 = digest[8..<16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        for i in 0..<UInt64(f.hashCount) {
            let bit = (h1 &+ i &* h2) % bitCount
            if bitmap[Int(bit / 8)] & (1 << (bit % 8)) == 0 { return false }
        }
        return true
    }

    @Test("Every name is in the filter; other names rarely are (about 1%)")
    func membership() {
        let names = (0..<500).map { "projects/p/databases/(default)/documents/rooms/r\($0)" }
        let filter = FirestoreGRPCService.bloomFilter(names)
        #expect(filter.hashCount > 0 && !filter.bits.bitmap.isEmpty)
        #expect(filter.bits.padding >= 0 && filter.bits.padding < 8)
        for n in names { #expect(Self.contains(filter, n)) }
        let others = (0..<5000).map { "projects/p/databases/(default)/documents/rooms/x\($0)" }
        let falsePositives = others.filter { Self.contains(filter, $0) }.count
        #expect(falsePositives < 150, "false-positive rate \(Double(falsePositives) / 50)%")
        #expect(FirestoreGRPCService.bloomFilter([]).bits.bitmap.isEmpty)
    }
}
