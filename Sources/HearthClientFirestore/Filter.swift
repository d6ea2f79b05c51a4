import Foundation

/// A query filter built apart from a query, combinable with `Filter.orFilter`/`Filter.andFilter`
/// and applied with `Query.whereFilter(_:)`: the Apple SDK's `Filter`.
///
/// Values are kept as given and parsed when the filter is added to a query (document-ID filters
/// need the query's collection to become references).
public final class Filter: @unchecked Sendable {
    enum Kind {
        case field(QueryField, FilterOperator, Any)
        case composite(CompositeOperator, [Filter])
    }

    let kind: Kind

    init(_ kind: Kind) { self.kind = kind }

    static func make(_ field: String, _ op: FilterOperator, _ value: Any) -> Filter { Filter(.field(.dotted(field), op, value)) }
    static func make(_ path: FieldPath, _ op: FilterOperator, _ value: Any) -> Filter { Filter(.field(.path(path), op, value)) }

    public static func whereField(_ field: String, isEqualTo value: Any) -> Filter { make(field, .equal, value) }
    public static func whereField(_ path: FieldPath, isEqualTo value: Any) -> Filter { make(path, .equal, value) }
    public static func whereField(_ field: String, isNotEqualTo value: Any) -> Filter { make(field, .notEqual, value) }
    public static func whereField(_ path: FieldPath, isNotEqualTo value: Any) -> Filter { make(path, .notEqual, value) }
    public static func whereField(_ field: String, isGreaterThan value: Any) -> Filter { make(field, .greaterThan, value) }
    public static func whereField(_ path: FieldPath, isGreaterThan value: Any) -> Filter { make(path, .greaterThan, value) }
    /// Spelled `isGreaterOrEqualTo` (not `…ThanOrEqualTo`) on `Filter`, as in the Apple SDK.
    public static func whereField(_ field: String, isGreaterOrEqualTo value: Any) -> Filter { make(field, .greaterThanOrEqual, value) }
    public static func whereField(_ path: FieldPath, isGreaterOrEqualTo value: Any) -> Filter { make(path, .greaterThanOrEqual, value) }
    public static func whereField(_ field: String, isLessThan value: Any) -> Filter { make(field, .lessThan, value) }
    public static func whereField(_ path: FieldPath, isLessThan value: Any) -> Filter { make(path, .lessThan, value) }
    public static func whereField(_ field: String, isLessThanOrEqualTo value: Any) -> Filter { make(field, .lessThanOrEqual, value) }
    public static func whereField(_ path: FieldPath, isLessThanOrEqualTo value: Any) -> Filter { make(path, .lessThanOrEqual, value) }
    public static func whereField(_ field: String, arrayContains value: Any) -> Filter { make(field, .arrayContains, value) }
    public static func whereField(_ path: FieldPath, arrayContains value: Any) -> Filter { make(path, .arrayContains, value) }
    public static func whereField(_ field: String, arrayContainsAny values: [Any]) -> Filter { make(field, .arrayContainsAny, values) }
    public static func whereField(_ path: FieldPath, arrayContainsAny values: [Any]) -> Filter { make(path, .arrayContainsAny, values) }
    public static func whereField(_ field: String, in values: [Any]) -> Filter { make(field, .in, values) }
    public static func whereField(_ path: FieldPath, in values: [Any]) -> Filter { make(path, .in, values) }
    public static func whereField(_ field: String, notIn values: [Any]) -> Filter { make(field, .notIn, values) }
    public static func whereField(_ path: FieldPath, notIn values: [Any]) -> Filter { make(path, .notIn, values) }

    /// Matches documents that match any of `filters`.
    public static func orFilter(_ filters: [Filter]) -> Filter { Filter(.composite(.or, filters)) }
    /// Matches documents that match all of `filters`.
    public static func andFilter(_ filters: [Filter]) -> Filter { Filter(.composite(.and, filters)) }
}

/// A field as the app named it: a dotted string (parsed when used) or a `FieldPath`.
enum QueryField {
    case dotted(String)
    case path(FieldPath)

    func resolve() throws -> FieldPath {
        switch self {
        case .path(let path): path
        case .dotted(let string): try FieldPath.parse(dotted: string)
        }
    }
}

/// The comparison of a field filter, with the names the Apple SDK's messages use.
enum FilterOperator: Sendable, CaseIterable {
    case lessThan, lessThanOrEqual, equal, notEqual, greaterThanOrEqual, greaterThan, arrayContains, `in`, arrayContainsAny, notIn

    var describe: String {
        switch self {
        case .lessThan: "lessThan"
        case .lessThanOrEqual: "lessThanOrEqual"
        case .equal: "equal"
        case .notEqual: "notEqual"
        case .greaterThanOrEqual: "greaterThanOrEqual"
        case .greaterThan: "greaterThan"
        case .arrayContains: "arrayContains"
        case .in: "in"
        case .arrayContainsAny: "arrayContainsAny"
        case .notIn: "notIn"
        }
    }

    /// Inequalities get an implicit order by their field.
    var isInequality: Bool { [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn].contains(self) }
    var isArrayOperator: Bool { self == .arrayContains || self == .arrayContainsAny }
    /// Operators whose value is a non-empty array of candidates.
    var isDisjunctive: Bool { self == .in || self == .arrayContainsAny || self == .notIn }

    /// Operators that cannot share a query with this one (the Apple SDK's client-side check; the
    /// server checks the rest): one `!=`, and `not-in` with no other disjunction or `!=`.
    var conflicting: [FilterOperator] {
        switch self {
        case .notEqual: [.notEqual, .notIn]
        case .arrayContainsAny, .in: [.notIn]
        case .notIn: [.arrayContainsAny, .in, .notIn, .notEqual]
        default: []
        }
    }
}

enum CompositeOperator: Sendable { case and, or }
