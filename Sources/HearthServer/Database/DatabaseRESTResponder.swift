import HearthCore
public import HearthDatabase
public import Hummingbird
public import Logging
import HTTPTypes
import NIOCore

/// The Realtime Database's REST API and its event streams on the database port:
/// `GET/PUT/POST/PATCH/DELETE /{path}.json`, `/.settings/rules.json`, and `GET` with
/// `Accept: text/event-stream`. Errors are `{"error": "…"}` with Firebase's texts.
public struct DatabaseRESTResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    let engine: DatabaseEngine
    let authenticator: Authenticator
    let defaultNamespace: String
    let logger: Logger
    /// How often an idle event stream sends `keep-alive`.
    let keepAliveInterval: Duration
    /// Emulator mode: unindexed queries are served by scanning (with a logged hint) instead of
    /// Firebase's `Index not defined` 400, and denials say which rule denied, where.
    let emulator: Bool
    /// The event-stream bytes of recent changes per listened location, shared by every stream
    /// of that location (``DatabaseRenderCache``).
    let events = DatabaseRenderCache<ByteBuffer> { change, location in DatabaseRESTResponder.events(for: change, at: location) }

    static let etagRequest = HTTPField.Name("X-Firebase-ETag")!
    static let methodOverride = HTTPField.Name("X-HTTP-Method-Override")!
    /// The largest request body (``RequestLimits``; Firebase's 256 MB REST write by default).
    let maxBody: Int

    public init(
        engine: DatabaseEngine, authenticator: Authenticator, project: String, logger: Logger, emulator: Bool = false,
        keepAliveInterval: Duration = .seconds(30), maxBody: Int = RequestLimits.defaultRequestBytes[.database]!
    ) {
        self.maxBody = maxBody
        self.emulator = emulator
        self.engine = engine
        self.authenticator = authenticator
        self.defaultNamespace = Self.defaultNamespace(project)
        self.logger = logger
        self.keepAliveInterval = keepAliveInterval
    }

    /// `<project>-default-rtdb`, the namespace of requests that name none.
    static func defaultNamespace(_ project: String) -> String { "\(project)-default-rtdb" }

    public func respond(to request: Request, context: Context) async throws -> Response {
        do {
            return try await route(request)
        } catch let error as DatabaseError {
            if error.reason == .unavailable { logger.error("database request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"]) }
            if error.reason == .permissionDenied, let cause = error.cause {
                logger.debug("database request denied", metadata: ["path": "\(request.uri.path)", "reason": "\(cause)"])
                if emulator { return Self.denial(error, explanation: "\(cause)") }
            }
            return Self.error(error)
        } catch let error as HearthError {
            if error.code.httpStatus >= 500 { logger.error("database request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"]) }
            return Self.json(.object([("error", .string(error.message))]), status: .init(code: error.code.httpStatus))
        } catch {
            logger.error("database internal error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return Self.json(.object([("error", .string("Internal server error."))]), status: .internalServerError)
        }
    }

    /// One table from reason to HTTP status.
    static func status(_ reason: DatabaseError.Reason) -> HTTPResponse.Status {
        switch reason {
        case .invalidPath, .invalidData, .invalidQuery, .invalidRules: .badRequest
        case .permissionDenied, .unauthenticated: .unauthorized
        case .writeTooBig: .contentTooLarge
        case .etagMismatch: .preconditionFailed
        case .unavailable: .serviceUnavailable
        }
    }

    static func error(_ error: DatabaseError) -> Response {
        json(.object([("error", .string(error.message))]), status: status(error.reason))
    }

    static let authDebug = HTTPField.Name("X-Firebase-Auth-Debug")!

    /// A denial in emulator mode: the body stays Firebase's `{"error": "Permission denied"}`
    /// (clients compare the text), and `X-Firebase-Auth-Debug` — the header Firebase's REST
    /// API carries rules debug information in — says which rule denied, where, and why.
    static func denial(_ error: DatabaseError, explanation: String) -> Response {
        var response = Self.error(error)
        response.headers[authDebug] = String(
            explanation.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value != 0x7F ? Character($0) : " " })
        return response
    }

    static func json(_ body: JSON, status: HTTPResponse.Status = .ok, pretty: Bool = false, headers: HTTPFields = [:]) -> Response {
        var buffer = ByteBufferAllocator().buffer(capacity: 256)
        if pretty {
            var out: [UInt8] = []
            PrettyJSON.write(body, indent: 0, to: &out)
            buffer.writeBytes(out)
        } else {
            buffer.writeBytes(body.serializedBytes())
        }
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.cacheControl] = "no-cache"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: buffer))
    }

    func route(_ request: Request) async throws -> Response {
        let parsed = try DatabaseRESTRequest.parse(
            rawPath: request.uri.path, method: request.method.rawValue, overrideHeader: request.headers[Self.methodOverride],
            query: request.uri.query, host: request.head.authority, defaultNamespace: defaultNamespace)
        let auth = try await authContext(request, parsed)
        if parsed.isRules { return try await rules(request, parsed, auth) }
        switch parsed.method {
        case .get:
            if request.headers[.accept]?.lowercased().contains("text/event-stream") == true {
                return try await stream(parsed, auth: auth, identity: try await identity(request, parsed))
            }
            return try await get(request, parsed, auth)
        case .put, .delete:
            let value: JSON = parsed.method == .delete ? .null : try await body(request)
            let outcome = try await engine.set(
                namespace: parsed.namespace, path: parsed.path, value: value, auth: auth,
                options: .init(ifMatch: request.headers[.ifMatch], sizeLimit: parsed.sizeLimit))
            return written(outcome, request, parsed)
        case .post:
            let value = try await body(request)
            let name = try await engine.push(
                namespace: parsed.namespace, path: parsed.path, value: value, auth: auth, options: .init(sizeLimit: parsed.sizeLimit))
            if parsed.print == .silent { return Response(status: .noContent) }
            return Self.json(.object([("name", .string(name))]), pretty: parsed.print == .pretty)
        case .patch:
            let value = try await body(request)
            guard let members = value.objectValue else {
                throw DatabaseError(.invalidData, "Invalid data; couldn't parse JSON object. PATCH requests must carry a JSON object.")
            }
            let outcome = try await engine.update(
                namespace: parsed.namespace, path: parsed.path, values: members, auth: auth, options: .init(sizeLimit: parsed.sizeLimit))
            // Firebase answers a PATCH with the update as it was sent.
            guard case .written = outcome, parsed.print != .silent else { return written(outcome, request, parsed) }
            return Self.json(value, pretty: parsed.print == .pretty)
        }
    }

    func get(_ request: Request, _ parsed: DatabaseRESTRequest, _ auth: DatabaseAuthContext) async throws -> Response {
        let snapshot = try await engine.read(
            namespace: parsed.namespace, path: parsed.path, query: parsed.query, auth: auth, unindexed: emulator ? .scan : .reject)
        if let warning = snapshot.warning {
            logger.warning("unindexed database query served by scanning", metadata: ["path": "\(parsed.path)", "hint": "\(warning)"])
        }
        var headers: HTTPFields = [:]
        // Asked for (`X-Firebase-ETag: true`), or a conditional GET: its answer names the current
        // tag. Only then is it computed (a hash of the whole value).
        if request.headers[Self.etagRequest]?.lowercased() == "true" || request.headers[.ifNoneMatch] != nil {
            let etag = snapshot.node.etag
            headers[.eTag] = etag
            if let wanted = request.headers[.ifNoneMatch], wanted == etag {
                return Response(status: .notModified, headers: [.eTag: etag])
            }
        }
        if let download = parsed.download {
            let safe = String(download.unicodeScalars.filter { $0.isASCII && $0 != "\"" && $0 != "\\" && $0.value >= 0x20 }.map(Character.init))
            headers[.contentDisposition] = "attachment; filename=\"\(safe)\""
        }
        if parsed.print == .silent { return Response(status: .noContent, headers: headers) }
        let body: JSON =
            parsed.shallow ? snapshot.node.shallowJSON() : (parsed.format == .export ? snapshot.node.exportJSON() : snapshot.node.plainJSON())
        return Self.json(body, pretty: parsed.print == .pretty, headers: headers)
    }

    func written(_ outcome: DatabaseEngine.WriteOutcome, _ request: Request, _ parsed: DatabaseRESTRequest) -> Response {
        switch outcome {
        case .preconditionFailed(let current, let etag):
            return Self.json(current.plainJSON(), status: .preconditionFailed, headers: [.eTag: etag])
        case .written(let node, _):
            var headers: HTTPFields = [:]
            if request.headers[Self.etagRequest]?.lowercased() == "true" || request.headers[.ifMatch] != nil {
                headers[.eTag] = node.etag
            }
            if parsed.print == .silent { return Response(status: .noContent, headers: headers) }
            return Self.json(parsed.format == .export ? node.exportJSON() : node.plainJSON(), pretty: parsed.print == .pretty, headers: headers)
        }
    }

    func body(_ request: Request) async throws -> JSON {
        let buffer: ByteBuffer
        var request = request
        do { buffer = try await request.collectBody(limit: maxBody) } catch {
            throw DatabaseError.writeTooBig
        }
        do {
            return try JSON.parse(buffer.readableBytesView)
        } catch {
            throw DatabaseError(.invalidData, "Invalid data; couldn't parse JSON object, array, or value.")
        }
    }

    // MARK: Rules

    func rules(_ request: Request, _ parsed: DatabaseRESTRequest, _ auth: DatabaseAuthContext) async throws -> Response {
        guard auth.isAdmin else { throw DatabaseError.permissionDenied }
        switch parsed.method {
        case .get:
            let rules = try await engine.rules(namespace: parsed.namespace)
            return Self.json(rules.document, pretty: parsed.print == .pretty)
        case .put:
            let buffer: ByteBuffer
            var request = request
            do { buffer = try await request.collectBody(limit: maxBody) } catch {
                throw DatabaseError.writeTooBig
            }
            try await engine.setRules(String(decoding: buffer.readableBytesView, as: UTF8.self), namespace: parsed.namespace, auth: auth)
            return Self.json(.object([("status", .string("ok"))]))
        default:
            throw DatabaseError(.invalidQuery, "Only GET and PUT are allowed on /.settings/rules.json")
        }
    }

    // MARK: Identity

    func identity(_ request: Request, _ parsed: DatabaseRESTRequest) async throws -> Identity {
        let header: String? = parsed.credential.map { "Bearer \($0)" } ?? request.headers[.authorization]
        do {
            return try await authenticator.identify(authorization: header)
        } catch {
            throw DatabaseError(.unauthenticated, "Could not parse auth token.")
        }
    }

    /// Who the rules see: the admin (rules skipped), or with `auth_variable_override` the
    /// admin acting as that `auth` (or as nobody); a user's `auth` is `{uid, provider, token}`.
    func authContext(_ request: Request, _ parsed: DatabaseRESTRequest) async throws -> DatabaseAuthContext {
        let identity = try await identity(request, parsed)
        // App Check (`appCheck.enforcement.database`, the `X-Firebase-AppCheck` header): refused
        // as a rules denial is, 401 "Permission denied"; admin credentials pass.
        if let refusal = await authenticator.appCheckRefusal(
            "database", token: request.headers[AppAPIResponder.appCheckHeader], isAdmin: identity.isAdmin)
        {
            throw DatabaseError(.permissionDenied, "Permission denied", cause: AppCheckRefused(outcome: refusal))
        }
        switch identity.kind {
        case .admin:
            guard let override = parsed.authOverride else { return .admin }
            return DatabaseAuthContext(isAdmin: false, auth: override.isNull ? nil : override)
        case .user:
            return DatabaseAuthContext(isAdmin: false, auth: Self.rulesAuth(identity))
        case .unauthenticated:
            return .unauthenticated
        }
    }

    static func rulesAuth(_ identity: Identity) -> JSON {
        .object([
            ("uid", .string(identity.uid ?? "")),
            ("provider", .string(identity.signInProvider ?? "custom")),
            ("token", identity.claims ?? .object([])),
        ])
    }
}

/// `print=pretty`: two-space indentation.
enum PrettyJSON {
    static func write(_ value: JSON, indent: Int, to out: inout [UInt8]) {
        switch value {
        case .array(let elements) where !elements.isEmpty:
            out.append(contentsOf: "[\n".utf8)
            for (index, element) in elements.enumerated() {
                out.append(contentsOf: [UInt8](repeating: 0x20, count: indent + 2))
                write(element, indent: indent + 2, to: &out)
                out.append(contentsOf: (index + 1 < elements.count ? ",\n" : "\n").utf8)
            }
            out.append(contentsOf: [UInt8](repeating: 0x20, count: indent))
            out.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            out.append(contentsOf: "{\n".utf8)
            for (index, (key, member)) in members.enumerated() {
                out.append(contentsOf: [UInt8](repeating: 0x20, count: indent + 2))
                JSON.string(key).write(to: &out)
                out.append(contentsOf: " : ".utf8)
                write(member, indent: indent + 2, to: &out)
                out.append(contentsOf: (index + 1 < members.count ? ",\n" : "\n").utf8)
            }
            out.append(contentsOf: [UInt8](repeating: 0x20, count: indent))
            out.append(UInt8(ascii: "}"))
        default:
            value.write(to: &out)
        }
    }
}
