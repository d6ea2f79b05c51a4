import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Ends a connection safely after a refusal sent before the request body arrived — a Storage
/// upload the rules deny by its declared size, S3's `EntityTooLarge` for a `Content-Length`
/// over the limit. The responder answers from the headers alone, without reading the body;
/// the client, still sending, must still get to read that answer:
///
/// 1. The refusal (a status of 400 or more written while the request body is still coming)
///    carries `Connection: close`: the client will not reuse the connection.
/// 2. What the client goes on sending is read and dropped (a *lingering close*) — closing at
///    once would make the kernel answer the unread bytes with a reset, and a client that
///    reads only after sending (most do) would lose the response to it.
/// 3. The connection closes when the body ends, or once ``lingerBytes`` more bytes or
///    ``lingerTime`` have passed, so a client declaring gigabytes cannot keep the server
///    reading them.
///
/// Sits after Hummingbird's HTTP/1 decoding, next to ``ExpectContinueHandler`` (whose
/// `.whenBodyIsRead` mode keeps a client that sent `Expect: 100-continue` from sending the
/// body at all); responses written after the whole body arrived are untouched.
final class EarlyRefusalHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How much of an abandoned body is read and dropped before the connection is closed.
    static let lingerBytes = 16 << 20
    /// How long after the refusal the connection may stay open for the body to end.
    static let lingerTime = TimeAmount.seconds(5)

    /// Where the connection is, as far as an early refusal goes.
    enum State {
        /// Between requests, or the request's body has ended.
        case idle
        /// The request's body is still arriving.
        case receiving
        /// A refusal went out (or is going out) while the body was arriving: whether the body
        /// has ended since, whether the refusal is written, and the bytes dropped since.
        case refused(bodyEnded: Bool, sent: Bool, dropped: Int)
        case closed
    }

    private var state = State.idle
    private var timer: Scheduled<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head, .idle):
            state = .receiving
        case (.body(let bytes), .refused(let ended, let sent, let dropped)):
            let total = dropped + bytes.readableBytes
            state = .refused(bodyEnded: ended, sent: sent, dropped: total)
            // Dropped here: nothing reads an abandoned body.
            if sent, total > Self.lingerBytes { close(context) }
            return
        case (.end, .receiving):
            state = .idle
        case (.end, .refused(_, let sent, let dropped)):
            state = .refused(bodyEnded: true, sent: sent, dropped: dropped)
            context.fireChannelRead(data)
            if sent { close(context) }
            return
        default:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch (unwrapOutboundIn(data), state) {
        case (.head(var response), .receiving) where response.status.code >= 400:
            state = .refused(bodyEnded: false, sent: false, dropped: 0)
            response.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case (.end, .refused):
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            written.futureResult.assumeIsolated().whenComplete { _ in self.refusalWritten(context) }
            context.write(data, promise: written)
        default:
            context.write(data, promise: promise)
        }
    }

    private func refusalWritten(_ context: ChannelHandlerContext) {
        guard case .refused(let ended, _, let dropped) = state else { return }
        if ended || dropped > Self.lingerBytes { return close(context) }
        state = .refused(bodyEnded: false, sent: true, dropped: dropped)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingerTime) { self.close(context) }
    }

    private func close(_ context: ChannelHandlerContext) {
        if case .closed = state { return }
        state = .closed
        timer?.cancel()
        timer = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        state = .closed
        context.fireChannelInactive()
    }
}
