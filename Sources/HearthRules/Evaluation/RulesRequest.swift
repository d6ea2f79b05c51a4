public import HearthCore

/// Who is asking: `request.auth`. `token` holds the ID token's claims (`email`,
/// `email_verified`, `firebase.sign_in_provider`, custom claims at the top level…).
public struct RulesAuth: Sendable, Hashable {
    public var uid: String { didSet { rulesValue = Self.value(uid, token) } }
    public var token: [String: Value] { didSet { rulesValue = Self.value(uid, token) } }
    /// `request.auth` as rules see it, converted once (a server can keep one `RulesAuth` per
    /// verified ID token).
    public private(set) var rulesValue: RulesValue

    public init(uid: String, token: [String: Value] = [:]) {
        self.uid = uid
        self.token = token
        rulesValue = Self.value(uid, token)
    }

    static func value(_ uid: String, _ token: [String: Value]) -> RulesValue {
        .map(["uid": .string(uid), "token": .map(RulesValue.fields(token))])
    }

    public static func == (a: RulesAuth, b: RulesAuth) -> Bool { a.uid == b.uid && a.token == b.token }
    public func hash(into h: inout Hasher) { h.combine(uid) }

    /// From decoded ID-token claims: `uid` is `user_id`, else `sub`; the claims are the token.
    public init?(claims: [String: Value]) {
        guard let uid = claims["user_id"]?.stringValue ?? claims["sub"]?.stringValue else { return nil }
        self.init(uid: uid, token: claims)
    }

}

extension Value {
    fileprivate var stringValue: String? { if case .string(let s) = self { return s }; return nil }
}

/// The constraints of a list query, which decide what `resource` can be for a `list` rule
/// (see ``Ruleset/evaluate(_:documents:ledger:options:)``) and what `request.query` holds.
public struct RulesQuery: Sendable {
    public enum Operator: String, Sendable {
        case equal = "==", notEqual = "!=", lessThan = "<", lessThanOrEqual = "<=", greaterThan = ">"
        case greaterThanOrEqual = ">=", `in` = "in", notIn = "not-in", arrayContains = "array-contains"
        case arrayContainsAny = "array-contains-any"
    }

    public enum UnaryOperator: String, Sendable { case isNull, isNaN, isNotNull, isNotNaN }

    /// A query filter, shaped like Firestore's: field filters combined with AND/OR.
    public indirect enum Filter: Sendable {
        case field(FieldPath, Operator, Value)
        case unary(FieldPath, UnaryOperator)
        case and([Filter])
        case or([Filter])
    }

    public struct Order: Sendable {
        public var field: FieldPath
        public var descending: Bool
        public init(_ field: FieldPath, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    public var filter: Filter?
    public var limit: Int64?
    public var offset: Int64
    public var orderBy: [Order]

    public init(filter: Filter? = nil, limit: Int64? = nil, offset: Int64 = 0, orderBy: [Order] = []) {
        self.filter = filter
        self.limit = limit
        self.offset = offset
        self.orderBy = orderBy
    }

    /// `request.query`: `limit` (int or null), `offset` (int, 0 by default) and `orderBy`
    /// (a map from field path to `'ASC'`/`'DESC'`, empty when the query sets no order), as
    /// Google's emulator presents them.
    public var rulesValue: RulesValue {
        var order: [String: RulesValue] = [:]
        for o in orderBy { order[o.field.canonical] = .string(o.descending ? "DESC" : "ASC") }
        return .map(["limit": limit.map { .int($0) } ?? .null, "offset": .int(offset), "orderBy": .map(order)])
    }
}

/// One request to decide: the method, what it targets, and the variables rules can read.
public struct RulesRequest: Sendable {
    /// What the request touches; it becomes `request.path`.
    public enum Target: Sendable {
        /// A single Firestore document (get, create, update, delete).
        case firestoreDocument(database: String, path: ResourcePath)
        /// A query over one collection (`list`): `path` is the collection's path.
        case firestoreCollection(database: String, path: ResourcePath)
        /// A collection-group query over every collection named `collectionId` under `parent`
        /// (the root when empty). Only matches with a `{name=**}` wildcard can cover it.
        case firestoreCollectionGroup(database: String, parent: ResourcePath, collectionId: String)
        /// A Cloud Storage object.
        case storageObject(bucket: String, name: String)
        /// A Storage listing of the objects under `prefix` (`images/`).
        case storagePrefix(bucket: String, prefix: String)

        public var service: RulesService {
            switch self {
            case .firestoreDocument, .firestoreCollection, .firestoreCollectionGroup: .firestore
            case .storageObject, .storagePrefix: .storage
            }
        }

        /// The database name `$(database)` interpolates to, for Firestore targets.
        public var database: String? {
            switch self {
            case .firestoreDocument(let d, _), .firestoreCollection(let d, _), .firestoreCollectionGroup(let d, _, _): d
            default: nil
            }
        }
    }

    public var method: RulesMethod
    public var target: Target
    /// `request.auth`; nil for an unauthenticated request (`request.auth == null`).
    public var auth: RulesAuth?
    /// `request.time`.
    public var time: Timestamp
    /// `resource`: the stored document or object before the request (nil → `null`).
    /// Ignored for `list`, where `resource` stands for every document the query can return.
    public var resource: RulesValue?
    /// `request.resource`: the document or object as it would be after a create/update
    /// (Firestore: the complete merged document). nil → absent (reading it is an error).
    public var newResource: RulesValue?
    /// The query's constraints, for `list`.
    public var query: RulesQuery?
    /// More `request` fields (Storage: `params`).
    public var additionalFields: [String: RulesValue]

    public init(method: RulesMethod, target: Target, auth: RulesAuth? = nil, time: Timestamp,
                resource: RulesValue? = nil, newResource: RulesValue? = nil, query: RulesQuery? = nil,
                additionalFields: [String: RulesValue] = [:]) {
        self.method = method
        self.target = target
        self.auth = auth
        self.time = time
        self.resource = resource
        self.newResource = newResource
        self.query = query
        self.additionalFields = additionalFields
    }

    /// A Firestore single-document request. `existing` is the stored document's data (nil
    /// when it does not exist); `after` is the complete document the write would produce
    /// (creates and updates).
    public static func firestore(_ method: RulesMethod, database: String = "(default)", path: ResourcePath,
                                 auth: RulesAuth?, time: Timestamp, existing: [String: Value]?,
                                 after: [String: Value]? = nil) -> RulesRequest {
        RulesRequest(
            method: method, target: .firestoreDocument(database: database, path: path), auth: auth, time: time,
            resource: existing.map { RulesValue.firestoreResource(database: database, path: path, data: $0) },
            newResource: after.map { RulesValue.firestoreResource(database: database, path: path, data: $0) })
    }

    /// A Firestore query (`list`) on the collection at `collection`.
    public static func firestoreQuery(database: String = "(default)", collection: ResourcePath, auth: RulesAuth?,
                                      time: Timestamp, query: RulesQuery = RulesQuery()) -> RulesRequest {
        RulesRequest(method: .list, target: .firestoreCollection(database: database, path: collection), auth: auth,
                     time: time, query: query)
    }
}
