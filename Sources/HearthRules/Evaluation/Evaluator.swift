import HearthCore

/// Evaluates expressions of one ruleset for one request. Errors are values (``EvalError``)
/// that `&&`, `||` absorb as Firebase's do; steps, call depth and document accesses are
/// counted against budgets; coverage and a "blame" node for false conditions are recorded.
final class Evaluator {
    let ruleset: Ruleset
    let request: RulesRequest
    let options: RulesEvaluationOptions
    let documents: (any RulesDocumentLookup)?
    var ledger: DocumentAccessLedger
    var accesses = 0
    var steps = 0
    var depth = 0
    var callDepth = 0
    var coverage: RulesCoverage?
    var blame: Expr?
    var debugOutput: [String] = []
    var requestCache: RulesValue?
    let requestPath: RulesPath?
    var resourceValue: EvalValue
    var query: QueryModel?

    static let maxDepth = 3000

    init(ruleset: Ruleset, request: RulesRequest, options: RulesEvaluationOptions,
         documents: (any RulesDocumentLookup)?, ledger: DocumentAccessLedger, requestPath: RulesPath?, query: QueryModel?) {
        self.ruleset = ruleset
        self.request = request
        self.options = options
        self.documents = documents
        self.ledger = ledger
        self.query = query
        self.requestPath = requestPath
        if options.recordCoverage { coverage = RulesCoverage(expressionCount: ruleset.expressions.count) }
        if request.method == .list {
            resourceValue = .symbolic(.resource)
        } else {
            resourceValue = .value(request.resource ?? .null)
        }
    }

    /// `request`, built the first time a rule reads it.
    var requestValue: RulesValue {
        if let cached = requestCache { return cached }
        var r: [String: RulesValue] = [
            "auth": request.auth?.rulesValue ?? .null,
            "method": .string(request.method.rawValue),
            "time": .timestamp(request.time),
        ]
        if let requestPath { r["path"] = .path(requestPath) }
        if request.method == .list { r["query"] = (request.query ?? RulesQuery()).rulesValue }
        if let nr = request.newResource {
            r["resource"] = nr
        } else if request.method == .delete {
            r["resource"] = .null  // measured: `request.resource == null` is true on delete
        }
        for (k, v) in request.additionalFields { r[k] = v }
        let value = RulesValue.map(r)
        requestCache = value
        return value
    }

    // MARK: Errors

    func fail(_ message: String, _ e: Expr) -> EvalError { EvalError(message: message, range: e.range) }

    func fatal(_ message: String, _ e: Expr) -> EvalError { EvalError(message: message, range: e.range, fatal: true) }

    func dependsOnQuery(_ s: Symbolic, _ e: Expr) -> EvalError {
        fail("\(s.describe) is not known for every document the query can return (rules are not filters: "
             + "constrain the query so that the condition holds for all of its results).", e)
    }

    // MARK: Evaluation

    func eval(_ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        steps += 1
        if steps > options.maxSteps {
            throw fatal("Exceeded the limit of \(options.maxSteps) evaluation steps for one request.", e)
        }
        depth += 1
        defer { depth -= 1 }
        if depth > Self.maxDepth || (depth >= StackGuard.deep && depth & 3 == 0 && !StackGuard.hasRoom()) {
            throw fatal("Evaluation is nested too deeply for the stack of this thread.", e)
        }
        let result: EvalValue
        do throws(EvalError) {
            result = try evalKind(e, scope)
        } catch {
            coverage?.record(e.id, -1)
            throw error
        }
        if case .value(.bool(let b)) = result {
            coverage?.record(e.id, b ? 1 : 0)
            if !b && options.explain {
                switch e.kind {
                case .binary(.and, _, _), .ternary: break
                case .call: if !isUserCall(e, scope) { blame = e }
                default: blame = e
                }
            }
        } else {
            coverage?.record(e.id, 2)
        }
        return result
    }

    func isUserCall(_ e: Expr, _ scope: Scope) -> Bool {
        if case .call(let callee, _) = e.kind, case .identifier(let name) = callee.kind { return scope.function(name) != nil }
        return false
    }

    /// Evaluates to a concrete value; symbolic values error here.
    func concrete(_ e: Expr, _ scope: Scope) throws(EvalError) -> RulesValue {
        switch try eval(e, scope) {
        case .value(let v): return v
        case .symbolic(let s): throw dependsOnQuery(s, e)
        }
    }

    /// Dispatches on the node kind. Each case is an out-of-line function so that the
    /// recursion (eval → evalKind → case → eval) keeps small stack frames.
    func evalKind(_ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        switch e.kind {
        case .null: return .value(.null)
        case .bool(let b): return .value(.bool(b))
        case .int(let i): return .value(.int(i))
        case .float(let d): return .value(.float(d))
        case .string(let s): return .value(.string(s))
        case .bytes(let b): return .value(.bytes(b))
        case .error: throw fail("This expression failed to compile.", e)
        case .list(let items): return try evalList(items, scope)
        case .map(let entries): return try evalMap(entries, scope)
        case .path(let segments): return try evalPath(segments, scope)
        case .identifier(let name): return try variable(name, e, scope)
        case .member(let base, let name): return try evalMember(base, name, e, scope)
        case .index(let base, let index): return try evalIndex(base, index, e, scope)
        case .slice(let base, let from, let to): return try evalSlice(base, from, to, e, scope)
        case .call(let callee, let args): return try call(callee, args, e, scope)
        case .unary(let op, let operand): return try evalUnary(op, operand, e, scope)
        case .binary(.and, let l, let r): return .value(.bool(try logical(isAnd: true, l, r, e, scope)))
        case .binary(.or, let l, let r): return .value(.bool(try logical(isAnd: false, l, r, e, scope)))
        case .binary(let op, let l, let r): return try evalBinary(op, l, r, e, scope)
        case .ternary(let c, let t, let f): return try evalTernary(c, t, f, scope)
        case .isType(let x, let typeName): return try evalIsType(x, typeName, e, scope)
        }
    }

    @inline(never)
    func evalList(_ items: [Expr], _ scope: Scope) throws(EvalError) -> EvalValue {
        var out: [RulesValue] = []
        out.reserveCapacity(items.count)
        for i in items { out.append(try concrete(i, scope)) }
        return .value(.list(out))
    }

    @inline(never)
    func evalMap(_ entries: [(key: Expr, value: Expr)], _ scope: Scope) throws(EvalError) -> EvalValue {
        var out: [String: RulesValue] = [:]
        for (k, v) in entries {
            let key = try concrete(k, scope)
            guard case .string(let ks) = key else { throw fail("Map keys must be strings, not \(key.typeName).", k) }
            out[ks] = try concrete(v, scope)
        }
        return .value(.map(out))
    }

    @inline(never)
    func evalPath(_ segments: [Expr.PathSegment], _ scope: Scope) throws(EvalError) -> EvalValue {
        var out: [String] = []
        for seg in segments {
            switch seg {
            case .literal(let s): out.append(s)
            case .interpolation(let x):
                switch try concrete(x, scope) {
                case .string(let s): out.append(s)
                case .path(let p): out += p.segments
                case .int(let i): out.append(String(i))
                case .float(let d): out.append(RulesFormatting.javaDouble(d))
                case .bool(let b): out.append(b ? "true" : "false")
                case let v: throw fail("Cannot use a \(v.typeName) as a path segment.", x)
                }
            }
        }
        return .value(.path(RulesPath(out)))
    }

    @inline(never)
    func evalMember(_ base: Expr, _ name: String, _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        let b = try eval(base, scope)
        return try member(b, name, e)
    }

    @inline(never)
    func evalIndex(_ base: Expr, _ index: Expr, _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        let b = try eval(base, scope)
        let i = try concrete(index, scope)
        return try self.index(b, i, e)
    }

    @inline(never)
    func evalSlice(_ base: Expr, _ from: Expr?, _ to: Expr?, _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        let b = try concrete(base, scope)
        var f: RulesValue?
        var t: RulesValue?
        if let from { f = try concrete(from, scope) }
        if let to { t = try concrete(to, scope) }
        return .value(try slice(b, f, t, e))
    }

    @inline(never)
    func evalUnary(_ op: Expr.UnaryOperator, _ operand: Expr, _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        let v = try concrete(operand, scope)
        return .value(try unary(op, v, e))
    }

    func unary(_ op: Expr.UnaryOperator, _ v: RulesValue, _ e: Expr) throws(EvalError) -> RulesValue {
        switch (op, v) {
        case (.not, .bool(let b)): return .bool(!b)
        case (.negate, .int(let i)):
            guard i != .min else { throw fail("Integer overflow.", e) }
            return .int(-i)
        case (.negate, .float(let d)): return .float(-d)
        case (.negate, .duration(let d)):
            guard let n = d.negated else { throw fail("Duration overflow.", e) }
            return .duration(n)
        default:
            throw fail("Unsupported operation error. Received: \(op.rawValue)\(v.typeName).", e)
        }
    }

    @inline(never)
    func evalBinary(_ op: Expr.BinaryOperator, _ l: Expr, _ r: Expr, _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        let a = try eval(l, scope)
        let b = try eval(r, scope)
        return try binary(op, a, b, e)
    }

    @inline(never)
    func evalTernary(_ c: Expr, _ t: Expr, _ f: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        let cv = try concrete(c, scope)
        guard case .bool(let b) = cv else { throw fail("The condition of '?:' must be a bool, not \(cv.typeName).", c) }
        return try eval(b ? t : f, scope)
    }

    @inline(never)
    func evalIsType(_ x: Expr, _ typeName: String, _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        switch try eval(x, scope) {
        case .value(let value): return .value(.bool(Self.isType(value, typeName)))
        case .symbolic(let s): throw dependsOnQuery(s, x)
        }
    }

    static func isType(_ v: RulesValue, _ name: String) -> Bool {
        switch (name, v) {
        case ("bool", .bool), ("int", .int), ("float", .float), ("string", .string), ("bytes", .bytes),
             ("list", .list), ("map", .map), ("set", .set), ("path", .path), ("timestamp", .timestamp),
             ("duration", .duration), ("latlng", .latlng), ("map_diff", .mapDiff), ("number", .int), ("number", .float):
            return true
        case ("vector", .map(let m)):
            if case .string("__vector__")? = m["__type__"], case .list? = m["value"] { return true }
            return false
        default:
            return false
        }
    }

    /// `&&` and `||` with Firebase's error absorption: an error on either side is replaced by
    /// the other side's decisive value (`error || true` is true, `false && error` is false).
    func logical(isAnd: Bool, _ l: Expr, _ r: Expr, _ e: Expr, _ scope: Scope) throws(EvalError) -> Bool {
        let decisive = !isAnd  // the value that decides: false for &&, true for ||
        var leftError: EvalError?
        do throws(EvalError) {
            let lv = try concrete(l, scope)
            guard case .bool(let b) = lv else {
                throw fail("Operands of '\(isAnd ? "&&" : "||")' must be bools, not \(lv.typeName).", l)
            }
            if b == decisive { return decisive }
        } catch {
            if error.fatal { throw error }
            leftError = error
        }
        let rv: RulesValue
        do throws(EvalError) {
            rv = try concrete(r, scope)
        } catch {
            if error.fatal { throw error }
            throw leftError ?? error
        }
        guard case .bool(let b) = rv else {
            throw leftError ?? fail("Operands of '\(isAnd ? "&&" : "||")' must be bools, not \(rv.typeName).", r)
        }
        if b == decisive { return decisive }
        if let leftError { throw leftError }
        return b
    }

    func variable(_ name: String, _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        if let (s, i) = scope.lookup(name) {
            switch s.bindings[i] {
            case .value(let v): return v
            case .failed(let err): throw err
            case .evaluating: throw fail("'\(name)' refers to itself.", e)
            case .pending(let x, let letScope):
                s.bindings[i] = .evaluating
                do throws(EvalError) {
                    let v = try eval(x, letScope)
                    s.bindings[i] = .value(v)
                    return v
                } catch {
                    s.bindings[i] = error.fatal ? .pending(x, letScope) : .failed(error)
                    throw error
                }
            }
        }
        switch name {
        case "request": return .value(requestValue)
        case "resource": return resourceValue
        default: throw fail("Variable not found: '\(name)'.", e)
        }
    }

    // MARK: Member, index, slice

    func member(_ base: EvalValue, _ name: String, _ e: Expr) throws(EvalError) -> EvalValue {
        switch base {
        case .symbolic(let s): return try symbolicMember(s, name, e)
        case .value(let v): return .value(try member(v, name, e))
        }
    }

    func member(_ v: RulesValue, _ name: String, _ e: Expr) throws(EvalError) -> RulesValue {
        switch v {
        case .map(let m):
            guard let x = m[name] else { throw fail("Property \(name) is undefined on object.", e) }
            return x
        case .null:
            throw fail("Null value error: cannot read '\(name)' of null.", e)
        default:
            throw fail("Property \(name) is undefined on \(v.typeName).", e)
        }
    }

    func index(_ base: EvalValue, _ i: RulesValue, _ e: Expr) throws(EvalError) -> EvalValue {
        switch base {
        case .symbolic(let s):
            guard case .string(let k) = i else { throw dependsOnQuery(s, e) }
            return try symbolicMember(s, k, e)
        case .value(let v):
            switch (v, i) {
            case (.map, .string(let k)): return .value(try member(v, k, e))
            case (.list(let l), .int(let n)):
                guard n >= 0, n < l.count else { throw fail("Index \(n) is out of range for a list of size \(l.count).", e) }
                return .value(l[Int(n)])
            case (.string(let s), .int(let n)):
                let units = Array(s.utf16)
                guard n >= 0, n < units.count else { throw fail("Index \(n) is out of range for a string of size \(units.count).", e) }
                return .value(.string(String(decoding: [units[Int(n)]], as: UTF16.self)))
            case (.path(let p), .int(let n)):
                guard n >= 0, n < p.segments.count else { throw fail("Index \(n) is out of range for a path of \(p.segments.count) segments.", e) }
                return .value(.string(p.segments[Int(n)]))
            case (.null, _):
                throw fail("Null value error: cannot index null.", e)
            default:
                throw fail("Unsupported operation error. Received: \(v.typeName)[\(i.typeName)].", e)
            }
        }
    }

    /// `x[i:j]`, end exclusive. Google's implementation requires `0 <= i < size`,
    /// `1 <= j <= size` and `i <= j` (measured: `[1,2,3][1:1]` is `[]` but `[1,2,3][0:0]` errors).
    func slice(_ v: RulesValue, _ from: RulesValue?, _ to: RulesValue?, _ e: Expr) throws(EvalError) -> RulesValue {
        func bounds(_ size: Int) throws(EvalError) -> (Int, Int) {
            var i = 0, j = size
            if let from {
                guard case .int(let x) = from else { throw fail("Range bounds must be ints, not \(from.typeName).", e) }
                i = Int(clamping: x)
            }
            if let to {
                guard case .int(let x) = to else { throw fail("Range bounds must be ints, not \(to.typeName).", e) }
                j = Int(clamping: x)
            }
            guard i >= 0, i < size, j >= 1, j <= size, i <= j else {
                throw fail("Range [\(i):\(j)] is out of bounds for size \(size).", e)
            }
            return (i, j)
        }
        switch v {
        case .list(let l):
            let (i, j) = try bounds(l.count)
            return .list(Array(l[i..<j]))
        case .string(let s):
            let units = Array(s.utf16)
            let (i, j) = try bounds(units.count)
            return .string(String(decoding: units[i..<j], as: UTF16.self))
        default:
            throw fail("Unsupported operation error. Received: \(v.typeName)[int:int].", e)
        }
    }

    // MARK: Operators

    func binary(_ op: Expr.BinaryOperator, _ a: EvalValue, _ b: EvalValue, _ e: Expr) throws(EvalError) -> EvalValue {
        guard case .value(let x) = a, case .value(let y) = b else {
            return try symbolicBinary(op, a, b, e)
        }
        return .value(try binary(op, x, y, e))
    }

    func binary(_ op: Expr.BinaryOperator, _ x: RulesValue, _ y: RulesValue, _ e: Expr) throws(EvalError) -> RulesValue {
        func unsupported() -> EvalError {
            fail("Unsupported operation error. Received: \(x.typeName) \(op.rawValue) \(y.typeName).", e)
        }
        switch op {
        case .equal: return .bool(x.rulesEquals(y))
        case .notEqual: return .bool(!x.rulesEquals(y))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard let c = RulesOrdering.compare(x, y) else { throw unsupported() }
            if c == 2 { return .bool(false) }
            switch op {
            case .less: return .bool(c < 0)
            case .lessOrEqual: return .bool(c <= 0)
            case .greater: return .bool(c > 0)
            default: return .bool(c >= 0)
            }
        case .in:
            switch y {
            case .list(let l): return .bool(l.contains { RulesEquality.equal(x, $0, topLevel: false, ieee: true) })
            case .set(let s): return .bool(s.contains(x))
            case .map(let m):
                guard case .string(let k) = x else { throw unsupported() }
                return .bool(m[k] != nil)
            default: throw unsupported()
            }
        case .add:
            switch (x, y) {
            case (.int(let a), .int(let b)):
                let (r, o) = a.addingReportingOverflow(b)
                if o { throw fail("Integer overflow in \(a) + \(b).", e) }
                return .int(r)
            case (.float(let a), .float(let b)): return .float(a + b)
            case (.int(let a), .float(let b)): return .float(Double(a) + b)
            case (.float(let a), .int(let b)): return .float(a + Double(b))
            case (.string(let a), .string(let b)): return .string(a + b)
            case (.timestamp(let t), .duration(let d)), (.duration(let d), .timestamp(let t)):
                guard let r = Builtins.add(t, d) else { throw fail("Timestamp out of range.", e) }
                return .timestamp(r)
            case (.duration(let a), .duration(let b)):
                guard let r = a.adding(b) else { throw fail("Duration overflow.", e) }
                return .duration(r)
            default: throw unsupported()
            }
        case .subtract:
            switch (x, y) {
            case (.int(let a), .int(let b)):
                let (r, o) = a.subtractingReportingOverflow(b)
                if o { throw fail("Integer overflow in \(a) - \(b).", e) }
                return .int(r)
            case (.float(let a), .float(let b)): return .float(a - b)
            case (.int(let a), .float(let b)): return .float(Double(a) - b)
            case (.float(let a), .int(let b)): return .float(a - Double(b))
            case (.timestamp(let t), .duration(let d)):
                guard let n = d.negated, let r = Builtins.add(t, n) else {
                    throw fail("Timestamp out of range.", e)
                }
                return .timestamp(r)
            case (.timestamp(let a), .timestamp(let b)):
                guard let r = RulesDuration(seconds: a.seconds - b.seconds, nanos: Int64(a.nanos) - Int64(b.nanos)) else {
                    throw fail("Duration overflow.", e)
                }
                return .duration(r)
            case (.duration(let a), .duration(let b)):
                guard let r = a.subtracting(b) else { throw fail("Duration overflow.", e) }
                return .duration(r)
            default: throw unsupported()
            }
        case .multiply:
            switch (x, y) {
            case (.int(let a), .int(let b)):
                let (r, o) = a.multipliedReportingOverflow(by: b)
                if o { throw fail("Integer overflow in \(a) * \(b).", e) }
                return .int(r)
            case (.float(let a), .float(let b)): return .float(a * b)
            case (.int(let a), .float(let b)): return .float(Double(a) * b)
            case (.float(let a), .int(let b)): return .float(a * Double(b))
            default: throw unsupported()
            }
        case .divide:
            switch (x, y) {
            case (.int(let a), .int(let b)):
                if b == 0 { throw fail("Division by zero.", e) }
                let (r, o) = a.dividedReportingOverflow(by: b)
                if o { throw fail("Integer overflow in \(a) / \(b).", e) }
                return .int(r)
            case (.float(let a), .float(let b)): return .float(a / b)
            case (.int(let a), .float(let b)): return .float(Double(a) / b)
            case (.float(let a), .int(let b)): return .float(a / Double(b))
            default: throw unsupported()
            }
        case .remainder:
            switch (x, y) {
            case (.int(let a), .int(let b)):
                if b == 0 { throw fail("Modulo by zero.", e) }
                if b == -1 { return .int(0) }
                return .int(a % b)
            case (.float(let a), .float(let b)): return .float(a.truncatingRemainder(dividingBy: b))
            case (.int(let a), .float(let b)): return .float(Double(a).truncatingRemainder(dividingBy: b))
            case (.float(let a), .int(let b)): return .float(a.truncatingRemainder(dividingBy: Double(b)))
            default: throw unsupported()
            }
        case .and, .or:
            throw fail("Unreachable logical operator.", e)
        }
    }

    // MARK: Calls

    @inline(never)
    func call(_ callee: Expr, _ args: [Expr], _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        switch callee.kind {
        case .identifier(let name):
            if let (fn, declScope) = scope.function(name) {
                // Arguments are bound lazily, like lets (measured: `f(1 / 0)` is fine when
                // `f` ignores its parameter); each is evaluated at most once.
                return try callUser(fn, declScope, args.map { .pending($0, scope) }, e)
            }
            if name == "debug" { return try callDebug(args, e, scope) }
            return .value(try callGlobal(name, try concreteArguments(args, scope), e))
        case .member(let base, let name):
            if case .identifier(let ns) = base.kind, Builtins.namespaces.contains(ns), scope.lookup(ns) == nil {
                return .value(try callNamespace(ns, name, try concreteArguments(args, scope), e))
            }
            return try callMethod(on: base, name, args, e, scope)
        default:
            throw fail("This expression is not a function.", callee)
        }
    }

    @inline(never)
    func callMethod(on base: Expr, _ name: String, _ args: [Expr], _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        let receiver = try eval(base, scope)
        let values = try concreteArguments(args, scope)
        switch receiver {
        case .value(let r): return .value(try callMethod(r, name, values, e))
        case .symbolic(let s): return try symbolicMethod(s, name, values, e, base)
        }
    }

    @inline(never)
    func callDebug(_ args: [Expr], _ e: Expr, _ scope: Scope) throws(EvalError) -> EvalValue {
        guard args.count == 1 else { throw fail("debug() takes 1 argument.", e) }
        let v = try eval(args[0], scope)
        let text: String
        switch v {
        case .value(let x): text = x.description
        case .symbolic(let s): text = "<\(s.describe)>"
        }
        debugOutput.append("\(ruleset.source.location(e.range)): \(text)")
        return v
    }

    func concreteArguments(_ args: [Expr], _ scope: Scope) throws(EvalError) -> [RulesValue] {
        var values: [RulesValue] = []
        values.reserveCapacity(args.count)
        for a in args { values.append(try concrete(a, scope)) }
        return values
    }

    func callUser(_ fn: FunctionDeclaration, _ declScope: Scope, _ args: [Scope.Binding], _ e: Expr) throws(EvalError) -> EvalValue {
        guard args.count == fn.parameters.count else {
            throw fail("Function \(fn.name) takes \(fn.parameters.count) argument\(fn.parameters.count == 1 ? "" : "s") but \(args.count) were given.", e)
        }
        callDepth += 1
        defer { callDepth -= 1 }
        if callDepth > options.maxCallDepth + 1 {
            throw fatal("Exceeded the maximum function call depth of \(options.maxCallDepth).", e)
        }
        var scope = Scope(parent: declScope, names: fn.parameters, bindings: args)
        for b in fn.bindings {
            scope = Scope(parent: scope, names: [b.name], bindings: [.pending(b.value, scope)])
        }
        return try eval(fn.body, scope)
    }

    // MARK: Documents

    /// `get`, `exists`, `getAfter`, `existsAfter` (and Storage's `firestore.get/exists`).
    func document(_ arg: RulesValue, after: Bool, existsOnly: Bool, _ e: Expr) throws(EvalError) -> RulesValue {
        guard case .path(let p) = arg else {
            throw fail("\(existsOnly ? "exists" : "get")() expects a path, not \(arg.typeName).", e)
        }
        guard let (database, segments) = p.firestoreDocument else {
            throw fail("\(p) is not a document path (/databases/{database}/documents/{collection}/{id}…).", e)
        }
        if request.target.service == .storage, database != "(default)" {
            throw fail("Storage rules can read documents of the (default) database only.", e)
        }
        let key = (after ? "after:" : "before:") + database + "/" + segments.joined(separator: "/")
        let doc: RulesValue?
        if let cached = ledger.cache[key] {
            doc = cached
        } else {
            guard accesses < ledger.limitPerEvaluation, ledger.total < ledger.totalLimit else {
                let limit = accesses >= ledger.limitPerEvaluation ? ledger.limitPerEvaluation : ledger.totalLimit
                throw fatal("Exceeded the limit of \(limit) document accesses (get/exists) for this request.", e)
            }
            guard let documents else { throw fail("Document lookups are not available here.", e) }
            let path = ResourcePath(segments)
            do {
                doc = try documents.document(database: database, path: path, afterWrites: after)
                    .map { RulesValue.firestoreResource(database: database, path: path, data: $0) }
            } catch {
                throw fail("Reading \(p) failed: \(error).", e)
            }
            accesses += 1
            ledger.record(key, doc)
        }
        if existsOnly { return .bool(doc != nil) }
        guard let doc else { throw fail("Document \(p) does not exist.", e) }
        return doc
    }
}
