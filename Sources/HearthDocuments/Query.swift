public import HearthCore

/// Firestore's StructuredQuery, as the engine understands it.
public struct Query: Sendable, Equatable {
    public enum Operator: String, Sendable, Equatable {
        case lessThan = "<", lessThanOrEqual = "<=", greaterThan = ">", greaterThanOrEqual = ">="
        case equal = "==", notEqual = "!=", arrayContains = "array-contains", `in` = "in"
        case arrayContainsAny = "array-contains-any", notIn = "not-in"

        var isInequality: Bool {
            switch self {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn: true
            default: false
            }
        }
    }

    public enum UnaryOperator: String, Sendable, Equatable {
        case isNull, isNaN, isNotNull, isNotNaN
    }

    public indirect enum Filter: Sendable, Equatable {
        case field(FieldPath, Operator, Value)
        case unary(FieldPath, UnaryOperator)
        case and([Filter])
        case or([Filter])
    }

    public struct Order: Sendable, Equatable {
        public var field: FieldPath
        public var descending: Bool
        public init(_ field: FieldPath, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    public struct Cursor: Sendable, Equatable {
        public var values: [Value]
        /// `true`: the position is just before the values (inclusive start / exclusive end).
        public var before: Bool
        public init(values: [Value], before: Bool) {
            self.values = values
            self.before = before
        }
    }

    /// The parent: the database root or a document.
    public var parent: ResourcePath
    public var collectionId: String
    public var allDescendants: Bool
    public var filter: Filter?
    public var orderBy: [Order]
    public var startAt: Cursor?
    public var endAt: Cursor?
    public var offset: Int
    public var limit: Int?
    /// Projection; nil = whole documents; an empty array = only names.
    public var select: [FieldPath]?
    /// limitToLast as the SDKs express it is a reversed query; kept for completeness.
    public init(
        parent: ResourcePath = .root, collectionId: String, allDescendants: Bool = false, filter: Filter? = nil,
        orderBy: [Order] = [], startAt: Cursor? = nil, endAt: Cursor? = nil, offset: Int = 0, limit: Int? = nil,
        select: [FieldPath]? = nil
    ) {
        self.parent = parent
        self.collectionId = collectionId
        self.allDescendants = allDescendants
        self.filter = filter
        self.orderBy = orderBy
        self.startAt = startAt
        self.endAt = endAt
        self.offset = offset
        self.limit = limit
        self.select = select
    }

    /// The collection path for a non-group query (`parent/collectionId`).
    public var collectionPath: ResourcePath { parent.appending(collectionId) }
}

/// An aggregation over a query's results.
public struct Aggregation: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case count(upTo: Int64?)
        case sum(FieldPath)
        case avg(FieldPath)
    }

    public var alias: String
    public var kind: Kind

    public init(alias: String, kind: Kind) {
        self.alias = alias
        self.kind = kind
    }
}
