public import HummingbirdCore
public import Logging
public import NIOCore

/// Hummingbird's `HTTP1Channel` with reads of up to ``maximumRead`` bytes instead of NIO's
/// default 64 KiB, for the ports that carry object bytes (Storage and S3).
///
/// A 100 MiB upload read 64 KiB at a time is 1,600 trips through the parser, the request body
/// stream and the upload task — each a thread wakeup that can preempt the upload's MD5
/// thread; at 256 KiB it is 400. NIO's adaptive allocator only grows a connection's buffer
/// after reads that filled it, and shrinks it again, so small-request connections keep small
/// buffers; a connection holds at most one buffer of this size.
public struct BulkReadHTTP1Channel: ServerChildChannel {
    public typealias Value = HTTP1Channel.Value

    public static let maximumRead = 256 * 1024

    let http1: HTTP1Channel

    public init(responder: @escaping HTTPChannelHandler.Responder, configuration: HTTP1Channel.Configuration = .init()) {
        http1 = HTTP1Channel(responder: responder, configuration: configuration)
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.setOption(
            ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: Self.maximumRead)
        ).flatMap {
            self.http1.setup(channel: channel, logger: logger)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}
