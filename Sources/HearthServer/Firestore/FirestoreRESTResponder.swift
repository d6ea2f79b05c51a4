import HearthCore
public import HearthDocuments
public import Hummingbird
public import Logging
import NIOCore
import Foundation

/// Firestore's v1 REST API (and the emulator's control endpoints) on Hummingbird.
/// Translates requests into engine calls and results into proto3 JSON; nothing else.
public struct FirestoreRESTResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    let engine: DocumentEngine
    let authenticator: Authenticator
    let security: FirestoreSecurity
    let logger: Logger
    /// The largest request body (``RequestLimits``; Firestore's 10 MiB plus room for JSON overhead by default).
    let maxBody: Int
    /// Several replicas over one database: requests naming another replica's transaction, and
    /// read-write transactions' begins, are handed over (``handOver(_:verb:params:body:raw:replicas:)``).
    let replicas: ReplicaDirectory?

    public init(
        engine: DocumentEngine, authenticator: Authenticator, security: FirestoreSecurity, logger: Logger,
        maxBody: Int = RequestLimits.defaultRequestBytes[.firestore]!, replicas: ReplicaDirectory? = nil
    ) {
        self.maxBody = maxBody
        self.replicas = replicas
        self.engine = engine
        self.authenticator = authenticator
        self.security = security
        self.logger = logger
    }

    var emulator: Bool { security.emulator }

    public func respond(to request: Request, context: Context) async throws -> Response {
        do {
            return try await route(request)
        } catch let e as HearthError {
            if e.code.httpStatus >= 500 {
                logger.error("request failed", metadata: ["path": "\(request.uri.path)", "client": "\(RequestOrigin.client(request.headers) ?? "-")", "error": "\(e)", "cause": "\(e.cause.map { "\($0)" } ?? "-")"])
            } else {
                logger.debug("request rejected", metadata: ["path": "\(request.uri.path)", "client": "\(RequestOrigin.client(request.headers) ?? "-")", "error": "\(e)"])
            }
            return HTTPSupport.googleError(e)
        } catch {
            logger.error("internal error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return HTTPSupport.googleError(HearthError(.internal, "Internal error.", cause: nil))
        }
    }

    /// A parsed request target: `/v1/projects/{p}/databases/{d}/documents/{path}[:verb]`.
    struct Target {
        var database: DatabaseName
        var path: ResourcePath
        var verb: String?
        /// Who is asking (rules judge everyone but admins).
        var identity: Identity
    }

    static let verbs: Set<String> = [
        "batchGet", "beginTransaction", "commit", "rollback", "batchWrite", "runQuery", "runAggregationQuery",
        "listCollectionIds", "partitionQuery", "listen", "write", "listDocuments",
    ]

    func route(_ request: Request) async throws -> Response {
        let rawPath = request.uri.path
        var segments = rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        if segments == [""] || segments.isEmpty {
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "Ok")))
        }
        let params = try HTTPSupport.queryParameters(request.uri.query)
        if segments.first == "emulator" {
            var request = request
            return try await emulatorControl(&request, segments)
        }
        guard segments.count >= 6, segments[0] == "v1", segments[1] == "projects", segments[3] == "databases" else {
            throw HearthError(.notFound, "Not found: \(rawPath)")
        }
        // The verb rides on the last segment (`documents:commit`, `users/alice:runQuery`).
        var verb: String?
        if request.method == .post, let last = segments.last, let colon = last.lastIndex(of: ":") {
            let v = String(last[last.index(after: colon)...])
            if Self.verbs.contains(v) {
                verb = v
                segments[segments.count - 1] = String(last[..<colon])
            }
        }
        guard segments[5] == "documents" else { throw HearthError(.notFound, "Not found: \(rawPath)") }
        var decoded: [String] = []
        for s in segments {
            guard let d = HTTPSupport.percentDecode(s) else { throw HearthError.invalidArgument("Invalid percent-encoding in the request path.") }
            decoded.append(d)
        }
        let database = DatabaseName(project: decoded[2], database: decoded[4])
        try Self.validateDatabaseId(database)
        let path = ResourcePath(Array(decoded.dropFirst(6)))
        try path.validate()
        let identity = try await authenticator.identify(authorization: request.headers[.authorization])
        try await authenticator.checkAppCheck("firestore", token: request.headers[AppAPIResponder.appCheckHeader], identity: identity)
        let target = Target(database: database, path: path, verb: verb, identity: identity)
        let json = FirestoreJSON(database: database)
        var request = request
        var posted: JSON?
        if let replicas, request.headers[ReplicaDirectory.forwardedHeader] == nil {
            var raw: ByteBuffer?
            if request.method == .post, verb != nil {
                let collected = try await bodyBytes(&request)
                raw = collected
                posted = collected.readableBytes == 0 ? .object([]) : try JSON.parse(collected.readableBytesView)
            }
            if let answer = try await handOver(request, verb: verb, params: params, body: posted, raw: raw, replicas: replicas) {
                return answer
            }
        }
        switch (request.method, verb) {
        case (.get, nil):
            return path.isDocument
                ? try await getDocument(target, params, json)
                : try await listDocuments(target, params, json)
        case (.patch, nil):
            guard path.isDocument else { throw HearthError.invalidArgument("Document name \"\(path.text)\" is not a document path.") }
            return try await updateDocument(target, params, try await body(&request), json)
        case (.delete, nil):
            guard path.isDocument else { throw HearthError.invalidArgument("Document name \"\(path.text)\" is not a document path.") }
            return try await deleteDocument(target, params, json)
        case (.post, nil):
            guard path.isCollection else { throw HearthError.invalidArgument("Parent \"\(path.text)\" is not a collection path.") }
            return try await createDocument(target, params, try await body(&request), json)
        case (.post, let verb?):
            let body = if let posted { posted } else { try await body(&request) }
            return try await dispatch(verb, target, body, json)
        default:
            throw HearthError(.notFound, "Not found: \(request.method) \(rawPath)")
        }
    }

    static func validateDatabaseId(_ db: DatabaseName) throws(HearthError) {
        guard !db.project.isEmpty else { throw .invalidArgument("Project id is empty.") }
        let id = db.database
        if id == "(default)" { return }
        let ok = (4...63).contains(id.utf8.count) && id.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 }
            && id.first!.isLetter && id.last != "-"
        guard ok else {
            throw .invalidArgument("Invalid database id \"\(id)\": it must be (default) or 4-63 characters of lower-case letters, digits and hyphens, starting with a letter.")
        }
    }

    func body(_ request: inout Request) async throws -> JSON {
        let buffer = try await bodyBytes(&request)
        if buffer.readableBytes == 0 { return .object([]) }
        return try JSON.parse(buffer.readableBytesView)
    }

    func bodyBytes(_ request: inout Request) async throws -> ByteBuffer {
        do {
            return try await request.collectBody(limit: maxBody)
        } catch {
            throw HearthError.invalidArgument(error.googleMessage)
        }
    }

    /// Where a request runs when replicas share the database (docs/postgres.md, "Transactions
    /// across replicas"): one naming a transaction goes to the replica whose id starts the
    /// transaction's (its locks and reads live there); one beginning a read-write transaction
    /// goes to the replica holding the transactions role, so that one lock manager orders them all
    /// (Google's REST clients do not retry ABORTED: conflicts must wait, not fail). Returns that
    /// replica's answer, or nil to serve the request here. A transaction whose replica is gone is
    /// ABORTED (rolling it back is harmless); when the ordering replica cannot be reached the
    /// transaction begins here.
    func handOver(
        _ request: Request, verb: String?, params: Params, body: JSON?, raw: ByteBuffer?, replicas: ReplicaDirectory
    ) async throws -> Response? {
        let named = Self.value(params, "transaction") ?? body?["transaction"]?.stringValue
        let retried = (verb == "beginTransaction" ? body?["options"] : body?["newTransaction"])?["readWrite"]?["retryTransaction"]?.stringValue
        for (text, isRetry) in [(named, false), (retried, true)] {
            guard let text, let bytes = ProtoObject.base64(text), let owner = ReplicaDirectory.owner(ofTransaction: bytes), owner != replicas.id
            else { continue }
            if let target = try await replicas.replica(owner) {
                do {
                    logger.debug("handing a transaction's request to its replica", metadata: ["verb": "\(verb ?? request.method.rawValue)", "replica": "\(owner)"])
                    return try await replicas.forward(request, body: raw, to: target, service: "firestore")
                } catch let gone as ReplicaUnreachable {
                    logger.notice("the replica of a transaction is gone", metadata: ["replica": "\(owner)", "error": "\(gone.reason)"])
                }
            }
            // Retrying a transaction of a replica that is gone: it begins afresh (below).
            if isRetry { break }
            if verb == "rollback" { return HTTPSupport.json(.object([])) }
            throw HearthError(.aborted, "The referenced transaction has expired or is no longer valid (the replica that began it stopped).")
        }
        let readOnly = (verb == "beginTransaction" ? body?["options"] : body?["newTransaction"])?["readOnly"] != nil
        let begins = verb == "beginTransaction" || (["batchGet", "runQuery", "runAggregationQuery"].contains(verb) && body?["newTransaction"] != nil)
        guard begins, !readOnly, let coordinator = try await replicas.coordinator() else { return nil }
        do {
            logger.debug("handing a read-write transaction's begin to the replica ordering them", metadata: ["replica": "\(coordinator.id)"])
            return try await replicas.forward(request, body: raw, to: coordinator, service: "firestore")
        } catch let gone as ReplicaUnreachable {
            logger.notice("the replica ordering transactions could not be reached; beginning here", metadata: ["error": "\(gone)"])
            return nil
        }
    }

    func dispatch(_ verb: String, _ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let isRoot = t.path.isRoot
        switch verb {
        case "batchGet" where isRoot: return try await batchGet(t, body, json)
        case "beginTransaction" where isRoot: return try await beginTransaction(t, body, json)
        case "commit" where isRoot: return try await commit(t, body, json)
        case "rollback" where isRoot: return try await rollback(t, body, json)
        case "batchWrite" where isRoot: return try await batchWrite(t, body, json)
        case "runQuery" where isRoot || t.path.isDocument: return try await runQuery(t, body, json)
        case "runAggregationQuery" where isRoot || t.path.isDocument: return try await runAggregationQuery(t, body, json)
        case "listCollectionIds" where isRoot || t.path.isDocument: return try await listCollectionIds(t, body, json)
        default:
            throw HearthError(.notFound, "Not found: :\(verb) on \(t.database.name(of: t.path))")
        }
    }
}
