public import HummingbirdCore
public import Logging
public import NIOCore
import NIOSSL

/// Any of Hearth's child channels behind TLS: the connection gets the context in force when
/// it is accepted (``TLSContexts``), then the base channel's handlers run on the decrypted
/// bytes — so the Firestore port's sniffing of HTTP/2 versus HTTP/1.1 works unchanged over
/// TLS, where ALPN has already told the client which one to speak.
public struct TLSServerChannel<Base: ServerChildChannel>: ServerChildChannel {
    public typealias Value = Base.Value

    let base: Base
    let contexts: TLSContexts
    let offer: TLSContexts.Offer

    public init(_ base: Base, contexts: TLSContexts, offer: TLSContexts.Offer) {
        self.base = base
        self.contexts = contexts
        self.offer = offer
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(PlaintextOnTLSPortHandler())
            try sync.addHandler(NIOSSLServerHandler(context: contexts.context(offer)))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// Refuses a connection that speaks plain HTTP to a TLS port with a readable answer — `400`
/// saying to use https — instead of a TLS alert the client cannot show, then closes it. A
/// connection whose first byte starts a TLS handshake record (0x16) passes untouched.
final class PlaintextOnTLSPortHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    static let handshakeRecord: UInt8 = 0x16
    static let answer: String = {
        let body = "This port speaks TLS: use https:// (or a TLS-enabled client) to reach it.\n"
        return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n" + body
    }()

    /// Whether a connection's first byte is a TLS handshake's.
    static func isTLS(firstByte: UInt8) -> Bool { firstByte == handshakeRecord }

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }  // the rest of a refused request: dropped
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.readableBytesView.first else { return }
        if Self.isTLS(firstByte: first) {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        // Plain text before the handshake: answer in plain text (this handler sits in front of
        // TLS), end our side so the answer is not lost to a reset, and close in any case soon after.
        refused = true
        let answer = context.channel.allocator.buffer(string: Self.answer)
        let loop = context.eventLoop.assumeIsolated()
        context.writeAndFlush(NIOAny(answer)).assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
        }
        _ = loop.scheduleTask(in: .seconds(2)) { context.close(promise: nil) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !refused { context.fireChannelReadComplete() }
    }
}
