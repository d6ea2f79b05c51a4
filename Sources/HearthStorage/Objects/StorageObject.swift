public import HearthCore
import Foundation

/// An object's metadata: Cloud Storage's object resource, as Firebase Storage, the GCS JSON
/// API and S3 each present it.
public struct StorageObject: Sendable, Hashable {
    public var bucket: String
    public var name: String
    /// Changes whenever the bytes change (microseconds since the epoch, as GCS does).
    public var generation: Int64
    /// Changes whenever the metadata changes; 1 for new bytes.
    public var metageneration: Int64
    public var size: Int64
    public var contentType: String
    public var md5: [UInt8]
    public var crc32c: UInt32
    /// S3's ETag without quotes: the MD5 in hex, or `<md5 of part md5s>-<parts>` after a
    /// multipart upload.
    public var etag: String
    public var created: Timestamp
    public var updated: Timestamp
    public var cacheControl: String?
    public var contentDisposition: String?
    public var contentEncoding: String?
    public var contentLanguage: String?
    /// Custom metadata (`metadata` in Firebase/GCS, `x-amz-meta-*` in S3).
    public var custom: [String: String]
    /// Firebase download tokens (`firebaseStorageDownloadTokens`).
    public var downloadTokens: [String]
    public var blobID: String

    public init(
        bucket: String, name: String, generation: Int64, metageneration: Int64, size: Int64, contentType: String, md5: [UInt8],
        crc32c: UInt32, etag: String, created: Timestamp, updated: Timestamp, cacheControl: String? = nil,
        contentDisposition: String? = nil, contentEncoding: String? = nil, contentLanguage: String? = nil,
        custom: [String: String] = [:], downloadTokens: [String] = [], blobID: String
    ) {
        self.bucket = bucket
        self.name = name
        self.generation = generation
        self.metageneration = metageneration
        self.size = size
        self.contentType = contentType
        self.md5 = md5
        self.crc32c = crc32c
        self.etag = etag
        self.created = created
        self.updated = updated
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.contentLanguage = contentLanguage
        self.custom = custom
        self.downloadTokens = downloadTokens
        self.blobID = blobID
    }

    /// `md5Hash`: base64 of the MD5.
    public var md5Base64: String { Data(md5).base64EncodedString() }
    /// `crc32c`: base64 of the big-endian CRC-32C.
    public var crc32cBase64: String {
        Data([UInt8(crc32c >> 24), UInt8((crc32c >> 16) & 0xFF), UInt8((crc32c >> 8) & 0xFF), UInt8(crc32c & 0xFF)]).base64EncodedString()
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Metadata a writer sets on an upload (nil = the default).
public struct ObjectAttributes: Sendable, Hashable {
    public var contentType: String?
    public var cacheControl: String?
    public var contentDisposition: String?
    public var contentEncoding: String?
    public var contentLanguage: String?
    public var custom: [String: String]
    public var downloadTokens: [String]?

    public init(
        contentType: String? = nil, cacheControl: String? = nil, contentDisposition: String? = nil, contentEncoding: String? = nil,
        contentLanguage: String? = nil, custom: [String: String] = [:], downloadTokens: [String]? = nil
    ) {
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.contentLanguage = contentLanguage
        self.custom = custom
        self.downloadTokens = downloadTokens
    }
}

/// A metadata change: each field is left alone, set, or cleared.
public struct ObjectPatch: Sendable, Hashable {
    public enum Change: Sendable, Hashable {
        case keep
        case set(String)
        case clear
    }

    public var contentType: Change = .keep
    public var cacheControl: Change = .keep
    public var contentDisposition: Change = .keep
    public var contentEncoding: Change = .keep
    public var contentLanguage: Change = .keep
    /// Custom metadata keys to set (value) or remove (nil); nil = leave all alone.
    public var custom: [String: String?]?
    /// Replace every custom key (PUT semantics) instead of merging.
    public var replaceCustom: Bool = false
    public var downloadTokens: [String]?

    public init() {}

    /// The object with this change's metadata (generation, metageneration and times untouched).
    public func applied(to object: StorageObject) -> StorageObject {
        var o = object
        var contentType: String? = o.contentType
        contentType.apply(self.contentType)
        o.contentType = contentType ?? "application/octet-stream"
        o.cacheControl.apply(cacheControl)
        o.contentDisposition.apply(contentDisposition)
        o.contentEncoding.apply(contentEncoding)
        o.contentLanguage.apply(contentLanguage)
        if let custom {
            if replaceCustom { o.custom = [:] }
            for (k, v) in custom { o.custom[k] = v }
        }
        if let downloadTokens { o.downloadTokens = downloadTokens }
        return o
    }
}

extension Optional where Wrapped == String {
    mutating func apply(_ change: ObjectPatch.Change) {
        switch change {
        case .keep: break
        case .set(let s): self = s
        case .clear: self = nil
        }
    }
}

/// Conditions on the current object (GCS's `ifGenerationMatch` family; `ifGenerationMatch: 0`
/// means "only if it does not exist").
public struct ObjectPreconditions: Sendable, Hashable {
    public var ifGenerationMatch: Int64?
    public var ifGenerationNotMatch: Int64?
    public var ifMetagenerationMatch: Int64?
    public var ifMetagenerationNotMatch: Int64?

    public init(ifGenerationMatch: Int64? = nil, ifGenerationNotMatch: Int64? = nil, ifMetagenerationMatch: Int64? = nil,
                ifMetagenerationNotMatch: Int64? = nil) {
        self.ifGenerationMatch = ifGenerationMatch
        self.ifGenerationNotMatch = ifGenerationNotMatch
        self.ifMetagenerationMatch = ifMetagenerationMatch
        self.ifMetagenerationNotMatch = ifMetagenerationNotMatch
    }

    public static let none = ObjectPreconditions()

    public func check(_ current: StorageObject?) throws(HearthError) {
        let gen = current?.generation ?? 0
        if let g = ifGenerationMatch, g != gen { throw Self.failed("ifGenerationMatch") }
        if let g = ifGenerationNotMatch, g == gen { throw Self.failed("ifGenerationNotMatch") }
        if let m = ifMetagenerationMatch, m != (current?.metageneration ?? 0) { throw Self.failed("ifMetagenerationMatch") }
        if let m = ifMetagenerationNotMatch, m == (current?.metageneration ?? 0) { throw Self.failed("ifMetagenerationNotMatch") }
    }

    /// Every precondition failure's message starts with this; its reason is
    /// `.preconditionFailed` (HTTP transports answer 412).
    public static let failureMessage = "At least one of the pre-conditions you specified did not hold"

    static func failed(_ which: String) -> HearthError {
        HearthError(.failedPrecondition, "\(failureMessage) (\(which)).", reason: .preconditionFailed)
    }
}

/// Bucket and object names Hearth accepts. Names are opaque keys — never file paths — but
/// these are refused outright: empty names, more than 1,024 bytes, NUL/CR/LF, and `.`/`..`
/// as a whole name or path segment.
public enum StorageNames {
    public static let maxObjectNameBytes = 1024

    public static func validateObject(_ name: String) throws(HearthError) {
        guard !name.isEmpty else { throw .invalidArgument("The object name is empty.") }
        guard name.utf8.count <= maxObjectNameBytes else {
            throw .invalidArgument("The object name is \(name.utf8.count) bytes; the limit is \(maxObjectNameBytes).")
        }
        guard !name.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) else {
            throw .invalidArgument("The object name contains a NUL, CR or LF character.")
        }
        for seg in name.split(separator: "/", omittingEmptySubsequences: false) where seg == "." || seg == ".." {
            throw .invalidArgument("The object name contains a \"\(seg)\" segment.")
        }
    }

    /// 3–63 characters of lower-case letters, digits, `-`, `_` and `.`, starting and ending
    /// with a letter or digit (GCS and S3 agree on this subset).
    public static func validateBucket(_ name: String) throws(HearthError) {
        let bytes = Array(name.utf8)
        let okChar: (UInt8) -> Bool = { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 || $0 == 46 }
        let alnum: (UInt8) -> Bool = { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) }
        guard (3...63).contains(bytes.count) || (bytes.count <= 222 && bytes.contains(46)), bytes.allSatisfy(okChar),
              let f = bytes.first, let l = bytes.last, alnum(f), alnum(l), !name.contains("..")
        else {
            throw HearthError(
                .invalidArgument,
                "Invalid bucket name \"\(name)\": use 3-63 lower-case letters, digits, '-', '_' and '.', starting and ending with a letter or digit.",
                reason: .invalidBucketName)
        }
    }
}
