import HearthCore

/// Why a rule stopped without a value: a runtime error (the rule counts as false) or the
/// step budget (the whole request is denied).
enum DatabaseRulesFailure: Error {
    case error(String, SourceRange)
    case budgetExceeded(SourceRange)
}

/// One request's evaluation: the variables, a cache of the nodes read, and the step count.
/// Lives for one `read` or `write` call, inside one task.
final class DatabaseRulesEvaluation {
    let ruleset: DatabaseRuleset
    let auth: DatabaseRulesValue
    let now: Double
    let query: DatabaseRulesValue
    let before: any DatabaseRulesData
    let after: (any DatabaseRulesData)?
    private var cache: [DatabaseRulesSnapshot.Tree: [[String]: JSON?]] = [:]
    var steps = 0
    var attempts: [DatabaseRulesDecision.Attempt] = []

    init(ruleset: DatabaseRuleset, auth: DatabaseRulesAuth?, now: Int64, query: DatabaseRulesQuery?,
         before: any DatabaseRulesData, after: (any DatabaseRulesData)?) {
        self.ruleset = ruleset
        self.auth = auth.map { DatabaseRulesValue($0.variable) } ?? .null
        self.now = Double(now)
        self.before = before
        self.after = after
        let q = query ?? DatabaseRulesQuery()
        func bound(_ j: JSON?) -> DatabaseRulesValue { j.map(DatabaseRulesValue.init) ?? .null }
        self.query = .object([
            "orderByKey": .boolean(q.orderByKey),
            "orderByValue": .boolean(q.orderByValue),
            "orderByPriority": .boolean(q.orderByPriority),
            "orderByChild": q.orderByChild.map { .string($0) } ?? .null,
            "startAt": bound(q.startAt),
            "endAt": bound(q.endAt),
            "equalTo": bound(q.equalTo),
            "limitToFirst": q.limitToFirst.map { .number(Double($0)) } ?? .null,
            "limitToLast": q.limitToLast.map { .number(Double($0)) } ?? .null,
        ])
    }

    // MARK: Data

    /// The node at `path` of a tree, from the cache when it or an ancestor was read before.
    func node(_ tree: DatabaseRulesSnapshot.Tree, _ path: [String]) async throws -> JSON? {
        var known = cache[tree] ?? [:]
        if let hit = known[path] { return hit }
        // An ancestor already read holds this node.
        var prefix = path.count - 1
        while prefix >= 0 {
            if let ancestor = known[Array(path[..<prefix])] {
                var node = ancestor
                for key in path[prefix...] {
                    guard let current = node else { break }
                    node = DatabaseRulesSnapshotValue.child(of: current, key)
                }
                return node
            }
            prefix -= 1
        }
        let source: any DatabaseRulesData
        switch tree {
        case .before: source = before
        case .after: source = after ?? before
        }
        let fetched = try await source.node(at: path)
        known[path] = .some(fetched)
        cache[tree] = known
        return fetched
    }

    // MARK: Rules

    /// Evaluates one rule at `location` with the wildcard captures in force there. A
    /// runtime error or a non-boolean denies this rule; the budget fails the request.
    func evaluate(_ rule: DatabaseRule, rulePath: String, location: [String], captures: [String: String]) async throws
        -> DatabaseRulesDecision.Attempt.Result
    {
        let result: DatabaseRulesDecision.Attempt.Result
        switch rule.body {
        case .constant(let value):
            steps += 1
            result = value ? .allowed : .denied(at: rule.range, expression: rule.text)
        case .expression(let expression):
            let scope = Scope(location: location, captures: captures)
            do {
                result = try await conjuncts(expression, scope)
            } catch DatabaseRulesFailure.error(let message, let range) {
                result = .error(message: message, at: range)
            }
        }
        attempts.append(DatabaseRulesDecision.Attempt(
            kind: rule.kind.rawValue, rulePath: rulePath, dataPath: DatabaseRuleset.display(location), rule: rule.range,
            result: result))
        return result
    }

    /// Evaluates a top-level `a && b && …` one conjunct at a time (the same as `&&`), so a
    /// denial can name the conjunct that was false.
    private func conjuncts(_ expression: DatabaseRuleExpression, _ scope: Scope) async throws -> DatabaseRulesDecision.Attempt.Result {
        var parts: [DatabaseRuleExpression] = []
        var pending = [expression]
        while let next = pending.popLast() {
            if case .and(let left, let right) = next.kind {
                steps += 1
                pending.append(right)
                pending.append(left)
            } else {
                parts.append(next)
            }
        }
        for part in parts {
            let value = try await evaluate(part, scope, depth: 0)
            switch value {
            case .boolean(true): continue
            case .boolean(false): return .denied(at: part.range, expression: ruleset.source.text(of: part.range))
            default:
                if parts.count == 1 { return .notBoolean(type: value.typeName) }
                throw DatabaseRulesFailure.error("'&&' needs booleans, found \(value.typeName)", part.range)
            }
        }
        return .allowed
    }

    struct Scope {
        var location: [String]
        var captures: [String: String]
    }

    private func fail(_ message: String, _ e: DatabaseRuleExpression) -> DatabaseRulesFailure { .error(message, e.range) }

    static let maxDepth = 5_000

    func evaluate(_ e: DatabaseRuleExpression, _ scope: Scope, depth: Int) async throws -> DatabaseRulesValue {
        steps += 1
        if steps > ruleset.limits.maxSteps { throw DatabaseRulesFailure.budgetExceeded(e.range) }
        if depth > Self.maxDepth { throw fail("the expression is too deep to evaluate", e) }
        switch e.kind {
        case .null: return .null
        case .boolean(let b): return .boolean(b)
        case .number(let n): return .number(n)
        case .string(let s): return .string(s)
        case .regex(let r): return .regex(r)
        case .array(let items):
            var values: [DatabaseRulesValue] = []
            for item in items { values.append(try await evaluate(item, scope, depth: depth + 1)) }
            return .array(values)
        case .variable(let variable):
            switch variable {
            case .auth: return auth
            case .now: return .number(now)
            case .query: return query
            case .root: return .snapshot(DatabaseRulesSnapshot(tree: .before, path: []))
            case .data: return .snapshot(DatabaseRulesSnapshot(tree: .before, path: scope.location))
            case .newData:
                guard after != nil else { throw fail("newData is only available in .write and .validate rules", e) }
                return .snapshot(DatabaseRulesSnapshot(tree: .after, path: scope.location))
            case .capture(let name):
                guard let key = scope.captures[name] else { throw fail("\(name) is not bound here", e) }
                return .string(key)
            }
        case .member(let base, let name):
            let value = try await evaluate(base, scope, depth: depth + 1)
            return try member(value, name, e)
        case .index(let base, let index):
            let value = try await evaluate(base, scope, depth: depth + 1)
            let key = try await evaluate(index, scope, depth: depth + 1)
            switch (value, key) {
            case (.null, _): return .null
            case (.object, .string(let name)): return try member(value, name, e)
            case (.array(let items), .number(let n)):
                guard n >= 0, n == n.rounded(), n < Double(items.count) else { return .null }
                return items[Int(n)]
            default: throw fail("cannot index \(value.typeName) with \(key.typeName)", e)
            }
        case .call(let receiverExpression, let method, let argumentExpressions):
            let receiver = try await evaluate(receiverExpression, scope, depth: depth + 1)
            var arguments: [DatabaseRulesValue] = []
            for a in argumentExpressions { arguments.append(try await evaluate(a, scope, depth: depth + 1)) }
            return try await call(receiver, method, arguments, e)
        case .not(let operand):
            guard case .boolean(let b) = try await evaluate(operand, scope, depth: depth + 1) else {
                throw fail("'!' needs a boolean", e)
            }
            return .boolean(!b)
        case .negate(let operand):
            guard case .number(let n) = try await evaluate(operand, scope, depth: depth + 1) else {
                throw fail("'-' needs a number", e)
            }
            return .number(-n)
        case .and(let left, let right):
            guard case .boolean(let l) = try await evaluate(left, scope, depth: depth + 1) else {
                throw fail("'&&' needs booleans", left)
            }
            if !l { return .boolean(false) }
            guard case .boolean(let r) = try await evaluate(right, scope, depth: depth + 1) else {
                throw fail("'&&' needs booleans", right)
            }
            return .boolean(r)
        case .or(let left, let right):
            guard case .boolean(let l) = try await evaluate(left, scope, depth: depth + 1) else {
                throw fail("'||' needs booleans", left)
            }
            if l { return .boolean(true) }
            guard case .boolean(let r) = try await evaluate(right, scope, depth: depth + 1) else {
                throw fail("'||' needs booleans", right)
            }
            return .boolean(r)
        case .conditional(let condition, let whenTrue, let whenFalse):
            guard case .boolean(let c) = try await evaluate(condition, scope, depth: depth + 1) else {
                throw fail("the condition of '?:' must be a boolean", condition)
            }
            return try await evaluate(c ? whenTrue : whenFalse, scope, depth: depth + 1)
        case .binary(let op, let left, let right):
            let l = try await evaluate(left, scope, depth: depth + 1)
            let r = try await evaluate(right, scope, depth: depth + 1)
            return try binary(op, l, r, e)
        }
    }

    private func member(_ value: DatabaseRulesValue, _ name: String, _ e: DatabaseRuleExpression) throws(DatabaseRulesFailure)
        -> DatabaseRulesValue
    {
        switch value {
        case .null: return .null
        case .object(let map): return map[name] ?? .null
        case .string(let s) where name == "length": return .number(Double(s.utf16.count))
        case .snapshot: throw fail("'\(name)' is not a property of a snapshot (call a method, like child('\(name)'))", e)
        default: throw fail("\(value.typeName) has no property '\(name)'", e)
        }
    }

    private func binary(_ op: DatabaseRuleExpression.BinaryOperator, _ l: DatabaseRulesValue, _ r: DatabaseRulesValue,
                        _ e: DatabaseRuleExpression) throws(DatabaseRulesFailure) -> DatabaseRulesValue
    {
        switch op {
        case .equal, .strictEqual: return .boolean(DatabaseRulesValue.strictlyEqual(l, r))
        case .notEqual, .strictNotEqual: return .boolean(!DatabaseRulesValue.strictlyEqual(l, r))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let order: Int
            switch (l, r) {
            case (.number(let x), .number(let y)):
                if x.isNaN || y.isNaN { return .boolean(false) }
                order = x < y ? -1 : (x > y ? 1 : 0)
            case (.string(let x), .string(let y)):
                let a = Array(x.utf16)
                let b = Array(y.utf16)
                order = a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
            default:
                throw fail("'\(op.rawValue)' compares two numbers or two strings, not \(l.typeName) and \(r.typeName)", e)
            }
            switch op {
            case .less: return .boolean(order < 0)
            case .lessOrEqual: return .boolean(order <= 0)
            case .greater: return .boolean(order > 0)
            default: return .boolean(order >= 0)
            }
        case .add:
            if case .number(let x) = l, case .number(let y) = r { return .number(x + y) }
            let stringy: Bool
            switch (l, r) {
            case (.string, _), (_, .string): stringy = true
            default: stringy = false
            }
            guard stringy, let a = l.concatenationText, let b = r.concatenationText else {
                throw fail("'+' adds numbers or joins strings, not \(l.typeName) and \(r.typeName)", e)
            }
            guard a.utf8.count + b.utf8.count <= ruleset.limits.maxStringLength else { throw fail("string too long", e) }
            return .string(a + b)
        case .subtract, .multiply, .divide, .remainder:
            guard case .number(let x) = l, case .number(let y) = r else {
                throw fail("'\(op.rawValue)' needs numbers, not \(l.typeName) and \(r.typeName)", e)
            }
            switch op {
            case .subtract: return .number(x - y)
            case .multiply: return .number(x * y)
            // Firebase gives NaN for a division by zero (`(1/0 + '') == 'NaN'`).
            case .divide: return .number(y == 0 ? .nan : x / y)
            default: return .number(y == 0 ? .nan : x.truncatingRemainder(dividingBy: y))
            }
        }
    }

    // MARK: Methods

    private func call(_ receiver: DatabaseRulesValue, _ method: String, _ arguments: [DatabaseRulesValue],
                      _ e: DatabaseRuleExpression) async throws -> DatabaseRulesValue
    {
        func arity(_ n: Int) throws(DatabaseRulesFailure) {
            guard arguments.count == n else {
                throw fail("\(method)() takes \(n) argument\(n == 1 ? "" : "s"), not \(arguments.count)", e)
            }
        }
        func stringArgument(_ i: Int) throws(DatabaseRulesFailure) -> String {
            guard case .string(let s) = arguments[i] else {
                throw fail("\(method)() needs a string argument, not \(arguments[i].typeName)", e)
            }
            return s
        }
        switch receiver {
        case .snapshot(let snapshot):
            switch method {
            case "val":
                try arity(0)
                return DatabaseRulesSnapshotValue.value(try await node(snapshot.tree, snapshot.path))
            case "child":
                try arity(1)
                let relative = try relativePath(stringArgument(0), e)
                return .snapshot(DatabaseRulesSnapshot(tree: snapshot.tree, path: snapshot.path + relative))
            case "parent":
                try arity(0)
                guard !snapshot.path.isEmpty else { throw fail("parent() of the root", e) }
                return .snapshot(DatabaseRulesSnapshot(tree: snapshot.tree, path: Array(snapshot.path.dropLast())))
            case "hasChild":
                try arity(1)
                let relative = try relativePath(stringArgument(0), e)
                let path = snapshot.path + relative
                return .boolean(DatabaseRulesSnapshotValue.exists(try await node(snapshot.tree, path)))
            case "hasChildren":
                let here = try await node(snapshot.tree, snapshot.path)
                if arguments.isEmpty { return .boolean(DatabaseRulesSnapshotValue.hasChildren(here)) }
                try arity(1)
                guard case .array(let names) = arguments[0], !names.isEmpty else {
                    throw fail("hasChildren() takes a non-empty list of child names", e)
                }
                for name in names {
                    guard case .string(let key) = name else { throw fail("hasChildren() takes a list of strings", e) }
                    let relative = try relativePath(key, e)
                    let path = snapshot.path + relative
                    if !DatabaseRulesSnapshotValue.exists(try await node(snapshot.tree, path)) { return .boolean(false) }
                }
                return .boolean(true)
            case "exists":
                try arity(0)
                return .boolean(DatabaseRulesSnapshotValue.exists(try await node(snapshot.tree, snapshot.path)))
            case "getPriority":
                try arity(0)
                return DatabaseRulesSnapshotValue.priority(try await node(snapshot.tree, snapshot.path))
            case "isNumber", "isString", "isBoolean":
                try arity(0)
                let value = DatabaseRulesSnapshotValue.value(try await node(snapshot.tree, snapshot.path))
                switch (method, value) {
                case ("isNumber", .number), ("isString", .string), ("isBoolean", .boolean): return .boolean(true)
                default: return .boolean(false)
                }
            default:
                throw fail("snapshots have no method \(method)()", e)
            }
        case .string(let s):
            switch method {
            case "contains", "beginsWith", "endsWith":
                try arity(1)
                let needle = Array(try stringArgument(0).unicodeScalars)
                let hay = Array(s.unicodeScalars)
                switch method {
                case "beginsWith": return .boolean(hay.starts(with: needle))
                case "endsWith": return .boolean(hay.reversed().starts(with: needle.reversed()))
                default: return .boolean(Self.find(needle, in: hay, from: 0) != nil)
                }
            case "replace":
                try arity(2)
                let target = Array(try stringArgument(0).unicodeScalars)
                let replacement = Array(try stringArgument(1).unicodeScalars)
                let hay = Array(s.unicodeScalars)
                guard !target.isEmpty else { return .string(s) }
                var out = String.UnicodeScalarView()
                var i = 0
                while let hit = Self.find(target, in: hay, from: i) {
                    out.append(contentsOf: hay[i..<hit])
                    out.append(contentsOf: replacement)
                    if out.count > ruleset.limits.maxStringLength { throw fail("string too long", e) }
                    i = hit + target.count
                }
                out.append(contentsOf: hay[i...])
                return .string(String(out))
            case "toLowerCase":
                try arity(0)
                return .string(s.lowercased())
            case "toUpperCase":
                try arity(0)
                return .string(s.uppercased())
            case "matches":
                try arity(1)
                guard case .regex(let regex) = arguments[0] else { throw fail("matches() takes a regex literal", e) }
                return .boolean(regex.find(s.unicodeScalars.map(\.value), from: 0) != nil)
            default:
                throw fail("strings have no method \(method)()", e)
            }
        case .null:
            throw fail("\(method)() called on null", e)
        default:
            throw fail("\(receiver.typeName) has no method \(method)()", e)
        }
    }

    private func relativePath(_ text: String, _ e: DatabaseRuleExpression) throws(DatabaseRulesFailure) -> [String] {
        let keys = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        for key in keys where key.contains(where: { ".#$[]".contains($0) }) {
            throw fail("invalid key '\(key)' in a child path: keys cannot contain . # $ [ ]", e)
        }
        return keys
    }

    private static func find(_ needle: [Unicode.Scalar], in hay: [Unicode.Scalar], from start: Int) -> Int? {
        guard !needle.isEmpty else { return start <= hay.count ? start : nil }
        guard hay.count >= needle.count else { return nil }
        var i = start
        while i + needle.count <= hay.count {
            if hay[i] == needle[0], hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
