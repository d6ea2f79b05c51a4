import Synchronization
import HearthCore
public import HearthStorage
public import Hummingbird
public import Logging
import HTTPTypes
import NIOCore
import Foundation

/// The S3 API, path-style (`/{bucket}/{key}`), on the s3 port, over the same object store as
/// Firebase Storage: buckets, objects (streamed both ways, ranges, conditional requests),
/// listing (V2, with `encoding-type=url`), copy, batch delete, multipart uploads, presigned
/// URLs and presigned POST forms. Errors are S3's XML.
public struct S3RESTResponder: HTTPResponder {
    public typealias Context = ObjectRequestContext

    let store: ObjectStore
    let auth: S3Authenticator
    let logger: Logger
    /// The largest object a PUT, a part or a POST form may carry (``RequestLimits``, 5 GiB by default).
    let maxObjectBytes: Int64
    /// The largest XML document (multipart completion, batch delete) a request may carry.
    let maxRequestBytes: Int

    public init(
        store: ObjectStore, emulator: Bool, logger: Logger, maxObjectBytes: Int64 = RequestLimits.defaultObjectBytes,
        maxRequestBytes: Int = RequestLimits.defaultRequestBytes[.s3]!
    ) {
        self.maxObjectBytes = maxObjectBytes
        self.maxRequestBytes = maxRequestBytes
        self.store = store
        self.auth = S3Authenticator(store: store, emulator: emulator)
        self.logger = logger
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        let requestID = S3RequestIDs.next()
        let head = request.method == .head
        do {
            var r = try await route(context.continuingOnRead(request))
            r.headers[HTTPField.Name("x-amz-request-id")!] = requestID
            return r
        } catch let e as S3Error {
            logger.debug("s3 request refused", metadata: ["path": "\(request.uri.path)", "code": "\(e.code)"])
            return e.response(requestID: requestID, head: head)
        } catch let e as HearthError {
            if e.code.httpStatus >= 500 { logger.error("s3 request failed", metadata: ["path": "\(request.uri.path)", "error": "\(e)"]) }
            return S3Error.from(e, resource: request.uri.path).response(requestID: requestID, head: head)
        } catch {
            logger.error("s3 internal error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return S3Error.named("InternalError", "We encountered an internal error. Please try again.").response(requestID: requestID, head: head)
        }
    }

    func route(_ request: Request) async throws -> Response {
        let path = try S3Authenticator.decodedPath(request)
        let query = try S3Authenticator.query(request)
        var request = request
        let q = Dictionary(query, uniquingKeysWith: { a, _ in a })
        let trimmed = path.hasPrefix("/") ? String(path.dropFirst()) : path
        let slash = trimmed.firstIndex(of: "/")
        let bucket = slash.map { String(trimmed[..<$0]) } ?? trimmed
        let key = slash.map { String(trimmed[trimmed.index(after: $0)...]) } ?? ""
        if request.method == .post, !bucket.isEmpty, key.isEmpty, q.isEmpty,
           request.headers[.contentType].flatMap({ MultipartStream.boundary($0, types: ["multipart/form-data"]) }) != nil {
            return try await presignedPost(&request, bucket: bucket)
        }
        let caller = try await auth.authenticate(request, path: path, query: query)
        guard caller.allows(bucket: bucket.isEmpty ? nil : bucket) || bucket.isEmpty else {
            throw S3Error.named("AccessDenied", "This access key may not use bucket \(bucket).", resource: "/\(bucket)")
        }
        if bucket.isEmpty {
            guard request.method == .get else { throw S3Error.named("MethodNotAllowed", "The specified method is not allowed against this resource.") }
            return try await listBuckets(caller)
        }
        if key.isEmpty { return try await bucketOperation(&request, bucket: bucket, q: q, caller: caller) }
        return try await objectOperation(&request, bucket: bucket, key: key, q: q, caller: caller)
    }

    // MARK: Buckets

    func listBuckets(_ caller: S3Authenticator.Caller) async throws -> Response {
        let buckets = try await store.buckets().filter { caller.allows(bucket: $0.name) }
        var xml = "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>hearth</ID><DisplayName>hearth</DisplayName></Owner><Buckets>"
        for b in buckets {
            xml += "<Bucket><Name>\(S3XML.escape(b.name))</Name><CreationDate>\(Self.isoDate(b.created))</CreationDate></Bucket>"
        }
        xml += "</Buckets></ListAllMyBucketsResult>"
        return Self.xml(xml)
    }

    func bucketOperation(_ request: inout Request, bucket: String, q: [String: String], caller: S3Authenticator.Caller) async throws -> Response {
        switch request.method {
        case .put:
            do {
                try await store.createBucket(bucket)
            } catch let e as HearthError where e.code == .alreadyExists {
                throw S3Error.named("BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.", resource: "/\(bucket)")
            } catch let e as HearthError {
                throw S3Error.named("InvalidBucketName", e.message, resource: "/\(bucket)")
            }
            logger.info("created bucket", metadata: ["bucket": "\(bucket)"])
            return Response(status: .ok, headers: [.location: "/\(bucket)", .contentLength: "0"])
        case .head:
            guard try await store.bucket(bucket) != nil else { throw S3Error.named("NoSuchBucket", "The specified bucket does not exist.") }
            return Response(status: .ok, headers: [.contentLength: "0", HTTPField.Name("x-amz-bucket-region")!: "us-east-1"])
        case .delete:
            do { try await store.deleteBucket(bucket) } catch let e as HearthError {
                throw S3Error.from(e, notFound: "NoSuchBucket", resource: "/\(bucket)")
            }
            return Response(status: .noContent)
        case .get:
            if q["location"] != nil {
                guard try await store.bucket(bucket) != nil else { throw S3Error.named("NoSuchBucket", "The specified bucket does not exist.") }
                return Self.xml("<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"></LocationConstraint>")
            }
            return try await listObjects(bucket, q)
        case .post where q["delete"] != nil:
            return try await deleteObjects(&request, bucket: bucket, caller: caller)
        default:
            throw S3Error.named("MethodNotAllowed", "The specified method is not allowed against this resource.")
        }
    }

    func listObjects(_ bucket: String, _ q: [String: String]) async throws -> Response {
        let v2 = q["list-type"] == "2"
        let urlEncode = q["encoding-type"] == "url"
        func enc(_ s: String) -> String { S3XML.escape(urlEncode ? SigV4.uriEncode(s, keepSlash: true) : s) }
        var maxKeys = 1000
        if let m = q["max-keys"] {
            guard let n = Int(m), n >= 0 else { throw S3Error.named("InvalidArgument", "max-keys must be a non-negative integer.") }
            maxKeys = min(n, 1000)
        }
        let prefix = q["prefix"] ?? ""
        let delimiter = q["delimiter"].flatMap { $0.isEmpty ? nil : $0 }
        var after: String?
        if v2, let token = q["continuation-token"], !token.isEmpty {
            guard let d = Data(base64Encoded: token), let s = String(data: d, encoding: .utf8) else {
                throw S3Error.named("InvalidArgument", "The continuation token provided is incorrect.")
            }
            after = s
        } else if v2 {
            after = q["start-after"]
        } else {
            after = q["marker"]
        }
        guard try await store.bucket(bucket) != nil else { throw S3Error.named("NoSuchBucket", "The specified bucket does not exist.", resource: "/\(bucket)") }
        let r = maxKeys == 0
            ? ObjectStore.ListResult(objects: [], prefixes: [], next: nil)
            : try await store.list(bucket, .init(prefix: prefix, delimiter: delimiter, after: after, maxResults: maxKeys))
        var xml = "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>\(S3XML.escape(bucket))</Name><Prefix>\(enc(prefix))</Prefix>"
        if let delimiter { xml += "<Delimiter>\(enc(delimiter))</Delimiter>" }
        xml += "<MaxKeys>\(maxKeys)</MaxKeys>"
        if urlEncode { xml += "<EncodingType>url</EncodingType>" }
        xml += "<IsTruncated>\(r.next != nil)</IsTruncated>"
        if v2 {
            xml += "<KeyCount>\(r.objects.count + r.prefixes.count)</KeyCount>"
            if let t = q["continuation-token"] { xml += "<ContinuationToken>\(S3XML.escape(t))</ContinuationToken>" }
            if let s = q["start-after"] { xml += "<StartAfter>\(enc(s))</StartAfter>" }
            if let next = r.next { xml += "<NextContinuationToken>\(Data(next.utf8).base64EncodedString())</NextContinuationToken>" }
        } else {
            xml += "<Marker>\(enc(q["marker"] ?? ""))</Marker>"
            if let next = r.next, delimiter != nil { xml += "<NextMarker>\(enc(next))</NextMarker>" }
        }
        for o in r.objects {
            xml += "<Contents><Key>\(enc(o.name))</Key><LastModified>\(Self.isoDate(o.updated))</LastModified><ETag>&quot;\(o.etag)&quot;</ETag><Size>\(o.size)</Size><StorageClass>STANDARD</StorageClass></Contents>"
        }
        for p in r.prefixes { xml += "<CommonPrefixes><Prefix>\(enc(p))</Prefix></CommonPrefixes>" }
        xml += "</ListBucketResult>"
        return Self.xml(xml)
    }

    func deleteObjects(_ request: inout Request, bucket: String, caller: S3Authenticator.Caller) async throws -> Response {
        let body = try await Self.smallBody(&request, caller, limit: maxRequestBytes)
        let text = String(decoding: body, as: UTF8.self)
        let keys = try S3XML.records(text, container: "Object").compactMap { $0["Key"] }
        guard !keys.isEmpty, keys.count <= 1000 else { throw S3Error.named("MalformedXML", "The request must name 1 to 1000 objects.") }
        let quiet = text.contains("<Quiet>true</Quiet>")
        guard try await store.bucket(bucket) != nil else { throw S3Error.named("NoSuchBucket", "The specified bucket does not exist.") }
        // One transaction for the whole request; a key that does not exist counts as deleted.
        try await store.deleteMany(bucket, keys)
        var xml = "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        if !quiet {
            for key in keys { xml += "<Deleted><Key>\(S3XML.escape(key))</Key></Deleted>" }
        }
        xml += "</DeleteResult>"
        return Self.xml(xml)
    }

    // MARK: Support

    static func xml(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        let text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + body
        return Response(status: status, headers: [.contentType: "application/xml"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func isoDate(_ t: Timestamp) -> String { Timestamp(seconds: t.seconds, nanos: t.nanos - t.nanos % 1_000_000).rfc3339 }

    /// A small request body (XML documents), decoded and verified like any payload.
    /// Refused as S3 refuses an oversized document: `MaxMessageLengthExceeded`, before reading
    /// when `Content-Length` already says so.
    static func smallBody(_ request: inout Request, _ caller: S3Authenticator.Caller, limit: Int) async throws -> [UInt8] {
        let tooLarge = S3Error.named("MaxMessageLengthExceeded", "Your request was too big.")
        // aws-chunked bodies carry framing besides the document: those are counted as decoded.
        var framed = false
        if case .chunked = caller.payload { framed = true }
        if !framed, let declared = request.declaredContentLength, declared > limit { throw tooLarge }
        var decoder = PayloadDecoder(mode: caller.payload, declaredTrailer: request.headers[HTTPField.Name("x-amz-trailer")!])
        var out: [UInt8] = []
        for try await chunk in request.body {
            out += try decoder.feed(chunk.readableBytesView)
            if out.count > limit { throw tooLarge }
        }
        try decoder.finish(decodedLengthHeader: nil)
        return out
    }
}

/// `x-amz-request-id` values: a random prefix chosen at start and a counter — unique per
/// process run without a random draw per request.
enum S3RequestIDs {
    static let prefix = String(UInt64.random(in: 1 << 60..<UInt64.max), radix: 36, uppercase: true)
    static let counter = Atomic<UInt64>(0)

    static func next() -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        return prefix + String(n, radix: 36, uppercase: true)
    }
}
