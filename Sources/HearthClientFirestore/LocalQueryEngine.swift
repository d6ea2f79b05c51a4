import Foundation
import HearthFirestoreProto
import SwiftProtobuf

/// Runs a wire-form `StructuredQuery` over documents held locally (the cache plus pending
/// writes): collection selection, field/unary/composite (AND and OR) filters, the order with its
/// implicit inequality fields and `__name__`, start/end cursors, and the limit. The same
/// evaluation orders listener snapshots, so there is one implementation of Firestore's ordering.
struct LocalQueryEngine {
    typealias Value = Google_Firestore_V1_Value
    typealias Fields = [String: Value]
    typealias StructuredQuery = Google_Firestore_V1_StructuredQuery

    /// `projects/{p}/databases/{d}/documents`.
    let documentsRoot: String
    /// The parent document path relative to the root ("" for the root).
    let parentPath: String
    let query: StructuredQuery
    /// `limit(toLast:)`: the wire form already has its order flipped and cursors swapped; the
    /// results are reversed before the app sees them.
    let limitToLast: Bool
    /// The full order: explicit orders, else the inequality fields, then `__name__`.
    let orders: [StructuredQuery.Order]
    /// The collection selector, read once.
    let collectionID: String
    let allDescendants: Bool

    init(documentsRoot: String, parentPath: String, query: StructuredQuery, limitToLast: Bool = false) {
        self.documentsRoot = documentsRoot
        self.parentPath = parentPath
        self.query = query
        self.limitToLast = limitToLast
        orders = Self.normalizedOrders(query)
        collectionID = query.from.first?.collectionID ?? ""
        allDescendants = query.from.first?.allDescendants ?? false
    }

    static func normalizedOrders(_ query: StructuredQuery) -> [StructuredQuery.Order] {
        var orders = query.orderBy
        if orders.isEmpty {
            let inequalities = Set(inequalityFields(query.hasWhere ? query.where : nil)).subtracting(["__name__"]).sorted()
            for field in inequalities {
                var o = StructuredQuery.Order()
                o.field.fieldPath = field
                o.direction = .ascending
                orders.append(o)
            }
        }
        if !orders.contains(where: { $0.field.fieldPath == "__name__" }) {
            var o = StructuredQuery.Order()
            o.field.fieldPath = "__name__"
            o.direction = orders.last?.direction == .descending ? .descending : .ascending
            orders.append(o)
        }
        return orders
    }

    static func inequalityFields(_ filter: StructuredQuery.Filter?) -> [String] {
        switch filter?.filterType {
        case .fieldFilter(let f):
            switch f.op {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn: return [f.field.fieldPath]
            default: return []
            }
        case .unaryFilter(let u):
            return u.op == .isNotNan || u.op == .isNotNull ? [u.field.fieldPath] : []
        case .compositeFilter(let c): return c.filters.flatMap { inequalityFields($0) }
        default: return []
        }
    }

    // MARK: Selection

    /// The document path (relative to the root) belongs to the query's collection(s).
    /// (Without allocating: run once per cached document on every snapshot.)
    func inCollection(_ path: String) -> Bool {
        let slash = UInt8(ascii: "/")
        let utf8 = path.utf8
        guard let first = utf8.first, first != slash, utf8.last != slash else { return false }
        var slashes = 0
        var last: String.Index?
        var secondLast: String.Index?
        var previousWasSlash = false
        for index in utf8.indices where utf8[index] == slash {
            if let last, utf8.index(after: last) == index { previousWasSlash = true }
            slashes += 1
            secondLast = last
            last = index
        }
        // An even number of segments (an odd number of slashes), none empty.
        guard !previousWasSlash, slashes % 2 == 1, let last else { return false }
        let collection = path[(secondLast.map { utf8.index(after: $0) } ?? path.startIndex)..<last]
        let parent = secondLast.map { path[..<$0] } ?? path[path.startIndex..<path.startIndex]
        if allDescendants {
            guard collection == collectionID else { return false }
            return parentPath.isEmpty || parent == parentPath || (parent.hasPrefix(parentPath) && parent.dropFirst(parentPath.count).first == "/")
        }
        return parent == parentPath && collection == collectionID
    }

    func matches(path: String, fields: Fields) -> Bool {
        guard inCollection(path) else { return false }
        if query.hasWhere, !Self.evaluate(query.where, fields: fields, name: "\(documentsRoot)/\(path)") { return false }
        for order in orders where order.field.fieldPath != "__name__" {
            if Self.field(fields, order.field.fieldPath) == nil { return false }
        }
        return true
    }

    /// Filters, orders, bounds and limits `documents` (path → fields), returning the paths in the
    /// order the app sees them.
    func run(_ documents: [(path: String, fields: Fields)]) -> [(path: String, fields: Fields)] {
        // Each document's order values are read once, not at every comparison.
        let segments = orders.map { Self.splitCanonical($0.field.fieldPath) }
        let descending = orders.map { $0.direction == .descending }
        let isName = segments.map { $0 == ["__name__"] }
        let matched = documents.filter { matches(path: $0.path, fields: $0.fields) }
        // One column of order values per order field; the sort moves indices, not documents.
        let columns: [[Value?]] = segments.indices.map { i in isName[i] ? [] : matched.map { Self.field($0.fields, segments: segments[i]) } }
        var sorted = Array(matched.indices)
        sorted.sort { a, b in
            for i in columns.indices {
                let c = isName[i] ? ValueOrder.compareNames(matched[a].path, matched[b].path) : ValueOrder.compare(columns[i][a], columns[i][b])
                if c != 0 { return descending[i] ? c > 0 : c < 0 }
            }
            return false
        }
        var out = sorted.map { matched[$0] }
        if query.hasStartAt { out.removeAll { !afterStart(query.startAt, $0.fields, $0.path) } }
        if query.hasEndAt { out.removeAll { !beforeEnd(query.endAt, $0.fields, $0.path) } }
        if query.hasLimit, out.count > Int(query.limit.value) { out = Array(out.prefix(Int(max(0, query.limit.value)))) }
        if limitToLast { out.reverse() }
        return out
    }

    // MARK: Order

    func value(of fields: Fields, path: String, field: String) -> Value? {
        if field == "__name__" {
            var v = Value()
            v.referenceValue = "\(documentsRoot)/\(path)"
            return v
        }
        return Self.field(fields, field)
    }

    func compare(_ a: Fields, _ an: String, _ b: Fields, _ bn: String) -> Int {
        for order in orders {
            let c = order.field.fieldPath == "__name__"
                ? ValueOrder.compareNames(an, bn)
                : ValueOrder.compare(Self.field(a, order.field.fieldPath), Self.field(b, order.field.fieldPath))
            if c != 0 { return order.direction == .descending ? -c : c }
        }
        return 0
    }

    func precedes(_ a: Fields, _ an: String, _ b: Fields, _ bn: String) -> Bool { compare(a, an, b, bn) < 0 }

    /// Compares a document with a cursor's position along the order (-1 before, 0 at, 1 after).
    func compare(cursor: Google_Firestore_V1_Cursor, _ fields: Fields, _ path: String) -> Int {
        for (i, position) in cursor.values.enumerated() where i < orders.count {
            let order = orders[i]
            let c: Int
            if order.field.fieldPath == "__name__" {
                guard case .referenceValue(let ref) = position.valueType else { return 0 }
                c = ValueOrder.compareNames("\(documentsRoot)/\(path)", ref)
            } else {
                c = ValueOrder.compare(Self.field(fields, order.field.fieldPath), position)
            }
            if c != 0 { return order.direction == .descending ? -c : c }
        }
        return 0
    }

    /// `start_at`: `before` includes documents at the position (startAt), else only after it (startAfter).
    func afterStart(_ cursor: Google_Firestore_V1_Cursor, _ fields: Fields, _ path: String) -> Bool {
        let c = compare(cursor: cursor, fields, path)
        return cursor.before ? c >= 0 : c > 0
    }

    /// `end_at`: `before` excludes documents at the position (endBefore), else includes them (endAt).
    func beforeEnd(_ cursor: Google_Firestore_V1_Cursor, _ fields: Fields, _ path: String) -> Bool {
        let c = compare(cursor: cursor, fields, path)
        return cursor.before ? c < 0 : c <= 0
    }

    // MARK: Filters

    static func evaluate(_ filter: StructuredQuery.Filter, fields: Fields, name: String) -> Bool {
        switch filter.filterType {
        case .compositeFilter(let c):
            switch c.op {
            case .or: return c.filters.contains { evaluate($0, fields: fields, name: name) }
            default: return c.filters.allSatisfy { evaluate($0, fields: fields, name: name) }
            }
        case .fieldFilter(let f):
            var document: Value?
            if f.field.fieldPath == "__name__" {
                var v = Value()
                v.referenceValue = name
                document = v
            } else {
                document = field(fields, f.field.fieldPath)
            }
            return matches(f.op, document, f.value)
        case .unaryFilter(let u):
            let v = field(fields, u.field.fieldPath)
            switch u.op {
            case .isNan: return isNaN(v)
            case .isNull: return isNull(v)
            case .isNotNan: return v != nil && !isNull(v) && !isNaN(v)
            case .isNotNull: return v != nil && !isNull(v)
            default: return false
            }
        case nil: return true
        }
    }

    static func isNull(_ v: Value?) -> Bool { if case .nullValue = v?.valueType { true } else { false } }
    static func isNaN(_ v: Value?) -> Bool { if case .doubleValue(let d) = v?.valueType { d.isNaN } else { false } }

    /// Firestore's equality: numbers across integer/double by value (NaN equals NaN here, as in
    /// `in`/`array-contains` matching), everything else by type and ordering.
    static func equal(_ a: Value?, _ b: Value?) -> Bool {
        guard let a, let b, ValueOrder.rank(a) == ValueOrder.rank(b) else { return false }
        if isNaN(a) || isNaN(b) { return isNaN(a) && isNaN(b) }
        return ValueOrder.compare(a, b) == 0
    }

    static func elements(_ v: Value?) -> [Value]? {
        if case .arrayValue(let a) = v?.valueType { a.values } else { nil }
    }

    static func matches(_ op: StructuredQuery.FieldFilter.Operator, _ document: Value?, _ value: Value) -> Bool {
        switch op {
        case .equal: return equal(document, value)
        case .notEqual:
            guard let document, !isNull(document) else { return false }
            return !equal(document, value)
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            guard let document, ValueOrder.rank(document) == ValueOrder.rank(value), !isNaN(document), !isNaN(value) else { return false }
            let c = ValueOrder.compare(document, value)
            switch op {
            case .lessThan: return c < 0
            case .lessThanOrEqual: return c <= 0
            case .greaterThan: return c > 0
            default: return c >= 0
            }
        case .arrayContains: return elements(document)?.contains { equal($0, value) } ?? false
        case .arrayContainsAny:
            guard let candidates = elements(value), let present = elements(document) else { return false }
            return present.contains { p in candidates.contains { equal(p, $0) } }
        case .in:
            return elements(value)?.contains { equal(document, $0) } ?? false
        case .notIn:
            guard let document, !isNull(document), let excluded = elements(value) else { return false }
            if excluded.contains(where: isNull) { return false }
            return !excluded.contains { equal(document, $0) }
        default: return false
        }
    }

    // MARK: Field access

    /// A field by its canonical path (segments joined by dots, backticks quoting others).
    static func field(_ fields: Fields, _ canonicalPath: String) -> Value? {
        if !canonicalPath.contains("."), !canonicalPath.contains("`") { return fields[canonicalPath] }
        return field(fields, segments: splitCanonical(canonicalPath))
    }

    static func field(_ fields: Fields, segments: [String]) -> Value? {
        guard !segments.isEmpty else { return nil }
        var level = fields
        for (i, segment) in segments.enumerated() {
            guard let v = level[segment] else { return nil }
            if i == segments.count - 1 { return v }
            guard case .mapValue(let m) = v.valueType else { return nil }
            level = m.fields
        }
        return nil
    }

    static func splitCanonical(_ path: String) -> [String] {
        var segments: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for ch in path {
            if escaped { current.append(ch); escaped = false; continue }
            switch ch {
            case "\\" where quoted: escaped = true
            case "`": quoted.toggle()
            case "." where !quoted:
                segments.append(current)
                current = ""
            default: current.append(ch)
            }
        }
        segments.append(current)
        return segments
    }
}

/// Firestore's ordering of values: null < booleans < numbers < timestamps (pending server
/// timestamps after them) < strings < bytes < references < geo points < arrays < maps.
enum ValueOrder {
    typealias Value = Google_Firestore_V1_Value

    static func rank(_ v: Value?) -> Int {
        switch v?.valueType {
        case .nullValue, nil: 0
        case .booleanValue: 1
        case .integerValue, .doubleValue: 2
        case .timestampValue: 3
        case .mapValue(let m) where ServerTimestamps.isPending(m): 4
        case .stringValue: 5
        case .bytesValue: 6
        case .referenceValue: 7
        case .geoPointValue: 8
        case .arrayValue: 9
        case .mapValue: 10
        default: 11
        }
    }

    static func sign<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a > b ? 1 : 0) }

    static func compare(_ a: Value?, _ b: Value?) -> Int {
        let ra = rank(a), rb = rank(b)
        guard ra == rb else { return sign(ra, rb) }
        switch (a?.valueType, b?.valueType) {
        case (.booleanValue(let x), .booleanValue(let y)): return sign(x ? 1 : 0, y ? 1 : 0)
        case (.timestampValue(let x), .timestampValue(let y)): return compareTimestamps(x, y)
        case (.stringValue(let x), .stringValue(let y)): return x == y ? 0 : (Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8)) ? -1 : 1)
        case (.bytesValue(let x), .bytesValue(let y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case (.referenceValue(let x), .referenceValue(let y)): return compareNames(x, y)
        case (.geoPointValue(let x), .geoPointValue(let y)):
            return sign(x.latitude, y.latitude) != 0 ? sign(x.latitude, y.latitude) : sign(x.longitude, y.longitude)
        case (.arrayValue(let x), .arrayValue(let y)):
            for (p, q) in zip(x.values, y.values) {
                let c = compare(p, q)
                if c != 0 { return c }
            }
            return sign(x.values.count, y.values.count)
        case (.mapValue(let x), .mapValue(let y)):
            if ra == 4 {
                return compareTimestamps(ServerTimestamps.localWriteTime(x), ServerTimestamps.localWriteTime(y))
            }
            let xk = x.fields.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            let yk = y.fields.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            for (p, q) in zip(xk, yk) {
                if p != q { return Array(p.utf8).lexicographicallyPrecedes(Array(q.utf8)) ? -1 : 1 }
                let c = compare(x.fields[p], y.fields[q])
                if c != 0 { return c }
            }
            return sign(xk.count, yk.count)
        default:
            return compareNumbers(a, b)
        }
    }

    static func compareTimestamps(_ x: Google_Protobuf_Timestamp, _ y: Google_Protobuf_Timestamp) -> Int {
        sign(x.seconds, y.seconds) != 0 ? sign(x.seconds, y.seconds) : sign(x.nanos, y.nanos)
    }

    static func compareNumbers(_ a: Value?, _ b: Value?) -> Int {
        switch (a?.valueType, b?.valueType) {
        case (.integerValue(let x), .integerValue(let y)): return sign(x, y)
        case (.doubleValue(let x), .doubleValue(let y)):
            if x.isNaN || y.isNaN { return x.isNaN && y.isNaN ? 0 : (x.isNaN ? -1 : 1) }
            return sign(x, y)
        case (.integerValue(let x), .doubleValue(let y)): return -compareMixed(y, x)
        case (.doubleValue(let x), .integerValue(let y)): return compareMixed(x, y)
        default: return 0
        }
    }

    /// A double against an integer without losing precision (NaN first).
    static func compareMixed(_ d: Double, _ i: Int64) -> Int {
        if d.isNaN { return -1 }
        if d < -9.2233720368547758e18 { return -1 }
        if d >= 9.2233720368547758e18 { return 1 }
        let t = Int64(d.rounded(.towardZero))
        if t != i { return sign(t, i) }
        let frac = d - Double(t)
        return frac > 0 ? 1 : (frac < 0 ? -1 : 0)
    }

    /// Document names segment by segment.
    static func compareNames(_ a: String, _ b: String) -> Int {
        let x = a.split(separator: "/"), y = b.split(separator: "/")
        for (p, q) in zip(x, y) where p != q {
            return Array(p.utf8).lexicographicallyPrecedes(Array(q.utf8)) ? -1 : 1
        }
        return sign(x.count, y.count)
    }
}
