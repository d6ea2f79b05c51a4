public import Foundation
import HearthClientCore

/// A path in a bucket: navigate with `child`/`parent`/`root`, upload, download, list.
public struct StorageReference: Sendable, Equatable, CustomStringConvertible {
    public let storage: Storage
    public let fullPath: String

    init(storage: Storage, path: String) {
        self.storage = storage
        fullPath = path
    }

    public static func == (a: StorageReference, b: StorageReference) -> Bool { a.storage === b.storage && a.fullPath == b.fullPath }

    public var bucket: String { storage.bucket }
    public var name: String { fullPath.split(separator: "/").last.map(String.init) ?? "" }
    public var description: String { "gs://\(bucket)/\(fullPath)" }

    public func root() -> StorageReference { StorageReference(storage: storage, path: "") }

    public func parent() -> StorageReference? {
        guard !fullPath.isEmpty else { return nil }
        return StorageReference(storage: storage, path: fullPath.split(separator: "/").dropLast().joined(separator: "/"))
    }

    public func child(_ path: String) -> StorageReference {
        let child = Self.normalize(path)
        guard !child.isEmpty else { return self }
        return StorageReference(storage: storage, path: fullPath.isEmpty ? child : "\(fullPath)/\(child)")
    }

    /// Slashes collapsed and trimmed, as the Apple SDK does.
    static func normalize(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    static let pathAllowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_.~!$'()*,;:@"))

    var objectURL: String {
        "\(storage.base)/v0/b/\(bucket)/o/\(fullPath.addingPercentEncoding(withAllowedCharacters: Self.pathAllowed) ?? fullPath)"
    }

    var uploadURL: String {
        "\(storage.base)/v0/b/\(bucket)/o?name=\(fullPath.addingPercentEncoding(withAllowedCharacters: Self.pathAllowed) ?? fullPath)"
    }

    // MARK: Requests

    func call(_ method: String, _ url: String, json: [String: Any]? = nil, body: Data? = nil, headers: [String: String] = [:],
              maxResponse: Int = 64 << 20) async throws -> ClientHTTP.Response {
        var all = try await storage.headers()
        for (k, v) in headers { all[k] = v }
        let response: ClientHTTP.Response
        do {
            response = try await ClientHTTP.shared.send(method, url, json: json, body: body, headers: all, timeout: storage.timeout, maxResponse: maxResponse)
        } catch where error.responseTooLarge {
            throw StorageErrorCode.downloadSizeExceeded.error(
                "Attempted to download object with size larger than the maximum size of \(maxResponse) bytes. Consider raising the maximum download size, or using StorageReference.write(toFile:)")
        } catch {
            throw StorageErrorCode.unknown.error("The request to the storage server failed: \(error.description)", underlying: error)
        }
        guard (200..<300).contains(response.status) else {
            throw StorageErrorCode.from(status: response.status, body: String(decoding: response.body, as: UTF8.self), bucket: bucket, path: fullPath)
        }
        return response
    }

    func decodeMetadata(_ response: ClientHTTP.Response) throws -> StorageMetadata {
        guard let json = response.json() else { throw StorageErrorCode.unknown.error("The storage server's answer is not JSON.") }
        return StorageMetadata(dictionary: json)
    }

    // MARK: Upload

    /// Uploads `data`: one multipart request up to 256 KiB, else a resumable session in 1 MiB
    /// chunks, calling `progress` after each.
    func upload(_ data: Data, metadata: StorageMetadata?, progress: @Sendable (Int64, Int64) -> Void) async throws -> StorageMetadata {
        guard !fullPath.isEmpty else { throw StorageErrorCode.invalidArgument.error("Cannot upload to the root of the bucket.") }
        var fields = metadata?.dictionaryRepresentation() ?? [:]
        let contentType = metadata?.contentType ?? "application/octet-stream"
        fields["contentType"] = contentType
        fields["name"] = fullPath
        let total = Int64(data.count)
        progress(0, total)
        if data.count <= 256 * 1024 {
            let boundary = "hearth-\(UUID().uuidString)"
            var body = Data("--\(boundary)\r\nContent-Type: application/json; charset=utf-8\r\n\r\n".utf8)
            body.append(try JSONSerialization.data(withJSONObject: fields))
            body.append(Data("\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\n\r\n".utf8))
            body.append(data)
            body.append(Data("\r\n--\(boundary)--".utf8))
            let response = try await call("POST", uploadURL, body: body, headers: [
                "X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=\(boundary)",
            ])
            progress(total, total)
            return try decodeMetadata(response)
        }
        let start = try await call("POST", uploadURL, json: fields, headers: [
            "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
            "X-Goog-Upload-Header-Content-Length": "\(data.count)", "X-Goog-Upload-Header-Content-Type": contentType,
        ])
        guard let session = start.header("X-Goog-Upload-URL") else {
            throw StorageErrorCode.unknown.error("The storage server did not open an upload session.")
        }
        let chunk = 1 << 20
        var offset = 0
        while true {
            try Task.checkCancellation()
            let end = min(offset + chunk, data.count)
            let last = end == data.count
            let response = try await call("POST", session, body: data.subdata(in: offset..<end), headers: [
                "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": last ? "upload, finalize" : "upload",
                "X-Goog-Upload-Offset": "\(offset)",
            ])
            offset = end
            progress(Int64(offset), total)
            if last { return try decodeMetadata(response) }
        }
    }

    @discardableResult
    public func putData(_ uploadData: Data, metadata: StorageMetadata? = nil) async throws -> StorageMetadata {
        try await upload(uploadData, metadata: metadata) { _, _ in }
    }

    /// As `putData`, reporting progress as it goes.
    @discardableResult
    public func putDataAsync(_ uploadData: Data, metadata: StorageMetadata? = nil, onProgress: (@Sendable (Progress?) -> Void)? = nil) async throws -> StorageMetadata {
        try await upload(uploadData, metadata: metadata) { done, total in
            let p = Progress(totalUnitCount: total)
            p.completedUnitCount = done
            onProgress?(p)
        }
    }

    /// Starts the upload and returns its task (observe `.progress`, `.success`, `.failure`).
    @discardableResult
    public func putData(_ uploadData: Data, metadata: StorageMetadata? = nil, completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)?) -> StorageUploadTask {
        let task = StorageUploadTask(reference: self)
        task.start(completion: completion) { progress in try await self.upload(uploadData, metadata: metadata, progress: progress) }
        return task
    }

    /// Uploads a file; the content type comes from the metadata, else the file's extension.
    @discardableResult
    public func putFile(from fileURL: URL, metadata: StorageMetadata? = nil) async throws -> StorageMetadata {
        let data: Data
        do { data = try Data(contentsOf: fileURL) } catch {
            throw StorageErrorCode.unknown.error("File at URL: \(fileURL.absoluteString) is not reachable. Ensure file URL is not a directory, symbolic link, or invalid url.", underlying: error)
        }
        let meta = metadata ?? StorageMetadata()
        if meta.contentType == nil { meta.contentType = Self.mimeType(forExtension: fileURL.pathExtension) }
        return try await upload(data, metadata: meta) { _, _ in }
    }

    static func mimeType(forExtension ext: String) -> String {
        switch ext.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "heic": "image/heic"
        case "m4a": "audio/mp4"
        case "mp3": "audio/mpeg"
        case "mp4": "video/mp4"
        case "mov": "video/quicktime"
        case "json": "application/json"
        case "txt": "text/plain"
        case "html": "text/html"
        case "pdf": "application/pdf"
        default: "application/octet-stream"
        }
    }

    // MARK: Download and the rest

    /// The object's bytes; fails with `downloadSizeExceeded` past `maxSize`.
    public func data(maxSize: Int64) async throws -> Data {
        let limit = Int(clamping: maxSize)
        return try await call("GET", objectURL + "?alt=media", maxResponse: limit).body
    }

    public func getData(maxSize: Int64, completion: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        Task {
            do { completion(try await data(maxSize: maxSize), nil) } catch { completion(nil, error) }
        }
    }

    /// Downloads the object into a file (replacing it) and returns the file's URL.
    @discardableResult
    public func write(toFile fileURL: URL) async throws -> URL {
        let bytes = try await call("GET", objectURL + "?alt=media", maxResponse: Int.max).body
        do { try bytes.write(to: fileURL, options: .atomic) } catch {
            throw StorageErrorCode.unknown.error("Cannot write \(fileURL.path): \(error.localizedDescription)", underlying: error)
        }
        return fileURL
    }

    /// A long-lived URL with the object's first download token.
    public func downloadURL() async throws -> URL {
        let meta = try await getMetadata()
        guard let token = meta.downloadTokens?.split(separator: ",").first, let url = URL(string: objectURL + "?alt=media&token=\(token)") else {
            throw StorageErrorCode.unknown.error("Failed to retrieve a download URL.")
        }
        return url
    }

    public func getMetadata() async throws -> StorageMetadata {
        try decodeMetadata(try await call("GET", objectURL))
    }

    /// Sends only what changed since the metadata was read (removed keys as null).
    @discardableResult
    public func updateMetadata(_ metadata: StorageMetadata) async throws -> StorageMetadata {
        try decodeMetadata(try await call("PATCH", objectURL, json: metadata.changes()))
    }

    public func delete() async throws {
        _ = try await call("DELETE", objectURL)
    }

    public func list(maxResults: Int64) async throws -> StorageListResult {
        try await list(maxResults: maxResults, pageToken: nil)
    }

    public func list(maxResults: Int64, pageToken: String?) async throws -> StorageListResult {
        guard (1...1000).contains(maxResults) else {
            throw StorageErrorCode.invalidArgument.error("Argument 'maxResults' must be between 1 and 1000 inclusive.")
        }
        return try await page(maxResults: maxResults, pageToken: pageToken)
    }

    /// Every item and prefix under this reference, page by page.
    public func listAll() async throws -> StorageListResult {
        var items: [StorageReference] = [], prefixes: [StorageReference] = []
        var token: String?
        repeat {
            let page = try await page(maxResults: nil, pageToken: token)
            items += page.items
            prefixes += page.prefixes
            token = page.pageToken
        } while token != nil
        return StorageListResult(items: items, prefixes: prefixes, pageToken: nil)
    }

    func page(maxResults: Int64?, pageToken: String?) async throws -> StorageListResult {
        var c = URLComponents(string: "\(storage.base)/v0/b/\(bucket)/o")!
        var q = [URLQueryItem(name: "delimiter", value: "/")]
        if !fullPath.isEmpty { q.append(URLQueryItem(name: "prefix", value: fullPath + "/")) }
        if let maxResults { q.append(URLQueryItem(name: "maxResults", value: "\(maxResults)")) }
        if let pageToken { q.append(URLQueryItem(name: "pageToken", value: pageToken)) }
        c.queryItems = q
        let json = try await call("GET", c.string!).json() ?? [:]
        let items = (json["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }.map { StorageReference(storage: storage, path: $0) }
        let prefixes = (json["prefixes"] as? [String] ?? []).map { StorageReference(storage: storage, path: Self.normalize($0)) }
        return StorageListResult(items: items, prefixes: prefixes, pageToken: json["nextPageToken"] as? String)
    }
}
