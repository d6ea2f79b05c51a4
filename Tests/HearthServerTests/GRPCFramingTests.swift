import HearthCore
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
