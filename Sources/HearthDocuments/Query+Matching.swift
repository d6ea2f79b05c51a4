public import HearthCore

/// In-memory evaluation of filters, orders and cursors: the definition of what a query
/// returns. Index scans only narrow the candidates; every candidate passes through here.
extension NormalizedQuery {
    /// Whether the document is in the query's scope (collection or collection group).
    public func inScope(_ path: ResourcePath) -> Bool {
        guard path.isDocument, path.collectionId == query.collectionId || (query.allDescendants && query.collectionId.isEmpty)
        else { return false }
        if query.allDescendants {
            return query.parent.isPrefix(of: path) && path.segments.count > query.parent.segments.count
        }
        return path.parent == query.collectionPath
    }

    /// Whether the document matches filters, has every order-by field, and lies between the cursors.
    public func matches(_ doc: Document) -> Bool {
        guard inScope(doc.path) else { return false }
        for o in orders where !o.field.isDocumentName {
            if doc.value(at: o.field, database: database) == nil { return false }
        }
        if let f = query.filter, !NormalizedQuery.evaluate(f, doc, database) { return false }
        return withinCursors(doc)
    }

    func withinCursors(_ doc: Document) -> Bool {
        if let start = query.startAt {
            let c = compareToCursor(doc, start)
            if start.before ? c < 0 : c <= 0 { return false }
        }
        if let end = query.endAt {
            let c = compareToCursor(doc, end)
            if end.before ? c >= 0 : c > 0 { return false }
        }
        return true
    }

    /// Compares the document's order values with a cursor, over the cursor's length, in query order.
    func compareToCursor(_ doc: Document, _ cursor: Query.Cursor) -> Int {
        for (i, cv) in cursor.values.enumerated() {
            let o = orders[i]
            guard let dv = doc.value(at: o.field, database: database) else { return -1 }
            var c = ValueOrdering.compare(dv, cv)
            if o.descending { c = -c }
            if c != 0 { return c }
        }
        return 0
    }

    /// Orders two documents by the normalized ordering.
    public func compare(_ a: Document, _ b: Document) -> Int {
        for o in orders {
            let c: Int
            if o.field.isDocumentName {
                c = a.path == b.path ? 0 : (a.path < b.path ? -1 : 1)
            } else {
                c = ValueOrdering.compare(a.value(at: o.field, database: database) ?? .null, b.value(at: o.field, database: database) ?? .null)
            }
            if c != 0 { return o.descending ? -c : c }
        }
        return 0
    }

    static func evaluate(_ f: Query.Filter, _ doc: Document, _ db: DatabaseName) -> Bool {
        switch f {
        case .and(let fs): return fs.allSatisfy { evaluate($0, doc, db) }
        case .or(let fs): return fs.contains { evaluate($0, doc, db) }
        case .unary(let path, let op):
            let v = doc.value(at: path, database: db)
            switch op {
            case .isNull: return v == .some(.null) && v.map { $0.typeOrder == .null } == true
            case .isNaN: return v?.isNaN == true
            case .isNotNull: return v != nil && v!.typeOrder != .null
            case .isNotNaN: return v != nil && !(v!.isNaN) && v!.typeOrder != .null
            }
        case .field(let path, let op, let operand):
            guard let v = doc.value(at: path, database: db) else { return false }
            return compare(v, op, operand)
        }
    }

    static func equalForQuery(_ a: Value, _ b: Value) -> Bool {
        if a.isNaN || b.isNaN { return false }
        return a.typeOrder == b.typeOrder && ValueOrdering.compare(a, b) == 0
    }

    static func compare(_ v: Value, _ op: Query.Operator, _ operand: Value) -> Bool {
        switch op {
        case .equal: return equalForQuery(v, operand)
        case .notEqual:
            return v.typeOrder != .null && !equalForQuery(v, operand)
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            guard v.typeOrder == operand.typeOrder, !v.isNaN, !operand.isNaN, v.typeOrder != .null else { return false }
            let c = ValueOrdering.compare(v, operand)
            switch op {
            case .lessThan: return c < 0
            case .lessThanOrEqual: return c <= 0
            case .greaterThan: return c > 0
            default: return c >= 0
            }
        case .arrayContains:
            guard case .array(let elements) = v, operand.typeOrder != .null else { return false }
            return elements.contains { equalForQuery($0, operand) }
        // `array-contains null` matches nothing; in `in`, `array-contains-any` and `not-in` lists, null matches nothing, and a
        // `not-in` list that holds null matches no document at all (as Firestore answers).
        case .in:
            guard case .array(let options) = operand, v.typeOrder != .null else { return false }
            return options.contains { equalForQuery(v, $0) }
        case .arrayContainsAny:
            guard case .array(let elements) = v, case .array(let options) = operand else { return false }
            return elements.contains { e in e.typeOrder != .null && options.contains { equalForQuery(e, $0) } }
        case .notIn:
            guard case .array(let options) = operand, v.typeOrder != .null,
                  !options.contains(where: { $0.typeOrder == .null })
            else { return false }
            return !options.contains { equalForQuery(v, $0) }
        }
    }
}
