public import HearthCore

/// A condition on the current state of a document, checked when a write commits.
public enum Precondition: Sendable, Equatable {
    case exists(Bool)
    case updateTime(Timestamp)
}

/// A server-side change to one field, applied atomically with the write (Firestore's FieldTransform).
public struct FieldTransform: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        case serverTimestamp
        case increment(Value)
        case maximum(Value)
        case minimum(Value)
        case appendMissingElements([Value])
        case removeAllFromArray([Value])
    }

    public var field: FieldPath
    public var operation: Operation

    public init(field: FieldPath, operation: Operation) {
        self.field = field
        self.operation = operation
    }
}

/// One write of a commit: Firestore's `Write` message.
public struct Write: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Replace the document (mask nil) or only the masked fields.
        case update(fields: [String: Value], mask: [FieldPath]?)
        case delete
        /// Only field transforms (the deprecated `transform` write).
        case transform
    }

    public var path: ResourcePath
    public var kind: Kind
    public var transforms: [FieldTransform]
    public var precondition: Precondition?

    public init(path: ResourcePath, kind: Kind, transforms: [FieldTransform] = [], precondition: Precondition? = nil) {
        self.path = path
        self.kind = kind
        self.transforms = transforms
        self.precondition = precondition
    }

    public static func set(_ path: ResourcePath, _ fields: [String: Value]) -> Write {
        Write(path: path, kind: .update(fields: fields, mask: nil))
    }

    public static func create(_ path: ResourcePath, _ fields: [String: Value]) -> Write {
        Write(path: path, kind: .update(fields: fields, mask: nil), precondition: .exists(false))
    }

    public static func update(_ path: ResourcePath, _ fields: [String: Value], mask: [FieldPath]) -> Write {
        Write(path: path, kind: .update(fields: fields, mask: mask), precondition: .exists(true))
    }

    public static func delete(_ path: ResourcePath, precondition: Precondition? = nil) -> Write {
        Write(path: path, kind: .delete, precondition: precondition)
    }
}

/// The outcome of one write: its update time (the commit time, or the unchanged document's
/// time for a no-op) and the values its transforms produced.
public struct WriteResult: Sendable, Equatable {
    public var updateTime: Timestamp?
    public var transformResults: [Value]
    /// The document as the write left it (nil after a delete).
    public var document: Document?

    public init(updateTime: Timestamp?, transformResults: [Value], document: Document? = nil) {
        self.updateTime = updateTime
        self.transformResults = transformResults
        self.document = document
    }
}

public struct CommitResult: Sendable {
    public var commitTime: Timestamp
    public var writeResults: [WriteResult]
}

/// The outcome of one write of a non-atomic batch: a result or an error.
public enum BatchWriteOutcome: Sendable {
    case success(WriteResult)
    case failure(HearthError)
}
