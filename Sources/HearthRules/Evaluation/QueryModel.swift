import HearthCore

/// What one conjunction of a list query's filters says about the documents it can return.
///
/// "Rules are not filters": a `list` rule is evaluated once per disjunct of the query with
/// `resource` standing for *any* document the query could return (Google's emulator works
/// the same way, measured against it):
///
/// 1. The query filter is put in disjunctive normal form: `OR` branches, every value of an
///    `in` filter and every value of an `array-contains-any` filter each give a disjunct.
///    Every disjunct must satisfy the rule.
/// 2. In a disjunct, `resource.data.f` is the query's value when the disjunct has
///    `f == value`; a field path constrained deeper (`f.g == v`) can be navigated.
/// 3. Otherwise `resource.data.f` is symbolic. `resource.data.f OP c` is true when the
///    disjunct's inequality filters on `f` imply it (`f > 10` implies `f > 5` and `f != 3`;
///    `not-in [3, 4]` implies `f != 3`), and an error (deny) otherwise — also when the
///    filters contradict it: Google's emulator denies `!(resource.data.x < 5)` under
///    `x > 10`, so a comparison is never proven false. Only values of the same type are
///    compared (an int filter does not decide a float comparison).
/// 4. `'f' in resource.data` is true when some filter constrains `f` (filters only match
///    documents that have the field); `c in resource.data.f` and
///    `resource.data.f.hasAny([..c..])` are true under `array-contains c`.
/// 5. Anything else that depends on the unknown document (`resource.data.size()`, `is`
///    checks on symbolic fields, arithmetic, the document id without a `__name__ ==`
///    filter) is an error, which denies unless `&&`/`||` decide without it.
/// 6. `resource == null` is false and `resource != null` true: every result exists.
final class QueryModel {
    var equalities: [[String]: RulesValue] = [:]
    var constraints: [[String]: [(Expr.BinaryOperator, RulesValue)]] = [:]
    var contains: [[String]: [RulesValue]] = [:]
    var documentId: String?

    /// Expands a query filter into conjunctions of simple field constraints.
    static func disjuncts(of filter: RulesQuery.Filter?, limit: Int) -> [[(FieldPath, RulesQuery.Operator, Value)]]? {
        guard let filter else { return [[]] }
        func expand(_ f: RulesQuery.Filter) -> [[(FieldPath, RulesQuery.Operator, Value)]]? {
            switch f {
            case .field(let path, .in, .array(let values)):
                return values.map { [(path, .equal, $0)] }
            case .field(let path, .arrayContainsAny, .array(let values)):
                return values.map { [(path, .arrayContains, $0)] }
            case .field(let path, let op, let v):
                return [[(path, op, v)]]
            case .unary(let path, let op):
                switch op {
                case .isNull: return [[(path, .equal, .null)]]
                case .isNaN: return [[(path, .equal, .double(.nan))]]
                case .isNotNull: return [[(path, .notEqual, .null)]]
                case .isNotNaN: return [[(path, .notEqual, .double(.nan))]]
                }
            case .or(let fs):
                var out: [[(FieldPath, RulesQuery.Operator, Value)]] = []
                for x in fs {
                    guard let e = expand(x) else { return nil }
                    out += e
                    if out.count > limit { return nil }
                }
                return out
            case .and(let fs):
                var out: [[(FieldPath, RulesQuery.Operator, Value)]] = [[]]
                for x in fs {
                    guard let e = expand(x) else { return nil }
                    var next: [[(FieldPath, RulesQuery.Operator, Value)]] = []
                    for a in out { for b in e { next.append(a + b) } }
                    if next.count > limit { return nil }
                    out = next
                }
                return out
            }
        }
        return expand(filter)
    }

    init(_ conjunction: [(FieldPath, RulesQuery.Operator, Value)]) {
        for (path, op, value) in conjunction {
            let key = path.segments
            let v = RulesValue(value)
            if path.isDocumentName {
                if op == .equal, case .path(let p) = v, let last = p.segments.last { documentId = last }
                continue
            }
            switch op {
            case .equal: if equalities[key] == nil { equalities[key] = v }
            case .notEqual: constraints[key, default: []].append((.notEqual, v))
            case .lessThan: constraints[key, default: []].append((.less, v))
            case .lessThanOrEqual: constraints[key, default: []].append((.lessOrEqual, v))
            case .greaterThan: constraints[key, default: []].append((.greater, v))
            case .greaterThanOrEqual: constraints[key, default: []].append((.greaterOrEqual, v))
            case .notIn:
                if case .list(let vs) = v { for x in vs { constraints[key, default: []].append((.notEqual, x)) } }
            case .arrayContains: contains[key, default: []].append(v)
            case .in, .arrayContainsAny: break  // expanded into disjuncts
            }
        }
    }

    /// Whether some filter constrains `path` or a field under it (so the field exists).
    func constrains(_ path: [String]) -> Bool {
        func under(_ k: [String]) -> Bool { k.count >= path.count && Array(k.prefix(path.count)) == path }
        return equalities.keys.contains(where: under) || constraints.keys.contains(where: under)
            || contains.keys.contains(where: under)
    }

    /// `resource.data` navigated to `path`: the bound value, or symbolic.
    func field(_ path: [String]) -> EvalValue {
        if let v = equalities[path] { return .value(v) }
        return .symbolic(.data(path))
    }

    /// Decides `field OP c` from the constraints: true when implied, nil otherwise.
    func decide(_ path: [String], _ op: Expr.BinaryOperator, _ c: RulesValue) -> Bool? {
        guard let cs = constraints[path] else { return nil }
        func sameType(_ a: RulesValue, _ b: RulesValue) -> Bool { a.typeName == b.typeName }
        func cmp(_ a: RulesValue, _ b: RulesValue) -> Int? {
            guard sameType(a, b), let r = RulesOrdering.compare(a, b), r != 2 else { return nil }
            return r
        }
        // Does constraint (k, v) imply `field op c`?
        func implies(_ k: Expr.BinaryOperator, _ v: RulesValue, _ op: Expr.BinaryOperator) -> Bool {
            if op == .notEqual, k == .notEqual { return sameType(v, c) && v.rulesEquals(c) }
            guard let r = cmp(v, c) else { return false }  // r: v vs c
            switch (op, k) {
            case (.greater, .greater): return r >= 0
            case (.greater, .greaterOrEqual): return r > 0
            case (.greaterOrEqual, .greater), (.greaterOrEqual, .greaterOrEqual): return r >= 0
            case (.less, .less): return r <= 0
            case (.less, .lessOrEqual): return r < 0
            case (.lessOrEqual, .less), (.lessOrEqual, .lessOrEqual): return r <= 0
            case (.notEqual, .greater): return r >= 0
            case (.notEqual, .greaterOrEqual): return r > 0
            case (.notEqual, .less): return r <= 0
            case (.notEqual, .lessOrEqual): return r < 0
            default: return false
            }
        }
        for (k, v) in cs where implies(k, v, op) { return true }
        return nil
    }
}

extension Evaluator {
    func symbolicMember(_ s: Symbolic, _ name: String, _ e: Expr) throws(EvalError) -> EvalValue {
        guard let query else { throw dependsOnQuery(s, e) }
        switch s {
        case .resource:
            switch name {
            case "data": return .symbolic(.data([]))
            case "id":
                if let id = query.documentId { return .value(.string(id)) }
                return .symbolic(.unknown("resource.id"))
            case "__name__":
                if let id = query.documentId, let base = collectionPath { return .value(.path(RulesPath(base.segments + [id]))) }
                return .symbolic(.unknown("resource.__name__"))
            default:
                throw fail("Property \(name) is undefined on object.", e)
            }
        case .data(let p):
            return query.field(p + [name])
        case .unknown:
            throw dependsOnQuery(s, e)
        }
    }

    /// The collection a (non-group) list request reads, for `resource.__name__`.
    var collectionPath: RulesPath? {
        if case .firestoreCollection(let db, let path) = request.target {
            return RulesPath.firestoreDocument(database: db, path: path.segments)
        }
        return nil
    }

    func symbolicBinary(_ op: Expr.BinaryOperator, _ a: EvalValue, _ b: EvalValue, _ e: Expr) throws(EvalError) -> EvalValue {
        let flipped: [Expr.BinaryOperator: Expr.BinaryOperator] = [
            .less: .greater, .greater: .less, .lessOrEqual: .greaterOrEqual, .greaterOrEqual: .lessOrEqual,
            .equal: .equal, .notEqual: .notEqual,
        ]
        switch (a, b) {
        case (.symbolic(let s), .value(let c)), (.value(let c), .symbolic(let s)):
            let symbolicOnLeft: Bool
            if case .symbolic = a { symbolicOnLeft = true } else { symbolicOnLeft = false }
            if op == .in {
                if symbolicOnLeft { throw dependsOnQuery(s, e) }
                // 'f' in resource.data / c in resource.data.f
                if case .data(let p) = s, let query {
                    if case .string(let k) = c, query.constrains(p + [k]) { return .value(.bool(true)) }
                    if !p.isEmpty, let vs = query.contains[p], vs.contains(where: { $0.rulesEquals(c) && $0.typeName == c.typeName }) {
                        return .value(.bool(true))
                    }
                }
                throw dependsOnQuery(s, e)
            }
            guard let effective = symbolicOnLeft ? op : flipped[op] else { throw dependsOnQuery(s, e) }
            switch s {
            case .resource:
                if case .null = c, op == .equal { return .value(.bool(false)) }
                if case .null = c, op == .notEqual { return .value(.bool(true)) }
            case .data(let p) where !p.isEmpty:
                if let decided = query?.decide(p, effective, c) { return .value(.bool(decided)) }
            default:
                break
            }
            throw dependsOnQuery(s, e)
        case (.symbolic(let s), _), (_, .symbolic(let s)):
            throw dependsOnQuery(s, e)
        default:
            throw fail("Unreachable symbolic operation.", e)
        }
    }

    func symbolicMethod(_ s: Symbolic, _ name: String, _ args: [RulesValue], _ e: Expr, _ base: Expr) throws(EvalError) -> EvalValue {
        guard let query, case .data(let p) = s else { throw dependsOnQuery(s, base) }
        switch name {
        case "get" where args.count == 2:
            var path = p
            switch args[0] {
            case .string(let k): path.append(k)
            case .list(let ks):
                for k in ks {
                    guard case .string(let x) = k else { throw dependsOnQuery(s, base) }
                    path.append(x)
                }
            default: throw dependsOnQuery(s, base)
            }
            if query.constrains(path) { return query.field(path) }
        case "hasAny" where args.count == 1 && !p.isEmpty, "hasAll" where args.count == 1 && !p.isEmpty:
            guard case .list(let wanted) = args[0], let have = query.contains[p] else { break }
            func held(_ v: RulesValue) -> Bool { have.contains { $0.rulesEquals(v) && $0.typeName == v.typeName } }
            if name == "hasAny", wanted.contains(where: held) { return .value(.bool(true)) }
            if name == "hasAll", wanted.allSatisfy(held) { return .value(.bool(true)) }
        default:
            break
        }
        throw dependsOnQuery(s, base)
    }
}
