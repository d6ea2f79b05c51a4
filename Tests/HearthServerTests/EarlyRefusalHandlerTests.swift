import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import HearthServer

/// A refusal answered from the headers alone: the client reads it, the connection then ends
/// safely, and answers sent after the whole body are untouched.
@Suite(.timeLimit(.minutes(1))) struct EarlyRefusalHandlerTests {
    func app() -> some ApplicationProtocol {
        let router = Router(context: ObjectRequestContext.self)
        router.get("/") { _, _ in "Ok" }
        // Refuses without reading the body (as a rules denial by declared size does).
        router.post("/refuse") { _, _ -> Response in Response(status: .forbidden, headers: [.contentLength: "0"]) }
        // Reads the whole body, then refuses.
        router.post("/read-then-refuse") { request, context -> Response in
            _ = try await context.continuingOnRead(request).body.collect(upTo: 64 << 20)
            return Response(status: .forbidden, headers: [.contentLength: "0"])
        }
        // Reads the whole body and says how long it was.
        router.post("/read") { request, context -> String in
            String(try await context.continuingOnRead(request).body.collect(upTo: 64 << 20).readableBytes)
        }
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                BulkReadHTTP1Channel(
                    responder: responder,
                    configuration: .init(additionalChannelHandlers: [ExpectContinueHandler(.whenBodyIsRead), EarlyRefusalHandler()]))
            },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: Logger(label: "test"))
    }

    static func connect<T: Sendable>(_ port: Int, _ body: (inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws -> T) async throws -> T {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { ch in
                ch.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: ch) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            return try await body(&iterator, outbound)
        }
    }

    /// Reads until the text holds a whole response head (with anything before it).
    static func readHead(_ inbound: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws -> String {
        var text = ""
        while !text.contains("\r\n\r\n"), let chunk = try await inbound.next() { text += String(buffer: chunk) }
        return text
    }

    /// Sends `chunks` more body bytes (stopping if the server closes meanwhile), then waits for
    /// the server to close. A server that never closes fails the test by its time limit.
    static func waitForClose(
        _ inbound: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        sending chunks: Int, of size: Int
    ) async {
        do {
            for _ in 0..<chunks { try await outbound.write(ByteBuffer(repeating: 0x61, count: size)) }
        } catch {
            return  // closed while we were sending
        }
        do {
            while try await inbound.next() != nil {}
        } catch {
            // reset: closed too
        }
    }

    @Test func aRefusalBeforeTheBodyClosesOnceTheBodyEnds() async throws {
        try await app().test(.live) { client in
            let port = try #require(client.port)
            try await Self.connect(port) { inbound, outbound in
                try await outbound.write(ByteBuffer(string: "POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n"))
                let head = try await Self.readHead(&inbound)
                #expect(head.hasPrefix("HTTP/1.1 403"))
                #expect(head.lowercased().contains("connection: close"))
                // The rest of the body is read and dropped, then the connection ends.
                await Self.waitForClose(&inbound, outbound, sending: 16, of: 65536)
            }
        }
    }

    @Test func withExpectContinueTooAndForADeclaredHugeBody() async throws {
        try await app().test(.live) { client in
            let port = try #require(client.port)
            try await Self.connect(port) { inbound, outbound in
                try await outbound.write(
                    ByteBuffer(string: "POST /refuse HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 6442450944\r\n\r\n"))
                let head = try await Self.readHead(&inbound)
                // The final answer instead of `100 Continue`: the client need not send anything.
                #expect(head.hasPrefix("HTTP/1.1 403"))
                #expect(head.lowercased().contains("connection: close"))
                // Past the linger budget the server stops reading and closes.
                let chunks = 4 * EarlyRefusalHandler.lingerBytes / 65536
                await Self.waitForClose(&inbound, outbound, sending: chunks, of: 65536)
            }
            // And it still serves.
            try await client.execute(uri: "/", method: .get) { response in #expect(response.status == .ok) }
        }
    }

    @Test func aRefusalAfterTheWholeBodyKeepsTheConnection() async throws {
        try await app().test(.live) { client in
            let port = try #require(client.port)
            try await Self.connect(port) { inbound, outbound in
                try await outbound.write(ByteBuffer(string: "POST /read-then-refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"))
                let head = try await Self.readHead(&inbound)
                #expect(head.hasPrefix("HTTP/1.1 403"))
                #expect(!head.lowercased().contains("connection: close"))
                try await outbound.write(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
                var text = ""
                while !text.contains("Ok"), let chunk = try await inbound.next() { text += String(buffer: chunk) }
                #expect(text.hasPrefix("HTTP/1.1 200"))
            }
        }
    }

    @Test func continueIsSentOnlyWhenTheBodyIsRead() async throws {
        try await app().test(.live) { client in
            let port = try #require(client.port)
            try await Self.connect(port) { inbound, outbound in
                try await outbound.write(ByteBuffer(string: "POST /read HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"))
                let interim = try await Self.readHead(&inbound)
                #expect(interim.hasPrefix("HTTP/1.1 100"))
                try await outbound.write(ByteBuffer(string: "hello"))
                var text = interim
                while !text.hasSuffix("\r\n\r\n5"), let chunk = try await inbound.next() { text += String(buffer: chunk) }
                #expect(text.contains("HTTP/1.1 200"))
                #expect(!text.lowercased().contains("connection: close"))
            }
        }
    }
}
