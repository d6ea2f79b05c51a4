import HearthCore
import HearthServer
import HearthFirestoreProto
import HTTPTypes
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2
import NIOPosix
import SwiftProtobuf

/// A minimal gRPC client for `hearth bench`: unary calls over HTTP/2 with prior knowledge (h2c),
/// each on its own stream of a few shared connections, as grpcio multiplexes them. Framing comes
/// from HearthServer's ``GRPCFraming`` (the one place the wire format lives).
struct GRPCBenchClient: Sendable {
    typealias Multiplexer = NIOHTTP2Handler.AsyncStreamMultiplexer<Void>

    let connections: [Multiplexer]
    let channels: [any Channel]
    let authorization: String

    static func connect(port: Int, connections: Int, authorization: String = "Bearer owner") async throws -> GRPCBenchClient {
        var muxes: [Multiplexer] = []
        var channels: [any Channel] = []
        for _ in 0..<max(1, connections) {
            let (channel, mux) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let mux = try channel.pipeline.syncOperations.configureAsyncHTTP2Pipeline(mode: .client) { stream in
                            stream.eventLoop.makeSucceededVoidFuture()
                        }
                        return (channel, mux)
                    }
                }
            muxes.append(mux)
            channels.append(channel)
        }
        return GRPCBenchClient(connections: muxes, channels: channels, authorization: authorization)
    }

    func close() async {
        for c in channels { try? await c.close() }
    }

    struct CallError: Error, CustomStringConvertible {
        let status: String
        let message: String
        var description: String { "gRPC status \(status): \(message)" }
    }

    /// A new HTTP/2 stream on connection `i % connections`.
    func openStream(on i: Int) async throws -> NIOAsyncChannel<HTTPResponsePart, HTTPRequestPart> {
        let mux = connections[abs(i) % connections.count]
        return try await mux.openStream { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTPClientCodec())
                return try NIOAsyncChannel<HTTPResponsePart, HTTPRequestPart>(wrappingChannelSynchronously: channel)
            }
        }
    }

    /// The request head of a call to Firestore's `method`.
    func requestHead(_ method: String) -> HTTPRequest {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1", path: "/google.firestore.v1.Firestore/\(method)")
        head.headerFields[.contentType] = "application/grpc"
        head.headerFields[.te] = "trailers"
        head.headerFields[.authorization] = authorization
        return head
    }

    /// One unary call on connection `i % connections`.
    func unary<Response: SwiftProtobuf.Message>(
        _ method: String, _ request: some SwiftProtobuf.Message, as: Response.Type, on i: Int
    ) async throws -> Response {
        let stream = try await openStream(on: i)
        let payload = GRPCFraming.frame(try request.serializedBytes() as [UInt8])
        let head = requestHead(method)
        return try await stream.executeThenClose { inbound, outbound in
            try await outbound.write(.head(head))
            try await outbound.write(.body(payload))
            try await outbound.write(.end(nil))
            var deframer = GRPCMessageDeframer()
            var message: [UInt8]?
            var status = "missing", text = ""
            for try await part in inbound {
                switch part {
                case .head(let response):
                    if let s = response.headerFields[GRPCStatus.statusName] { status = s }  // trailers-only
                case .body(let bytes):
                    deframer.append(bytes)
                    if message == nil { message = try deframer.next() }
                case .end(let trailers):
                    if let s = trailers?[GRPCStatus.statusName] { status = s }
                    text = trailers?[GRPCStatus.messageName].map(GRPCStatus.percentDecode) ?? ""
                }
            }
            guard status == "0", let message else { throw CallError(status: status, message: text) }
            return try Response(serializedBytes: message)
        }
    }
}

extension GRPCBenchClient {
    /// An open Listen call: its request side stays open until ``close()``.
    struct ListenCall: Sendable {
        let finish: @Sendable () async -> Void
        let done: Task<Void, Never>

        func close() async {
            await finish()
            _ = await done.value
        }
    }

    /// Opens `Listen` on connection `i % connections`, sends `request`, and hands every
    /// response to `onResponse` until the call ends or ``ListenCall/close()``.
    func listen(
        _ request: Google_Firestore_V1_ListenRequest, on i: Int,
        onResponse: @escaping @Sendable (Google_Firestore_V1_ListenResponse) -> Void
    ) async throws -> ListenCall {
        let stream = try await openStream(on: i)
        let head = requestHead("Listen")
        let payload = GRPCFraming.frame(try request.serializedBytes() as [UInt8])
        let (closing, closer) = AsyncStream.makeStream(of: Void.self)
        let done = Task<Void, Never> {
            _ = try? await stream.executeThenClose { inbound, outbound in
                try await outbound.write(.head(head))
                try await outbound.write(.body(payload))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await _ in closing { break }
                        try await outbound.write(.end(nil))
                    }
                    var deframer = GRPCMessageDeframer()
                    for try await part in inbound {
                        guard case .body(let bytes) = part else { continue }
                        deframer.append(bytes)
                        while let m = try deframer.next() {
                            onResponse(try Google_Firestore_V1_ListenResponse(serializedBytes: m))
                        }
                    }
                    group.cancelAll()
                }
            }
        }
        return ListenCall(finish: { closer.yield(()); closer.finish() }, done: done)
    }
}
