public import NIOCore
import HearthCore

/// gRPC's length-prefixed message framing: a 1-byte compressed flag, a 4-byte big-endian
/// length, then the message bytes. Pure (no I/O), so it is tested on its own.
public enum GRPCFraming {
    /// The largest message Hearth accepts: Firestore documents are ≤ 1 MiB and commits ≤ 500
    /// writes, so 12 MiB leaves room while bounding what one request can make the server hold.
    public static let defaultMaxMessageSize = 12 * 1024 * 1024

    /// Frames one serialized message (uncompressed).
    public static func frame(_ bytes: some Collection<UInt8>, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(UInt32(bytes.count), endianness: .big)
        buffer.writeBytes(bytes)
    }

    public static func frame(_ bytes: some Collection<UInt8>) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(5 + bytes.count)
        frame(bytes, into: &buffer)
        return buffer
    }
}

/// Splits a stream of bytes (in chunks of any size) into gRPC messages. Refuses compressed
/// messages (Hearth negotiates no compression) and messages over the size limit.
public struct GRPCMessageDeframer: Sendable {
    public let maxMessageSize: Int
    var buffer = ByteBuffer()

    public init(maxMessageSize: Int = GRPCFraming.defaultMaxMessageSize) {
        self.maxMessageSize = maxMessageSize
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: ByteBuffer) {
        var bytes = bytes
        if buffer.readableBytes == 0 {
            buffer = bytes
        } else {
            buffer.writeBuffer(&bytes)
        }
    }

    /// The next complete message, or nil when more bytes are needed. Throws as soon as a
    /// header announces a compressed or oversized message, before its bytes arrive.
    public mutating func next() throws(GRPCStatus) -> [UInt8]? {
        guard buffer.readableBytes >= 5,
              let flag = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
              let length = buffer.getInteger(at: buffer.readerIndex + 1, endianness: .big, as: UInt32.self)
        else { return nil }
        switch flag {
        case 0: break
        case 1:
            throw GRPCStatus(.unimplemented, "Compressed messages are not supported; send grpc-encoding identity.")
        default:
            throw GRPCStatus(.internal, "Invalid gRPC message: compressed flag \(flag).")
        }
        if Int(length) > maxMessageSize {
            throw GRPCStatus(
                .resourceExhausted, "Received message larger than max (\(length) vs. \(maxMessageSize))")
        }
        guard buffer.readableBytes >= 5 + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 5)
        let bytes = buffer.readBytes(length: Int(length))!
        if buffer.readableBytes == 0 { buffer.clear() } else if buffer.readerIndex > 65536 { buffer.discardReadBytes() }
        return bytes
    }

    /// Called at the end of the stream: leftover bytes are a truncated message.
    public func finish() throws(GRPCStatus) {
        if buffer.readableBytes > 0 {
            throw GRPCStatus(.internal, "The request stream ended inside a message (\(buffer.readableBytes) bytes left over).")
        }
    }
}
