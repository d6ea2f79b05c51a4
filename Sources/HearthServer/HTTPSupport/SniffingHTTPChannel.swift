public import HummingbirdCore
public import Logging
public import NIOCore

/// One port, two protocols: reads the first bytes of a connection and sets up HTTP/2 (prior
/// knowledge, "h2c", as gRPC clients and the Firebase SDKs talk to an emulator host; see
/// ``H2CChannel``) when they are the HTTP/2 connection preface, Hummingbird's `HTTP1Channel`
/// otherwise. Both reach the same responder.
///
/// The bytes read while deciding are handed to the chosen protocol's handlers unchanged. A
/// connection that sends nothing conclusive within `decisionTimeout` is closed; one that
/// closes (or half-closes) before a decision fails its setup (Hummingbird drops it), and so does
/// an undecided one when the server shuts down, so nothing is left behind.
public struct SniffingHTTPChannel: ServerChildChannel {
    /// The chosen protocol's channel value.
    public enum Negotiated: Sendable {
        case http1(HTTP1Channel.Value)
        case http2(H2CChannel.Value)
    }

    /// NIO registers a child channel (and starts reading it) only once `setup` has returned, so
    /// the value carries the decision as a future that `handle` waits for.
    public struct Value: ServerChildChannelValue {
        public let channel: any Channel
        public let negotiated: EventLoopFuture<Negotiated>
    }

    /// Which protocol a connection speaks.
    public enum Choice: Sendable, Equatable {
        case http1
        case http2
    }

    /// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (RFC 9113 §3.4).
    public static let http2Preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    let http1: HTTP1Channel
    let http2: H2CChannel
    let decisionTimeout: TimeAmount

    public init(
        responder: @escaping HTTPChannelHandler.Responder, http1: HTTP1Channel.Configuration = .init(),
        decisionTimeout: TimeAmount = .seconds(30), forwarded: ForwardedPolicy? = nil
    ) {
        self.http1 = HTTP1Channel(responder: responder, configuration: http1)
        self.http2 = H2CChannel(responder: responder, forwarded: forwarded)
        self.decisionTimeout = decisionTimeout
    }

    /// The decision for the bytes seen so far: nil while they are still a prefix of the preface.
    public static func choose(_ bytes: some Collection<UInt8>) -> Choice? {
        for (seen, expected) in zip(bytes, http2Preface) where seen != expected { return .http1 }
        return bytes.count >= http2Preface.count ? .http2 : nil
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let promise = channel.eventLoop.makePromise(of: Negotiated.self)
            let configure: (Choice) -> EventLoopFuture<Negotiated> = { choice in
                switch choice {
                case .http1: self.http1.setup(channel: channel, logger: logger).map { Negotiated.http1($0) }
                case .http2: self.http2.setup(channel: channel, logger: logger).map { Negotiated.http2($0) }
                }
            }
            do {
                try channel.pipeline.syncOperations.addHandler(
                    ProtocolSniffingHandler(promise: promise, timeout: decisionTimeout, configure: configure))
            } catch {
                promise.fail(error)
                throw error
            }
            return Value(channel: channel, negotiated: promise.futureResult)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        let negotiated: Negotiated
        do {
            negotiated = try await value.negotiated.get()
        } catch {
            logger.debug("connection closed before its protocol was known", metadata: ["reason": "\(error)"])
            return
        }
        switch negotiated {
        case .http1(let v): await http1.handle(value: v, logger: logger)
        case .http2(let v): await http2.handle(value: v, logger: logger)
        }
    }
}

/// Why a connection was dropped before its protocol was known.
struct ProtocolSniffingError: Error, CustomStringConvertible {
    var description: String { reason }
    let reason: String
}

/// Buffers the first bytes until ``SniffingHTTPChannel/choose(_:)`` decides, installs the
/// chosen protocol's handlers behind itself, replays the bytes into them and leaves the pipeline.
final class ProtocolSniffingHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let promise: EventLoopPromise<SniffingHTTPChannel.Negotiated>
    private let timeout: TimeAmount
    private let configure: (SniffingHTTPChannel.Choice) -> EventLoopFuture<SniffingHTTPChannel.Negotiated>
    private var buffered: ByteBuffer?
    private var decided = false
    private var timer: Scheduled<Void>?

    init(
        promise: EventLoopPromise<SniffingHTTPChannel.Negotiated>, timeout: TimeAmount,
        configure: @escaping (SniffingHTTPChannel.Choice) -> EventLoopFuture<SniffingHTTPChannel.Negotiated>
    ) {
        self.promise = promise
        self.timeout = timeout
        self.configure = configure
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loop = context.eventLoop.assumeIsolated()
        timer = loop.scheduleTask(in: timeout) { [self] in
            guard !decided else { return }
            giveUp(context, "no request within \(timeout)")
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        if !decided {
            decided = true
            promise.fail(ProtocolSniffingError(reason: "removed before a protocol was chosen"))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        if buffered == nil {
            buffered = incoming
        } else {
            buffered!.writeBuffer(&incoming)
        }
        guard let choice = SniffingHTTPChannel.choose(buffered!.readableBytesView) else { return }
        decided = true
        timer?.cancel()
        timer = nil
        // The setups are synchronous (completed futures), so this runs before the next read.
        configure(choice).assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success(let value):
                // The protocol's handlers now sit behind this one: hand them what was read, then leave.
                let bytes = buffered!
                buffered = nil
                context.fireChannelRead(wrapInboundOut(bytes))
                context.fireChannelReadComplete()
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                promise.succeed(value)
            case .failure(let error):
                buffered = nil
                promise.fail(error)
                context.close(promise: nil)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if decided { context.fireChannelReadComplete() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided {
            decided = true
            timer?.cancel()
            timer = nil
            buffered = nil
            promise.fail(ProtocolSniffingError(reason: "connection closed before a protocol was chosen"))
        }
        context.fireChannelInactive()
    }

    /// Before a decision nothing behind this handler answers events, so two of them are its own:
    /// the client's half-close (the server allows them, so a FIN is an event, not an inactive
    /// channel) — no request can follow, and waiting out the decision timeout would hold the
    /// socket in CLOSE-WAIT and keep a graceful shutdown waiting; and the server's quiescing (a
    /// graceful shutdown), for a connection with no request in progress.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !decided {
            if let event = event as? ChannelEvent, event == .inputClosed {
                giveUp(context, "the client closed its side before a request")
                return
            }
            if event is ChannelShouldQuiesceEvent {
                giveUp(context, "the server is shutting down")
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !decided {
            giveUp(context, "\(error)")
            return
        }
        context.fireErrorCaught(error)
    }

    private func giveUp(_ context: ChannelHandlerContext, _ reason: String) {
        decided = true
        timer?.cancel()
        timer = nil
        buffered = nil
        promise.fail(ProtocolSniffingError(reason: reason))
        context.close(promise: nil)
    }
}
