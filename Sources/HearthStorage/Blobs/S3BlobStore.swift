public import HearthCore
public import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1

/// Blobs in an external S3 bucket (AWS S3, MinIO, Ceph, …) instead of the local disk: each
/// blob is an object `<prefix><id>`. Writes are spooled to a local temporary file (hashed as
/// they arrive, so memory stays bounded) and uploaded with one SigV4-signed PUT when finished
/// — the object exists in S3 only once complete. Reads are ranged GETs streamed back.
public final class S3BlobStore: BlobStore {
    public struct Configuration: Sendable {
        /// `https://s3.us-east-1.amazonaws.com` or `http://127.0.0.1:9000`; path-style requests.
        public var endpoint: URL
        public var region: String
        public var bucket: String
        /// Key prefix for blobs, e.g. `hearth/blobs/`.
        public var prefix: String
        public var accessKeyID: String
        public var secretAccessKey: String

        public init(endpoint: URL, region: String, bucket: String, prefix: String = "", accessKeyID: String, secretAccessKey: String) {
            self.endpoint = endpoint
            self.region = region
            self.bucket = bucket
            self.prefix = prefix
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
        }
    }

    public let configuration: Configuration
    let client: HTTPClient
    let spool: FilesystemBlobStore

    /// `spool` is a local directory for uploads in progress.
    public init(configuration: Configuration, client: HTTPClient = .shared, spool: URL, sharedSpoolKeepingFilesFor shared: TimeInterval? = nil) throws(HearthError) {
        self.configuration = configuration
        self.client = client
        self.spool = try FilesystemBlobStore(root: spool, sharedKeepingTemporaryFilesFor: shared)
    }

    var host: String {
        let c = configuration.endpoint
        var h = c.host ?? "localhost"
        if let p = c.port { h += ":\(p)" }
        return h
    }

    func key(_ id: String) -> String { configuration.prefix + id }

    /// A signed request (UNSIGNED-PAYLOAD: the body is not hashed, as over TLS).
    func request(_ method: HTTPMethod, key: String?, query: [(String, String)] = [], headers extra: [String: String] = [:]) -> HTTPClientRequest {
        let path = "/" + configuration.bucket + (key.map { "/" + $0 } ?? "")
        let now = Int64(Date().timeIntervalSince1970)
        let amzDate = SigV4.formatAmzDate(now)
        let scope = SigV4.Scope(date: String(amzDate.prefix(8)), region: configuration.region)
        var headers = extra
        headers["host"] = host
        headers["x-amz-date"] = amzDate
        headers["x-amz-content-sha256"] = SigV4.unsignedPayload
        let signed = headers.keys.map { $0.lowercased() }.sorted()
        let canonical = SigV4.canonicalRequest(
            method: method.rawValue, path: path, query: query, headers: headers, signedHeaders: signed, payloadHash: SigV4.unsignedPayload)
        let signature = SigV4.signature(
            secret: configuration.secretAccessKey, scope: scope,
            stringToSign: SigV4.stringToSign(amzDate: amzDate, scope: scope, canonicalRequest: canonical))
        let q = query.isEmpty ? "" : "?" + query.map { SigV4.uriEncode($0.0) + "=" + SigV4.uriEncode($0.1) }.joined(separator: "&")
        var base = configuration.endpoint.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var r = HTTPClientRequest(url: base + SigV4.uriEncode(path, keepSlash: true) + q)
        r.method = method
        for (k, v) in headers where k != "host" { r.headers.add(name: k, value: v) }
        r.headers.add(
            name: "authorization",
            value: "\(SigV4.algorithm) Credential=\(configuration.accessKeyID)/\(scope.text), SignedHeaders=\(signed.joined(separator: ";")), Signature=\(signature)")
        return r
    }

    static func failure(_ what: String, _ response: HTTPClientResponse) async -> HearthError {
        let body = (try? await response.body.collect(upTo: 64 << 10)).map { String(buffer: $0) } ?? ""
        return HearthError(.unavailable, "The S3 blob store refused \(what): HTTP \(response.status.code) \(body.prefix(300))")
    }

    public func makeWriter() throws(HearthError) -> any BlobWriter {
        S3BlobWriter(store: self, local: try spool.makeFileWriter())
    }

    func upload(_ info: BlobInfo) async throws {
        let path = try spool.path(info.id)
        guard let handle = FileHandle(forReadingAtPath: path) else { throw HearthError(.internal, "The spooled upload is missing.") }
        defer { try? handle.close() }
        var r = request(.PUT, key: key(info.id), headers: ["content-length": String(info.size)])
        let chunks = AsyncStream<ByteBuffer> { continuation in
            while let data = try? handle.read(upToCount: 1 << 20), !data.isEmpty { continuation.yield(ByteBuffer(bytes: data)) }
            continuation.finish()
        }
        r.body = .stream(chunks, length: .known(Int64(info.size)))
        let response = try await client.execute(r, timeout: .seconds(3600))
        guard response.status == .ok else { throw await Self.failure("an upload", response) }
        _ = try await response.body.collect(upTo: 1 << 20)
    }

    public func read(_ id: String, range: Range<Int64>?, chunkSize: Int) -> AsyncThrowingStream<[UInt8], any Error> {
        var headers: [String: String] = [:]
        if let range {
            if range.isEmpty { return AsyncThrowingStream { $0.finish() } }
            headers["range"] = "bytes=\(range.lowerBound)-\(range.upperBound - 1)"
        }
        let reader = S3BodyReader(client: client, request: request(.GET, key: key(id), headers: headers))
        return AsyncThrowingStream(unfolding: { try await reader.next() })
    }

    public func delete(_ id: String) async throws {
        let response = try await client.execute(request(.DELETE, key: key(id)), timeout: .seconds(60))
        guard response.status == .noContent || response.status == .ok || response.status == .notFound else {
            throw await Self.failure("a delete", response)
        }
        _ = try await response.body.collect(upTo: 1 << 20)
    }

    /// HEAD of a blob: its size, content type, ETag and Last-Modified; nil if missing.
    public func head(_ id: String) async throws -> (size: Int64, contentType: String, etag: String, lastModified: String)? {
        let response = try await client.execute(request(.HEAD, key: key(id)), timeout: .seconds(60))
        if response.status == .notFound { return nil }
        guard response.status == .ok else { throw await Self.failure("a HEAD", response) }
        let size = response.headers.first(name: "content-length").flatMap { Int64($0) } ?? 0
        return (
            size, response.headers.first(name: "content-type") ?? "application/octet-stream", response.headers.first(name: "etag") ?? "",
            response.headers.first(name: "last-modified") ?? ""
        )
    }

    /// The first `count` bytes of a blob, only if its ETag is still `ifMatch` (NOT_FOUND otherwise:
    /// the object was replaced or removed).
    public func firstBytes(_ id: String, count: Int64, ifMatch: String) async throws -> [UInt8] {
        guard count > 0 else { return [] }
        let response = try await client.execute(
            request(.GET, key: key(id), headers: ["range": "bytes=0-\(count - 1)", "if-match": ifMatch]), timeout: .seconds(60))
        guard response.status == .ok || response.status == .partialContent else {
            if response.status == .notFound || response.status == .preconditionFailed {
                throw HearthError(.notFound, "The object changed or is gone.")
            }
            throw await Self.failure("a ranged GET", response)
        }
        let body = try await response.body.collect(upTo: Int(count) + (1 << 16))
        return Array(body.readableBytesView.prefix(Int(count)))
    }

    /// DeleteObjects (`POST /bucket?delete`), up to 1,000 keys per request, quiet mode (only
    /// failures are listed). A key that does not exist counts as deleted, as S3 answers.
    public func delete(batch ids: [String]) async throws {
        var start = 0
        while start < ids.count {
            let chunk = ids[start..<min(ids.count, start + 1000)]
            start += chunk.count
            if chunk.count == 1 {
                try await delete(chunk[chunk.startIndex])
                continue
            }
            let body = Self.deleteObjectsDocument(chunk.map(key))
            var md5 = MD5Stream()
            body.withUnsafeBytes { md5.update($0) }
            var r = request(
                .POST, key: nil, query: [("delete", "")],
                headers: ["content-md5": Data(md5.finalize()).base64EncodedString(), "content-type": "application/xml"])
            r.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(r, timeout: .seconds(120))
            guard response.status == .ok else { throw await Self.failure("a batch delete", response) }
            let xml = String(buffer: try await response.body.collect(upTo: 16 << 20))
            let failed = Self.elements(xml, "Error")
            if !failed.isEmpty {
                throw HearthError(.unavailable, "The S3 blob store refused to delete \(failed.count) of \(chunk.count) blobs: \(failed[0].prefix(300))")
            }
        }
    }

    /// The DeleteObjects request document for `keys` (quiet).
    static func deleteObjectsDocument(_ keys: [String]) -> [UInt8] {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
        for key in keys {
            let escaped = key.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
                .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&apos;")
            xml += "<Object><Key>\(escaped)</Key></Object>"
        }
        xml += "</Delete>"
        return Array(xml.utf8)
    }

    public func allBlobIDs() async throws -> [String] {
        var ids: [String] = []
        var token: String?
        repeat {
            var query: [(String, String)] = [("list-type", "2"), ("prefix", configuration.prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try await client.execute(request(.GET, key: nil, query: query), timeout: .seconds(60))
            guard response.status == .ok else { throw await Self.failure("a listing", response) }
            let xml = String(buffer: try await response.body.collect(upTo: 64 << 20))
            for key in Self.elements(xml, "Key") where key.hasPrefix(configuration.prefix) { ids.append(String(key.dropFirst(configuration.prefix.count))) }
            token = Self.elements(xml, "NextContinuationToken").first
        } while token != nil
        return ids
    }

    /// The texts of every `<name>…</name>` (with the five XML entities decoded).
    static func elements(_ xml: String, _ name: String) -> [String] {
        var out: [String] = []
        var rest = Substring(xml)
        while let open = rest.range(of: "<\(name)>"), let close = rest[open.upperBound...].range(of: "</\(name)>") {
            out.append(
                String(rest[open.upperBound..<close.lowerBound]).replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                    .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'").replacingOccurrences(of: "&amp;", with: "&"))
            rest = rest[close.upperBound...]
        }
        return out
    }
}

/// Spools to a local file; `finish` uploads it and removes the spool file.
final class S3BlobWriter: BlobWriter {
    let store: S3BlobStore
    let local: FileBlobWriter

    init(store: S3BlobStore, local: FileBlobWriter) {
        self.store = store
        self.local = local
    }

    var size: Int64 { local.size }
    func write(_ bytes: UnsafeRawBufferPointer) throws(HearthError) { try local.write(bytes) }
    func abort() { local.abort() }

    func finish() async throws -> BlobInfo {
        let info = try await local.finish()
        defer { try? store.spool.delete(info.id) }
        try await store.upload(info)
        return info
    }
}

/// A ranged GET's body, pulled chunk by chunk (HTTP flow control keeps memory bounded).
actor S3BodyReader {
    let client: HTTPClient
    let request: HTTPClientRequest
    var iterator: HTTPClientResponse.Body.AsyncIterator?
    var started = false

    init(client: HTTPClient, request: HTTPClientRequest) {
        self.client = client
        self.request = request
    }

    func next() async throws -> [UInt8]? {
        if !started {
            started = true
            let response = try await client.execute(request, timeout: .seconds(3600))
            guard response.status == .ok || response.status == .partialContent else {
                if response.status == .notFound { throw HearthError(.notFound, "The object's bytes are missing.") }
                throw await S3BlobStore.failure("a download", response)
            }
            iterator = response.body.makeAsyncIterator()
        }
        guard var it = iterator else { return nil }
        iterator = nil
        guard let buffer = try await it.next(isolation: self) else { return nil }
        iterator = it
        return Array(buffer.readableBytesView)
    }
}
