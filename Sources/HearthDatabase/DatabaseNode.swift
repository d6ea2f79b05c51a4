public import HearthCore

/// A scalar of the tree: booleans, numbers (doubles, as the Realtime Database keeps them) and strings.
public enum DatabaseScalar: Sendable, Hashable {
    case bool(Bool)
    case number(Double)
    case string(String)

    public var json: JSON {
        switch self {
        case .bool(let value): .bool(value)
        case .number(let value): .number(Self.lexeme(value))
        case .string(let value): .string(value)
        }
    }

    /// Integral values within ±2^53 print as integers (`1.0` is stored as `1`, as Firebase does).
    static func lexeme(_ value: Double) -> String {
        if value == value.rounded(), abs(value) <= 9_007_199_254_740_992 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A JSON scalar (nil for null, arrays and objects).
    public init?(_ json: JSON) {
        switch json {
        case .bool(let value): self = .bool(value)
        case .number(let lexeme):
            guard let value = Double(lexeme), value.isFinite else { return nil }
            self = .number(value)
        case .string(let value): self = .string(value)
        default: return nil
        }
    }
}

/// A node of a namespace's tree: a leaf holding a scalar, or children, each with an optional
/// priority. A node with neither a value nor children is null (does not exist).
public struct DatabaseNode: Sendable, Equatable {
    public var value: DatabaseScalar?
    public var children: [String: DatabaseNode]
    public var priority: DatabaseScalar?

    public init(value: DatabaseScalar? = nil, children: [String: DatabaseNode] = [:], priority: DatabaseScalar? = nil) {
        self.value = value
        self.children = children
        self.priority = priority
    }

    public static let empty = DatabaseNode()

    public var isEmpty: Bool { value == nil && children.isEmpty }

    /// The node at `path` below this one (empty when missing).
    public func descendant(_ path: DatabasePath) -> DatabaseNode {
        var node = self
        for key in path.keys {
            guard let child = node.children[key] else { return .empty }
            node = child
        }
        return node
    }

    /// Replaces the node at `path` (creating parents; an empty node removes it and prunes
    /// parents left empty). A scalar on the way becomes an object.
    public mutating func replace(_ path: DatabasePath, with node: DatabaseNode) {
        replace(path.keys[...], with: node)
    }

    private mutating func replace(_ keys: ArraySlice<String>, with node: DatabaseNode) {
        guard let first = keys.first else {
            self = node.isEmpty ? .empty : node
            return
        }
        var child = children[first] ?? .empty
        child.replace(keys.dropFirst(), with: node)
        if child.isEmpty {
            children[first] = nil
        } else {
            value = nil
            children[first] = child
        }
        if isEmpty { priority = nil }
    }

    // MARK: JSON out

    /// The value as REST `GET` returns it: priorities left out, objects whose keys are the
    /// indexes of a mostly filled array returned as arrays (as Firebase does).
    public func plainJSON() -> JSON {
        if let value { return value.json }
        if children.isEmpty { return .null }
        if let array = arrayForm() { return .array(array) }
        return .object(sortedChildren().map { ($0.0, $0.1.plainJSON()) })
    }

    /// The value with priorities: `{".value": v, ".priority": p}` for leaves, a `.priority`
    /// member for objects (`format=export`, and what security rules see).
    public func exportJSON() -> JSON {
        if let value {
            guard let priority else { return value.json }
            return .object([(".value", value.json), (".priority", priority.json)])
        }
        if children.isEmpty { return .null }
        var members = sortedChildren().map { ($0.0, $0.1.exportJSON()) }
        if let priority { members.append((".priority", priority.json)) }
        return .object(members)
    }

    /// `shallow=true`: children replaced by `true`; scalars as they are.
    public func shallowJSON() -> JSON {
        if let value { return value.json }
        if children.isEmpty { return .null }
        return .object(sortedChildren().map { ($0.0, .bool(true)) })
    }

    func sortedChildren() -> [(String, DatabaseNode)] {
        DatabaseOrdering.sortedByKey(children.map { ($0.key, $0.value) })
    }

    func arrayForm() -> [JSON]? {
        var maxIndex = -1
        for key in children.keys {
            guard let index = Int(key), String(index) == key, index >= 0 else { return nil }
            maxIndex = max(maxIndex, index)
        }
        guard maxIndex < 2 * children.count else { return nil }
        return (0...maxIndex).map { children[String($0)]?.plainJSON() ?? .null }
    }

    /// The value's hash as an ETag: SHA-1 of its export form, base64.
    public var etag: String {
        ETagHash.hash(exportJSON().serializedBytes())
    }

    // MARK: Leaves

    /// The rows a store keeps for this node at `base`: one per scalar, its JSON text as the
    /// value, and one per priority at `<node>/.priority`.
    public func leaves(at base: DatabasePath) -> [DatabaseLeaf] {
        var out: [DatabaseLeaf] = []
        collect(base, into: &out)
        return out
    }

    private func collect(_ path: DatabasePath, into out: inout [DatabaseLeaf]) {
        if isEmpty { return }
        if let value { out.append(DatabaseLeaf(path: path, value: value.json.serialized())) }
        for (key, child) in children { child.collect(path.child(key), into: &out) }
        if let priority { out.append(DatabaseLeaf(path: path.child(Self.priorityKey), value: priority.json.serialized())) }
    }

    static let priorityKey = ".priority"

    /// Rebuilds the node at `base` from its stored leaves (every leaf's path lies under `base`).
    public init(leaves: [DatabaseLeaf], base: DatabasePath) {
        self = .empty
        for leaf in leaves where leaf.path.isWithin(base) {
            guard let json = try? JSON.parse(leaf.value), let scalar = DatabaseScalar(json) else { continue }
            var relative = leaf.path.relative(to: base).keys
            if relative.last == Self.priorityKey {
                relative.removeLast()
                setPriority(relative[...], scalar)
            } else {
                setValue(relative[...], scalar)
            }
        }
        prunePriorities()
    }

    private mutating func setValue(_ keys: ArraySlice<String>, _ scalar: DatabaseScalar) {
        guard let first = keys.first else {
            if children.isEmpty { value = scalar }
            return
        }
        value = nil
        children[first, default: .empty].setValue(keys.dropFirst(), scalar)
    }

    private mutating func setPriority(_ keys: ArraySlice<String>, _ scalar: DatabaseScalar) {
        guard let first = keys.first else {
            priority = scalar
            return
        }
        children[first, default: .empty].setPriority(keys.dropFirst(), scalar)
    }

    /// Drops nodes that hold only a priority (a priority of a node that no longer exists).
    private mutating func prunePriorities() {
        for key in Array(children.keys) {
            children[key]!.prunePriorities()
            if children[key]!.isEmpty { children[key] = nil }
        }
        if isEmpty { priority = nil }
    }
}

/// One stored row: a scalar (JSON text) at a path, or a priority at `<node>/.priority`.
public struct DatabaseLeaf: Sendable, Hashable {
    public var path: DatabasePath
    public var value: String

    public init(path: DatabasePath, value: String) {
        self.path = path
        self.value = value
    }

    /// Bytes the row costs (key and value), for write-size limits.
    var size: Int { path.keys.reduce(0) { $0 + $1.utf8.count + 1 } + value.utf8.count }
}
