import Foundation
import HearthFirestoreProto
import SwiftProtobuf

/// A query over one collection (or every collection with an id, for collection groups).
///
/// Queries are values: every builder returns a new `Query`. The Apple SDK raises an Objective-C
/// exception for a query it refuses (e.g. two `!=` filters, a cursor with more values than
/// orders); Swift cannot catch those, and the builders do not throw, so here the first such error
/// is kept in the query (`buildError`) and every way of running it — `getDocuments`, listeners,
/// aggregations — fails with it: an `NSError` in `FirestoreErrorDomain`, code `invalidArgument`,
/// with the Apple SDK's message.
public class Query: @unchecked Sendable {
    public let firestore: Firestore
    let parentPath: String
    let collectionIDValue: String
    let allDescendants: Bool
    /// Top-level filters, ANDed together.
    var filters: [ParsedFilter] = []
    /// The orders the app asked for, in order.
    var explicitOrders: [QueryOrder] = []
    var limitValue: Int32?
    var limitType: LimitType = .first
    var startAt: QueryBound?
    var endAt: QueryBound?
    /// The first error made while building this query (reported when it runs).
    var buildError: NSError?

    enum LimitType: Sendable { case first, last }

    init(firestore: Firestore, parent: String, collectionID: String, allDescendants: Bool) {
        self.firestore = firestore
        parentPath = parent
        collectionIDValue = collectionID
        self.allDescendants = allDescendants
    }

    /// A copy changed by `change`; a thrown error is kept as the copy's `buildError`. Once a query
    /// has an error, later builders keep that first error and change nothing.
    func copy(_ change: (Query) throws -> Void) -> Query {
        let q = Query(firestore: firestore, parent: parentPath, collectionID: collectionIDValue, allDescendants: allDescendants)
        q.filters = filters
        q.explicitOrders = explicitOrders
        q.limitValue = limitValue
        q.limitType = limitType
        q.startAt = startAt
        q.endAt = endAt
        q.buildError = buildError
        guard buildError == nil else { return q }
        do {
            try change(q)
        } catch {
            q.buildError = error as NSError
        }
        return q
    }

    static func invalid(_ message: String) -> NSError { FirestoreErrorCode.invalidArgument.error(message) }

    /// The collection this query is over (`parent/collectionID`; for collection groups, the parent).
    var queryPath: [String] {
        let parent = parentPath.split(separator: "/").map(String.init)
        return allDescendants ? parent : parent + [collectionIDValue]
    }

    var parentName: String {
        parentPath.isEmpty ? "\(firestore.databaseName)/documents" : firestore.documentName(parentPath)
    }

    // MARK: Filters

    /// Adds a filter (a field filter or an `orFilter`/`andFilter`); an empty composite changes nothing.
    public func whereFilter(_ filter: Filter) -> Query {
        copy { q in
            guard let parsed = try self.parse(filter) else { return }
            // Check each new field filter against the query's and the ones before it in `filter`.
            var seen = q.filters.flatMap(\.flattened).map(\.op)
            for (_, op) in parsed.flattened {
                if let conflict = seen.first(where: { op.conflicting.contains($0) }) {
                    throw conflict == op
                        ? Self.invalid("Invalid Query. You cannot use more than one '\(op.describe)' filter.")
                        : Self.invalid("Invalid Query. You cannot use '\(op.describe)' filters with '\(conflict.describe)' filters.")
                }
                seen.append(op)
            }
            q.filters.append(parsed)
        }
    }

    func parse(_ filter: Filter) throws -> ParsedFilter? {
        switch filter.kind {
        case .field(let field, let op, let value):
            return try parseField(field.resolve(), op, value)
        case .composite(let op, let children):
            let parsed = try children.compactMap { try parse($0) }
            if parsed.isEmpty { return nil }
            if parsed.count == 1 { return parsed[0] }
            return .composite(op, parsed)
        }
    }

    func parseField(_ path: FieldPath, _ op: FilterOperator, _ value: Any) throws -> ParsedFilter {
        let parsed = try firestore.reader.parseArgument(value)
        if op.isDisjunctive {
            guard case .arrayValue(let array) = parsed.valueType, !array.values.isEmpty else {
                throw Self.invalid("Invalid Query. A non-empty array is required for '\(op.describe)' filters.")
            }
        }
        guard path == FieldPath.documentID() else { return .field(path, op, parsed) }
        if op.isArrayOperator {
            throw Self.invalid("Invalid query. You can't perform \(op.describe) queries on document ID since document IDs are not arrays.")
        }
        if op == .in || op == .notIn, case .arrayValue(let array) = parsed.valueType {
            var references = Google_Firestore_V1_Value()
            references.arrayValue.values = try zip(array.values, value as? [Any] ?? []).map { try documentIDReference($0, raw: $1) }
            return .field(path, op, references)
        }
        return .field(path, op, try documentIDReference(parsed, raw: value))
    }

    /// The reference an id names below the query's collection (a path below its parent for
    /// collection groups), refused with the Apple SDK's message for where it was given: `slash`
    /// for a path in a plain collection's query, `oddPath` for a path that is not a document's.
    func reference(_ id: String, slash: String, oddPath: (String) -> String) throws -> Google_Firestore_V1_Value {
        if !allDescendants && id.contains("/") { throw Self.invalid(slash) }
        let path = queryPath + id.split(separator: "/").map(String.init)
        guard path.count % 2 == 0 else { throw Self.invalid(oddPath(path.joined(separator: "/"))) }
        var reference = Google_Firestore_V1_Value()
        reference.referenceValue = firestore.documentName(path.joined(separator: "/"))
        return reference
    }

    /// A document-ID filter value: a plain id (a path for collection groups) or a reference.
    func documentIDReference(_ value: Google_Firestore_V1_Value, raw: Any) throws -> Google_Firestore_V1_Value {
        switch value.valueType {
        case .referenceValue: return value
        case .stringValue(let id):
            if id.isEmpty {
                throw Self.invalid("Invalid query. When querying by document ID you must provide a valid document ID, but it was an empty string.")
            }
            return try reference(
                id, slash: "Invalid query. When querying a collection by document ID you must provide a plain document ID, but '\(id)' contains a '/' character.",
                oddPath: { "Invalid query. When querying a collection group by document ID, the value provided must result in a valid document path, but '\($0)' is not because it has an odd number of segments." })
        default:
            throw Self.invalid("Invalid query. When querying by document ID you must provide a valid string or DocumentReference, but it was of type: \(type(of: raw))")
        }
    }

    public func whereField(_ field: String, isEqualTo value: Any) -> Query { whereFilter(.whereField(field, isEqualTo: value)) }
    public func whereField(_ path: FieldPath, isEqualTo value: Any) -> Query { whereFilter(.whereField(path, isEqualTo: value)) }
    public func whereField(_ field: String, isNotEqualTo value: Any) -> Query { whereFilter(.whereField(field, isNotEqualTo: value)) }
    public func whereField(_ path: FieldPath, isNotEqualTo value: Any) -> Query { whereFilter(.whereField(path, isNotEqualTo: value)) }
    public func whereField(_ field: String, isLessThan value: Any) -> Query { whereFilter(.whereField(field, isLessThan: value)) }
    public func whereField(_ path: FieldPath, isLessThan value: Any) -> Query { whereFilter(.whereField(path, isLessThan: value)) }
    public func whereField(_ field: String, isLessThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(field, isLessThanOrEqualTo: value)) }
    public func whereField(_ path: FieldPath, isLessThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(path, isLessThanOrEqualTo: value)) }
    public func whereField(_ field: String, isGreaterThan value: Any) -> Query { whereFilter(.whereField(field, isGreaterThan: value)) }
    public func whereField(_ path: FieldPath, isGreaterThan value: Any) -> Query { whereFilter(.whereField(path, isGreaterThan: value)) }
    public func whereField(_ field: String, isGreaterThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(field, isGreaterOrEqualTo: value)) }
    public func whereField(_ path: FieldPath, isGreaterThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(path, isGreaterOrEqualTo: value)) }
    public func whereField(_ field: String, arrayContains value: Any) -> Query { whereFilter(.whereField(field, arrayContains: value)) }
    public func whereField(_ path: FieldPath, arrayContains value: Any) -> Query { whereFilter(.whereField(path, arrayContains: value)) }
    public func whereField(_ field: String, arrayContainsAny values: [Any]) -> Query { whereFilter(.whereField(field, arrayContainsAny: values)) }
    public func whereField(_ path: FieldPath, arrayContainsAny values: [Any]) -> Query { whereFilter(.whereField(path, arrayContainsAny: values)) }
    public func whereField(_ field: String, in values: [Any]) -> Query { whereFilter(.whereField(field, in: values)) }
    public func whereField(_ path: FieldPath, in values: [Any]) -> Query { whereFilter(.whereField(path, in: values)) }
    public func whereField(_ field: String, notIn values: [Any]) -> Query { whereFilter(.whereField(field, notIn: values)) }
    public func whereField(_ path: FieldPath, notIn values: [Any]) -> Query { whereFilter(.whereField(path, notIn: values)) }

    // MARK: Orders and limits

    public func order(by field: String) -> Query { order(by: field, descending: false) }
    public func order(by path: FieldPath) -> Query { order(by: path, descending: false) }

    public func order(by field: String, descending: Bool) -> Query {
        do {
            return order(by: try FieldPath.parse(dotted: field), descending: descending)
        } catch {
            return copy { _ in throw error }
        }
    }

    public func order(by path: FieldPath, descending: Bool) -> Query {
        copy { q in
            if q.startAt != nil {
                throw Self.invalid("Invalid query. You must not specify a starting point before specifying the order by.")
            }
            if q.endAt != nil {
                throw Self.invalid("Invalid query. You must not specify an ending point before specifying the order by.")
            }
            q.explicitOrders.append(QueryOrder(path: path, descending: descending))
        }
    }

    /// The first `limit` results.
    public func limit(to limit: Int) -> Query { limited(limit, .first) }

    /// The last `limit` results (in the query's order); needs at least one `order(by:)`.
    public func limit(toLast limit: Int) -> Query { limited(limit, .last) }

    func limited(_ limit: Int, _ type: LimitType) -> Query {
        copy { q in
            guard limit > 0 else { throw Self.invalid("Invalid Query. Query limit (\(limit)) is invalid. Limit must be positive.") }
            q.limitValue = Int32(clamping: limit)
            q.limitType = type
        }
    }

    // MARK: Cursors

    /// Starts at the position of these values of the query's orders (inclusive).
    public func start(at fieldValues: [Any]) -> Query { copy { $0.startAt = try self.bound(fieldValues, inclusive: true) } }
    /// Starts after the position of these values of the query's orders.
    public func start(after fieldValues: [Any]) -> Query { copy { $0.startAt = try self.bound(fieldValues, inclusive: false) } }
    /// Ends before the position of these values of the query's orders.
    public func end(before fieldValues: [Any]) -> Query { copy { $0.endAt = try self.bound(fieldValues, inclusive: false) } }
    /// Ends at the position of these values of the query's orders (inclusive).
    public func end(at fieldValues: [Any]) -> Query { copy { $0.endAt = try self.bound(fieldValues, inclusive: true) } }

    /// Starts at this document (its values of every order, the implicit ones and its name included).
    public func start(atDocument document: DocumentSnapshot) -> Query { copy { $0.startAt = try self.bound(document, inclusive: true) } }
    public func start(afterDocument document: DocumentSnapshot) -> Query { copy { $0.startAt = try self.bound(document, inclusive: false) } }
    public func end(beforeDocument document: DocumentSnapshot) -> Query { copy { $0.endAt = try self.bound(document, inclusive: false) } }
    public func end(atDocument document: DocumentSnapshot) -> Query { copy { $0.endAt = try self.bound(document, inclusive: true) } }

    /// A cursor from values, matched to the explicit orders as the app wrote them.
    func bound(_ fieldValues: [Any], inclusive: Bool) throws -> QueryBound {
        guard fieldValues.count <= explicitOrders.count else {
            throw Self.invalid("Invalid query. You are trying to start or end a query using more values than were specified in the order by.")
        }
        var values: [Google_Firestore_V1_Value] = []
        for (raw, order) in zip(fieldValues, explicitOrders) {
            let value = try firestore.reader.parseArgument(raw)
            guard order.path == FieldPath.documentID() else {
                values.append(value)
                continue
            }
            guard case .stringValue(let id) = value.valueType else {
                throw Self.invalid("Invalid query. Expected a string for the document ID.")
            }
            values.append(try reference(
                id, slash: "Invalid query. When querying a collection and ordering by document ID, you must pass a plain document ID, but '\(id)' contains a slash.",
                oddPath: { "Invalid query. When querying a collection group and ordering by document ID, you must pass a value that results in a valid document path, but '\($0)' is not because it contains an odd number of segments." }))
        }
        return QueryBound(values: values, inclusive: inclusive)
    }

    /// A cursor at a document: its values of every normalized order (so the position is exact:
    /// the document's name is always one of them).
    func bound(_ document: DocumentSnapshot, inclusive: Bool) throws -> QueryBound {
        guard let stored = document.document else {
            throw Self.invalid("Invalid query. You are trying to start or end a query using a document that doesn't exist.")
        }
        let values = try normalizedOrders.map { order -> Google_Firestore_V1_Value in
            if order.path == FieldPath.documentID() {
                var reference = Google_Firestore_V1_Value()
                reference.referenceValue = stored.name
                return reference
            }
            guard let value = Self.value(at: order.path, in: stored.fields) else {
                throw Self.invalid("Invalid query. You are trying to start or end a query using a document for which the field '\(order.path.canonical)' (used as the order by) does not exist.")
            }
            return value
        }
        return QueryBound(values: values, inclusive: inclusive)
    }

    static func value(at path: FieldPath, in fields: [String: Google_Firestore_V1_Value]) -> Google_Firestore_V1_Value? {
        var level = fields
        for (i, segment) in path.segments.enumerated() {
            guard let value = level[segment] else { return nil }
            if i == path.segments.count - 1 { return value }
            guard case .mapValue(let map) = value.valueType else { return nil }
            level = map.fields
        }
        return nil
    }

    // MARK: The wire form

    /// The orders results come in: the explicit ones, then each inequality field not ordered
    /// explicitly (sorted by path), then the document name — the implicit ones in the direction
    /// of the last explicit order. What the Apple SDK sends for every query and listener.
    var normalizedOrders: [QueryOrder] {
        var result = explicitOrders
        let ordered = Set(explicitOrders.map(\.path))
        let descending = explicitOrders.last?.descending ?? false
        let inequalities = Set(filters.flatMap(\.flattened).filter { $0.op.isInequality }.map(\.path))
        for path in inequalities.sorted(by: FieldPath.precedes) where !ordered.contains(path) && path != FieldPath.documentID() {
            result.append(QueryOrder(path: path, descending: descending))
        }
        if !ordered.contains(FieldPath.documentID()) {
            result.append(QueryOrder(path: FieldPath.documentID(), descending: descending))
        }
        return result
    }

    /// Whether results of `structuredQuery` arrive in the reverse of the app's order.
    ///
    /// **The `limit(toLast:)` contract** (one place for every evaluator — `getDocuments` here,
    /// listeners, and a local query engine over the cache): `structuredQuery` is the query as the
    /// server (or the local engine) runs it. For `limit(toLast: n)` that is the query backwards —
    /// every order flipped, `startAt`/`endAt` swapped (each keeping its inclusiveness), `limit: n` —
    /// so it yields the last n documents, last first. Whoever evaluates `structuredQuery` must
    /// reverse its results before the app sees them when `limitToLast` is true. `orders` (below)
    /// is the app's order, never flipped, for code that sorts results itself.
    var limitToLast: Bool { limitValue != nil && limitType == .last }

    /// The query as sent in `RunQuery` and Listen targets (normalized orders; see `limitToLast`).
    var structuredQuery: Google_Firestore_V1_StructuredQuery { wireQuery(orders: normalizedOrders) }

    /// The query inside `RunAggregationQuery`: only the explicit orders, as the Apple SDK sends it.
    var aggregationQuery: Google_Firestore_V1_StructuredQuery { wireQuery(orders: explicitOrders) }

    /// The app's order of results (normalized, not flipped for `limit(toLast:)`).
    var orders: [Google_Firestore_V1_StructuredQuery.Order] { normalizedOrders.map { $0.proto(flipped: false) } }

    func wireQuery(orders: [QueryOrder]) -> Google_Firestore_V1_StructuredQuery {
        var s = Google_Firestore_V1_StructuredQuery()
        var from = Google_Firestore_V1_StructuredQuery.CollectionSelector()
        from.collectionID = collectionIDValue
        from.allDescendants = allDescendants
        s.from = [from]
        if filters.count == 1 {
            s.where = filters[0].proto
        } else if filters.count > 1 {
            s.where = ParsedFilter.composite(.and, filters).proto
        }
        let flip = limitToLast
        s.orderBy = orders.map { $0.proto(flipped: flip) }
        let (start, end) = flip ? (endAt, startAt) : (startAt, endAt)
        if let start { s.startAt = start.cursor(before: start.inclusive) }
        if let end { s.endAt = end.cursor(before: !end.inclusive) }
        if let limitValue { s.limit = Google_Protobuf_Int32Value(limitValue) }
        return s
    }

    /// Runs the query once: on the server, else (offline) over the cache.
    public func getDocuments() async throws -> QuerySnapshot { try await getDocuments(source: .default) }

    /// The error running this query fails with, if any.
    var executionError: NSError? {
        if let buildError { return buildError }
        if limitToLast && explicitOrders.isEmpty {
            return Self.invalid("limit(toLast:) queries require specifying at least one OrderBy() clause.")
        }
        return nil
    }

    // MARK: Running

    /// Runs the query once and calls `completion` with the snapshot or the error.
    public func getDocuments(completion: @escaping @Sendable (QuerySnapshot?, (any Error)?) -> Void) {
        Task {
            do {
                completion(try await getDocuments(), nil)
            } catch {
                completion(nil, error)
            }
        }
    }
}

/// One order of a query.
struct QueryOrder: Hashable, Sendable {
    let path: FieldPath
    let descending: Bool

    func proto(flipped: Bool) -> Google_Firestore_V1_StructuredQuery.Order {
        var o = Google_Firestore_V1_StructuredQuery.Order()
        o.field.fieldPath = path.canonical
        o.direction = descending != flipped ? .descending : .ascending
        return o
    }
}

/// A cursor position: values of the query's orders, and whether the position itself is included.
struct QueryBound {
    let values: [Google_Firestore_V1_Value]
    let inclusive: Bool

    /// `before`: the position is just before these values (a start that includes them, an end that excludes them).
    func cursor(before: Bool) -> Google_Firestore_V1_Cursor {
        var c = Google_Firestore_V1_Cursor()
        c.values = values
        c.before = before
        return c
    }
}

/// A filter whose values are parsed (what a query holds).
indirect enum ParsedFilter {
    case field(FieldPath, FilterOperator, Google_Firestore_V1_Value)
    case composite(CompositeOperator, [ParsedFilter])

    /// Every field filter inside, in order.
    var flattened: [(path: FieldPath, op: FilterOperator)] {
        switch self {
        case .field(let path, let op, _): [(path, op)]
        case .composite(_, let children): children.flatMap(\.flattened)
        }
    }

    /// The wire form; `== null`/`== NaN` (and `!=`) become unary filters, as the SDKs send them.
    var proto: Google_Firestore_V1_StructuredQuery.Filter {
        var filter = Google_Firestore_V1_StructuredQuery.Filter()
        switch self {
        case .composite(let op, let children):
            var composite = Google_Firestore_V1_StructuredQuery.CompositeFilter()
            composite.op = op == .and ? .and : .or
            composite.filters = children.map(\.proto)
            filter.compositeFilter = composite
        case .field(let path, let op, let value):
            if op == .equal || op == .notEqual, let unary = Self.unary(value, equal: op == .equal) {
                var u = Google_Firestore_V1_StructuredQuery.UnaryFilter()
                u.field.fieldPath = path.canonical
                u.op = unary
                filter.unaryFilter = u
            } else {
                var f = Google_Firestore_V1_StructuredQuery.FieldFilter()
                f.field.fieldPath = path.canonical
                f.op = op.proto
                f.value = value
                filter.fieldFilter = f
            }
        }
        return filter
    }

    static func unary(_ value: Google_Firestore_V1_Value, equal: Bool) -> Google_Firestore_V1_StructuredQuery.UnaryFilter.Operator? {
        switch value.valueType {
        case .nullValue: equal ? .isNull : .isNotNull
        case .doubleValue(let d) where d.isNaN: equal ? .isNan : .isNotNan
        default: nil
        }
    }
}

extension FilterOperator {
    var proto: Google_Firestore_V1_StructuredQuery.FieldFilter.Operator {
        switch self {
        case .lessThan: .lessThan
        case .lessThanOrEqual: .lessThanOrEqual
        case .equal: .equal
        case .notEqual: .notEqual
        case .greaterThanOrEqual: .greaterThanOrEqual
        case .greaterThan: .greaterThan
        case .arrayContains: .arrayContains
        case .in: .in
        case .arrayContainsAny: .arrayContainsAny
        case .notIn: .notIn
        }
    }
}

extension FieldPath {
    /// Segment by segment (UTF-8 order), a prefix first: the order of the implicit orders.
    static func precedes(_ a: FieldPath, _ b: FieldPath) -> Bool {
        for (x, y) in zip(a.segments, b.segments) where x != y {
            return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
        }
        return a.segments.count < b.segments.count
    }
}
