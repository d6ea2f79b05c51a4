public import HearthCore
public import HearthDocuments

/// One `files/{fileId}` document of the registry.
public struct FileRecord: Sendable, Equatable {
    public enum Status: String, Sendable {
        case pending, ready, failed
    }

    public var fileId: String
    public var ownerUid: String
    public var bucket: String
    public var key: String
    public var contentType: String
    public var sizeBytes: Int64?
    public var status: Status
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// Why a `failed` file failed.
    public var failureReason: String?
    /// The object generation `complete` checked; a later overwrite (the presigned URL may still
    /// be valid) is caught by comparing it.
    public var objectGeneration: Int64?
    /// The document's update time, the precondition of the next change.
    public var version: Timestamp

    /// The collection that holds the registry.
    public static let collection = "files"

    public static func path(_ fileId: String) -> ResourcePath { ResourcePath([collection, fileId]) }

    /// Reads a stored document; nil if it does not have the registry's shape.
    public init?(_ document: Document) {
        let fields = document.fields
        guard case .string(let owner)? = fields["ownerUid"], case .string(let bucket)? = fields["bucket"],
            case .string(let key)? = fields["key"], case .string(let type)? = fields["contentType"],
            case .string(let statusText)? = fields["status"], let status = Status(rawValue: statusText)
        else { return nil }
        fileId = document.path.lastSegment
        ownerUid = owner
        self.bucket = bucket
        self.key = key
        contentType = type
        if case .integer(let size)? = fields["sizeBytes"] { sizeBytes = size }
        self.status = status
        if case .timestamp(let t)? = fields["createdAt"] { createdAt = t } else { createdAt = document.createTime }
        if case .timestamp(let t)? = fields["updatedAt"] { updatedAt = t } else { updatedAt = document.updateTime }
        if case .string(let reason)? = fields["failureReason"] { failureReason = reason }
        if case .integer(let generation)? = fields["objectGeneration"] { objectGeneration = generation }
        version = document.updateTime
    }
}
