import HearthCore
public import HearthStorage
import HearthRules
public import Hummingbird
public import Logging
import NIOCore
import HTTPTypes
import Foundation
import Synchronization

/// Firebase Storage's v0 REST API (what the Firebase SDKs use) and the Storage emulator's
/// control endpoints, on the storage port. Bytes stream through: uploads go to a blob writer
/// chunk by chunk and downloads are read chunk by chunk, so object size does not bound memory.
public struct StorageRESTResponder: HTTPResponder {
    public typealias Context = ObjectRequestContext

    let store: ObjectStore
    let authenticator: Authenticator
    let security: StorageSecurity
    let project: String
    let logger: Logger
    /// The largest object an upload may make (``RequestLimits``, 5 GiB by default).
    let maxObjectBytes: Int64
    /// The largest metadata body (JSON) of a non-upload request.
    let maxRequestBytes: Int

    public init(
        store: ObjectStore, authenticator: Authenticator, security: StorageSecurity, project: String, logger: Logger,
        maxObjectBytes: Int64 = RequestLimits.defaultObjectBytes, maxRequestBytes: Int = RequestLimits.defaultRequestBytes[.storage]!
    ) {
        self.maxObjectBytes = maxObjectBytes
        self.maxRequestBytes = maxRequestBytes
        self.store = store
        self.authenticator = authenticator
        self.security = security
        self.project = project
        self.logger = logger
    }

    var emulator: Bool { security.emulator }

    public func respond(to request: Request, context: Context) async throws -> Response {
        do {
            return try await route(context.continuingOnRead(request), context)
        } catch let e as HearthError {
            if e.code.httpStatus >= 500 {
                logger.error("storage request failed", metadata: ["path": "\(request.uri.path)", "client": "\(RequestOrigin.client(request.headers) ?? "-")", "error": "\(e)"])
            }
            if e.reason == .preconditionFailed {
                // Cloud Storage answers failed generation/metageneration conditions with 412.
                return HTTPSupport.json(
                    .object([("error", .object([("code", .number(412)), ("message", .string(e.message)), ("status", .string("FAILED_PRECONDITION"))]))]),
                    status: .preconditionFailed)
            }
            return HTTPSupport.googleError(e)
        } catch let e as RequestTooLarge {
            // Cloud Storage's 413, in its JSON error shape (google-cloud-storage: a GoogleAPICallError with code 413).
            let message = e.subject == .body
                ? "The metadata body is larger than the limit of \(e.limit) bytes."
                : "The object is larger than the limit of \(e.limit) bytes."
            return HTTPSupport.json(
                .object([("error", .object([
                    ("code", .number(413)), ("message", .string(message)),
                    ("errors", .array([.object([("message", .string(message)), ("domain", .string("global")), ("reason", .string("uploadTooLarge"))])])),
                ]))]),
                status: .contentTooLarge)
        } catch {
            logger.error("storage internal error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return HTTPSupport.googleError(HearthError(.internal, "Internal error."))
        }
    }

    /// `/v0/b/{bucket}/o[/{object}]`: the object name is everything after `o/`, percent-decoded
    /// (SDKs send it as one segment with `%2F`; a raw `/` is accepted too).
    struct Target {
        var bucket: String
        var object: String?
    }

    func route(_ request: Request, _ context: Context) async throws -> Response {
        let path = request.uri.path
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        let params = try HTTPSupport.queryParameters(request.uri.query)
        func param(_ k: String) -> String? { params.last { $0.0 == k }?.1 }
        if segments.isEmpty || segments == [""] {
            return HTTPSupport.json(.object([("emulator", .string("storage"))]))
        }
        if segments.first == "internal" { return try await internalEndpoint(request, segments) }
        if ["storage", "upload", "download"].contains(segments.first ?? "") { return try await gcs(request, segments, params) }
        guard segments.count >= 4, segments[0] == "v0", segments[1] == "b", segments[3] == "o" else {
            throw HearthError(.notFound, "Not found: \(path)")
        }
        guard let bucket = HTTPSupport.percentDecode(segments[2]) else { throw HearthError.invalidArgument("Invalid bucket name encoding.") }
        var object: String?
        if segments.count > 4 {
            guard let name = HTTPSupport.percentDecode(segments[4...].joined(separator: "/")) else {
                throw HearthError.invalidArgument("Invalid object name encoding.")
            }
            object = name
        }
        let identity = try await authenticator.identify(authorization: request.headers[.authorization])
        try await authenticator.checkAppCheck("storage", token: request.headers[AppAPIResponder.appCheckHeader], identity: identity)
        var request = request
        let method = request.headers[HTTPField.Name("X-HTTP-Method-Override")!].flatMap { HTTPRequest.Method($0.uppercased()) } ?? request.method
        switch (method, object) {
        case (.get, nil):
            return try await list(bucket, params, identity)
        case (.post, nil):
            if let id = param("upload_id") { return try await resumableCommand(&request, id, identity) }
            guard let name = param("name") else { throw HearthError.invalidArgument("Missing the object name (?name=).") }
            return try await upload(&request, bucket: bucket, name: name, params: params, identity: identity)
        case (.put, nil):
            if let id = param("upload_id") { return try await resumableCommand(&request, id, identity) }
            throw HearthError(.notFound, "Not found: PUT \(path)")
        case (.post, let name?):
            if param("create_token") != nil || param("delete_token") != nil {
                return try await tokenCommand(bucket, name, params, identity)
            }
            return try await upload(&request, bucket: bucket, name: name, params: params, identity: identity)
        case (.get, let name?):
            return try await get(request, bucket: bucket, name: name, params: params, identity: identity)
        case (.patch, let name?), (.put, let name?):
            return try await updateMetadata(&request, bucket: bucket, name: name, identity: identity)
        case (.delete, let name?):
            let existing = try await existingObject(bucket, name)
            try await security.check(identity, .delete, bucket: bucket, name: name, existing: existing, project: project)
            try await store.delete(bucket, name)
            logger.info("deleted object", metadata: ["bucket": "\(bucket)", "name": "\(name)"])
            return Response(status: .noContent)
        default:
            throw HearthError(.notFound, "Not found: \(method) \(path)")
        }
    }

    /// The object, or nil; a missing bucket is NOT_FOUND in production and empty in emulator mode.
    func existingObject(_ bucket: String, _ name: String) async throws -> StorageObject? {
        try StorageNames.validateObject(name)
        return try await store.object(bucket, name)
    }

    /// Buckets exist on first use in emulator mode, as the Storage emulator's do.
    func ensureBucket(_ bucket: String) async throws {
        if try await store.bucket(bucket) != nil { return }
        guard emulator else { throw HearthError(.notFound, "The bucket \(bucket) does not exist.") }
        try await store.createBucket(bucket, ifMissing: true)
    }

    // MARK: Reads

    func get(_ request: Request, bucket: String, name: String, params: [(String, String)], identity: Identity) async throws -> Response {
        let object = try await existingObject(bucket, name)
        let token = params.last { $0.0 == "token" }?.1
        let media = params.last { $0.0 == "alt" }?.1 == "media"
        // A download token alone authorises reading the bytes (download URLs).
        let byToken = media && token != nil && object.map { $0.downloadTokens.contains(token!) } == true
        if !byToken { try await security.check(identity, .get, bucket: bucket, name: name, existing: object, project: project) }
        guard let object else { throw HearthError(.notFound, "Not Found.") }
        if !media { return HTTPSupport.json(StorageJSON.v0(object)) }
        return try download(object, range: request.headers[.range])
    }

    func download(_ object: StorageObject, range header: String?) throws -> Response {
        var headers: HTTPFields = [
            .contentType: object.contentType, .acceptRanges: "bytes", .eTag: "\"\(object.etag)\"",
            HTTPField.Name("x-goog-hash")!: "crc32c=\(object.crc32cBase64),md5=\(object.md5Base64)",
            HTTPField.Name("x-goog-generation")!: String(object.generation),
            HTTPField.Name("x-goog-metageneration")!: String(object.metageneration),
            HTTPField.Name("x-goog-storage-class")!: "STANDARD",
            .contentDisposition: object.contentDisposition ?? "inline",
        ]
        if let c = object.cacheControl { headers[.cacheControl] = c }
        if let e = object.contentEncoding { headers[.contentEncoding] = e }
        if let l = object.contentLanguage { headers[.contentLanguage] = l }
        var status = HTTPResponse.Status.ok
        var range: Range<Int64> = 0..<object.size
        switch header.map({ HTTPByteRange.parse($0, size: object.size) }) ?? .whole {
        case .whole:
            break
        case .partial(let r):
            range = r
            status = .partialContent
            headers[.contentRange] = HTTPByteRange.contentRange(r, size: object.size)
        case .unsatisfiable:
            let message = "The requested range is not satisfiable (object size \(object.size))."
            var response = HTTPSupport.json(
                .object([("error", .object([("code", .number(416)), ("message", .string(message)), ("status", .string("OUT_OF_RANGE"))]))]),
                status: .rangeNotSatisfiable)
            response.headers[.contentRange] = "bytes */\(object.size)"
            return response
        }
        let length = range.count
        headers[.contentLength] = String(length)
        let stream = store.read(object, range: range)
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(length)) { writer in
                for try await chunk in stream { try await writer.write(ByteBuffer(bytes: chunk)) }
                try await writer.finish(nil)
            })
    }

    func list(_ bucket: String, _ params: [(String, String)], _ identity: Identity) async throws -> Response {
        func p(_ k: String) -> String? { params.last { $0.0 == k }?.1 }
        let prefix = p("prefix") ?? ""
        let delimiter = p("delimiter")
        var maxResults = 1000
        if let m = p("maxResults") {
            guard let n = Int(m), (1...1000).contains(n) else { throw HearthError.invalidArgument("maxResults must be between 1 and 1000.") }
            maxResults = n
        }
        var after: String?
        if let t = p("pageToken"), !t.isEmpty {
            guard let d = Data(base64Encoded: t), let s = String(data: d, encoding: .utf8) else { throw HearthError.invalidArgument("Invalid pageToken.") }
            after = s
        }
        try await security.check(identity, .list, bucket: bucket, name: prefix, existing: nil, project: project)
        guard try await store.bucket(bucket) != nil else {
            if emulator { return HTTPSupport.json(.object([("prefixes", .array([])), ("items", .array([]))])) }
            throw HearthError(.notFound, "The bucket \(bucket) does not exist.")
        }
        let r = try await store.list(bucket, .init(prefix: prefix, delimiter: delimiter, after: after, maxResults: maxResults))
        var members: [(String, JSON)] = [
            ("prefixes", .array(r.prefixes.map { .string($0) })),
            ("items", .array(r.objects.map { .object([("name", .string($0.name)), ("bucket", .string($0.bucket))]) })),
        ]
        if let next = r.next { members.append(("nextPageToken", .string(Data(next.utf8).base64EncodedString()))) }
        return HTTPSupport.json(.object(members))
    }

    // MARK: Metadata

    func updateMetadata(_ request: inout Request, bucket: String, name: String, identity: Identity) async throws -> Response {
        let body = try await jsonBody(&request)
        let patch = try StorageJSON.patch(body)
        guard let existing = try await existingObject(bucket, name) else {
            try await security.check(identity, .update, bucket: bucket, name: name, existing: nil, project: project)
            throw HearthError(.notFound, "Not Found.")
        }
        let after = StorageSecurity.rulesObject(patch.applied(to: existing))
        try await security.check(identity, .update, bucket: bucket, name: name, existing: existing, incoming: after, project: project)
        let updated = try await store.update(bucket, name, patch)
        return HTTPSupport.json(StorageJSON.v0(updated))
    }

    /// `?create_token=true` / `?delete_token=T` (admins): manage download tokens.
    func tokenCommand(_ bucket: String, _ name: String, _ params: [(String, String)], _ identity: Identity) async throws -> Response {
        guard identity.isAdmin else { throw HearthError(.permissionDenied, "Permission denied. Only admins may manage download tokens.") }
        guard let existing = try await existingObject(bucket, name) else { throw HearthError(.notFound, "Not Found.") }
        var patch = ObjectPatch()
        if let t = params.last(where: { $0.0 == "delete_token" })?.1 {
            patch.downloadTokens = existing.downloadTokens.filter { $0 != t }
        } else {
            patch.downloadTokens = existing.downloadTokens + [UUID().uuidString.lowercased()]
        }
        return HTTPSupport.json(StorageJSON.v0(try await store.update(bucket, name, patch)))
    }

    func jsonBody(_ request: inout Request) async throws -> JSON {
        let buffer: ByteBuffer
        buffer = try await request.collectBody(limit: maxRequestBytes)
        if buffer.readableBytes == 0 { return .object([]) }
        return try JSON.parse(buffer.readableBytesView)
    }

    // MARK: Emulator control

    func internalEndpoint(_ request: Request, _ segments: [String]) async throws -> Response {
        guard emulator else { throw HearthError(.notFound, "Not found: \(request.uri.path)") }
        var request = request
        switch (request.method, segments.count > 1 ? segments[1] : "") {
        case (.post, "reset"):
            for b in try await store.buckets() {
                var after: String?
                repeat {
                    let page = try await store.list(b.name, .init(after: after, maxResults: 1000))
                    for o in page.objects { try? await store.delete(b.name, o.name) }
                    after = page.next
                } while after != nil
            }
            try await security.rules.publish(nil, source: nil, fileName: "storage.rules", scope: "")
            logger.info("storage reset")
            return Response(status: .ok)
        case (.put, "setRules"):
            let body = try await jsonBody(&request)
            guard let file = body["rules"]?["files"]?.arrayValue?.first, let content = file["content"]?.stringValue else {
                throw HearthError.invalidArgument("Expected {\"rules\":{\"files\":[{\"name\":\"storage.rules\",\"content\":\"…\"}]}}.")
            }
            let name = file["name"]?.stringValue ?? "storage.rules"
            let ruleset: Ruleset
            do { ruleset = try Ruleset.compile(content, fileName: name) } catch {
                throw HearthError.invalidArgument("Error compiling rules:\n" + error.rendered)
            }
            guard ruleset.service == .storage else {
                throw HearthError.invalidArgument("Error compiling rules:\n\(name): this ruleset is for \(ruleset.service.rawValue), not firebase.storage.")
            }
            try await security.rules.publish(RulesStore.Loaded(ruleset, origin: "emulator endpoint"), source: content, fileName: name, scope: "")
            logger.info("loaded storage rules", metadata: ["file": "\(name)"])
            return Response(status: .ok)
        case (.get, "ruleCoverage"), (.get, "ruleCoverage.html"):
            // What the Firestore emulator's `:ruleCoverage` reports, for the storage rules.
            try await security.rules.synchronize()
            guard let loaded = security.rules.rules(for: project) else {
                throw HearthError(.notFound, "No storage rules are loaded.")
            }
            let report = RulesCoverageReport(ruleset: loaded.ruleset, coverage: loaded.accumulatedCoverage)
            if segments[1] == "ruleCoverage" { return HTTPSupport.json(report.jsonValue()) }
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: report.html())))
        default:
            throw HearthError(.notFound, "Not found: \(request.uri.path)")
        }
    }
}

