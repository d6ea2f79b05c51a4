import HearthCore
import HearthStorage
import Hummingbird
import HTTPTypes
import NIOCore
import Foundation

extension S3RESTResponder {
    func objectOperation(
        _ request: inout Request, bucket: String, key: String, q: [String: String], caller: S3Authenticator.Caller
    ) async throws -> Response {
        guard key.utf8.count <= StorageNames.maxObjectNameBytes else { throw S3Error.named("KeyTooLongError", "Your key is too long.") }
        switch request.method {
        case .get, .head:
            if let id = q["uploadId"] { return try await listParts(bucket, key, id) }
            return try await getObject(request, bucket: bucket, key: key)
        case .put:
            if let id = q["uploadId"] { return try await uploadPart(&request, bucket, key, id, q["partNumber"], caller) }
            if request.headers[HTTPField.Name("x-amz-copy-source")!] != nil { return try await copyObject(request, bucket, key, caller) }
            return try await putObject(&request, bucket: bucket, key: key, caller: caller)
        case .delete:
            if let id = q["uploadId"] {
                guard let upload = try await store.multipartUpload(id, bucket: bucket, key: key) else {
                    throw S3Error.named("NoSuchUpload", "The specified multipart upload does not exist.")
                }
                try await store.abortMultipartUpload(upload)
                return Response(status: .noContent)
            }
            do {
                try await store.delete(bucket, key)
            } catch let e as HearthError where e.code == .notFound && e.reason != .noSuchBucket {
                // S3 answers 204 for a key that does not exist.
            }
            return Response(status: .noContent)
        case .post:
            if q["uploads"] != nil {
                let upload = try await store.createMultipartUpload(bucket: bucket, key: key, attributes: Self.attributes(request.headers))
                return Self.xml(
                    "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(S3XML.escape(bucket))</Bucket><Key>\(S3XML.escape(key))</Key><UploadId>\(upload.id)</UploadId></InitiateMultipartUploadResult>")
            }
            if let id = q["uploadId"] { return try await completeMultipart(&request, bucket, key, id, caller) }
            throw S3Error.named("MethodNotAllowed", "The specified method is not allowed against this resource.")
        default:
            throw S3Error.named("MethodNotAllowed", "The specified method is not allowed against this resource.")
        }
    }

    /// Object metadata from S3 headers: `Content-Type`, `Cache-Control`, …, `x-amz-meta-*`.
    static func attributes(_ headers: HTTPFields) -> ObjectAttributes {
        var a = ObjectAttributes(contentType: headers[.contentType] ?? "binary/octet-stream")
        a.cacheControl = headers[.cacheControl]
        a.contentDisposition = headers[.contentDisposition]
        a.contentLanguage = headers[.contentLanguage]
        if let e = headers[.contentEncoding] {
            // `aws-chunked` describes the transfer, not the object.
            let kept = e.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.lowercased() != "aws-chunked" && !$0.isEmpty }
            if !kept.isEmpty { a.contentEncoding = kept.joined(separator: ",") }
        }
        for field in headers where field.name.canonicalName.hasPrefix("x-amz-meta-") {
            a.custom[String(field.name.canonicalName.dropFirst(11))] = field.value
        }
        return a
    }

    /// Streams a request body through the payload decoder into a blob writer.
    func receive(_ request: inout Request, into writer: any BlobWriter, caller: S3Authenticator.Caller) async throws {
        let decoded = request.headers[HTTPField.Name("x-amz-decoded-content-length")!].flatMap { Int64($0) }
        let declared = decoded ?? request.headers[.contentLength].flatMap { Int64($0) }
        if let declared, declared > maxObjectBytes {
            writer.abort()
            throw S3Error.named("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size.")
        }
        var decoder = PayloadDecoder(mode: caller.payload, declaredTrailer: request.headers[HTTPField.Name("x-amz-trailer")!])
        do {
            for try await chunk in request.body {
                // Object bytes go from NIO's buffer into the blob without a copy.
                try chunk.withUnsafeReadableBytes { raw throws(HearthError) in
                    try decoder.feed(raw) { piece throws(HearthError) in try writer.write(piece) }
                }
                if writer.size > maxObjectBytes { throw S3Error.named("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size.") }
            }
            try decoder.finish(decodedLengthHeader: decoded)
        } catch let e as S3Error {
            writer.abort()
            throw e
        } catch let e as HearthError {
            writer.abort()
            throw S3Error.from(e)
        } catch {
            writer.abort()
            throw S3Error.named("IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.")
        }
    }

    func putObject(_ request: inout Request, bucket: String, key: String, caller: S3Authenticator.Caller) async throws -> Response {
        try StorageNames.validateObject(key)
        guard try await store.bucket(bucket) != nil else { throw S3Error.named("NoSuchBucket", "The specified bucket does not exist.", resource: "/\(bucket)") }
        let writer = try store.beginUpload()
        try await receive(&request, into: writer, caller: caller)
        if let md5 = request.headers[HTTPField.Name("Content-MD5")!] {
            // Checked after the fact: the object is committed only if it matches.
            let info = try await writer.finish()
            guard Data(info.md5).base64EncodedString() == md5 else {
                try? await store.blobs.delete(info.id)
                throw S3Error.named("BadDigest", "The Content-MD5 you specified did not match what we received.")
            }
            let o = try await store.install(info, bucket: bucket, name: key, attributes: Self.attributes(request.headers))
            return Response(status: .ok, headers: [.eTag: "\"\(o.etag)\"", .contentLength: "0"])
        }
        let o = try await store.commit(writer, bucket: bucket, name: key, attributes: Self.attributes(request.headers))
        logger.info("s3 put", metadata: ["bucket": "\(bucket)", "key": "\(key)", "size": "\(o.size)"])
        return Response(status: .ok, headers: [.eTag: "\"\(o.etag)\"", .contentLength: "0"])
    }

    /// GET's query parameters that replace a response header.
    static let responseOverrides: [String: HTTPField.Name] = [
        "response-content-type": .contentType, "response-content-language": .contentLanguage, "response-expires": .expires,
        "response-cache-control": .cacheControl, "response-content-disposition": .contentDisposition,
        "response-content-encoding": .contentEncoding,
    ]

    /// Objects (or ranges) up to this size are read into memory and sent in one piece.
    static let inlineReadLimit: Int64 = 64 * 1024

    func getObject(_ request: Request, bucket: String, key: String) async throws -> Response {
        guard let o = try await store.object(bucket, key) else {
            if try await store.bucket(bucket) == nil { throw S3Error.named("NoSuchBucket", "The specified bucket does not exist.", resource: "/\(bucket)") }
            throw S3Error.named("NoSuchKey", "The specified key does not exist.", resource: "/\(bucket)/\(key)")
        }
        let etag = "\"\(o.etag)\""
        var headers: HTTPFields = [
            .contentType: o.contentType, .eTag: etag, .lastModified: HTTPDate.format(o.updated), .acceptRanges: "bytes",
        ]
        if let v = o.cacheControl { headers[.cacheControl] = v }
        if let v = o.contentDisposition { headers[.contentDisposition] = v }
        if let v = o.contentEncoding { headers[.contentEncoding] = v }
        if let v = o.contentLanguage { headers[.contentLanguage] = v }
        for (k, v) in o.custom { headers[HTTPField.Name("x-amz-meta-\(k)")!] = v }
        // Response overrides (`response-content-type=…`, as presigned download links use them).
        let overrides = request.uri.query?.contains("response-") == true ? try S3Authenticator.query(request) : []
        for (name, value) in overrides {
            guard let field = Self.responseOverrides[name] else { continue }
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw S3Error.named("InvalidArgument", "\(name) must not contain control characters.")
            }
            headers[field] = value
        }
        // Conditional requests (RFC 9110 order: If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since).
        let modified = o.updated.seconds
        if let m = request.headers[.ifMatch], !m.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).contains(where: { $0 == etag || $0 == "*" }) {
            throw S3Error.named("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
        }
        if request.headers[.ifMatch] == nil, let s = request.headers[.ifUnmodifiedSince].flatMap(HTTPDate.parse), modified > s {
            throw S3Error.named("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
        }
        if let m = request.headers[.ifNoneMatch] {
            if m.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).contains(where: { $0 == etag || $0 == "*" }) {
                return Response(status: .notModified, headers: [.eTag: etag, .lastModified: HTTPDate.format(o.updated)])
            }
        } else if let s = request.headers[.ifModifiedSince].flatMap(HTTPDate.parse), modified <= s {
            return Response(status: .notModified, headers: [.eTag: etag, .lastModified: HTTPDate.format(o.updated)])
        }
        var range: Range<Int64> = 0..<o.size
        var status = HTTPResponse.Status.ok
        if let h = request.headers[.range] {
            switch HTTPByteRange.parse(h, size: o.size) {
            case .whole: break
            case .partial(let r):
                range = r
                status = .partialContent
                headers[.contentRange] = HTTPByteRange.contentRange(r, size: o.size)
            case .unsatisfiable:
                throw S3Error.named("InvalidRange", "The requested range is not satisfiable")
            }
        }
        headers[.contentLength] = String(range.count)
        if request.method == .head { return Response(status: status, headers: headers) }
        if range.count <= Self.inlineReadLimit {
            // Small objects (most GETs) are read at once and sent as one buffer.
            let bytes = try await store.contents(o, range: range)
            guard bytes.count == range.count else { throw HearthError(.internal, "The object's bytes are shorter than its size.") }
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let stream = store.read(o, range: range)
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(range.count)) { writer in
                for try await chunk in stream { try await writer.write(ByteBuffer(bytes: chunk)) }
                try await writer.finish(nil)
            })
    }

    func copyObject(_ request: Request, _ bucket: String, _ key: String, _ caller: S3Authenticator.Caller) async throws -> Response {
        guard let raw = request.headers[HTTPField.Name("x-amz-copy-source")!], let source = HTTPSupport.percentDecode(raw.split(separator: "?").first ?? "") else {
            throw S3Error.named("InvalidArgument", "x-amz-copy-source is malformed.")
        }
        let s = source.hasPrefix("/") ? String(source.dropFirst()) : source
        guard let slash = s.firstIndex(of: "/") else { throw S3Error.named("InvalidArgument", "x-amz-copy-source must be /bucket/key.") }
        let srcBucket = String(s[..<slash]), srcKey = String(s[s.index(after: slash)...])
        guard caller.allows(bucket: srcBucket) else { throw S3Error.named("AccessDenied", "This access key may not use bucket \(srcBucket).") }
        let replace = request.headers[HTTPField.Name("x-amz-metadata-directive")!]?.uppercased() == "REPLACE"
        let o: StorageObject
        do {
            o = try await store.copy(from: (srcBucket, srcKey), to: (bucket, key), attributes: replace ? Self.attributes(request.headers) : nil)
        } catch let e as HearthError {
            throw S3Error.from(e, resource: "/\(srcBucket)/\(srcKey)")
        }
        return Self.xml("<CopyObjectResult><LastModified>\(Self.isoDate(o.updated))</LastModified><ETag>&quot;\(o.etag)&quot;</ETag></CopyObjectResult>")
    }

    // MARK: Multipart

    func uploadPart(_ request: inout Request, _ bucket: String, _ key: String, _ id: String, _ number: String?, _ caller: S3Authenticator.Caller) async throws -> Response {
        guard let n = number.flatMap(Int.init), (1...ObjectStore.maxPartNumber).contains(n) else {
            throw S3Error.named("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
        }
        guard let upload = try await store.multipartUpload(id, bucket: bucket, key: key) else {
            throw S3Error.named("NoSuchUpload", "The specified multipart upload does not exist.")
        }
        let writer = try store.beginUpload()
        try await receive(&request, into: writer, caller: caller)
        let part = try await store.commitPart(upload, number: n, writer: writer)
        return Response(status: .ok, headers: [.eTag: "\"\(part.etag)\"", .contentLength: "0"])
    }

    func completeMultipart(_ request: inout Request, _ bucket: String, _ key: String, _ id: String, _ caller: S3Authenticator.Caller) async throws -> Response {
        guard let upload = try await store.multipartUpload(id, bucket: bucket, key: key) else {
            throw S3Error.named("NoSuchUpload", "The specified multipart upload does not exist.")
        }
        let body = String(decoding: try await Self.smallBody(&request, caller, limit: maxRequestBytes), as: UTF8.self)
        var chosen: [(number: Int, etag: String)] = []
        for r in try S3XML.records(body, container: "Part") {
            guard let n = r["PartNumber"].flatMap(Int.init), let etag = r["ETag"] else {
                throw S3Error.named("MalformedXML", "Each Part needs a PartNumber and an ETag.")
            }
            chosen.append((n, etag))
        }
        let o = try await store.completeMultipartUpload(upload, parts: chosen)
        logger.info("s3 multipart complete", metadata: ["bucket": "\(bucket)", "key": "\(key)", "size": "\(o.size)"])
        return Self.xml(
            "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>/\(S3XML.escape(bucket))/\(S3XML.escape(key))</Location><Bucket>\(S3XML.escape(bucket))</Bucket><Key>\(S3XML.escape(key))</Key><ETag>&quot;\(o.etag)&quot;</ETag></CompleteMultipartUploadResult>")
    }

    func listParts(_ bucket: String, _ key: String, _ id: String) async throws -> Response {
        guard let upload = try await store.multipartUpload(id, bucket: bucket, key: key) else {
            throw S3Error.named("NoSuchUpload", "The specified multipart upload does not exist.")
        }
        var xml = "<ListPartsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(S3XML.escape(bucket))</Bucket><Key>\(S3XML.escape(key))</Key><UploadId>\(id)</UploadId><IsTruncated>false</IsTruncated>"
        for p in try await store.parts(upload) {
            xml += "<Part><PartNumber>\(p.number)</PartNumber><LastModified>\(Self.isoDate(p.modified))</LastModified><ETag>&quot;\(p.etag)&quot;</ETag><Size>\(p.size)</Size></Part>"
        }
        return Self.xml(xml + "</ListPartsResult>")
    }
}
