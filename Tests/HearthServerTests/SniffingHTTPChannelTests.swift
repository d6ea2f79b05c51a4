import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HearthServer

@Suite("HTTP/1.1 and h2c on one port")
struct SniffingHTTPChannelTests {
    @Test func decisions() {
        let preface = SniffingHTTPChannel.http2Preface
        #expect(SniffingHTTPChannel.choose([UInt8]()) == nil)
        #expect(SniffingHTTPChannel.choose(preface.prefix(10)) == nil)
        #expect(SniffingHTTPChannel.choose(preface) == .http2)
        #expect(SniffingHTTPChannel.choose(preface + [0, 0, 0, 4]) == .http2)
        #expect(SniffingHTTPChannel.choose(Array("GET / HTTP/1.1\r\n".utf8)) == .http1)
        #expect(SniffingHTTPChannel.choose(Array("P".utf8)) == nil)
        #expect(SniffingHTTPChannel.choose(Array("POST".utf8)) == .http1)
        #expect(SniffingHTTPChannel.choose(Array("PRI * HTTP/1.1".utf8)) == .http1)
    }

    func app(timeout: TimeAmount = .seconds(30)) -> some ApplicationProtocol {
        let router = Router()
        router.get("/") { _, _ in "Ok" }
        router.post("/echo") { request, _ in
            try await request.body.collect(upTo: 1 << 20)
        }
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                SniffingHTTPChannel(responder: responder, decisionTimeout: timeout)
            },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: Logger(label: "test"))
    }

    /// When to stop reading an answer.
    enum Until: Sendable {
        case contains(String)
        case bytes(Int)
        case closed
    }

    /// Sends bytes on a fresh connection and reads until `until` holds or the server closes.
    static func exchange(_ port: Int, _ send: [UInt8], close: Bool = false, until: Until) async throws -> [UInt8] {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { ch in
                ch.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: ch) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            do {
                if !send.isEmpty { try await outbound.write(ByteBuffer(bytes: send)) }
            } catch ChannelError.ioOnClosedChannel {
                return []  // the server already closed the connection (an undecided one, after its timeout)
            }
            if close { return [] }
            var got: [UInt8] = []
            do {
                for try await chunk in inbound {
                    got += chunk.readableBytesView
                    switch until {
                    case .contains(let text): if String(decoding: got, as: UTF8.self).contains(text) { return got }
                    case .bytes(let n): if got.count >= n { return got }
                    case .closed: break
                    }
                }
            } catch let error as IOError where error.errnoCode == ECONNRESET {
                // The server closed (or reset) the connection: what was read is the answer.
            }
            return got
        }
    }

    static let emptySettings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]

    @Test func bothProtocolsOnOneLivePort() async throws {
        try await app().test(.live) { client in
            let port = try #require(client.port)
            // HTTP/1.1, twice on one connection's worth of bytes.
            let http1 = try await Self.exchange(port, Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), until: .contains("Ok"))
            #expect(String(decoding: http1, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
            // Through Hummingbird's own client too (POST with a body).
            try await client.execute(uri: "/echo", method: .post, body: ByteBuffer(string: "hello")) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "hello")
            }
            // h2c: the preface (split in two writes' worth) and SETTINGS → the server's SETTINGS frame.
            let h2 = try await Self.exchange(port, SniffingHTTPChannel.http2Preface + Self.emptySettings, until: .bytes(9))
            #expect(h2.count >= 9)
            #expect(h2[3] == 4, "the first frame of an HTTP/2 server is SETTINGS")
        }
    }

    /// A client that half-closes before the server could decide (wrk stopping mid-connection):
    /// no request can follow, so the server closes at once instead of holding the socket in
    /// CLOSE-WAIT until the decision timeout (45 s here), which also kept a graceful shutdown
    /// waiting. Fails if the close comes only after 20 s (the timeout's, not the half-close's).
    @Test func aHalfClosedUndecidedConnectionIsClosedAtOnce() async throws {
        try await app(timeout: .seconds(45)).test(.live) { client in
            let port = try #require(client.port)
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .connect(host: "127.0.0.1", port: port) { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                            wrappingChannelSynchronously: ch, configuration: .init(isOutboundHalfClosureEnabled: true))
                    }
                }
            let late = Mutex(false)
            let timer = Task {
                try await Task.sleep(for: .seconds(20))
                late.withLock { $0 = true }
            }
            let got = try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(bytes: Array(SniffingHTTPChannel.http2Preface.prefix(5))))
                outbound.finish()
                var got: [UInt8] = []
                do {
                    for try await chunk in inbound { got += chunk.readableBytesView }
                } catch let error as IOError where error.errnoCode == ECONNRESET {}
                return got
            }
            timer.cancel()
            #expect(got.isEmpty)
            #expect(!late.withLock { $0 }, "the server held the half-closed connection until its decision timeout")
            let http1 = try await Self.exchange(port, Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), until: .contains("Ok"))
            #expect(String(decoding: http1, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test func undecidedConnectionsDoNotHurt() async throws {
        // 2 s: long enough that a loaded machine still reads a prompt client's first bytes in time
        // (at 0.5 s, a build beside the test once made the server close the last two connections
        // before it read their requests), short enough to wait for the silent ones.
        try await app(timeout: .seconds(2)).test(.live) { client in
            let port = try #require(client.port)
            // Closes before the server could decide.
            _ = try await Self.exchange(port, Array(SniffingHTTPChannel.http2Preface.prefix(8)), close: true, until: .closed)
            // Says nothing: closed by the server after the timeout (else this read never ends).
            let silent = try await Self.exchange(port, [], until: .closed)
            #expect(silent.isEmpty)
            // A partial preface that never completes: closed too.
            let partial = try await Self.exchange(port, Array("PRI * HTTP/2".utf8), until: .closed)
            #expect(partial.isEmpty)
            // The port still serves both protocols.
            let http1 = try await Self.exchange(port, Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), until: .contains("Ok"))
            #expect(String(decoding: http1, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
            let h2 = try await Self.exchange(port, SniffingHTTPChannel.http2Preface + Self.emptySettings, until: .bytes(9))
            #expect(h2.count >= 9 && h2[3] == 4)
        }
    }
}
