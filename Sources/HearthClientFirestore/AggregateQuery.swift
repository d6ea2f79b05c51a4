public import Foundation
import HearthFirestoreProto

/// Where an aggregation is computed: only on the server, as in the Apple SDK.
public enum AggregateSource: Sendable {
    case server
}

/// One aggregation: `AggregateField.count()`, `.sum("field")`, `.average("field")`.
public final class AggregateField: @unchecked Sendable, Hashable {
    enum Kind: Sendable { case count, sum, average }
    let kind: Kind
    let field: QueryField?

    init(_ kind: Kind, _ field: QueryField?) {
        self.kind = kind
        self.field = field
    }

    public static func count() -> AggregateField { AggregateField(.count, nil) }
    /// The sum of a numeric field (an integer while it fits and every addend is one, else a double).
    public static func sum(_ field: String) -> AggregateField { AggregateField(.sum, .dotted(field)) }
    public static func sum(_ path: FieldPath) -> AggregateField { AggregateField(.sum, .path(path)) }
    /// The average of a numeric field (a double; null when no document has a number there).
    public static func average(_ field: String) -> AggregateField { AggregateField(.average, .dotted(field)) }
    public static func average(_ path: FieldPath) -> AggregateField { AggregateField(.average, .path(path)) }

    var name: String {
        switch kind {
        case .count: "count"
        case .sum: "sum"
        case .average: "avg"
        }
    }

    /// The client-side alias (`count`, `sum_<path>`, `avg_<path>`); equal fields share one.
    func alias() throws -> String {
        guard let field else { return name }
        return "\(name)_\(try field.resolve().canonical)"
    }

    /// The alias, or an empty path for one that does not parse (only used for equality).
    var identity: String { (try? alias()) ?? "\(name)_?\(String(describing: field))" }

    public static func == (a: AggregateField, b: AggregateField) -> Bool { a.identity == b.identity }
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }
}

/// Aggregations over a query's results, computed by the server (`RunAggregationQuery`).
public final class AggregateQuery: @unchecked Sendable {
    public let query: Query
    let fields: [AggregateField]

    init(query: Query, fields: [AggregateField]) {
        self.query = query
        self.fields = fields
    }

    /// Runs the aggregations on the server.
    public func getAggregation(source: AggregateSource) async throws -> AggregateQuerySnapshot {
        if let error = query.executionError { throw error }
        // One server alias per distinct aggregation (`aggregation_0`, …), as the Apple SDK sends
        // them; client aliases can be longer than the server allows.
        var clientAliases: [String] = []
        var aggregations: [Google_Firestore_V1_StructuredAggregationQuery.Aggregation] = []
        for field in fields {
            let alias = try field.alias()
            if clientAliases.contains(alias) { continue }
            var aggregation = Google_Firestore_V1_StructuredAggregationQuery.Aggregation()
            aggregation.alias = "aggregation_\(clientAliases.count)"
            switch field.kind {
            case .count: aggregation.count = .init()
            case .sum: aggregation.sum.field.fieldPath = try field.field!.resolve().canonical
            case .average: aggregation.avg.field.fieldPath = try field.field!.resolve().canonical
            }
            clientAliases.append(alias)
            aggregations.append(aggregation)
        }
        var request = Google_Firestore_V1_RunAggregationQueryRequest()
        request.parent = query.parentName
        request.structuredAggregationQuery.structuredQuery = query.aggregationQuery
        request.structuredAggregationQuery.aggregations = aggregations
        let result: [String: Google_Firestore_V1_Value] = try await query.firestore.call { stub, md in
            try await stub.runAggregationQuery(request, metadata: md) { response in
                var fields: [String: Google_Firestore_V1_Value] = [:]
                for try await message in response.messages where message.hasResult {
                    fields.merge(message.result.aggregateFields) { _, new in new }
                }
                return fields
            }
        }
        var values: [String: Google_Firestore_V1_Value] = [:]
        for (i, alias) in clientAliases.enumerated() {
            guard let value = result["aggregation_\(i)"] else {
                throw FirestoreErrorCode.internal.error("The server's aggregation result has no value for \(alias).")
            }
            values[alias] = value
        }
        return AggregateQuerySnapshot(query: self, values: values)
    }

    /// Runs the aggregations on the server and calls `completion` with the snapshot or the error.
    public func getAggregation(
        source: AggregateSource, completion: @escaping @Sendable (AggregateQuerySnapshot?, (any Error)?) -> Void
    ) {
        Task {
            do {
                completion(try await getAggregation(source: source), nil)
            } catch {
                completion(nil, error)
            }
        }
    }
}

/// The results of an `AggregateQuery`.
public final class AggregateQuerySnapshot: @unchecked Sendable {
    public let query: AggregateQuery
    /// Client alias → value.
    let values: [String: Google_Firestore_V1_Value]

    init(query: AggregateQuery, values: [String: Google_Firestore_V1_Value]) {
        self.query = query
        self.values = values
    }

    /// The number of documents (the query must have asked for `AggregateField.count()`).
    public var count: NSNumber { self.get(AggregateField.count()) as! NSNumber }

    /// An aggregation's value: an `NSNumber` (count and sum: integer, or double for a sum that
    /// overflowed or had a double; average: double), or `NSNull` (an average over no numbers).
    /// Asking for an aggregation the query did not request is a programming error, as in the Apple
    /// SDK (which raises an exception).
    public func get(_ aggregateField: AggregateField) -> Any {
        guard let alias = try? aggregateField.alias(), let value = values[alias] else {
            let path = (try? aggregateField.field?.resolve().canonical) ?? ""
            preconditionFailure("'\(aggregateField.name)(\(path))' was not requested in the aggregation query.")
        }
        switch value.valueType {
        case .integerValue(let i): return NSNumber(value: i)
        case .doubleValue(let d): return NSNumber(value: d)
        default: return NSNull()
        }
    }
}

extension Query {
    /// The number of documents this query matches, counted by the server.
    public var count: AggregateQuery { AggregateQuery(query: self, fields: [.count()]) }

    /// These aggregations over the query's results.
    public func aggregate(_ aggregateFields: [AggregateField]) -> AggregateQuery {
        AggregateQuery(query: self, fields: aggregateFields)
    }
}
