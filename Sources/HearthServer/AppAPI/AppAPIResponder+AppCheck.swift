import HearthCore
import HearthAppCheck
import Hummingbird
import NIOCore

/// App Check on the api port, shaped like `firebaseappcheck.googleapis.com`:
///
/// - `GET /v1/jwks` (and `/v1beta/jwks`): the keys that sign App Check tokens.
/// - `POST /v1/projects/{project}/apps/{appId}:exchangeDebugToken` — body `{"debugToken"|"debug_token",
///   "limitedUse"|"limited_use"}` → `{"token","ttl":"3600s"}`.
/// - `POST /v1/projects/{project}/apps/{appId}:exchangeCustomToken` — admin credential (a
///   service account's access token, as Google requires OAuth), body `{"customToken","limitedUse"}`.
/// - `POST /v1beta/projects/{project}:verifyAppCheckToken` — admin credential, body
///   `{"app_check_token"|"appCheckToken"}` → `{"alreadyConsumed": bool}` (replay protection).
///
/// `{project}` is the project id or number. Errors are Google's `{"error":{"code","message","status"}}`.
extension AppAPIResponder {
    func appCheckResponse(_ request: Request) async -> Response {
        do {
            return try await appCheckRoute(request)
        } catch let error as AppCheckError {
            let code: ErrorCode =
                switch error.reason {
                case .unknownApp: .notFound
                case .invalidAppID, .invalidArgument: .invalidArgument
                case .debugTokenRejected, .customTokenRejected, .invalidToken: .permissionDenied
                }
            return HTTPSupport.googleError(HearthError(code, error.message))
        } catch let error as HearthError {
            if error.code.httpStatus >= 500 { logger.error("app check request failed", metadata: ["error": "\(error)"]) }
            return HTTPSupport.googleError(error.code.httpStatus >= 500 ? HearthError(.internal, "Internal error.") : error)
        } catch {
            logger.error("app check request failed", metadata: ["error": "\(error)"])
            return HTTPSupport.googleError(HearthError(.internal, "Internal error."))
        }
    }

    func appCheckRoute(_ request: Request) async throws -> Response {
        guard let path = HTTPSupport.percentDecode(request.uri.path) else {
            throw HearthError.invalidArgument("Invalid percent-encoding in the request path.")
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard segments.count >= 2, ["v1", "v1beta"].contains(segments[0]) else { throw HearthError.notFound("Not found.") }
        if segments.count == 2, segments[1] == "jwks" {
            guard request.method == .get else { throw HearthError(.unimplemented, "Method not allowed.") }
            var response = HTTPSupport.json(appCheck.keyRing.jwks())
            response.headers[.cacheControl] = "public, max-age=\(min(appCheck.keyRing.cacheMaxAge, 21600))"
            return response
        }
        guard request.method == .post else { throw HearthError.notFound("Not found.") }
        let rest = Array(segments.dropFirst())
        if rest.count == 2, rest[0] == "projects", rest[1].hasSuffix(":verifyAppCheckToken") {
            let projectAndMethod = rest[1]
            try checkProject(String(projectAndMethod.dropLast(":verifyAppCheckToken".count)))
            try await requireAdmin(request)
            var request = request
            let body = try await googleBody(&request)
            guard let token = try Self.string(body, "app_check_token", "appCheckToken"), !token.isEmpty else {
                throw AppCheckError(.invalidArgument, "app_check_token is required.")
            }
            let alreadyConsumed = try await appCheck.consume(token)
            return HTTPSupport.json(.object([("alreadyConsumed", .bool(alreadyConsumed))]))
        }
        if rest.count == 4, rest[0] == "projects", rest[2] == "apps" {
            let appAndMethod = rest[3]
            try checkProject(rest[1])
            guard let colon = appAndMethod.lastIndex(of: ":") else { throw HearthError.notFound("Not found.") }
            let appID = String(appAndMethod[..<colon])
            let method = appAndMethod[appAndMethod.index(after: colon)...]
            var request = request
            let issued: AppCheckEngine.IssuedToken
            switch method {
            case "exchangeDebugToken":
                let body = try await googleBody(&request)
                guard let debugToken = try Self.string(body, "debug_token", "debugToken"), !debugToken.isEmpty else {
                    throw AppCheckError(.invalidArgument, "debug_token is required.")
                }
                issued = try await appCheck.exchangeDebugToken(appID: appID, debugToken: debugToken, limitedUse: try Self.limitedUse(body))
            case "exchangeCustomToken":
                try await requireAdmin(request)
                let body = try await googleBody(&request)
                guard let customToken = try Self.string(body, "customToken", "custom_token"), !customToken.isEmpty else {
                    throw AppCheckError(.invalidArgument, "customToken is required.")
                }
                issued = try await appCheck.exchangeCustomToken(appID: appID, customToken: customToken, limitedUse: try Self.limitedUse(body))
            default:
                throw HearthError.notFound("Not found.")
            }
            return HTTPSupport.json(.object([("token", .string(issued.token)), ("ttl", .string("\(issued.ttlSeconds)s"))]))
        }
        throw HearthError.notFound("Not found.")
    }

    func checkProject(_ project: String) throws {
        guard project == appCheck.projectID || project == appCheck.projectNumber else {
            throw HearthError.notFound("Project \(project.prefix(100)) not found.")
        }
    }

    /// Exchanging custom tokens and consuming tokens need the admin credential (Google: OAuth).
    func requireAdmin(_ request: Request) async throws {
        let identity = try await authenticator.identify(authorization: request.headers[.authorization])
        switch identity.kind {
        case .admin: return
        case .unauthenticated: throw HearthError(.unauthenticated, "Request is missing required authentication credential.")
        case .user: throw HearthError(.permissionDenied, "The caller does not have permission.")
        }
    }

    func googleBody(_ request: inout Request) async throws -> JSON {
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(limit: maxBody) } catch {
            throw HearthError.invalidArgument(error.googleMessage)
        }
        let bytes = Array(buffer.readableBytesView)
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object([]) }
        let json = try JSON.parse(bytes)
        guard json.objectValue != nil else { throw HearthError.invalidArgument("Invalid JSON payload received. Expected an object.") }
        return json
    }

    /// A field under either spelling (proto3 JSON accepts both).
    static func field(_ body: JSON, _ names: String...) throws -> JSON? {
        for name in names { if let value = body[name], !value.isNull { return value } }
        return nil
    }

    static func string(_ body: JSON, _ snake: String, _ camel: String) throws -> String? {
        guard let value = try field(body, snake, camel) else { return nil }
        guard let text = value.stringValue else { throw AppCheckError(.invalidArgument, "Invalid value at '\(camel)' (TYPE_STRING).") }
        return text
    }

    static func limitedUse(_ body: JSON) throws -> Bool {
        guard let value = try field(body, "limited_use", "limitedUse") else { return false }
        guard let flag = value.boolValue else { throw AppCheckError(.invalidArgument, "Invalid value at 'limitedUse' (TYPE_BOOL).") }
        return flag
    }
}
