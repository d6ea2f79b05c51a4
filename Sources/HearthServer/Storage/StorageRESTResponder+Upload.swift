import HearthCore
import HearthStorage
import Hummingbird
import NIOCore
import HTTPTypes
import Foundation

/// Uploads: media (raw body), multipart (`multipart/related`: JSON metadata, then the bytes)
/// and resumable (start / upload / finalize / query / cancel, with the iOS and the JS SDK's
/// header variants). Storage rules judge every upload as `create`, with `request.resource`
/// built from the metadata and the real size, before the object becomes visible.
extension StorageRESTResponder {
    static let uploadProtocol = HTTPField.Name("X-Goog-Upload-Protocol")!
    static let uploadCommand = HTTPField.Name("X-Goog-Upload-Command")!
    static let uploadOffset = HTTPField.Name("X-Goog-Upload-Offset")!
    static let uploadStatus = HTTPField.Name("X-Goog-Upload-Status")!
    static let uploadURL = HTTPField.Name("X-Goog-Upload-URL")!
    static let sizeReceived = HTTPField.Name("X-Goog-Upload-Size-Received")!
    static let granularity = HTTPField.Name("X-Goog-Upload-Chunk-Granularity")!
    static let uploadID = HTTPField.Name("X-GUploader-UploadID")!

    static func header(_ request: Request, _ names: String...) -> String? {
        for n in names { if let v = request.headers[HTTPField.Name(n)!] { return v } }
        return nil
    }

    func upload(_ request: inout Request, bucket: String, name: String, params: [(String, String)], identity: Identity) async throws -> Response {
        try StorageNames.validateObject(name)
        try await ensureBucket(bucket)
        let proto = (request.headers[Self.uploadProtocol] ?? params.last { $0.0 == "uploadType" }?.1 ?? "").lowercased()
        let contentType = request.headers[.contentType]
        if proto == "resumable" { return try await resumableStart(&request, bucket: bucket, name: name, identity: identity) }
        if proto == "multipart" || (contentType.flatMap(MultipartRelated.boundary) != nil && proto != "raw" && proto != "media") {
            return try await multipartUpload(&request, bucket: bucket, name: name, identity: identity)
        }
        var attributes = ObjectAttributes(contentType: contentType ?? "application/octet-stream")
        attributes.downloadTokens = nil
        let declared = request.headers[.contentLength].flatMap { Int64($0) }
        try RequestTooLarge.checkDeclaredObject(declared, limit: maxObjectBytes)
        if let declared {
            try await precheck(identity, bucket, name, declared, attributes)
        }
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
        if let declared, declared != writer.size {
            writer.abort()
            throw HearthError.invalidArgument("The body has \(writer.size) bytes, but Content-Length said \(declared).")
        }
        let object = try await finish(writer, bucket: bucket, name: name, attributes: attributes, identity: identity)
        return HTTPSupport.json(StorageJSON.v0(object))
    }

    /// What a failed upload reports: the Hearth error or size refusal it met, else an interruption.
    static func uploadFailure(_ error: any Error) -> any Error {
        if error is HearthError || error is RequestTooLarge { return error }
        return HearthError.invalidArgument("The upload was interrupted.")
    }

    /// An early refusal before any bytes are stored, from the declared size.
    func precheck(_ identity: Identity, _ bucket: String, _ name: String, _ size: Int64, _ attributes: ObjectAttributes) async throws {
        try await security.check(
            identity, .create, bucket: bucket, name: name, existing: nil,
            incoming: StorageSecurity.incoming(bucket: bucket, name: name, size: size, attributes: attributes), project: project)
    }

    /// The final rules check with the real size, then the commit; a refused upload leaves nothing.
    func finish(_ writer: any BlobWriter, bucket: String, name: String, attributes: ObjectAttributes, identity: Identity) async throws -> StorageObject {
        var attributes = attributes
        if attributes.downloadTokens == nil || attributes.downloadTokens?.isEmpty == true {
            attributes.downloadTokens = [UUID().uuidString.lowercased()]
        }
        do {
            let existing = try await store.object(bucket, name)
            try await security.check(
                identity, .create, bucket: bucket, name: name, existing: existing,
                incoming: StorageSecurity.incoming(bucket: bucket, name: name, size: writer.size, attributes: attributes), project: project)
        } catch {
            writer.abort()
            throw error
        }
        let object = try await store.commit(writer, bucket: bucket, name: name, attributes: attributes)
        logger.info("stored object", metadata: ["bucket": "\(bucket)", "name": "\(name)", "size": "\(object.size)"])
        return object
    }

    func multipartUpload(_ request: inout Request, bucket: String, name: String, identity: Identity) async throws -> Response {
        guard let boundary = request.headers[.contentType].flatMap(MultipartRelated.boundary) else {
            throw HearthError.invalidArgument("A multipart upload needs Content-Type: multipart/related; boundary=….")
        }
        var parser = MultipartRelated(boundary: boundary)
        var attributes = ObjectAttributes()
        var objectName = name
        let writer = try store.beginUpload()
        do {
            func handle(_ events: [MultipartRelated.Event]) throws {
                for e in events {
                    switch e {
                    case .metadata(let bytes):
                        let json = bytes.isEmpty ? JSON.object([]) : try JSON.parse(bytes)
                        let (n, a) = try StorageJSON.attributes(json, contentType: nil)
                        attributes = a
                        if let n, !n.isEmpty { objectName = n }
                        try StorageNames.validateObject(objectName)
                    case .mediaStart(let type):
                        if attributes.contentType == nil { attributes.contentType = type ?? "application/octet-stream" }
                    case .media(let bytes):
                        try RequestTooLarge.checkObject(size: writer.size, adding: bytes.count, limit: maxObjectBytes)
                        try writer.write(bytes)
                    case .end:
                        break
                    }
                }
            }
            for try await chunk in request.body { try handle(try parser.feed(chunk.readableBytesView)) }
            try parser.finish()
        } catch {
            writer.abort()
            throw Self.uploadFailure(error)
        }
        if objectName != name {
            writer.abort()
            throw HearthError.invalidArgument("The metadata names \"\(objectName)\" but the request names \"\(name)\".")
        }
        let object = try await finish(writer, bucket: bucket, name: name, attributes: attributes, identity: identity)
        return HTTPSupport.json(StorageJSON.v0(object))
    }

    // MARK: Resumable

    func resumableStart(_ request: inout Request, bucket: String, name: String, identity: Identity) async throws -> Response {
        let body = try await jsonBody(&request)
        let type = Self.header(request, "X-Goog-Upload-Content-Type", "X-Goog-Upload-Header-Content-Type")
        var (_, attributes) = try StorageJSON.attributes(body, contentType: type)
        if attributes.contentType == nil { attributes.contentType = "application/octet-stream" }
        var declared: Int64?
        if let s = Self.header(request, "X-Goog-Upload-Content-Length", "X-Goog-Upload-Header-Content-Length") {
            guard let n = Int64(s), n >= 0 else { throw HearthError.invalidArgument("Invalid X-Goog-Upload-Content-Length \"\(s)\".") }
            declared = n
        }
        try RequestTooLarge.checkDeclaredObject(declared, limit: maxObjectBytes)
        try await precheck(identity, bucket, name, declared ?? 0, attributes)
        let session = try await store.createUploadSession(
            bucket: bucket, name: name, descriptor: UploadDescriptor(attributes: attributes, declaredSize: declared, identity: identity).encoded())
        let id = session.id
        let host = request.head.authority ?? "127.0.0.1"
        let encodedName = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name
        let encodedBucket = bucket.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? bucket
        let url = "\(RequestOrigin.scheme(request.headers))://\(host)/v0/b/\(encodedBucket)/o?name=\(encodedName)&upload_id=\(id)&upload_protocol=resumable"
        return Response(
            status: .ok,
            headers: [Self.uploadStatus: "active", Self.uploadURL: url, Self.granularity: "262144", Self.uploadID: id, .contentLength: "0"])
    }

    func resumableCommand(_ request: inout Request, _ id: String, _ identity: Identity) async throws -> Response {
        guard var session = try await store.uploadSession(id) else { throw HearthError(.notFound, "No upload session \(id).") }
        let descriptor = try UploadDescriptor(decoding: session.descriptor)
        let commands = Set((request.headers[Self.uploadCommand] ?? "").lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        switch session.state {
        case .cancelled:
            throw HearthError(.notFound, "The upload session \(id) was cancelled.")
        case .finished:
            if commands.contains("cancel") { throw HearthError.invalidArgument("The upload is already finalized.") }
            return try Self.finalized(session)
        case .active:
            break
        }
        if commands.contains("cancel") {
            guard try await store.endUploadSession(session, .cancelled) else { return try await resumableCommand(&request, id, identity) }
            return Response(status: .ok, headers: [Self.uploadStatus: "cancelled", .contentLength: "0"])
        }
        if commands.contains("query") {
            return Response(status: .ok, headers: [Self.uploadStatus: "active", Self.sizeReceived: String(session.received), .contentLength: "0"])
        }
        guard commands.contains("upload") || commands.contains("finalize") else {
            throw HearthError.invalidArgument("X-Goog-Upload-Command must be start, upload, finalize, query or cancel.")
        }
        var whole: (any BlobWriter)?
        if commands.contains("upload") {
            guard let offsetText = request.headers[Self.uploadOffset], let offset = Int64(offsetText), offset >= 0 else {
                throw HearthError.invalidArgument("An upload command needs X-Goog-Upload-Offset.")
            }
            // A chunk declared to run past the declared size is refused before it is read.
            if let d = descriptor.declaredSize, let n = request.headers[.contentLength].flatMap({ Int64($0) }), offset <= d, n > d - offset {
                throw HearthError.invalidArgument("The chunk would end past the declared \(d) bytes.")
            }
            (session, whole) = try await receive(
                &request, session, declared: descriptor.declaredSize, from: offset, finalizing: commands.contains("finalize"), total: nil)
        }
        guard commands.contains("finalize") else {
            return Response(status: .ok, headers: [Self.uploadStatus: "active", Self.sizeReceived: String(session.received), .contentLength: "0"])
        }
        let size = whole?.size ?? session.received
        if let d = descriptor.declaredSize, d != size {
            whole?.abort()
            throw HearthError.invalidArgument("The upload has \(size) bytes but declared \(d).")
        }
        let writer = if let whole { whole } else { try await store.composeUpload(session) }
        let object: StorageObject
        do {
            object = try await finish(
                writer, bucket: session.bucket, name: session.name, attributes: descriptor.attributes, identity: descriptor.identity)
        } catch {
            _ = try? await store.endUploadSession(session, .cancelled)
            throw error
        }
        try await store.endUploadSession(session, .finished(StoredObjectFields.encodeObject(object)))
        var r = HTTPSupport.json(StorageJSON.v0(object))
        r.headers[Self.uploadStatus] = "final"
        return r
    }

    /// The answer to a command on a finalized session: the object it made, again.
    static func finalized(_ session: ObjectStore.UploadSession) throws -> Response {
        guard let object = session.finishedObject else { throw HearthError(.internal, "The finished upload session's record is unreadable.") }
        var r = HTTPSupport.json(StorageJSON.v0(object))
        r.headers[Self.uploadStatus] = "final"
        r.headers[Self.sizeReceived] = String(object.size)
        return r
    }

    /// Reads a chunk of a resumable upload that starts at byte `offset` of the object. A client
    /// resending bytes the server already has (after a lost response) has them skipped; a
    /// dropped connection keeps what arrived, so the client can query and resume; a refused
    /// chunk (too large, past the declared size) keeps nothing. The chunk is stored as the
    /// session's next part — except the whole upload in its finalizing request (`finalizing`,
    /// no bytes stored before, and `total` bytes when the client says how many), which comes
    /// back as a writer to finish as the object, never stored twice.
    func receive(
        _ request: inout Request, _ session: ObjectStore.UploadSession, declared: Int64?, from offset: Int64, finalizing: Bool, total: Int64?
    ) async throws -> (ObjectStore.UploadSession, (any BlobWriter)?) {
        let received = session.received
        guard offset <= received else {
            throw HearthError.invalidArgument("The chunk starts at byte \(offset), past the \(received) bytes received.")
        }
        var skip = received - offset
        let writer = try store.beginUpload()
        var interrupted = false
        do {
            for try await chunk in request.body {
                var view = chunk.readableBytesView[...]
                if skip > 0 {
                    let n = Int(min(Int64(view.count), skip))
                    view = view.dropFirst(n)
                    skip -= Int64(n)
                }
                try RequestTooLarge.checkObject(size: received + writer.size, adding: view.count, limit: maxObjectBytes)
                if let d = declared, received + writer.size + Int64(view.count) > d {
                    throw HearthError.invalidArgument("The upload is larger than its declared \(d) bytes.")
                }
                if !view.isEmpty { try writer.write(view) }
            }
        } catch let e as HearthError {
            writer.abort()
            throw e
        } catch let e as RequestTooLarge {
            writer.abort()
            throw e
        } catch {
            interrupted = true
        }
        if !interrupted, finalizing, received == 0, session.partCount == 0, total == nil || total == writer.size {
            return (session, writer)
        }
        let now = try await store.appendUploadPart(session, at: received, writer: writer)
        if interrupted { throw HearthError.invalidArgument("The upload chunk was interrupted after \(now.received) bytes.") }
        return (now, nil)
    }
}
