public import Hummingbird
import Logging

/// The Firestore port: gRPC (`content-type: application/grpc…`, over HTTP/2) goes to the gRPC
/// service, everything else to the REST API.
public struct FirestoreResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    let rest: FirestoreRESTResponder
    let grpc: GRPCResponder

    public init(rest: FirestoreRESTResponder, grpc: GRPCResponder) {
        self.rest = rest
        self.grpc = grpc
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        if GRPCResponder.isGRPC(request) { return grpc.respond(to: request) }
        return try await rest.respond(to: request, context: context)
    }
}
