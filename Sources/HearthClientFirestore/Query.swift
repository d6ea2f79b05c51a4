import Foundation
import HearthFirestoreProto
import SwiftProtobuf

/// A query over one collection (or every collection with an id, for collection groups).
public class Query: @unchecked Sendable {
    public let firestore: Firestore
    let parentPath: String
    let collectionIDValue: String
    let allDescendants: Bool
    var filters: [Google_Firestore_V1_StructuredQuery.Filter] = []
    var orders: [Google_Firestore_V1_StructuredQuery.Order] = []
    var limitValue: Int32?
    /// `limit(toLast:)`: `structuredQuery` carries the flipped order and swapped cursors; results
    /// are reversed before the app sees them (the local engine does this step).
    var limitToLast = false

    init(firestore: Firestore, parent: String, collectionID: String, allDescendants: Bool) {
        self.firestore = firestore
        parentPath = parent
        collectionIDValue = collectionID
        self.allDescendants = allDescendants
    }

    func copy(_ change: (Query) throws -> Void) rethrows -> Query {
        let q = Query(firestore: firestore, parent: parentPath, collectionID: collectionIDValue, allDescendants: allDescendants)
        q.filters = filters
        q.orders = orders
        q.limitValue = limitValue
        q.limitToLast = limitToLast
        try change(q)
        return q
    }

    func field(_ field: Any) -> FieldPath {
        if let p = field as? FieldPath { return p }
        if let s = field as? String, let p = try? FieldPath.parse(dotted: s) { return p }
        preconditionFailure("Invalid field path \(field): use a String or a FieldPath.")
    }

    func adding(_ name: Any, _ op: Google_Firestore_V1_StructuredQuery.FieldFilter.Operator, _ value: Any) -> Query {
        let path = field(name)
        return copy { q in
            var f = Google_Firestore_V1_StructuredQuery.FieldFilter()
            f.field.fieldPath = path.canonical
            f.op = op
            if path == FieldPath.documentID(), let id = value as? String {
                var v = Google_Firestore_V1_Value()
                v.referenceValue = firestore.documentName(parentPath.isEmpty ? "\(collectionIDValue)/\(id)" : "\(parentPath)/\(collectionIDValue)/\(id)")
                f.value = v
            } else {
                f.value = (try? firestore.reader.parseArgument(value)) ?? Google_Firestore_V1_Value()
            }
            var filter = Google_Firestore_V1_StructuredQuery.Filter()
            filter.fieldFilter = f
            q.filters.append(filter)
        }
    }

    public func whereField(_ field: String, isEqualTo value: Any) -> Query { adding(field, .equal, value) }
    public func whereField(_ field: String, isNotEqualTo value: Any) -> Query { adding(field, .notEqual, value) }
    public func whereField(_ field: String, isLessThan value: Any) -> Query { adding(field, .lessThan, value) }
    public func whereField(_ field: String, isLessThanOrEqualTo value: Any) -> Query { adding(field, .lessThanOrEqual, value) }
    public func whereField(_ field: String, isGreaterThan value: Any) -> Query { adding(field, .greaterThan, value) }
    public func whereField(_ field: String, isGreaterThanOrEqualTo value: Any) -> Query { adding(field, .greaterThanOrEqual, value) }
    public func whereField(_ field: String, arrayContains value: Any) -> Query { adding(field, .arrayContains, value) }
    public func whereField(_ field: String, arrayContainsAny values: [Any]) -> Query { adding(field, .arrayContainsAny, values) }
    public func whereField(_ field: String, in values: [Any]) -> Query { adding(field, .in, values) }
    public func whereField(_ field: String, notIn values: [Any]) -> Query { adding(field, .notIn, values) }
    public func whereField(_ path: FieldPath, isEqualTo value: Any) -> Query { adding(path, .equal, value) }

    public func order(by field: String) -> Query { order(by: field, descending: false) }

    public func order(by field: String, descending: Bool) -> Query {
        copy { q in
            var o = Google_Firestore_V1_StructuredQuery.Order()
            o.field.fieldPath = self.field(field).canonical
            o.direction = descending ? .descending : .ascending
            q.orders.append(o)
        }
    }

    public func limit(to limit: Int) -> Query { copy { $0.limitValue = Int32(clamping: limit) } }

    var structuredQuery: Google_Firestore_V1_StructuredQuery {
        var s = Google_Firestore_V1_StructuredQuery()
        var from = Google_Firestore_V1_StructuredQuery.CollectionSelector()
        from.collectionID = collectionIDValue
        from.allDescendants = allDescendants
        s.from = [from]
        if filters.count == 1 {
            s.where = filters[0]
        } else if filters.count > 1 {
            var composite = Google_Firestore_V1_StructuredQuery.CompositeFilter()
            composite.op = .and
            composite.filters = filters
            s.where.compositeFilter = composite
        }
        s.orderBy = orders
        if let limitValue { s.limit = Google_Protobuf_Int32Value(limitValue) }
        return s
    }

    /// Runs the query once: on the server, else (offline) over the cache.
    public func getDocuments() async throws -> QuerySnapshot { try await getDocuments(source: .default) }
}
