import HearthCore
public import HTTPTypes
public import Hummingbird
public import NIOCore
public import SwiftProtobuf

/// What a gRPC method handler knows about its call: the request metadata and the method name.
public struct GRPCCall: Sendable {
    public var method: String
    public var metadata: HTTPFields

    public init(method: String, metadata: HTTPFields) {
        self.method = method
        self.metadata = metadata
    }

    /// The value of one metadata key (lower-case ASCII), if present.
    public subscript(_ key: String) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        return metadata[name]
    }
}

/// The request messages of one call, decoded from the request body as they arrive.
public struct GRPCMessageReader {
    var body: RequestBody.AsyncIterator
    var deframer: GRPCMessageDeframer
    var ended = false

    init(body: RequestBody, maxMessageSize: Int) {
        self.body = body.makeAsyncIterator()
        self.deframer = GRPCMessageDeframer(maxMessageSize: maxMessageSize)
    }

    /// The next message, or nil when the client half-closed the stream. Malformed protobuf is
    /// INVALID_ARGUMENT; compressed or oversized frames and truncated streams end the call too.
    public mutating func next<M: SwiftProtobuf.Message>(_ type: M.Type) async throws -> M? {
        while true {
            if let bytes = try deframer.next() {
                do {
                    return try M(serializedBytes: bytes)
                } catch {
                    throw GRPCStatus(.invalidArgument, "Invalid request message: the bytes are not a valid \(M.protoMessageName).")
                }
            }
            if ended {
                try deframer.finish()
                return nil
            }
            if let chunk = try await body.next() {
                deframer.append(chunk)
            } else {
                ended = true
            }
        }
    }

    /// The one request message of a unary or server-streaming call.
    public mutating func single<M: SwiftProtobuf.Message>(_ type: M.Type) async throws -> M {
        guard let message = try await next(type) else {
            throw GRPCStatus(.invalidArgument, "Expected one request message, received none.")
        }
        if try await next(type) != nil {
            throw GRPCStatus(.invalidArgument, "Expected one request message, received more.")
        }
        return message
    }
}

/// Sends the response messages of one call; each is written to the connection as it is sent.
public struct GRPCMessageSender: Sendable {
    enum Event: Sendable {
        case message(ByteBuffer)
        case end(GRPCStatus)
    }

    let continuation: AsyncStream<Event>.Continuation

    public func send(_ message: some SwiftProtobuf.Message) throws {
        try Task.checkCancellation()
        let bytes: [UInt8] = try message.serializedBytes()
        continuation.yield(.message(GRPCFraming.frame(bytes)))
    }
}

/// A method's implementation: reads requests from the reader, sends responses with the sender,
/// returns normally for OK or throws (a ``GRPCStatus``, a `HearthError`, anything else → INTERNAL).
public typealias GRPCHandler = @Sendable (GRPCCall, inout GRPCMessageReader, GRPCMessageSender) async throws -> Void

/// Builders for the three shapes of method Firestore has.
public enum GRPCMethod {
    public static func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ body: @escaping @Sendable (Request, GRPCCall) async throws -> Response
    ) -> GRPCHandler {
        { call, reader, sender in
            let request = try await reader.single(Request.self)
            try sender.send(try await body(request, call))
        }
    }

    public static func serverStreaming<Request: SwiftProtobuf.Message>(
        _ body: @escaping @Sendable (Request, GRPCCall, GRPCMessageSender) async throws -> Void
    ) -> GRPCHandler {
        { call, reader, sender in
            let request = try await reader.single(Request.self)
            try await body(request, call, sender)
        }
    }
}
