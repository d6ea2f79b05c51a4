import HearthCore
import HearthStorage
import Hummingbird
import HTTPTypes
import NIOCore
import Foundation

/// The subset of the Cloud Storage JSON API that `google-cloud-storage` uses with
/// `STORAGE_EMULATOR_HOST`: buckets, object metadata, listing, copy/rewrite, media / multipart
/// / resumable uploads (308 while incomplete) and downloads with `x-goog-hash`. It is a server
/// API governed by IAM, not by security rules: admins only in production (any caller in
/// emulator mode, as the Storage emulator).
extension StorageRESTResponder {
    typealias Params = [(String, String)]

    func gcs(_ request: Request, _ segments: [String], _ params: Params) async throws -> Response {
        let identity = try await authenticator.identify(authorization: request.headers[.authorization])
        guard identity.isAdmin || emulator else {
            throw HearthError(.permissionDenied, "The Cloud Storage JSON API needs an admin credential (a service account or the admin token).")
        }
        var request = request
        func p(_ k: String) -> String? { params.last { $0.0 == k }?.1 }
        let decoded = try segments.map { s throws(HearthError) -> String in
            guard let d = HTTPSupport.percentDecode(s) else { throw .invalidArgument("Invalid percent-encoding in the path.") }
            return d
        }
        let kind = decoded[0]
        let versioned = kind == "storage"
            ? decoded.count >= 2 && decoded[1] == "v1"
            : decoded.count >= 3 && decoded[1] == "storage" && decoded[2] == "v1"
        guard versioned else { throw HearthError(.notFound, "Not found: \(request.uri.path)") }
        // /storage/v1/b[/{bucket}[/o[/{object...}]]], /upload/storage/v1/b/{bucket}/o, /download/storage/v1/b/{bucket}/o/{object}
        let rest = kind == "storage" ? Array(decoded.dropFirst(2)) : Array(decoded.dropFirst(3))
        guard rest.first == "b" else { throw HearthError(.notFound, "Not found: \(request.uri.path)") }
        let bucket = rest.count > 1 ? rest[1] : nil
        let objectPath = rest.count > 3 && rest[2] == "o" ? rest[3...].joined(separator: "/") : nil
        let base = RequestOrigin.base(request.headers, authority: request.head.authority, fallback: "127.0.0.1")

        if kind == "upload" {
            guard let bucket, rest.count == 3, rest[2] == "o" else { throw HearthError(.notFound, "Not found: \(request.uri.path)") }
            if let id = p("upload_id") { return try await gcsResumableChunk(&request, id, base) }
            return try await gcsUpload(&request, bucket, params, identity, base)
        }
        if kind == "download" || p("alt") == "media" {
            guard let bucket, let name = objectPath else { throw HearthError(.notFound, "Not found: \(request.uri.path)") }
            guard let o = try await existingObject(bucket, name) else { throw HearthError(.notFound, "No such object: \(bucket)/\(name)") }
            if let g = p("generation"), Int64(g) != o.generation { throw HearthError(.notFound, "No such object: \(bucket)/\(name)#\(g)") }
            var r = try download(o, range: request.headers[.range])
            r.headers[HTTPField.Name("x-goog-stored-content-length")!] = String(o.size)
            r.headers[HTTPField.Name("x-goog-stored-content-encoding")!] = o.contentEncoding ?? "identity"
            return r
        }
        guard let bucket else {
            switch request.method {
            case .get:
                let items = try await store.buckets().map { Self.bucketJSON($0) }
                return HTTPSupport.json(.object([("kind", .string("storage#buckets")), ("items", .array(items))]))
            case .post:
                let body = try await jsonBody(&request)
                guard let name = body["name"]?.stringValue else { throw HearthError.invalidArgument("Missing bucket name.") }
                let b = try await store.createBucket(name)
                logger.info("created bucket", metadata: ["bucket": "\(name)"])
                return HTTPSupport.json(Self.bucketJSON(b))
            default: throw HearthError(.notFound, "Not found: \(request.method) \(request.uri.path)")
            }
        }
        if rest.count == 2 {
            switch request.method {
            case .get:
                guard let b = try await store.bucket(bucket) else { throw HearthError(.notFound, "The bucket \(bucket) does not exist.") }
                return HTTPSupport.json(Self.bucketJSON(b))
            case .delete:
                try await store.deleteBucket(bucket)
                return Response(status: .noContent)
            default: throw HearthError(.notFound, "Not found: \(request.method) \(request.uri.path)")
            }
        }
        guard rest[2] == "o" else { throw HearthError(.notFound, "Not found: \(request.uri.path)") }
        guard let name = objectPath else {
            guard request.method == .get else { throw HearthError(.notFound, "Not found: \(request.method) \(request.uri.path)") }
            return try await gcsList(bucket, params, base)
        }
        // Copy and rewrite: /o/{src}/copyTo/b/{b2}/o/{dst}, /o/{src}/rewriteTo/b/{b2}/o/{dst}
        for verb in ["copyTo", "rewriteTo"] {
            if let r = rest.firstIndex(of: verb), r > 3, rest.count > r + 3, rest[r + 1] == "b", rest[r + 3] == "o", request.method == .post {
                let src = rest[3..<r].joined(separator: "/"), dstBucket = rest[r + 2], dst = rest[(r + 4)...].joined(separator: "/")
                let body = try await jsonBody(&request)
                let attributes = body.objectValue?.isEmpty == false ? try StorageJSON.attributes(body, contentType: nil).1 : nil
                let o = try await store.copy(
                    from: (bucket, src), to: (dstBucket, dst), attributes: attributes,
                    sourcePreconditions: try Self.preconditions(params, prefix: "ifSource"), preconditions: try Self.preconditions(params))
                if verb == "copyTo" { return HTTPSupport.json(Self.objectJSON(o, base)) }
                return HTTPSupport.json(.object([
                    ("kind", .string("storage#rewriteResponse")), ("totalBytesRewritten", .string(String(o.size))),
                    ("objectSize", .string(String(o.size))), ("done", .bool(true)), ("resource", Self.objectJSON(o, base)),
                ]))
            }
        }
        switch request.method {
        case .get:
            guard let o = try await existingObject(bucket, name) else { throw HearthError(.notFound, "No such object: \(bucket)/\(name)") }
            try Self.preconditions(params).check(o)
            return HTTPSupport.json(Self.objectJSON(o, base))
        case .patch, .put:
            let body = try await jsonBody(&request)
            var patch = try StorageJSON.patch(body)
            if request.method == .put { patch.replaceCustom = true }
            let o = try await store.update(bucket, name, patch, preconditions: try Self.preconditions(params))
            return HTTPSupport.json(Self.objectJSON(o, base))
        case .delete:
            try await store.delete(bucket, name, preconditions: try Self.preconditions(params))
            return Response(status: .noContent)
        default:
            throw HearthError(.notFound, "Not found: \(request.method) \(request.uri.path)")
        }
    }

    static func preconditions(_ params: Params, prefix: String = "if") throws(HearthError) -> ObjectPreconditions {
        func n(_ k: String) throws(HearthError) -> Int64? {
            guard let v = params.last(where: { $0.0 == prefix + k })?.1 else { return nil }
            guard let i = Int64(v) else { throw .invalidArgument("\(prefix + k) must be an integer.") }
            return i
        }
        return ObjectPreconditions(
            ifGenerationMatch: try n("GenerationMatch"), ifGenerationNotMatch: try n("GenerationNotMatch"),
            ifMetagenerationMatch: try n("MetagenerationMatch"), ifMetagenerationNotMatch: try n("MetagenerationNotMatch"))
    }

    static func bucketJSON(_ b: ObjectStore.Bucket) -> JSON {
        .object([
            ("kind", .string("storage#bucket")), ("id", .string(b.name)), ("name", .string(b.name)), ("projectNumber", .string("0")),
            ("metageneration", .string("1")), ("location", .string("US")), ("storageClass", .string("STANDARD")),
            ("etag", .string("CAE=")), ("timeCreated", .string(StorageJSON.time(b.created))), ("updated", .string(StorageJSON.time(b.created))),
        ])
    }

    static func objectJSON(_ o: StorageObject, _ base: String) -> JSON {
        let b = o.bucket.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? o.bucket
        let n = o.name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? o.name
        var m: [(String, JSON)] = [
            ("kind", .string("storage#object")), ("id", .string("\(o.bucket)/\(o.name)/\(o.generation)")),
            ("selfLink", .string("\(base)/storage/v1/b/\(b)/o/\(n)")),
            ("mediaLink", .string("\(base)/download/storage/v1/b/\(b)/o/\(n)?generation=\(o.generation)&alt=media")),
            ("name", .string(o.name)), ("bucket", .string(o.bucket)), ("generation", .string(String(o.generation))),
            ("metageneration", .string(String(o.metageneration))), ("contentType", .string(o.contentType)),
            ("storageClass", .string("STANDARD")), ("size", .string(String(o.size))), ("md5Hash", .string(o.md5Base64)),
            ("crc32c", .string(o.crc32cBase64)), ("etag", .string(o.etag)), ("timeCreated", .string(StorageJSON.time(o.created))),
            ("updated", .string(StorageJSON.time(o.updated))), ("timeStorageClassUpdated", .string(StorageJSON.time(o.created))),
        ]
        if let v = o.contentEncoding { m.append(("contentEncoding", .string(v))) }
        if let v = o.contentDisposition { m.append(("contentDisposition", .string(v))) }
        if let v = o.contentLanguage { m.append(("contentLanguage", .string(v))) }
        if let v = o.cacheControl { m.append(("cacheControl", .string(v))) }
        var custom = o.custom.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }
        if !o.downloadTokens.isEmpty { custom.append(("firebaseStorageDownloadTokens", .string(o.downloadTokens.joined(separator: ",")))) }
        if !custom.isEmpty { m.append(("metadata", .object(custom))) }
        return .object(m)
    }

    func gcsList(_ bucket: String, _ params: Params, _ base: String) async throws -> Response {
        func p(_ k: String) -> String? { params.last { $0.0 == k }?.1 }
        var max = 1000
        if let m = p("maxResults") {
            guard let n = Int(m), n >= 1 else { throw HearthError.invalidArgument("maxResults must be a positive integer.") }
            max = min(n, 1000)
        }
        var after: String?
        if let t = p("pageToken"), !t.isEmpty {
            guard let d = Data(base64Encoded: t), let s = String(data: d, encoding: .utf8) else { throw HearthError.invalidArgument("Invalid pageToken.") }
            after = s
        }
        let r = try await store.list(
            bucket, .init(prefix: p("prefix") ?? "", delimiter: p("delimiter"), after: after, startOffset: p("startOffset"),
                          endOffset: p("endOffset"), maxResults: max))
        var members: [(String, JSON)] = [("kind", .string("storage#objects"))]
        if !r.objects.isEmpty { members.append(("items", .array(r.objects.map { Self.objectJSON($0, base) }))) }
        if !r.prefixes.isEmpty { members.append(("prefixes", .array(r.prefixes.map { .string($0) }))) }
        if let next = r.next { members.append(("nextPageToken", .string(Data(next.utf8).base64EncodedString()))) }
        return HTTPSupport.json(.object(members))
    }

    // MARK: Uploads

    func gcsUpload(_ request: inout Request, _ bucket: String, _ params: Params, _ identity: Identity, _ base: String) async throws -> Response {
        func p(_ k: String) -> String? { params.last { $0.0 == k }?.1 }
        let preconditions = try Self.preconditions(params)
        guard try await store.bucket(bucket) != nil else { throw HearthError(.notFound, "The bucket \(bucket) does not exist.") }
        switch p("uploadType") ?? "media" {
        case "media":
            guard let name = p("name") else { throw HearthError.invalidArgument("Missing the object name (?name=).") }
            try StorageNames.validateObject(name)
            try RequestTooLarge.checkDeclaredObject(request.headers[.contentLength].flatMap { Int64($0) }, limit: maxObjectBytes)
            let writer = try store.beginUpload()
            do {
                for try await chunk in request.body {
                    try RequestTooLarge.checkObject(size: writer.size, adding: chunk.readableBytes, limit: maxObjectBytes)
                    try writer.write(chunk.readableBytesView)
                }
            } catch {
                writer.abort()
                throw Self.uploadFailure(error)
            }
            let o = try await store.commit(
                writer, bucket: bucket, name: name, attributes: ObjectAttributes(contentType: request.headers[.contentType]),
                preconditions: preconditions)
            return HTTPSupport.json(Self.objectJSON(o, base))
        case "multipart":
            guard let boundary = request.headers[.contentType].flatMap(MultipartRelated.boundary) else {
                throw HearthError.invalidArgument("A multipart upload needs Content-Type: multipart/related; boundary=….")
            }
            var parser = MultipartRelated(boundary: boundary)
            var attributes = ObjectAttributes()
            var name = p("name")
            var expectedMD5: String?, expectedCRC: String?
            let writer = try store.beginUpload()
            do {
                for try await chunk in request.body {
                    for e in try parser.feed(chunk.readableBytesView) {
                        switch e {
                        case .metadata(let bytes):
                            let json = bytes.isEmpty ? JSON.object([]) : try JSON.parse(bytes)
                            let (n, a) = try StorageJSON.attributes(json, contentType: nil)
                            attributes = a
                            if let n { name = n }
                            expectedMD5 = json["md5Hash"]?.stringValue
                            expectedCRC = json["crc32c"]?.stringValue
                        case .mediaStart(let type):
                            if attributes.contentType == nil { attributes.contentType = type }
                        case .media(let bytes):
                            try RequestTooLarge.checkObject(size: writer.size, adding: bytes.count, limit: maxObjectBytes)
                            try writer.write(bytes)
                        case .end:
                            break
                        }
                    }
                }
                try parser.finish()
                guard let name, !name.isEmpty else { throw HearthError.invalidArgument("The upload names no object.") }
                try StorageNames.validateObject(name)
            } catch {
                writer.abort()
                throw Self.uploadFailure(error)
            }
            let o = try await commitChecked(writer, bucket, name!, attributes, preconditions, md5: expectedMD5, crc: expectedCRC)
            return HTTPSupport.json(Self.objectJSON(o, base))
        case "resumable":
            let body = try await jsonBody(&request)
            var (name, attributes) = try StorageJSON.attributes(body, contentType: request.headers[HTTPField.Name("X-Upload-Content-Type")!])
            if name == nil { name = p("name") }
            guard let name, !name.isEmpty else { throw HearthError.invalidArgument("The upload names no object.") }
            try StorageNames.validateObject(name)
            let declared = request.headers[HTTPField.Name("X-Upload-Content-Length")!].flatMap { Int64($0) }
            try RequestTooLarge.checkDeclaredObject(declared, limit: maxObjectBytes)
            let descriptor = UploadDescriptor(
                attributes: attributes, declaredSize: declared, identity: identity, preconditions: preconditions,
                md5: body["md5Hash"]?.stringValue, crc32c: body["crc32c"]?.stringValue)
            let id = try await store.createUploadSession(bucket: bucket, name: name, descriptor: descriptor.encoded()).id
            let b = bucket.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? bucket
            return Response(
                status: .ok, headers: [.location: "\(base)/upload/storage/v1/b/\(b)/o?uploadType=resumable&upload_id=\(id)", .contentLength: "0"])
        case let other:
            throw HearthError.invalidArgument("Unknown uploadType \"\(other)\".")
        }
    }

    /// Commits after checking the checksums the client declared (a mismatch stores nothing).
    func commitChecked(
        _ writer: any BlobWriter, _ bucket: String, _ name: String, _ attributes: ObjectAttributes, _ preconditions: ObjectPreconditions,
        md5: String?, crc: String?
    ) async throws -> StorageObject {
        let upload = try await writer.finish()
        func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
        let crcBytes = [UInt8(upload.crc32c >> 24), UInt8((upload.crc32c >> 16) & 0xFF), UInt8((upload.crc32c >> 8) & 0xFF), UInt8(upload.crc32c & 0xFF)]
        if let md5, md5 != b64(upload.md5) {
            try? await store.blobs.delete(upload.id)
            throw HearthError.invalidArgument("Provided MD5 hash \"\(md5)\" doesn't match calculated MD5 hash \"\(b64(upload.md5))\".")
        }
        if let crc, crc != b64(crcBytes) {
            try? await store.blobs.delete(upload.id)
            throw HearthError.invalidArgument("Provided CRC32C \"\(crc)\" doesn't match calculated CRC32C \"\(b64(crcBytes))\".")
        }
        let o = try await store.install(upload, bucket: bucket, name: name, attributes: attributes, preconditions: preconditions)
        logger.info("stored object", metadata: ["bucket": "\(bucket)", "name": "\(name)", "size": "\(o.size)"])
        return o
    }

    /// `PUT <session>` with `Content-Range: bytes a-b/total|*` (or `bytes */total` to query or
    /// finish): 308 with `Range: bytes=0-N` while incomplete, the object when complete.
    func gcsResumableChunk(_ request: inout Request, _ id: String, _ base: String) async throws -> Response {
        guard var session = try await store.uploadSession(id) else { throw HearthError(.notFound, "No upload session \(id).") }
        let descriptor = try UploadDescriptor(decoding: session.descriptor)
        if request.method == .delete {
            try await store.endUploadSession(session, .cancelled)
            return Response(status: HTTPResponse.Status(code: 499))
        }
        switch session.state {
        case .finished:
            guard let o = session.finishedObject else { throw HearthError(.internal, "The finished upload session's record is unreadable.") }
            return HTTPSupport.json(Self.objectJSON(o, base))
        case .cancelled:
            throw HearthError(.notFound, "The upload session \(id) was cancelled.")
        case .active:
            break
        }
        // bytes a-b/total, bytes */total, bytes a-b/* (absent: a query)
        var start: Int64?, total: Int64?
        if let header = request.headers[.contentRange] {
            guard let range = HTTPContentRange.parse(header) else {
                throw HearthError.invalidArgument("Invalid Content-Range \"\(header)\": expected bytes first-last/total, bytes */total or bytes first-last/*.")
            }
            start = range.bytes?.lowerBound
            total = range.total
        }
        try RequestTooLarge.checkDeclaredObject(total, limit: maxObjectBytes)
        var whole: (any BlobWriter)?
        if let start {
            (session, whole) = try await receive(&request, session, declared: descriptor.declaredSize, from: start, finalizing: total != nil, total: total)
        }
        let size = whole?.size ?? session.received
        if let total, size == total {
            let writer = if let whole { whole } else { try await store.composeUpload(session) }
            let o: StorageObject
            do {
                o = try await commitChecked(
                    writer, session.bucket, session.name, descriptor.attributes, descriptor.preconditions, md5: descriptor.md5,
                    crc: descriptor.crc32c)
            } catch {
                _ = try? await store.endUploadSession(session, .cancelled)
                throw error
            }
            try await store.endUploadSession(session, .finished(StoredObjectFields.encodeObject(o)))
            return HTTPSupport.json(Self.objectJSON(o, base))
        }
        whole?.abort()
        if let total, size > total { throw HearthError.invalidArgument("Received \(size) bytes, more than the declared \(total).") }
        var headers: HTTPFields = [.contentLength: "0"]
        if size > 0 { headers[.range] = "bytes=0-\(size - 1)" }
        return Response(status: HTTPResponse.Status(code: 308, reasonPhrase: "Resume Incomplete"), headers: headers)
    }
}
