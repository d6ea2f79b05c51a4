/// What the file registry accepts: content types (each with the file extensions it may be
/// stored under), the largest upload, how long presigned URLs live, whether uploads use a
/// presigned POST whose policy enforces the size limit, and when unfinished uploads expire.
public struct FileUploadPolicy: Sendable, Equatable {
    /// Allowed content types (lower case) → allowed extensions (lower case).
    public var contentTypes: [String: Set<String>]
    /// The largest object `complete` accepts (and a strict upload's `content-length-range`).
    public var maxUploadBytes: Int64
    /// Lifetime of presigned upload and download URLs (1 second – 7 days).
    public var presignExpiresSeconds: Int
    /// Hand out presigned POST forms with `content-length-range` instead of presigned PUT URLs.
    public var strictUploads: Bool
    /// A `pending` file older than this is marked `failed` and its object deleted.
    public var pendingTimeoutSeconds: Int

    public init(
        contentTypes: [String: Set<String>] = Self.defaultContentTypes, maxUploadBytes: Int64 = 25 * 1024 * 1024,
        presignExpiresSeconds: Int = 300, strictUploads: Bool = false, pendingTimeoutSeconds: Int = 3600
    ) {
        self.contentTypes = contentTypes
        self.maxUploadBytes = maxUploadBytes
        self.presignExpiresSeconds = presignExpiresSeconds
        self.strictUploads = strictUploads
        self.pendingTimeoutSeconds = pendingTimeoutSeconds
    }

    /// Images, audio, video, PDF and plain text, each under its usual extensions.
    public static let defaultContentTypes: [String: Set<String>] = [
        "image/jpeg": ["jpg", "jpeg"], "image/png": ["png"], "image/gif": ["gif"], "image/webp": ["webp"],
        "image/heic": ["heic"], "audio/mp4": ["m4a", "mp4"], "audio/x-m4a": ["m4a"], "audio/mpeg": ["mp3"],
        "video/mp4": ["mp4"], "video/quicktime": ["mov"], "application/pdf": ["pdf"], "text/plain": ["txt"],
    ]

    /// The longest extension accepted.
    public static let maxExtensionLength = 16

    /// Checks a presign request: a known content type, an extension of letters and digits that
    /// the type may use, and (when declared) a size within the limit. Returns the content type
    /// and extension in canonical (lower) case.
    public func validate(contentType: String, fileExtension: String, declaredSize: Int64?) throws(FileRegistryError) -> (
        contentType: String, fileExtension: String
    ) {
        let type = contentType.lowercased()
        guard let extensions = contentTypes[type] else {
            throw FileRegistryError(.contentTypeNotAllowed, "Content type \(Self.quoted(contentType)) is not allowed")
        }
        let ext = fileExtension.lowercased()
        guard !ext.isEmpty, ext.utf8.count <= Self.maxExtensionLength,
            ext.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else {
            throw FileRegistryError(
                .invalidExtension, "File extension must be 1 to \(Self.maxExtensionLength) letters or digits")
        }
        guard extensions.contains(ext) else {
            throw FileRegistryError(.invalidExtension, "File extension \(Self.quoted(fileExtension)) does not match content type \(type)")
        }
        if let declaredSize {
            guard declaredSize >= 0 else { throw FileRegistryError(.sizeNotAllowed, "sizeBytes must not be negative") }
            guard declaredSize <= maxUploadBytes else {
                throw FileRegistryError(.sizeNotAllowed, "File is larger than the limit of \(maxUploadBytes) bytes")
            }
        }
        return (type, ext)
    }

    /// Checks that a uid can be a segment of an object key: 1–128 characters of letters, digits
    /// and `._@+=-`, not `.` or `..` (custom tokens may carry any uid; a `/`, a dot segment or a
    /// control character must never shape the key the server chooses).
    public static func validateKeySegment(uid: String) throws(FileRegistryError) {
        let allowed: (UInt8) -> Bool = { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array("._@+=-".utf8).contains(byte)
        }
        guard (1...128).contains(uid.utf8.count), uid != ".", uid != "..", uid.utf8.allSatisfy(allowed) else {
            throw FileRegistryError(.invalidUser, "This user id cannot be used in an object key")
        }
    }

    /// A value quoted for a message, with control characters escaped so logs and bodies stay readable.
    static func quoted(_ text: String) -> String {
        var out = "'"
        for scalar in text.unicodeScalars.prefix(64) {
            if scalar.value < 0x20 || scalar.value == 0x7F { out += "\\u{\(String(scalar.value, radix: 16))}" } else { out.unicodeScalars.append(scalar) }
        }
        return out + (text.unicodeScalars.count > 64 ? "…'" : "'")
    }
}
