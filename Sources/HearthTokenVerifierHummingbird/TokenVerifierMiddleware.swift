public import Hummingbird
public import HearthTokenVerifier
import HearthCore
import NIOCore
import Foundation

/// Reads `Authorization: Bearer <ID token>`, verifies it and puts the result into the request
/// context. A missing or bad token gets a 401 with a JSON body
/// `{"error":{"code":401,"status":"UNAUTHENTICATED","message":…}}` — unless `optional` is set,
/// in which case a request without an Authorization header passes through unauthenticated
/// (a bad token is still refused).
public struct TokenVerifierMiddleware<Context: TokenVerifierRequestContext>: RouterMiddleware {
    public let verifier: TokenVerifier
    public let optional: Bool

    public init(verifier: TokenVerifier, optional: Bool = false) {
        self.verifier = verifier
        self.optional = optional
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            if optional { return try await next(request, context) }
            return Self.unauthorized("Missing Authorization header.")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return Self.unauthorized("The Authorization header is not a Bearer token.")
        }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        var context = context
        do {
            context.verifiedToken = try await verifier.verify(token)
        } catch {
            return Self.unauthorized("\(error)")
        }
        return try await next(request, context)
    }

    static func unauthorized(_ message: String) -> Response {
        let body: JSON = .object([
            ("error", .object([("code", .number(401)), ("status", .string("UNAUTHENTICATED")), ("message", .string(message))]))
        ])
        return Response(
            status: .unauthorized,
            headers: [.contentType: "application/json; charset=UTF-8", .wwwAuthenticate: "Bearer"],
            body: .init(byteBuffer: ByteBuffer(bytes: body.serializedBytes())))
    }
}
