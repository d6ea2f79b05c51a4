public import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP2
public import NIOHTTPTypes
import NIOHTTPTypesHTTP2

/// HTTP/2 over a plain connection (h2c, prior knowledge), each stream handled like one
/// HTTP/1.1 exchange by Hummingbird's own `handleHTTP`.
///
/// Why not `HummingbirdHTTP2.HTTP2Channel`: it builds NIOHTTP2's handler with the default
/// configuration, whose denial-of-service heuristics close a connection after 200 PING or
/// SETTINGS frames within 30 s. gRPC clients send a BDP ping for bursts of received data, so a
/// busy grpcio channel (e.g. 8 threads running transactions) is reset within seconds — mid-call,
/// after the server may have committed. Here that limit is raised (`controlFramesPer30s`) while
/// the other protections stay as NIOHTTP2 sets them.
public struct H2CChannel: ServerChildChannel {
    public struct Value: ServerChildChannelValue {
        let multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<H2CStreamChannel.Value>
        public let channel: any Channel
    }

    let streams: H2CStreamChannel
    let configuration: NIOHTTP2Handler.Configuration

    /// `forwarded`: the rules ``ForwardedHeadersHandler`` applies to each stream's request (none: headers pass as sent).
    public init(responder: @escaping HTTPChannelHandler.Responder, controlFramesPer30s: Int = 20_000, forwarded: ForwardedPolicy? = nil) {
        streams = H2CStreamChannel(responder: responder, forwarded: forwarded)
        var configuration = NIOHTTP2Handler.Configuration()
        configuration.connection.controlFrameRateLimit.maximumCount = controlFramesPer30s
        // grpcio cancels (RST_STREAM) a server-streaming call the client stops reading — the
        // high-level Firestore client does so for every `get()` (BatchGetDocuments) — so a
        // busy channel sends one reset per transaction: allow as many as control frames.
        configuration.stream.streamResetFrameRateLimit.maximumCount = controlFramesPer30s
        self.configuration = configuration
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let multiplexer = try channel.pipeline.syncOperations.configureAsyncHTTP2Pipeline(
                mode: .server, configuration: configuration
            ) { stream in
                streams.setup(channel: stream, logger: logger)
            }
            try channel.pipeline.syncOperations.addHandler(H2CQuiesceHandler())
            return Value(multiplexer: multiplexer, channel: channel)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        do {
            try await withThrowingDiscardingTaskGroup { group in
                for try await stream in value.multiplexer.inbound {
                    group.addTask { await streams.handle(value: stream, logger: logger) }
                }
            }
        } catch {
            logger.debug("HTTP/2 connection ended", metadata: ["error": "\(error)"])
        }
    }
}

/// One HTTP/2 stream as an exchange of HTTP request and response parts.
public struct H2CStreamChannel: HTTPChannelHandler {
    public typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
    public let responder: HTTPChannelHandler.Responder
    let forwarded: ForwardedPolicy?

    public init(responder: @escaping HTTPChannelHandler.Responder, forwarded: ForwardedPolicy? = nil) {
        self.responder = responder
        self.forwarded = forwarded
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTPServerCodec())
            if let forwarded { try channel.pipeline.syncOperations.addHandler(ForwardedHeadersHandler(policy: forwarded)) }
            return try Value(wrappingChannelSynchronously: channel)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

/// On graceful shutdown (HTTP/2 has no per-request `Connection: close`), closes the connection
/// after a grace period in which calls in flight can finish.
final class H2CQuiesceHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            let loop = context.eventLoop.assumeIsolated()
            loop.scheduleTask(in: .seconds(5)) { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
