public import Foundation

/// An object's metadata: what the app sets on upload or `updateMetadata`, and what the server reports.
public final class StorageMetadata: @unchecked Sendable {
    public var contentType: String?
    public var customMetadata: [String: String]?
    public var cacheControl: String?
    public var contentDisposition: String?
    public var contentEncoding: String?
    public var contentLanguage: String?
    public private(set) var bucket: String = ""
    public private(set) var name: String?
    public private(set) var path: String?
    public private(set) var size: Int64 = 0
    public private(set) var md5Hash: String?
    public private(set) var generation: Int64 = 0
    public private(set) var metageneration: Int64 = 0
    public private(set) var timeCreated: Date?
    public private(set) var updated: Date?
    /// `downloadTokens` as the server lists them (comma-separated).
    var downloadTokens: String?
    /// The JSON this metadata was made from (to compute `updateMetadata`'s changes).
    var initial: [String: Any] = [:]

    public init() {}

    public convenience init(dictionary: [String: Any]) {
        self.init()
        initial = dictionary
        bucket = dictionary["bucket"] as? String ?? ""
        path = dictionary["name"] as? String
        name = path.map { String($0.split(separator: "/").last ?? Substring($0)) }
        contentType = dictionary["contentType"] as? String
        cacheControl = dictionary["cacheControl"] as? String
        contentDisposition = dictionary["contentDisposition"] as? String
        contentEncoding = dictionary["contentEncoding"] as? String
        contentLanguage = dictionary["contentLanguage"] as? String
        customMetadata = dictionary["metadata"] as? [String: String]
        size = Int64(dictionary["size"] as? String ?? "") ?? (dictionary["size"] as? NSNumber)?.int64Value ?? 0
        md5Hash = dictionary["md5Hash"] as? String
        generation = Int64(dictionary["generation"] as? String ?? "") ?? 0
        metageneration = Int64(dictionary["metageneration"] as? String ?? "") ?? 0
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        timeCreated = (dictionary["timeCreated"] as? String).flatMap(f.date(from:))
        updated = (dictionary["updated"] as? String).flatMap(f.date(from:))
        downloadTokens = dictionary["downloadTokens"] as? String
    }

    /// The writable fields as the v0 API takes them.
    func dictionaryRepresentation() -> [String: Any] {
        var out: [String: Any] = [:]
        if let contentType { out["contentType"] = contentType }
        if let cacheControl { out["cacheControl"] = cacheControl }
        if let contentDisposition { out["contentDisposition"] = contentDisposition }
        if let contentEncoding { out["contentEncoding"] = contentEncoding }
        if let contentLanguage { out["contentLanguage"] = contentLanguage }
        if let customMetadata { out["metadata"] = customMetadata }
        return out
    }

    /// The fields that differ from what the server last reported, removed ones as null (a PATCH body).
    func changes() -> [String: Any] {
        var out: [String: Any] = [:]
        let now = dictionaryRepresentation()
        for key in ["contentType", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage"] {
            let before = initial[key] as? String, after = now[key] as? String
            if before != after { out[key] = after ?? NSNull() }
        }
        let beforeCustom = initial["metadata"] as? [String: String] ?? [:], afterCustom = customMetadata ?? [:]
        if beforeCustom != afterCustom {
            var custom: [String: Any] = afterCustom
            for key in beforeCustom.keys where afterCustom[key] == nil { custom[key] = NSNull() }
            out["metadata"] = custom
        }
        return out
    }
}

/// One page of `list(maxResults:)`.
public struct StorageListResult: Sendable {
    public let items: [StorageReference]
    public let prefixes: [StorageReference]
    public let pageToken: String?
}
