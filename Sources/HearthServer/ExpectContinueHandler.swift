import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers `Expect: 100-continue` so clients that wait for it before sending a body (the AWS
/// SDKs do, for a second, on every upload) send at once. Sits after Hummingbird's HTTP/1
/// decoding, before the request is handled. Two modes:
///
/// - ``Mode/immediately``: `100 Continue` as soon as the request head arrives (the `Expect`
///   header is removed; the responder never sees it).
/// - ``Mode/whenBodyIsRead`` (the object ports): `100 Continue` only once the responder starts
///   reading the body (``ObjectRequestContext`` sends ``SendContinue`` on the first read). A
///   responder that refuses from the headers alone — a rules denial by declared size,
///   `EntityTooLarge`, a bad signature — answers with its final status instead, and the client
///   never sends the body (RFC 9110 §10.1.1), which ``EarlyRefusalHandler`` then does not wait for.
final class ExpectContinueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    enum Mode: Sendable {
        case immediately
        case whenBodyIsRead
    }

    /// The user outbound event that sends the pending `100 Continue` (if any).
    struct SendContinue: Sendable {}

    let mode: Mode
    /// A `100 Continue` is owed to the current request.
    private var pending = false

    init(_ mode: Mode = .immediately) {
        self.mode = mode
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(var head) = unwrapInboundIn(data) {
            pending = false
            if let expect = head.headerFields[.expect], expect.lowercased() == "100-continue" {
                switch mode {
                case .immediately:
                    head.headerFields[.expect] = nil
                    context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
                    context.fireChannelRead(wrapInboundOut(.head(head)))
                    return
                case .whenBodyIsRead:
                    pending = true
                }
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // A final answer replaces the interim one: the client will not send the body.
        if pending, case .head(let response) = unwrapOutboundIn(data), response.status.code >= 200 { pending = false }
        context.write(data, promise: promise)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is SendContinue else { return context.triggerUserOutboundEvent(event, promise: promise) }
        if pending {
            pending = false
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
        }
        promise?.succeed()
    }
}
