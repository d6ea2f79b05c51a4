public import HearthCore

/// A validated query with Firestore's implicit ordering applied.
public struct NormalizedQuery: Sendable {
    public var query: Query
    /// The full ordering: explicit orders, the inequality field first if not ordered,
    /// and `__name__` last in the direction of the last explicit order.
    public var orders: [Query.Order]
    /// Fields constrained by inequality filters (they must lead the ordering).
    public var inequalityFields: [FieldPath]
    public var database: DatabaseName

    public init(_ query: Query, database: DatabaseName) throws(HearthError) {
        self.query = query
        self.database = database
        try NormalizedQuery.validate(query)
        var inequalities: [FieldPath] = []
        if let f = query.filter { NormalizedQuery.collectInequalities(f, into: &inequalities) }
        inequalityFields = inequalities
        var orders = query.orderBy
        var seen = Set(orders.map(\.field))
        if let key = orders.firstIndex(where: { $0.field.isDocumentName }) {
            // Nothing may follow the key, explicitly or as an implied inequality order.
            if key != orders.count - 1 || inequalities.contains(where: { !seen.contains($0) }) {
                throw .invalidArgument("order by clause cannot contain more fields after the key")
            }
        } else {
            // Inequality fields not already ordered come next, in field-path order, ascending
            // unless the last explicit order is descending.
            let direction = orders.last?.descending ?? false
            for f in inequalities.sorted() where !seen.contains(f) && !f.isDocumentName {
                orders.append(Query.Order(f, descending: direction))
                seen.insert(f)
            }
            orders.append(Query.Order(.documentName, descending: orders.last?.descending ?? false))
        }
        self.orders = orders
        if let c = query.startAt, c.values.count > orders.count {
            throw .invalidArgument("Too many cursor values specified. The specified order by clause has \(orders.count) fields.")
        }
        if let c = query.endAt, c.values.count > orders.count {
            throw .invalidArgument("Too many cursor values specified. The specified order by clause has \(orders.count) fields.")
        }
        for cursor in [query.startAt, query.endAt].compactMap({ $0 }) {
            for (i, v) in cursor.values.enumerated() where orders[i].field.isDocumentName {
                guard case .reference(let name) = v else {
                    throw .invalidArgument("Cursor position for __name__ must be a document reference.")
                }
                let path = try database.position(fromName: name)
                try NormalizedQuery.checkNameInScope(path, query: query, what: "Cursor")
            }
        }
    }

    static func collectInequalities(_ f: Query.Filter, into out: inout [FieldPath]) {
        switch f {
        case .field(let p, let op, _):
            if op.isInequality && !out.contains(p) { out.append(p) }
        case .unary(let p, let op):
            if (op == .isNotNull || op == .isNotNaN) && !out.contains(p) { out.append(p) }
        case .and(let fs), .or(let fs):
            for x in fs { collectInequalities(x, into: &out) }
        }
    }

    static func checkNameInScope(_ path: ResourcePath, query: Query, what: String) throws(HearthError) {
        let ok: Bool
        if query.allDescendants {
            ok = path.isDocument && query.parent.isPrefix(of: path) && path.segments.count > query.parent.segments.count
        } else {
            ok = path.isDocument && path.parent == query.collectionPath
        }
        if !ok {
            throw .invalidArgument(
                "\(what) \"\(path.text)\" is not a document of the query's \(query.allDescendants ? "scope" : "collection") \"\(query.collectionPath.text)\".")
        }
    }

    static func validate(_ q: Query) throws(HearthError) {
        if q.offset < 0 { throw .invalidArgument("offset must be non-negative.") }
        if let l = q.limit, l < 0 { throw .invalidArgument("limit is negative") }
        if q.collectionId.isEmpty && !q.allDescendants {
            throw .invalidArgument("Query must specify a collection id.")
        }
        if let f = q.filter {
            var disjunctions = 1
            try validate(f, q, &disjunctions)
            if DNF.count(f) > DocumentLimits.maxDisjunctions {
                throw .invalidArgument(
                    "Invalid Query. The query contains more than \(DocumentLimits.maxDisjunctions) disjunctions after expansion to disjunctive normal form.")
            }
            var notIns = 0, arrayContainsAny = 0, notEquals = 0
            count(f, &notIns, &arrayContainsAny, &notEquals)
            if notIns + notEquals > 1 {
                throw .invalidArgument("Only a single 'NOT_EQUAL', 'NOT_IN', 'IS_NOT_NAN', or 'IS_NOT_NULL' filter allowed per query.")
            }
            for conjunction in DNF.expand(f) {
                let contains = conjunction.filter { if case .field(_, .arrayContains, _) = $0 { return true }; return false }
                if contains.count > 1 {
                    throw .invalidArgument("A maximum of 1 'ARRAY_CONTAINS' filter is allowed per disjunction.")
                }
            }
            var inequalities: [FieldPath] = []
            collectInequalities(f, into: &inequalities)
            if hasKeyEquality(f) && !inequalities.isEmpty && !inequalities.contains(where: \.isDocumentName) {
                throw .invalidArgument(
                    "Equality on key is not allowed if there are other inequality fields and key does not appear in inequalities.")
            }
            if notIns > 0 && (arrayContainsAny > 0 || containsInOrDisjunction(f)) {
                throw .invalidArgument("'NOT_IN' cannot be used in the same query with 'IN', 'ARRAY_CONTAINS_ANY' or 'OR'.")
            }
        }
        var seen = Set<FieldPath>()
        for o in q.orderBy {
            if !seen.insert(o.field).inserted {
                throw .invalidArgument("Order by field \(o.field.canonical) is specified more than once.")
            }
        }
    }

    static func containsInOrDisjunction(_ f: Query.Filter) -> Bool {
        switch f {
        case .field(_, .in, _): true
        case .field, .unary: false
        case .or: true
        case .and(let fs): fs.contains(where: containsInOrDisjunction)
        }
    }

    static func hasKeyEquality(_ f: Query.Filter) -> Bool {
        switch f {
        case .field(let p, .equal, _), .field(let p, .in, _): p.isDocumentName
        case .field, .unary: false
        case .and(let fs), .or(let fs): fs.contains(where: hasKeyEquality)
        }
    }

    static func count(_ f: Query.Filter, _ notIns: inout Int, _ anys: inout Int, _ notEquals: inout Int) {
        switch f {
        case .field(_, .notIn, _): notIns += 1
        case .field(_, .arrayContainsAny, _): anys += 1
        case .field(_, .notEqual, _), .unary(_, .isNotNull), .unary(_, .isNotNaN): notEquals += 1
        case .field, .unary: break
        case .and(let fs), .or(let fs): for x in fs { count(x, &notIns, &anys, &notEquals) }
        }
    }

    static func validate(_ f: Query.Filter, _ q: Query, _ d: inout Int) throws(HearthError) {
        switch f {
        case .field(let path, let op, let value):
            switch op {
            case .in, .notIn, .arrayContainsAny:
                guard case .array(let values) = value, !values.isEmpty else {
                    throw .invalidArgument("A '\(op.rawValue)' filter must have a non-empty ArrayValue.")
                }
                if values.count > DocumentLimits.maxDisjunctions && op != .notIn {
                    throw .invalidArgument("'\(op.rawValue.uppercased())' supports up to 30 comparison values.")
                }
                if op == .notIn && values.count > 10 {
                    throw .invalidArgument("'NOT_IN' supports up to 10 comparison values.")
                }
            default: break
            }
            if path.isDocumentName {
                switch op {
                case .arrayContains, .arrayContainsAny:
                    throw .invalidArgument("Invalid query. You can't perform '\(op.rawValue)' queries on __name__.")
                case .in, .notIn:
                    for v in value.arrayValue ?? [] { try nameValue(v, q) }
                default: try nameValue(value, q)
                }
            }
        case .unary: break
        case .and(let fs), .or(let fs):
            if fs.isEmpty { throw .invalidArgument("A composite filter must contain at least one filter.") }
            for x in fs { try validate(x, q, &d) }
        }
    }

    static func nameValue(_ v: Value, _ q: Query) throws(HearthError) {
        guard case .reference = v else {
            throw .invalidArgument("__key__ filter value must be a Key")
        }
    }
}

/// Disjunctive normal form of filters: `in` and `array-contains-any` expand into disjuncts too.
enum DNF {
    static func count(_ f: Query.Filter) -> Int { expand(f).count }

    /// Each disjunct is a conjunction of simple filters.
    static func expand(_ f: Query.Filter) -> [[Query.Filter]] {
        switch f {
        case .field(let p, .in, .array(let values)):
            return values.map { [.field(p, .equal, $0)] }
        case .field(let p, .arrayContainsAny, .array(let values)):
            return values.map { [.field(p, .arrayContains, $0)] }
        case .field, .unary:
            return [[f]]
        case .or(let fs):
            return fs.flatMap { expand($0) }
        case .and(let fs):
            var result: [[Query.Filter]] = [[]]
            for x in fs {
                let e = expand(x)
                var next: [[Query.Filter]] = []
                for a in result { for b in e { next.append(a + b) } }
                result = next
                if result.count > 4096 { return result }
            }
            return result
        }
    }
}
