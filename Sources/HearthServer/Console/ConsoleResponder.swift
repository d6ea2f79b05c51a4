import HearthCore
import HearthAuth
import HearthDatabase
import HearthDocuments
import HearthStorage
import Hummingbird
import HTTPTypes
import Logging
import NIOCore
import Foundation

/// The web console (`--console-port`, default 4000): plain HTML/CSS/JS pages compiled into the
/// binary, a session API, and a same-origin proxy to the other ports that adds the admin
/// credential the server holds, so the pages speak Firebase's own REST protocols.
///
/// Security (docs/console.md):
/// - every `/api/` route but sign-in needs the session cookie (`__Host-hearth-console`,
///   HttpOnly, Secure, SameSite=Strict); every change also needs `X-CSRF-Token` equal to the
///   session's token, and an `Origin`, when sent, equal to the console's own;
/// - sign-in: the admin credential, a service account's signed assertion (the key stays in the
///   browser), or an Auth account whose custom claims hold `"admin": true`;
/// - every response carries a strict Content-Security-Policy (scripts and styles only from the
///   console itself, no inline script, no framing) and `nosniff`; API answers are `no-store`.
struct ConsoleResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let configuration: ServerConfiguration
    let engine: DocumentEngine
    let auth: AuthEngine
    let objects: ObjectStore
    let database: DatabaseEngine
    let firestoreRules: RulesStore
    let storageRules: RulesStore
    let sessions: ConsoleSessions
    /// The port each service is bound to (nil when it is not running).
    let boundPort: @Sendable (String) -> Int?
    /// A per-process admin credential the proxy presents to the other ports; never leaves the process.
    let proxyCredential: String
    let recentErrors: RecentErrors?
    let startedAt: Date
    let logger: Logger

    static let cookieName = "__Host-hearth-console"
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
        + "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    func respond(to request: Request, context: Context) async throws -> Response {
        var response: Response
        do {
            response = try await route(request, context)
        } catch let e as HearthError {
            if e.code.httpStatus >= 500 {
                logger.error("console request failed", metadata: ["path": "\(request.uri.path)", "error": "\(e)"])
            }
            response = HTTPSupport.googleError(e)
        } catch let e as RequestTooLarge {
            response = HTTPSupport.googleError(.invalidArgument(e.googleMessage))
        } catch {
            logger.error("console internal error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            response = HTTPSupport.googleError(HearthError(.internal, "Internal error."))
        }
        Self.secure(&response, api: request.uri.path.hasPrefix("/api/"))
        return response
    }

    static func secure(_ response: inout Response, api: Bool) {
        response.headers[.contentSecurityPolicy] = contentSecurityPolicy
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        response.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        response.headers[HTTPField.Name("Cross-Origin-Resource-Policy")!] = "same-origin"
        if api { response.headers[.cacheControl] = "no-store" }
    }

    func route(_ request: Request, _ context: Context) async throws -> Response {
        let path = request.uri.path
        if request.method == .get || request.method == .head {
            if path == "/" || path == "/index.html" { return asset("index.html", request) }
            if path.hasPrefix("/assets/") { return asset(String(path.dropFirst("/assets/".count)), request) }
        }
        guard path.hasPrefix("/api/") else { throw HearthError(.notFound, "Not found: \(path)") }
        if path == "/api/session" {
            switch request.method {
            case .post: return try await signIn(request)
            case .get: return try await sessionInfo(request)
            case .delete: return try await signOut(request)
            default: throw HearthError(.notFound, "Not found: \(request.method) \(path)")
            }
        }
        let (_, session) = try await requireSession(request)
        if request.method != .get && request.method != .head {
            try checkCSRF(request, session)
        }
        if path.hasPrefix("/api/proxy/") { return try await proxy(request, principal: session.principal) }
        switch (request.method, path) {
        case (.get, "/api/overview"): return try await overview(request)
        case (.get, "/api/firestore/indexes"): return try await listIndexes()
        case (.post, "/api/firestore/indexes"): return try await createIndex(request, principal: session.principal)
        case (.get, "/api/firestore/listen"): return try await listen(request)
        case (.get, "/api/rules"): return try await rulesInForce()
        case (.post, "/api/rules/simulate"): return try await simulate(request)
        case (.get, "/api/rules/coverage"): return try await coverage(request)
        default: throw HearthError(.notFound, "Not found: \(request.method) \(path)")
        }
    }

    // MARK: Assets

    func asset(_ name: String, _ request: Request) -> Response {
        guard let a = ConsoleAssets.all[name] else {
            return HTTPSupport.googleError(HearthError(.notFound, "Not found: /assets/\(name)"))
        }
        if request.headers[.ifNoneMatch] == a.etag {
            return Response(status: .notModified, headers: [.eTag: a.etag])
        }
        var headers: HTTPFields = [.contentType: a.contentType, .eTag: a.etag, .cacheControl: "no-cache"]
        headers[.contentLength] = String(a.bytes.count)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: a.bytes)))
    }

    // MARK: Sessions

    func cookie(_ request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for part in header.split(separator: ";") {
                let kv = part.trimmingCharacters(in: .whitespaces)
                if kv.hasPrefix(Self.cookieName + "=") { return String(kv.dropFirst(Self.cookieName.count + 1)) }
            }
        }
        return nil
    }

    func requireSession(_ request: Request) async throws -> (String, ConsoleSessions.Session) {
        guard let id = cookie(request), let session = try await sessions.session(id) else {
            throw HearthError(.unauthenticated, "Sign in to the console first (no session, or it has ended).")
        }
        return (id, session)
    }

    /// The request's own origin as the browser names it (`http(s)://host:port`, the scheme as
    /// ``RequestOrigin`` settled it).
    func ownOrigin(_ request: Request) -> String? {
        guard let authority = request.head.authority else { return nil }
        return RequestOrigin.scheme(request.headers) + "://" + authority
    }

    /// Changes must come from the console's own pages: `X-CSRF-Token` matches the session's, and
    /// `Origin` (sent by browsers on every cross-origin and every POST/PUT/PATCH/DELETE request),
    /// when present, is the console's own.
    func checkCSRF(_ request: Request, _ session: ConsoleSessions.Session) throws(HearthError) {
        try checkOrigin(request)
        guard let token = request.headers[HTTPField.Name("X-CSRF-Token")!],
              Authenticator.constantTimeEqual(token, session.csrfToken)
        else {
            throw HearthError(.permissionDenied, "Missing or wrong CSRF token: changes must come from the console's own pages.")
        }
    }

    func checkOrigin(_ request: Request) throws(HearthError) {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site == "cross-site" || site == "same-site" {
            throw HearthError(.permissionDenied, "Cross-site requests to the console are refused.")
        }
        if let origin = request.headers[HTTPField.Name("Origin")!] {
            guard let own = ownOrigin(request), origin == own || origin == own.replacingOccurrences(of: "http://", with: "https://") else {
                throw HearthError(.permissionDenied, "Cross-site requests to the console are refused (Origin \(origin)).")
            }
        }
    }

    func sessionInfo(_ request: Request) async throws -> Response {
        let (_, session) = try await requireSession(request)
        return HTTPSupport.json(sessionJSON(session, request))
    }

    /// The host name the browser used (without the port), for links to the other ports.
    func publicHost(_ request: Request) -> String {
        request.head.authority.map { a -> String in
            if a.hasPrefix("["), let end = a.firstIndex(of: "]") { return String(a[...end]) }
            return String(a.split(separator: ":").first ?? Substring(a))
        } ?? "127.0.0.1"
    }

    /// Where clients reach `service`: its `--public-url` when one is set, else the host the browser
    /// used with the service's own port (nil when it has no port).
    func publicURL(_ service: String, _ request: Request) -> String? {
        if let url = configuration.publicURLs[service] { return url }
        guard let port = boundPort(service) else { return nil }
        return "\(RequestOrigin.scheme(request.headers))://\(publicHost(request)):\(port)"
    }

    func sessionJSON(_ session: ConsoleSessions.Session, _ request: Request) -> JSON {
        var urls: [(String, JSON)] = []
        for service in ["firestore", "auth", "storage", "database"] {
            if boundPort(service) != nil, let url = publicURL(service, request) { urls.append((service, .string(url))) }
        }
        let database: JSON = boundPort("database") == nil
            ? .null : .object([("namespace", .string("\(configuration.project)-default-rtdb"))])
        return .object([
            ("user", .object([("name", .string(session.principal.name)), ("method", .string(session.principal.method))])),
            ("csrfToken", .string(session.csrfToken)),
            ("project", .string(configuration.project)),
            ("emulator", .bool(configuration.emulator)),
            ("database", database),
            ("publicURLs", .object(urls)),
        ])
    }

    /// The largest request body (``RequestLimits``, 1 MiB by default).
    var maxBody: Int { configuration.limits.requestBytes(.console) }

    func signIn(_ request: Request) async throws -> Response {
        try checkOrigin(request)
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
            throw HearthError.invalidArgument("Sign in with a JSON body (Content-Type: application/json).")
        }
        var request = request
        let buffer: ByteBuffer
        buffer = try await request.collectBody(limit: maxBody)
        let body = try JSON.parse(buffer.readableBytesView)
        let principal: ConsolePrincipal
        do {
            principal = try await authenticate(body)
        } catch let e as HearthError where e.code == .unauthenticated || e.code == .permissionDenied {
            let wait = sessions.recordFailure()
            if wait > .zero { try? await Task.sleep(for: wait) }
            logger.notice("console sign-in refused", metadata: ["method": "\(body["method"]?.stringValue ?? "-")", "reason": "\(e.message)"])
            throw e
        }
        let (id, session) = try await sessions.create(principal)
        logger.notice("console sign-in", metadata: ["user": "\(principal.name)", "method": "\(principal.method)"])
        var response = HTTPSupport.json(sessionJSON(session, request))
        response.headers[.setCookie] =
            "\(Self.cookieName)=\(id); Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=\(Int(sessions.absoluteTimeout))"
        return response
    }

    func authenticate(_ body: JSON) async throws -> ConsolePrincipal {
        let refused = HearthError(.unauthenticated, "Wrong credential.")
        switch body["method"]?.stringValue {
        case "token":
            guard let token = body["token"]?.stringValue, !token.isEmpty else { throw refused }
            if configuration.emulator && token == "owner" { return ConsolePrincipal(name: "owner", method: "token") }
            guard let admin = configuration.adminToken, !admin.isEmpty, Authenticator.constantTimeEqual(token, admin) else { throw refused }
            return ConsolePrincipal(name: "admin-token", method: "token")
        case "serviceAccount":
            guard let assertion = body["assertion"]?.stringValue else { throw refused }
            let grant: AccessTokenGrant
            do { grant = try await auth.exchangeJWTBearer(assertion: assertion) } catch let e as HearthError {
                throw HearthError(.unauthenticated, "The service account's assertion was refused: \(e.message)")
            }
            guard let principal = try await auth.verifyAccessToken(grant.accessToken) else { throw refused }
            return ConsolePrincipal(name: principal.clientEmail, method: "serviceAccount")
        case "password":
            guard let email = body["email"]?.stringValue, let password = body["password"]?.stringValue else { throw refused }
            let session: AuthEngine.Session
            do { session = try await auth.signInWithPassword(email: email, password: password) } catch let e as HearthError {
                throw HearthError(.unauthenticated, "Wrong email or password (\(e.message)).")
            }
            let claims = (try? session.account.customClaims.map { try JSON.parse($0) }) ?? nil
            guard claims?["admin"]?.boolValue == true else {
                throw HearthError(
                    .permissionDenied,
                    "\(email) is not a console user: its custom claims lack \"admin\": true (hearth admin console-user create).")
            }
            guard !session.account.disabled else { throw HearthError(.permissionDenied, "The account \(email) is disabled.") }
            return ConsolePrincipal(name: email, method: "password")
        default:
            throw HearthError.invalidArgument("\"method\" must be \"password\", \"token\" or \"serviceAccount\".")
        }
    }

    func signOut(_ request: Request) async throws -> Response {
        let (id, session) = try await requireSession(request)
        try checkCSRF(request, session)
        try await sessions.end(id)
        var response = Response(status: .noContent)
        response.headers[.setCookie] = "\(Self.cookieName)=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0"
        return response
    }
}
