/// The static checks Firebase makes when rules are deployed, as far as they are certain
/// without type inference: the rule is boolean where that is visible, methods exist and get
/// the right number of arguments, literal arguments have the right type, `matches()` gets a
/// regex literal, `query` has only its own members, and snapshots are not used as values.
/// Iterative, so a long expression does not recurse deeply.
enum DatabaseRulesChecker {
    /// Method name → (fewest, most) arguments.
    static let snapshotMethods: [String: (Int, Int)] = [
        "val": (0, 0), "child": (1, 1), "parent": (0, 0), "hasChild": (1, 1), "hasChildren": (0, 1), "exists": (0, 0),
        "getPriority": (0, 0), "isNumber": (0, 0), "isString": (0, 0), "isBoolean": (0, 0),
    ]
    static let stringMethods: [String: (Int, Int)] = [
        "contains": (1, 1), "beginsWith": (1, 1), "endsWith": (1, 1), "replace": (2, 2), "toLowerCase": (0, 0),
        "toUpperCase": (0, 0), "matches": (1, 1),
    ]
    static let queryMembers: Set<String> = [
        "orderByKey", "orderByValue", "orderByPriority", "orderByChild", "startAt", "endAt", "equalTo", "limitToFirst", "limitToLast",
    ]
    /// Methods whose arguments are strings (paths or text).
    static let stringArguments: Set<String> = ["child", "hasChild", "contains", "beginsWith", "endsWith", "replace"]

    static func check(_ rule: DatabaseRuleExpression, kind: DatabaseRuleKind) -> Diagnostic? {
        if let problem = booleanProblem(rule, kind: kind) { return problem }
        var pending = [rule]
        while let e = pending.popLast() {
            if let problem = problem(e) { return problem }
            switch e.kind {
            case .null, .boolean, .number, .string, .regex, .variable: break
            case .array(let items): pending.append(contentsOf: items)
            case .member(let base, _): pending.append(base)
            case .index(let base, let index): pending.append(contentsOf: [base, index])
            case .call(let receiver, _, let arguments):
                pending.append(receiver)
                pending.append(contentsOf: arguments)
            case .not(let operand), .negate(let operand): pending.append(operand)
            case .binary(_, let left, let right), .and(let left, let right), .or(let left, let right):
                pending.append(contentsOf: [left, right])
            case .conditional(let condition, let whenTrue, let whenFalse): pending.append(contentsOf: [condition, whenTrue, whenFalse])
            }
        }
        return nil
    }

    /// A rule must be boolean: literal non-booleans as the rule, as an operand of `!`, `&&`,
    /// `||`, or as a branch of a top-level `?:` are rejected (`"7"`, `"x ? 7 : true"`).
    private static func booleanProblem(_ rule: DatabaseRuleExpression, kind: DatabaseRuleKind) -> Diagnostic? {
        var pending = [rule]
        while let e = pending.popLast() {
            switch e.kind {
            case .number, .string, .null, .array, .regex, .variable(.now), .variable(.auth), .variable(.query), .variable(.capture):
                return Diagnostic(.error, "\(kind.rawValue) must be a boolean expression", at: e.range)
            case .variable(.root), .variable(.data), .variable(.newData):
                return Diagnostic(.error, "\(kind.rawValue) must be a boolean expression, not a snapshot", at: e.range)
            case .not(let operand): pending.append(operand)
            case .and(let left, let right), .or(let left, let right): pending.append(contentsOf: [left, right])
            case .conditional(_, let whenTrue, let whenFalse): pending.append(contentsOf: [whenTrue, whenFalse])
            // Results whose type is known not to be boolean: numbers and strings from
            // arithmetic, strings from string methods and `auth.uid`, snapshots, lengths.
            case .binary(let op, _, _) where [.add, .subtract, .multiply, .divide, .remainder].contains(op):
                return Diagnostic(.error, "\(kind.rawValue) must be a boolean expression", at: e.range)
            case .negate:
                return Diagnostic(.error, "\(kind.rawValue) must be a boolean expression", at: e.range)
            case .call(_, let method, _) where ["child", "parent", "toLowerCase", "toUpperCase", "replace"].contains(method):
                return Diagnostic(.error, "\(kind.rawValue) must be a boolean expression", at: e.range)
            case .member(let base, let name) where name == "length" || (base.isVariable(.auth) && (name == "uid" || name == "provider")):
                return Diagnostic(.error, "\(kind.rawValue) must be a boolean expression", at: e.range)
            default: break
            }
        }
        return nil
    }

    private static func isSnapshot(_ e: DatabaseRuleExpression) -> Bool {
        switch e.kind {
        case .variable(.root), .variable(.data), .variable(.newData): true
        case .call(_, let method, _): method == "child" || method == "parent"
        default: false
        }
    }

    private static func isNonString(_ e: DatabaseRuleExpression) -> Bool {
        switch e.kind {
        case .number, .boolean, .null, .array, .regex: true
        default: false
        }
    }

    private static func problem(_ e: DatabaseRuleExpression) -> Diagnostic? {
        func error(_ message: String, _ at: DatabaseRuleExpression) -> Diagnostic { Diagnostic(.error, message, at: at.range) }
        switch e.kind {
        case .call(let receiver, let method, let arguments):
            guard let (fewest, most) = snapshotMethods[method] ?? stringMethods[method] else {
                return error("unknown method \(method)()", e)
            }
            guard (fewest...most).contains(arguments.count) else {
                let expected = fewest == most ? "\(fewest)" : "\(fewest) or \(most)"
                return error("\(method)() takes \(expected) argument\(most == 1 ? "" : "s"), not \(arguments.count)", e)
            }
            if stringMethods[method] != nil, isSnapshot(receiver) {
                return error("\(method)() is a string method: call it on val()", e)
            }
            if snapshotMethods[method] != nil, !isSnapshotReceiverPossible(receiver) {
                return error("\(method)() is a snapshot method (root, data, newData, child(), parent())", e)
            }
            if stringArguments.contains(method), let bad = arguments.first(where: isNonString) {
                return error("\(method)() takes string arguments", bad)
            }
            if method == "matches" {
                guard case .regex = arguments[0].kind else { return error("matches() takes a regex literal (/…/)", arguments[0]) }
            }
            if method == "hasChildren", let list = arguments.first {
                guard case .array(let items) = list.kind else { return error("hasChildren() takes a list of child names", list) }
                if items.isEmpty { return error("hasChildren() takes a non-empty list of child names", list) }
                if let bad = items.first(where: isNonString) { return error("hasChildren() takes a list of strings", bad) }
            }
        case .member(let base, let name):
            if case .variable(.query) = base.kind, !queryMembers.contains(name) {
                return error("query has no property '\(name)'", e)
            }
            if isSnapshot(base) { return error("snapshots have no properties: use child('\(name)')", e) }
            if case .call = base.kind, name != "length" { return error("'\(name)' is not a property of a method's result", e) }
        case .negate(let operand):
            switch operand.kind {
            case .string, .boolean, .null, .array, .regex: return error("unary '-' needs a number", operand)
            default: if isSnapshot(operand) { return error("unary '-' needs a number, not a snapshot", operand) }
            }
        case .binary(let op, let left, let right):
            if [.subtract, .multiply, .divide, .remainder].contains(op) {
                for side in [left, right] {
                    switch side.kind {
                    case .string, .boolean, .null, .array, .regex: return error("'\(op.rawValue)' needs numbers", side)
                    default: break
                    }
                }
            }
            if op == .add {
                for side in [left, right] {
                    switch side.kind {
                    case .boolean, .null, .array, .regex: return error("'+' adds numbers or joins strings", side)
                    default: break
                    }
                }
            }
            switch op {
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                for side in [left, right] {
                    switch side.kind {
                    case .boolean, .null, .array, .regex: return error("'\(op.rawValue)' compares numbers or strings", side)
                    default: break
                    }
                    if isSnapshot(side) { return error("compare a snapshot's val(), not the snapshot", side) }
                }
            default:
                for side in [left, right] where isSnapshot(side) {
                    return error("compare a snapshot's val(), not the snapshot", side)
                }
            }
        default:
            break
        }
        return nil
    }

    /// Whether `receiver` could be a snapshot (literals and `auth`/`query`/`now` cannot).
    private static func isSnapshotReceiverPossible(_ receiver: DatabaseRuleExpression) -> Bool {
        switch receiver.kind {
        case .null, .boolean, .number, .string, .array, .regex, .variable(.auth), .variable(.query), .variable(.now), .variable(.capture):
            false
        case .call(_, let method, _): method == "child" || method == "parent"
        case .member: false
        default: true
        }
    }
}

extension DatabaseRuleExpression {
    func isVariable(_ variable: Variable) -> Bool {
        if case .variable(let v) = kind { return v == variable }
        return false
    }
}
