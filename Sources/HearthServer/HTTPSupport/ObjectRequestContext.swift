public import Hummingbird
import NIOCore

/// The request context of the object ports (Storage, S3): Hummingbird's basic context plus the
/// connection, so a request with `Expect: 100-continue` asks the client for its body only when
/// the responder reads it (see ``ExpectContinueHandler/Mode/whenBodyIsRead``).
public struct ObjectRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The request, with a body that sends the owed `100 Continue` on its first read when the
    /// client sent `Expect: 100-continue`; otherwise the request as it is.
    func continuingOnRead(_ request: Request) -> Request {
        guard let expect = request.headers[.expect], expect.lowercased() == "100-continue" else { return request }
        var request = request
        request.body = RequestBody(asyncSequence: ContinueOnFirstRead(base: request.body, channel: channel))
        return request
    }
}

/// A request body that sends ``ExpectContinueHandler/SendContinue`` down the pipeline before
/// its first read (the handler writes `100 Continue` if it is still owed).
struct ContinueOnFirstRead: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: RequestBody
    let channel: any Channel

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let channel: any Channel
        var asked = false

        mutating func next() async throws -> ByteBuffer? {
            if !asked {
                asked = true
                channel.triggerUserOutboundEvent(ExpectContinueHandler.SendContinue(), promise: nil)
            }
            return try await base.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), channel: channel) }
}
