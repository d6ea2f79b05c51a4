import HearthCore

/// A value during the evaluation of a rule expression.
enum DatabaseRulesValue: Sendable {
    case null
    case boolean(Bool)
    /// Numbers are JavaScript numbers (IEEE doubles).
    case number(Double)
    case string(String)
    /// `auth`, `auth.token`, `query`, claims objects.
    case object([String: DatabaseRulesValue])
    case array([DatabaseRulesValue])
    case snapshot(DatabaseRulesSnapshot)
    /// What `val()` gives for a node with children: Firebase returns an opaque sentinel
    /// there (use `child()` to reach the children), equal to nothing but not null.
    case opaqueObject
    case regex(RulesRegex)

    var typeName: String {
        switch self {
        case .null: "null"
        case .boolean: "boolean"
        case .number: "number"
        case .string: "string"
        case .object: "object"
        case .array: "array"
        case .snapshot: "snapshot"
        case .opaqueObject: "object"
        case .regex: "regex"
        }
    }

    /// A JSON value as the rules see it (numbers as doubles, objects as maps).
    init(_ json: JSON) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .boolean(b)
        case .number(let text): self = .number(Double(text) ?? .nan)
        case .string(let s): self = .string(s)
        case .array(let items): self = .array(items.map(DatabaseRulesValue.init))
        case .object(let members):
            var map: [String: DatabaseRulesValue] = [:]
            for (key, value) in members { map[key] = DatabaseRulesValue(value) }
            self = .object(map)
        }
    }

    /// `===`: the same type and the same value (no coercion); NaN equals nothing.
    static func strictlyEqual(_ a: DatabaseRulesValue, _ b: DatabaseRulesValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.boolean(let x), .boolean(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        default: false
        }
    }

    /// JavaScript's `String(x)` for the values `+` concatenates.
    /// `null` is not joined: Firebase fails `'users/' + auth.uid` for a signed-out client.
    var concatenationText: String? {
        switch self {
        case .boolean(let b): return b ? "true" : "false"
        case .string(let s): return s
        case .number(let n): return Self.format(n)
        default: return nil
        }
    }

    static func format(_ n: Double) -> String {
        if n.isNaN { return "NaN" }
        if n.isInfinite { return n < 0 ? "-Infinity" : "Infinity" }
        if n == n.rounded(), abs(n) < 1e21 {
            if n == 0 { return "0" }
            if abs(n) < 9.007_199_254_740_992e15 { return String(Int64(n)) }
        }
        return "\(n)"
    }
}

/// A `RuleDataSnapshot`: a location in the tree before (`root`, `data`) or after (`newData`)
/// the write. Reading it goes through the evaluation's data cache.
struct DatabaseRulesSnapshot: Sendable {
    enum Tree: Sendable, Hashable { case before, after }

    var tree: Tree
    var path: [String]
}

/// How the rules read nodes in Firebase's export format.
enum DatabaseRulesSnapshotValue {
    /// The child `key` of a node, or nil. Leaves (and `.value` wrappers) have no children;
    /// `.priority` is not a child.
    static func child(of node: JSON, _ key: String) -> JSON? {
        switch node {
        case .object(let members):
            guard !key.hasPrefix(".") else { return nil }
            for (k, v) in members where k == key { return v.isNull ? nil : v }
            return nil
        case .array(let items):
            guard let i = Int(key), i >= 0, i < items.count, String(i) == key else { return nil }
            return items[i].isNull ? nil : items[i]
        default:
            return nil
        }
    }

    /// Whether the node has at least one child.
    static func hasChildren(_ node: JSON?) -> Bool {
        switch node {
        case .object(let members): members.contains { !$0.0.hasPrefix(".") && !$0.1.isNull }
        case .array(let items): items.contains { !$0.isNull }
        default: false
        }
    }

    /// The child keys of a node (not `.priority` / `.value`).
    static func childKeys(_ node: JSON) -> [String] {
        switch node {
        case .object(let members): members.filter { !$0.0.hasPrefix(".") && !$0.1.isNull }.map(\.0)
        case .array(let items): items.indices.filter { !items[$0].isNull }.map(String.init)
        default: []
        }
    }

    /// The node's primitive (a `.value` wrapper unwrapped), `.opaqueObject` for a node with
    /// children, `.null` when absent.
    static func value(_ node: JSON?) -> DatabaseRulesValue {
        guard let node else { return .null }
        switch node {
        case .object(let members):
            if let wrapped = node[".value"] { return primitive(wrapped) }
            return members.contains { !$0.0.hasPrefix(".") && !$0.1.isNull } ? .opaqueObject : .null
        case .array: return hasChildren(node) ? .opaqueObject : .null
        default: return primitive(node)
        }
    }

    private static func primitive(_ json: JSON) -> DatabaseRulesValue {
        switch json {
        case .object, .array: hasChildren(json) ? .opaqueObject : .null
        default: DatabaseRulesValue(json)
        }
    }

    static func priority(_ node: JSON?) -> DatabaseRulesValue {
        guard let p = node?[".priority"] else { return .null }
        return DatabaseRulesValue(p)
    }

    static func exists(_ node: JSON?) -> Bool {
        if case .null = value(node) { return false }
        return true
    }
}
