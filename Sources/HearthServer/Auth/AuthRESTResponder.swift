import HearthCore
public import HearthAuth
public import Hummingbird
public import Logging
import NIOCore
import Foundation

/// Firebase Authentication's REST surface on the auth port: Identity Toolkit v1 (with and
/// without the `/identitytoolkit.googleapis.com` prefix), the legacy v3 `relyingparty` paths the
/// iOS SDK calls, Secure Token v1, the public keys (x509 JSON and JWKS), the OAuth2 token
/// endpoint for service accounts, and the emulator's control endpoints. Translates requests
/// into ``AuthEngine`` calls and answers in Google's JSON; nothing else.
public struct AuthRESTResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    let engine: AuthEngine
    let authenticator: Authenticator
    let outbox: Outbox?
    let providers: [IdentityProvider]
    /// Hosts an email action link may name as `linkDomain` (from `--auth-config`).
    let linkDomains: [String]
    let certificates: CertificateCache
    /// Keys of Admin-API OIDC issuers without `--auth-config` keys (production mode).
    let discovery: OIDCDiscovery
    let logger: Logger
    /// The largest request body of every endpoint (``RequestLimits``, 4 MiB by default).
    let maxBody: Int

    public init(
        engine: AuthEngine, authenticator: Authenticator, outbox: Outbox?, providers: [IdentityProvider] = [], linkDomains: [String] = [],
        logger: Logger, maxBody: Int = RequestLimits.defaultRequestBytes[.auth]!
    ) {
        self.maxBody = maxBody
        self.engine = engine
        self.authenticator = authenticator
        self.outbox = outbox
        self.providers = providers
        self.linkDomains = linkDomains
        self.certificates = CertificateCache()
        self.discovery = OIDCDiscovery()
        self.logger = logger
    }

    var projectID: String { engine.tokens.projectID }

    public func respond(to request: Request, context: Context) async throws -> Response {
        var response: Response
        if request.method == .options {
            response = Response(status: .noContent)
        } else {
            do {
                response = try await route(request)
            } catch let e as HearthError {
                if e.code.httpStatus >= 500 {
                    logger.error("auth request failed", metadata: ["path": "\(request.uri.path)", "client": "\(RequestOrigin.client(request.headers) ?? "-")", "error": "\(e)", "cause": "\(e.cause.map { "\($0)" } ?? "-")"])
                } else {
                    logger.debug("auth request rejected", metadata: ["path": "\(request.uri.path)", "client": "\(RequestOrigin.client(request.headers) ?? "-")", "error": "\(e)"])
                }
                response = Self.errorResponse(e)
            } catch {
                logger.error("auth internal error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
                response = Self.errorResponse(HearthError(.internal, "INTERNAL_ERROR"))
            }
        }
        Self.addCORS(&response, request)
        return response
    }

    /// CORS as the Auth emulator answers it (web SDKs preflight every call): the origin is
    /// reflected, requested headers allowed.
    static func addCORS(_ response: inout Response, _ request: Request) {
        let origin = request.headers[.origin] ?? "*"
        response.headers[.accessControlAllowOrigin] = origin
        if origin != "*" {
            response.headers[.vary] = "Origin"
            response.headers[.accessControlAllowCredentials] = "true"
        }
        if request.method == .options {
            response.headers[.accessControlAllowMethods] = "GET,HEAD,PUT,PATCH,POST,DELETE"
            response.headers[.accessControlAllowHeaders] =
                request.headers[.accessControlRequestHeaders] ?? "Authorization,Content-Type,X-Client-Version,X-Goog-Api-Key"
            response.headers[.accessControlMaxAge] = "86400"
        }
    }

    /// Firebase Auth's error body: `{"error":{"code":400,"message":"EMAIL_EXISTS","errors":[…]}}`.
    /// Firebase's error strings travel as 400 (INSUFFICIENT_PERMISSION as 403); other errors
    /// (bad JSON, unknown paths) carry their HTTP status and Google's `status` name.
    static func errorResponse(_ e: HearthError) -> Response {
        let authCode = e.authErrorCode
        let status = authCode == nil ? e.code.httpStatus : (authCode == .insufficientPermission ? 403 : 400)
        var members: [(String, JSON)] = [
            ("code", .number(status)), ("message", .string(e.message)),
            ("errors", .array([.object([("message", .string(e.message)), ("domain", .string("global")), ("reason", .string("invalid"))])])),
        ]
        if authCode == nil || authCode == .insufficientPermission { members.append(("status", .string(e.code.statusName))) }
        return HTTPSupport.json(.object([("error", .object(members))]), status: HTTPResponse.Status(code: status))
    }

    /// The legacy v3 `relyingparty` names and the v1 operation each stands for.
    static let legacyOperations: [String: String] = [
        "signupNewUser": "signUp", "verifyPassword": "signInWithPassword", "verifyCustomToken": "signInWithCustomToken",
        "verifyAssertion": "signInWithIdp", "emailLinkSignin": "signInWithEmailLink", "getAccountInfo": "lookup",
        "setAccountInfo": "update", "deleteAccount": "delete", "getOobConfirmationCode": "sendOobCode",
        "resetPassword": "resetPassword", "createAuthUri": "createAuthUri", "downloadAccount": "batchGet",
        "uploadAccount": "batchCreate", "getProjectConfig": "projectConfig", "sendVerificationCode": "sendVerificationCode",
        "verifyPhoneNumber": "signInWithPhoneNumber",
    ]

    func route(_ request: Request) async throws -> Response {
        guard let decoded = HTTPSupport.percentDecode(request.uri.path) else {
            throw HearthError.invalidArgument("Invalid percent-encoding in the request path.")
        }
        var path = decoded
        for prefix in ["/identitytoolkit.googleapis.com", "/www.googleapis.com", "/securetoken.googleapis.com"] where path.hasPrefix(prefix + "/") {
            path.removeFirst(prefix.count)
            break
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        var request = request
        switch segments {
        case [], [""]:
            return HTTPSupport.json(.object([("authEmulator", .object([("ready", .bool(true))])), ("project", .string(projectID))]))
        case ["v1", "token"]:
            try requireMethod(request, .post)
            return try await secureToken(&request)
        case ["token"]:
            try requireMethod(request, .post)
            return try await oauthToken(&request)
        case ["robot", "v1", "metadata", "x509", "securetoken@system.gserviceaccount.com"],
            ["identitytoolkit", "v3", "relyingparty", "publicKeys"]:
            return try x509Keys()
        case ["service_accounts", "v1", "jwk", "securetoken@system.gserviceaccount.com"]:
            return jwks()
        default:
            break
        }
        if segments.count == 4, segments[0] == "identitytoolkit", segments[1] == "v3", segments[2] == "relyingparty" {
            guard let op = Self.legacyOperations[segments[3]] else { throw HearthError(.notFound, "Not Found") }
            return try await operation(op, project: nil, &request)
        }
        if segments.first == "emulator" { return try await emulator(Array(segments.dropFirst()), &request) }
        if segments.first == "v2" { return try await providerConfigs(Array(segments.dropFirst()), &request) }
        guard segments.first == "v1" else { throw HearthError(.notFound, "Not Found") }
        let rest = Array(segments.dropFirst())
        switch rest.count {
        case 1 where rest[0].hasPrefix("accounts:"):
            return try await operation(String(rest[0].dropFirst("accounts:".count)), project: nil, &request)
        case 1 where rest[0] == "projects":
            return try await operation("projectConfig", project: nil, &request)
        case 2 where rest[0] == "projects" && rest[1].hasSuffix(":createSessionCookie"):
            return try await operation("createSessionCookie", project: String(rest[1].dropLast(":createSessionCookie".count)), &request)
        case 2 where rest[0] == "projects" && rest[1].hasSuffix(":queryAccounts"):
            return try await operation("query", project: String(rest[1].dropLast(":queryAccounts".count)), &request)
        case 3 where rest[0] == "projects" && rest[2] == "accounts":
            return try await operation("create", project: rest[1], &request)
        case 3 where rest[0] == "projects" && rest[2].hasPrefix("accounts:"):
            return try await operation(String(rest[2].dropFirst("accounts:".count)), project: rest[1], &request)
        default:
            throw HearthError(.notFound, "Not Found")
        }
    }

    func requireMethod(_ request: Request, _ methods: HTTPRequest.Method...) throws(HearthError) {
        guard methods.contains(request.method) else { throw HearthError(.notFound, "Not Found: \(request.method) \(request.uri.path)") }
    }

    /// Checks a project named in the path against the server's.
    func checkProject(_ project: String?) throws(HearthError) {
        guard let project else { return }
        guard project == projectID else { throw AuthErrorCode.configurationNotFound.error("Project \(project) is not served here.") }
    }

    /// One Identity Toolkit operation (v1 name), by method and body.
    func operation(_ op: String, project: String?, _ request: inout Request) async throws -> Response {
        try checkProject(project)
        try await checkAppCheck(request)
        if op == "batchGet" && request.method == .get {
            let query = Dictionary(try HTTPSupport.queryParameters(request.uri.query), uniquingKeysWith: { a, _ in a })
            return try await batchGet(maxResults: query["maxResults"], pageToken: query["nextPageToken"], request)
        }
        if op == "projectConfig" && request.method == .get { return projectConfig() }
        try requireMethod(request, .post)
        guard let fields = Self.operationFields[op] else { throw HearthError(.notFound, "Not Found") }
        let body = try await AuthRequestBody.read(&request, allowed: fields, limit: maxBody)
        switch op {
        case "signUp": return try await signUp(body, request, privileged: false)
        case "create": return try await signUp(body, request, privileged: true)
        case "signInWithPassword": return try await signInWithPassword(body, request)
        case "signInWithCustomToken": return try await signInWithCustomToken(body)
        case "signInWithEmailLink": return try await signInWithEmailLink(body)
        case "signInWithIdp": return try await signInWithIdp(body)
        case "lookup": return try await lookup(body, request)
        case "update": return try await update(body, request)
        case "delete": return try await delete(body, request)
        case "sendOobCode": return try await sendOobCode(body, request)
        case "resetPassword": return try await resetPassword(body)
        case "createAuthUri": return try await createAuthUri(body)
        case "batchGet":
            try await requireAdmin(request)
            return try await batchGet(maxResults: try body.int64("maxResults").map { String($0) }, pageToken: try body.string("nextPageToken"), request)
        case "query": return try await query(body, request)
        case "batchCreate": return try await batchCreate(body, request)
        case "batchDelete": return try await batchDelete(body, request)
        case "createSessionCookie": return try await createSessionCookie(body, request)
        case "sendVerificationCode": return try await sendVerificationCode(body)
        case "signInWithPhoneNumber": return try await signInWithPhoneNumber(body)
        case "projectConfig": return projectConfig()
        default: throw HearthError(.notFound, "Not Found")
        }
    }

    // MARK: Credentials

    /// Whether the request carries an admin credential: `--admin-token`, `owner` in emulator
    /// mode, or an access token from a Hearth service account.
    func isAdmin(_ request: Request) async -> Bool {
        (try? await authenticator.identify(authorization: request.headers[.authorization]))?.isAdmin ?? false
    }

    func requireAdmin(_ request: Request) async throws {
        guard await isAdmin(request) else {
            throw AuthErrorCode.insufficientPermission.error("This operation needs an admin credential.")
        }
    }

    /// App Check on the Identity Toolkit operations (`appCheck.enforcement.auth`): a request
    /// without a valid `X-Firebase-AppCheck` token is refused as Firebase Auth refuses it — 401
    /// `FIREBASE_APP_CHECK_TOKEN_IS_INVALID` (the JS SDK's `auth/firebase-app-check-token-is-invalid`).
    /// Admin credentials pass; the token, key and emulator endpoints are not gated.
    func checkAppCheck(_ request: Request) async throws {
        guard let gate = authenticator.appCheckGates["auth"], gate.mode != .off else { return }
        let refusal = await authenticator.appCheckRefusal(
            "auth", token: request.headers[AppAPIResponder.appCheckHeader], isAdmin: await isAdmin(request))
        if refusal != nil { throw HearthError(.unauthenticated, "FIREBASE_APP_CHECK_TOKEN_IS_INVALID") }
    }

    /// The client's address for the per-address sign-in limit.
    /// `X-Forwarded-For` as ``ForwardedHeadersHandler`` settled it: the TCP peer, or what a
    /// trusted proxy (`--trusted-proxy`) reported.
    static func clientAddress(_ request: Request) -> String? { RequestOrigin.client(request.headers) }

    /// Where links in emails point: this server as the client reached it.
    static func origin(_ request: Request) -> String {
        RequestOrigin.base(request.headers, authority: request.head.authority, fallback: "127.0.0.1:9099")
    }
}
