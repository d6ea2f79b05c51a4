public import HearthCore

/// What server values resolve against while written data is turned into a node.
public struct ServerValueContext: Sendable {
    /// Server time, in milliseconds since the epoch.
    public var now: Int64

    public init(now: Int64) { self.now = now }
}

extension DatabaseNode {
    /// The node a client's JSON writes, checked against Firebase's key rules and limits:
    /// `.priority`/`.value` wrappers, `{".sv": "timestamp"}` and `{".sv": {"increment": n}}`
    /// (added to `existing`'s number at that place, or to 0), arrays as objects keyed by index.
    /// `depth`: the depth of the written location (its keys from the root).
    public static func written(
        _ json: JSON, at depth: Int, existing: DatabaseNode, context: ServerValueContext
    ) throws(DatabaseError) -> DatabaseNode {
        try parse(json, depth: depth, existing: existing, context: context)
    }

    private static func parse(_ json: JSON, depth: Int, existing: DatabaseNode, context: ServerValueContext) throws(DatabaseError) -> DatabaseNode {
        switch json {
        case .null: return .empty
        case .bool, .number: return DatabaseNode(value: try scalar(json))
        case .string(let text):
            guard text.utf8.count <= DatabaseLimits.maxStringBytes else {
                throw DatabaseError.invalidData("string exceeds the maximum size of \(DatabaseLimits.maxStringBytes) bytes.")
            }
            return DatabaseNode(value: .string(text))
        case .array(let elements):
            var members: [(String, JSON)] = []
            for (index, element) in elements.enumerated() { members.append((String(index), element)) }
            return try parse(.object(members), depth: depth, existing: existing, context: context)
        case .object(let members):
            if let server = json[".sv"] {
                guard members.count == 1 else { throw DatabaseError.invalidData("a server value may not have other keys.") }
                return DatabaseNode(value: try serverValue(server, existing: existing, context: context))
            }
            var node = DatabaseNode()
            var wrappedValue: JSON?
            for (key, member) in members {
                switch key {
                case ".priority":
                    if case .null = member { continue }
                    if let server = member[".sv"] {
                        node.priority = try serverValue(server, existing: .empty, context: context)
                        continue
                    }
                    guard let priority = DatabaseScalar(member), priority.isValidPriority else {
                        throw DatabaseError.invalidData("priority must be a string, a number or null.")
                    }
                    node.priority = priority
                case ".value":
                    wrappedValue = member
                default:
                    guard DatabaseLimits.isValidKey(key) else {
                        throw DatabaseError.invalidData("couldn't parse key \"\(key)\": keys must be non-empty, at most 768 bytes, and may not contain \".\", \"$\", \"#\", \"[\", \"]\", \"/\" or ASCII control characters.")
                    }
                    guard depth + 1 <= DatabaseLimits.maxDepth else { throw DatabaseError.invalidData("data nested too deeply (more than 32 levels).") }
                    let child = try parse(member, depth: depth + 1, existing: existing.children[key] ?? .empty, context: context)
                    if !child.isEmpty { node.children[key] = child }
                }
            }
            if let wrappedValue {
                guard node.children.isEmpty else { throw DatabaseError.invalidData("\".value\" may not have sibling keys other than \".priority\".") }
                let inner = try parse(wrappedValue, depth: depth, existing: existing, context: context)
                node.value = inner.value
                node.children = inner.children
            }
            if node.isEmpty { node.priority = nil }
            return node
        }
    }

    private static func scalar(_ json: JSON) throws(DatabaseError) -> DatabaseScalar {
        guard let value = DatabaseScalar(json) else { throw DatabaseError.invalidData("couldn't parse JSON object, array, or value.") }
        return value
    }

    private static func serverValue(_ spec: JSON, existing: DatabaseNode, context: ServerValueContext) throws(DatabaseError) -> DatabaseScalar {
        if spec.stringValue == "timestamp" { return .number(Double(context.now)) }
        if let increment = spec["increment"], spec.objectValue?.count == 1 {
            guard case .number(let delta)? = DatabaseScalar(increment) else {
                throw DatabaseError.invalidData("increment must be a number.")
            }
            if case .number(let current)? = existing.value, existing.children.isEmpty { return .number(current + delta) }
            return .number(delta)
        }
        throw DatabaseError.invalidData("unknown server value \(spec.serialized()).")
    }
}

extension DatabaseScalar {
    var isValidPriority: Bool {
        if case .bool = self { return false }
        return true
    }
}
