import HearthCore
public import HearthAppCheck
public import HearthFiles
public import Hummingbird
public import Logging
import NIOCore
import HTTPTypes
import Foundation

/// The api port: the file registry (`/v1/files/...`) with the reference FastAPI service's
/// contract and errors (`{"detail": …}`), App Check's exchange endpoints, JWKS and
/// `verifyAppCheckToken` (Google's JSON and errors, see `AppAPIResponder+AppCheck.swift`),
/// `/openapi.json`, `/healthz` and `/readyz`. Translates requests into ``FileRegistry`` and
/// ``AppCheckEngine`` calls; nothing else.
public struct AppAPIResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    let registry: FileRegistry
    let authenticator: Authenticator
    let appCheck: AppCheckEngine
    /// App Check on the file routes (`X-Firebase-AppCheck`), per the configured mode.
    let appCheckGate: AppCheckGate
    /// The lifecycle worker's totals, when it runs (`/metrics`).
    let lifecycleMetrics: LifecycleMetrics?
    /// `/readyz`: throws (a ``HearthError`` saying what is not ready) unless every listener is up
    /// and the stores take a write.
    let readiness: (@Sendable () async throws -> Void)?
    let logger: Logger
    /// The largest request body (``RequestLimits``, 64 KiB by default).
    let maxBody: Int
    static let defaultPageSize = 50

    public init(
        registry: FileRegistry, authenticator: Authenticator, appCheck: AppCheckEngine, appCheckGate: AppCheckGate,
        lifecycleMetrics: LifecycleMetrics? = nil, readiness: (@Sendable () async throws -> Void)? = nil, logger: Logger,
        maxBody: Int = RequestLimits.defaultRequestBytes[.api]!
    ) {
        self.maxBody = maxBody
        self.readiness = readiness
        self.registry = registry
        self.authenticator = authenticator
        self.appCheck = appCheck
        self.appCheckGate = appCheckGate
        self.lifecycleMetrics = lifecycleMetrics
        self.logger = logger
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        var response: Response
        if request.method == .options {
            response = Response(status: .noContent)
        } else {
            response = await answer(request)
        }
        Self.addCORS(&response, request)
        return response
    }

    /// Browsers call the api port (and the App Check exchange) from other origins.
    static func addCORS(_ response: inout Response, _ request: Request) {
        response.headers[.accessControlAllowOrigin] = request.headers[.origin] ?? "*"
        response.headers[.accessControlAllowMethods] = "GET, POST, DELETE, OPTIONS"
        response.headers[.accessControlAllowHeaders] =
            request.headers[.accessControlRequestHeaders] ?? "Authorization, Content-Type, X-Firebase-AppCheck"
        response.headers[.accessControlMaxAge] = "3600"
    }

    func answer(_ request: Request) async -> Response {
        if request.uri.path.hasPrefix("/v1/projects/") || request.uri.path.hasPrefix("/v1beta/projects/")
            || ["/v1/jwks", "/v1beta/jwks"].contains(request.uri.path)
        {
            return await appCheckResponse(request)
        }
        do {
            return try await route(request)
        } catch let error as APIError {
            return error.response
        } catch let error as FileRegistryError {
            return APIError(error).response
        } catch let error as HearthError where error.code.httpStatus < 500 {
            return APIError(status: error.code.httpStatus, detail: .string(error.message)).response
        } catch {
            logger.error("api request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return APIError(status: 500, detail: .string("Internal Server Error")).response
        }
    }

    /// The file API's routes.
    enum Route: Equatable {
        case healthz, readyz, openAPI, metrics, presignUpload, list
        case complete(String), presignDownload(String), file(String)

        init?(_ segments: [String]) {
            switch segments.count {
            case 1:
                switch segments[0] {
                case "healthz": self = .healthz
                case "readyz": self = .readyz
                case "openapi.json": self = .openAPI
                case "metrics": self = .metrics
                default: return nil
                }
            case 2 where segments == ["v1", "files"]: self = .list
            case 3 where segments[0] == "v1" && segments[1] == "files":
                self = segments[2] == "presign-upload" ? .presignUpload : .file(segments[2])
            case 4 where segments[0] == "v1" && segments[1] == "files":
                switch segments[3] {
                case "complete": self = .complete(segments[2])
                case "presign-download": self = .presignDownload(segments[2])
                default: return nil
                }
            default: return nil
            }
        }
    }

    func route(_ request: Request) async throws -> Response {
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard let route = Route(segments) else { throw APIError(status: 404, detail: .string("Not Found")) }
        switch (request.method, route) {
        case (.get, .healthz), (.head, .healthz):
            return Self.json(.object([("status", .string("ok"))]))
        case (.get, .readyz), (.head, .readyz):
            // Ready when every listener is up, the stores take a write and the document database answers a read.
            do {
                try await readiness?()
                _ = try await registry.documents.get(registry.database, FileRecord.path("00000000000000000000000000"))
            } catch {
                logger.warning("not ready", metadata: ["error": "\(error)"])
                var response = Self.json(.object([("status", .string("unavailable")), ("detail", .string("\((error as? HearthError)?.message ?? "\(error)")"))]))
                response.status = .serviceUnavailable
                return response
            }
            return Self.json(.object([("status", .string("ready"))]))
        case (.get, .openAPI):
            return Self.json(AppAPIOpenAPI.document)
        case (.get, .metrics):
            // Every service's metrics, App Check outcomes and the lifecycle worker's deletions among them.
            return HearthMetrics.response()
        case (.post, .presignUpload):
            let uid = try await user(request)
            var request = request
            var body = try await self.body(&request)
            let contentType = try body.string("contentType")
            let fileExtension = try body.string("fileExtension")
            let size = try body.optionalInteger("sizeBytes")
            try body.finish()
            let presigned = try await registry.presignUpload(
                owner: uid, contentType: contentType!, fileExtension: fileExtension!, declaredSize: size)
            var upload: [(String, JSON)]
            switch presigned.upload {
            case .put(let url, let headers):
                upload = [
                    ("method", .string("PUT")), ("url", .string(url.absoluteString)),
                    ("headers", .object(headers.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
                ]
            case .post(let url, let fields):
                upload = [
                    ("method", .string("POST")), ("url", .string(url.absoluteString)),
                    ("fields", .object(fields.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
                ]
            }
            upload.append(("expiresInSeconds", .number(presigned.expiresInSeconds)))
            return Self.json(
                .object([
                    ("fileId", .string(presigned.record.fileId)), ("bucket", .string(presigned.record.bucket)),
                    ("key", .string(presigned.record.key)), ("upload", .object(upload)),
                ]))
        case (.post, .complete(let fileId)):
            let uid = try await user(request)
            let record = try await registry.complete(owner: uid, fileId: fileId)
            return Self.json(
                .object([
                    ("fileId", .string(record.fileId)), ("status", .string(record.status.rawValue)),
                    ("sizeBytes", .number(String(record.sizeBytes ?? 0))),
                ]))
        case (.post, .presignDownload(let fileId)):
            let uid = try await user(request)
            let download = try await registry.presignDownload(owner: uid, fileId: fileId)
            return Self.json(
                .object([
                    ("download", .object([
                        ("method", .string("GET")), ("url", .string(download.url.absoluteString)),
                        ("expiresInSeconds", .number(download.expiresInSeconds)),
                    ]))
                ]))
        case (.get, .list):
            let uid = try await user(request)
            let query = try HTTPSupport.queryParameters(request.uri.query)
            var pageSize = Self.defaultPageSize
            var pageToken: String?
            for (name, value) in query {
                switch name {
                case "pageSize":
                    guard let size = Int(value) else {
                        throw APIError.validation(
                            type: "int_parsing", location: ["query", "pageSize"],
                            message: "Input should be a valid integer, unable to parse string as an integer", input: .string(value))
                    }
                    guard (1...FileRegistry.maxPageSize).contains(size) else {
                        throw APIError.validation(
                            type: size < 1 ? "greater_than_equal" : "less_than_equal", location: ["query", "pageSize"],
                            message: size < 1 ? "Input should be greater than or equal to 1"
                                : "Input should be less than or equal to \(FileRegistry.maxPageSize)", input: .string(value))
                    }
                    pageSize = size
                case "pageToken": pageToken = value.isEmpty ? nil : value
                default: break
                }
            }
            let page = try await registry.list(owner: uid, pageSize: pageSize, pageToken: pageToken)
            return Self.json(
                .object([
                    ("files", .array(page.files.map(Self.fileJSON))),
                    ("nextPageToken", page.nextPageToken.map(JSON.string) ?? .null),
                ]))
        case (.delete, .file(let fileId)):
            let uid = try await user(request)
            try await registry.delete(owner: uid, fileId: fileId)
            return Response(status: .noContent)
        default:
            throw APIError(status: 405, detail: .string("Method Not Allowed"))
        }
    }

    static func fileJSON(_ record: FileRecord) -> JSON {
        var members: [(String, JSON)] = [
            ("fileId", .string(record.fileId)), ("bucket", .string(record.bucket)), ("key", .string(record.key)),
            ("contentType", .string(record.contentType)), ("status", .string(record.status.rawValue)),
            ("sizeBytes", record.sizeBytes.map { .number(String($0)) } ?? .null),
            ("createdAt", .string(record.createdAt.rfc3339)), ("updatedAt", .string(record.updatedAt.rfc3339)),
        ]
        if let reason = record.failureReason { members.append(("failureReason", .string(reason))) }
        return .object(members)
    }

    /// The caller's uid from `Authorization: Bearer <ID token>` (401 otherwise, with the
    /// reference service's wording).
    func user(_ request: Request) async throws -> String {
        let header = request.headers[.authorization]
        guard let header, Authenticator.credential(header) != nil, header.lowercased().hasPrefix("bearer ") else {
            throw APIError(status: 401, detail: .string("Missing bearer token"))
        }
        let identity: Identity
        do {
            identity = try await authenticator.identify(authorization: header)
        } catch {
            throw APIError(status: 401, detail: .string("Invalid or expired Firebase ID token"))
        }
        guard identity.kind == .user, let uid = identity.uid, !uid.isEmpty else {
            throw APIError(status: 401, detail: .string("Invalid or expired Firebase ID token"))
        }
        // App Check after the ID token, as the reference service's dependencies run.
        switch await appCheckGate.check(request.headers[Self.appCheckHeader]) {
        case .allow: break
        case .missing: throw APIError(status: 401, detail: .string("Missing App Check token"))
        case .invalid: throw APIError(status: 401, detail: .string("Invalid App Check token"))
        }
        return uid
    }

    static let appCheckHeader = HTTPField.Name("X-Firebase-AppCheck")!

    func body(_ request: inout Request) async throws -> APIRequestBody {
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(limit: maxBody)
        } catch {
            throw APIError(status: 413, detail: .string("Request body too large: the limit is \(maxBody) bytes"))
        }
        let bytes = Array(buffer.readableBytesView)
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw APIError.validation(
                type: "json_invalid", location: ["body"], message: "JSON decode error", input: .object([]),
                context: .object([("error", .string(error.message))]))
        }
        guard json.objectValue != nil else {
            throw APIError.validation(
                type: "model_attributes_type", location: ["body"], message: "Input should be a valid dictionary or object to extract fields from",
                input: json)
        }
        return APIRequestBody(json: json)
    }

    static func json(_ body: JSON, status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBufferAllocator().buffer(capacity: 256)
        buffer.writeBytes(body.serializedBytes())
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: buffer))
    }
}

/// A JSON object body checked as pydantic checks a model: every problem is collected and
/// reported together as FastAPI's 422 `{"detail":[{"type","loc","msg","input"}]}`.
struct APIRequestBody {
    let json: JSON
    var problems: [JSON] = []

    init(json: JSON) { self.json = json }

    /// A required string field (nil, with a problem recorded, when missing or not a string).
    mutating func string(_ key: String) throws -> String? {
        guard let value = json[key] else {
            problems.append(APIError.problem(type: "missing", location: ["body", key], message: "Field required", input: json))
            return nil
        }
        guard let text = value.stringValue else {
            problems.append(APIError.problem(type: "string_type", location: ["body", key], message: "Input should be a valid string", input: value))
            return nil
        }
        return text
    }

    /// An optional integer field.
    mutating func optionalInteger(_ key: String) throws -> Int64? {
        guard let value = json[key], !value.isNull else { return nil }
        guard case .number(let text) = value, let number = Int64(text) else {
            problems.append(APIError.problem(type: "int_type", location: ["body", key], message: "Input should be a valid integer", input: value))
            return nil
        }
        return number
    }

    /// Throws the collected problems, if any.
    func finish() throws {
        if !problems.isEmpty { throw APIError(status: 422, detail: .array(problems)) }
    }
}

/// An error answer of the api port: FastAPI's `{"detail": "…"}` (or a list of validation problems).
struct APIError: Error {
    var status: Int
    var detail: JSON

    init(status: Int, detail: JSON) {
        self.status = status
        self.detail = detail
    }

    /// The one table from the registry's reasons to HTTP statuses.
    init(_ error: FileRegistryError) {
        let status =
            switch error.reason {
            case .fileNotFound: 404
            case .notOwner: 403
            case .objectMissing, .notReady, .alreadyFailed, .objectChanged: 409
            case .contentTypeNotAllowed, .invalidExtension, .sizeNotAllowed, .contentMismatch, .invalidUser: 422
            case .invalidPage: 400
            }
        self.init(status: status, detail: .string(error.message))
    }

    static func problem(type: String, location: [String], message: String, input: JSON, context: JSON? = nil) -> JSON {
        var members: [(String, JSON)] = [
            ("type", .string(type)), ("loc", .array(location.map(JSON.string))), ("msg", .string(message)), ("input", input),
        ]
        if let context { members.append(("ctx", context)) }
        return .object(members)
    }

    static func validation(type: String, location: [String], message: String, input: JSON, context: JSON? = nil) -> APIError {
        APIError(status: 422, detail: .array([problem(type: type, location: location, message: message, input: input, context: context)]))
    }

    var response: Response {
        AppAPIResponder.json(.object([("detail", detail)]), status: HTTPResponse.Status(code: status))
    }
}
