import CoreMetrics
import HearthCore
import HTTPTypes
public import Hummingbird
public import Logging
import NIOCore

/// gRPC over Hummingbird's HTTP/2 (no gRPC server library): `POST /<service>/<method>` with
/// length-prefixed messages both ways, `content-type: application/grpc`, and the status in the
/// trailers. The handler runs in a child task and hands its messages to the task that owns the
/// response, so requests are read while responses are written (full duplex), messages go out as
/// they are produced, and a `grpc-timeout` ends the call with DEADLINE_EXCEEDED on time.
public struct GRPCResponder: Sendable {
    public let service: String
    public let methods: [String: GRPCHandler]
    public let maxMessageSize: Int
    let logger: Logger

    public init(service: String, methods: [String: GRPCHandler], maxMessageSize: Int = GRPCFraming.defaultMaxMessageSize, logger: Logger) {
        self.service = service
        self.methods = methods
        self.maxMessageSize = maxMessageSize
        self.logger = logger
    }

    static let grpcContentType = "application/grpc"
    static let timeoutName = HTTPField.Name("grpc-timeout")!
    static let acceptEncodingName = HTTPField.Name("grpc-accept-encoding")!

    /// Whether a request is gRPC (its content type is `application/grpc` or `application/grpc+…`).
    public static func isGRPC(_ request: Request) -> Bool {
        guard let type = request.headers[.contentType] else { return false }
        return type.lowercased().hasPrefix(grpcContentType)
    }

    public func respond(to request: Request) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = Self.grpcContentType
        headers[Self.acceptEncodingName] = "identity"
        let path = request.uri.path
        let methodName = path.hasPrefix("/\(service)/") ? String(path.dropFirst(service.count + 2)) : nil
        let (handler, refusal) = route(request, methodName)
        let timeout = request.headers[Self.timeoutName].flatMap(GRPCStatus.parseTimeout)
        let call = GRPCCall(method: methodName ?? path, metadata: request.headers)
        let body = request.body
        let maxMessageSize = maxMessageSize
        let logger = logger
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                guard let handler else {
                    try await writer.finish(refusal!.trailers)
                    return
                }
                let (events, continuation) = AsyncStream.makeStream(of: GRPCMessageSender.Event.self)
                let window = GRPCSendWindow()
                let sender = GRPCMessageSender(continuation: continuation, window: window)
                await withTaskGroup(of: Child.self) { group in
                    group.addTask {
                        var reader = GRPCMessageReader(body: body, maxMessageSize: maxMessageSize)
                        let status = await Self.run(handler, call, &reader, sender, logger)
                        continuation.yield(.end(status))
                        continuation.finish()
                        return .handler
                    }
                    if let timeout {
                        group.addTask {
                            do {
                                try await Task.sleep(for: timeout)
                                continuation.yield(.end(GRPCStatus(.deadlineExceeded, "Deadline Exceeded")))
                                continuation.finish()
                            } catch {}
                            return .deadline
                        }
                    }
                    var status = GRPCStatus(.internal, "The call ended without a status.")
                    var ack: GRPCFinishAck?
                    loop: for await event in events {
                        switch event {
                        case .message(let buffer):
                            do {
                                try await writer.write(buffer)
                                window.written()
                            } catch {
                                status = GRPCStatus(.cancelled, "The client went away.")
                                break loop
                            }
                        case .end(let s):
                            status = s
                            break loop
                        case .finish(let s, let a):
                            status = s
                            ack = a
                            break loop
                        }
                    }
                    // A handler waiting for room to send must not hold the call open.
                    window.close()
                    continuation.finish()
                    // The status goes out before the handler's tasks are cancelled: cancelling
                    // the read of a request stream the client is still sending closes the
                    // HTTP/2 stream, and the client would see that instead of the status.
                    try? await writer.finish(status.trailers)
                    // gRPC answers 200 whatever happened: its status by method (docs/production.md).
                    Counter(label: "hearth_grpc_requests_total", dimensions: [("method", call.method), ("code", status.code.statusName)])
                        .increment()
                    if let ack {
                        // The handler ended the call itself and is winding down its own reads
                        // of the request stream: let it, then stop the deadline timer.
                        ack.done()
                        while let child = await group.next(), child != .handler {}
                    }
                    group.cancelAll()
                }
            })
    }

    enum Child: Sendable {
        case handler, deadline
    }

    /// The handler for a request, or the status that refuses it.
    func route(_ request: Request, _ methodName: String?) -> (GRPCHandler?, GRPCStatus?) {
        if request.method != .post { return (nil, GRPCStatus(.unimplemented, "gRPC requests must be POST.")) }
        if let methodName, let handler = methods[methodName] { return (handler, nil) }
        return (nil, GRPCStatus(.unimplemented, "Method not found: \(request.uri.path)"))
    }

    /// Runs a handler and turns how it ended into a status.
    static func run(_ handler: GRPCHandler, _ call: GRPCCall, _ reader: inout GRPCMessageReader, _ sender: GRPCMessageSender, _ logger: Logger) async -> GRPCStatus {
        do {
            try await handler(call, &reader, sender)
            return .ok
        } catch let s as GRPCStatus {
            logger.debug("gRPC call failed", metadata: ["method": "\(call.method)", "status": "\(s)"])
            return s
        } catch let e as HearthError {
            if e.code.httpStatus >= 500 {
                logger.error("gRPC call failed", metadata: ["method": "\(call.method)", "error": "\(e)", "cause": "\(e.cause.map { "\($0)" } ?? "-")"])
            } else {
                logger.debug("gRPC call rejected", metadata: ["method": "\(call.method)", "error": "\(e)"])
            }
            return GRPCStatus(e)
        } catch is CancellationError {
            return GRPCStatus(.cancelled, "The call was cancelled.")
        } catch {
            logger.error("gRPC call failed", metadata: ["method": "\(call.method)", "error": "\(error)"])
            return GRPCStatus(.internal, "Internal error.")
        }
    }
}
