import HearthCore
import Synchronization
public import HTTPTypes
import Hummingbird
import NIOCore
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
        /// End the call with this status now, and say when the trailers are written.
        case finish(GRPCStatus, GRPCFinishAck)
    }

    let continuation: AsyncStream<Event>.Continuation
    /// Messages handed over but not yet written to the connection.
    let window: GRPCSendWindow

    public func send(_ message: some SwiftProtobuf.Message) throws {
        try Task.checkCancellation()
        let bytes: [UInt8] = try message.serializedBytes()
        window.taken()
        continuation.yield(.message(GRPCFraming.frame(bytes)))
    }

    /// Ends the call with `status` before the handler returns, and waits until the status has
    /// been written (or the call is over): a bidirectional handler whose own tasks still read
    /// the request stream reports its outcome first, then tears them down.
    public func finish(_ status: GRPCStatus) async {
        let ack = GRPCFinishAck()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                ack.set(c)
                if case .terminated = continuation.yield(.finish(status, ack)) { ack.done() }
            }
        } onCancel: {
            ack.done()
        }
    }

    /// Sends a message once fewer than the window's limit are waiting to be written: a
    /// long-lived stream (Listen) whose client stops reading waits here instead of making the
    /// server buffer without bound.
    public func sendPaced(_ message: some SwiftProtobuf.Message) async throws {
        try await window.waitForRoom()
        try send(message)
    }
}

/// Resumes a waiting ``GRPCMessageSender/finish(_:)`` once.
final class GRPCFinishAck: Sendable {
    struct State {
        var continuation: CheckedContinuation<Void, Never>?
        var done = false
    }

    let state = Mutex(State())

    func set(_ c: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { s -> Bool in
            if s.done { return true }
            s.continuation = c
            return false
        }
        if resumeNow { c.resume() }
    }

    func done() {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.done = true
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume()
    }
}

/// Counts a call's messages between the handler and the connection writer (HTTP/2 flow control
/// holds the writer back when the client does not read).
final class GRPCSendWindow: Sendable {
    struct State {
        var outstanding = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    let limit: Int
    let state = Mutex(State())

    init(limit: Int = 64) {
        self.limit = limit
    }

    func taken() {
        state.withLock { $0.outstanding += 1 }
    }

    /// One message was written (or dropped because the call ended).
    func written() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.outstanding -= 1
            return s.outstanding < limit && !s.waiters.isEmpty ? s.waiters.removeFirst() : nil
        }
        waiter?.resume()
    }

    /// Wakes every waiter (the call is over).
    func close() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.outstanding = Int.min / 2
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    func waitForRoom() async throws {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.outstanding < limit { return true }
                s.waiters.append(c)
                return false
            }
            if ready { c.resume() }
        }
        try Task.checkCancellation()
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
