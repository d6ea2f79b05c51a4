import GRPCCore

/// An RPC's streaming kind, read off the shape of a generated `SimpleServiceProtocol` requirement by overload
/// resolution: a request sequence means client streaming, a response writer means server streaming.
enum StreamingKind: Equatable {
    case unary, clientStreaming, serverStreaming, bidirectional

    init(clientStreaming: Bool, serverStreaming: Bool) {
        switch (clientStreaming, serverStreaming) {
        case (false, false): self = .unary
        case (true, false): self = .clientStreaming
        case (false, true): self = .serverStreaming
        case (true, true): self = .bidirectional
        }
    }

    var clientStreaming: Bool { self == .clientStreaming || self == .bidirectional }
    var serverStreaming: Bool { self == .serverStreaming || self == .bidirectional }

    static func of<S, I, O>(_: (S) -> (I, ServerContext) async throws -> O) -> StreamingKind {
        .unary
    }

    static func of<S, I, O>(
        _: (S) -> (RPCAsyncSequence<I, any Error>, ServerContext) async throws -> O
    ) -> StreamingKind {
        .clientStreaming
    }

    static func of<S, I, O>(_: (S) -> (I, RPCWriter<O>, ServerContext) async throws -> Void) -> StreamingKind {
        .serverStreaming
    }

    static func of<S, I, O>(
        _: (S) -> (RPCAsyncSequence<I, any Error>, RPCWriter<O>, ServerContext) async throws -> Void
    ) -> StreamingKind {
        .bidirectional
    }
}
