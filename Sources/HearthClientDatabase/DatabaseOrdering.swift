/// The Realtime Database's sort order, as every SDK and the server apply it.
package enum DatabaseOrdering {
    package static let minName = "[MIN_NAME]"
    package static let maxName = "[MAX_NAME]"

    /// A key that is a 32-bit integer (`^-?(0*)\d{1,10}$`, in range) sorts first, numerically.
    package static func integerKey(_ key: String) -> Int? {
        var digits = Substring(key)
        if digits.first == "-" { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        guard digits.drop(while: { $0 == "0" }).count <= 10 || digits.allSatisfy({ $0 == "0" }) else { return nil }
        guard let value = Int64(key), value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return Int(value)
    }

    /// Firebase's key order: `[MIN_NAME]` first, `[MAX_NAME]` last, integer keys numerically
    /// (ties: shorter first), then the rest by UTF-16 code units.
    package static func compareNames(_ a: String, _ b: String) -> Int {
        if a == b { return 0 }
        if a == minName || b == maxName { return -1 }
        if b == minName || a == maxName { return 1 }
        switch (integerKey(a), integerKey(b)) {
        case (let x?, let y?): return x != y ? (x < y ? -1 : 1) : (a.utf16.count < b.utf16.count ? -1 : (a.utf16.count > b.utf16.count ? 1 : 0))
        case (.some, nil): return -1
        case (nil, .some): return 1
        case (nil, nil): return a.utf16.lexicographicallyPrecedes(b.utf16) ? -1 : 1
        }
    }

    static func rank(_ node: DatabaseNode) -> Int {
        switch node.content {
        case .children(let children): children.isEmpty ? 0 : 5
        case .leaf(.bool(let b)): b ? 2 : 1
        case .leaf(.number): 3
        case .leaf(.string): 4
        }
    }

    /// null < false < true < numbers < strings < objects; objects are equal among themselves.
    package static func compareValues(_ a: DatabaseNode, _ b: DatabaseNode) -> Int {
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a.content, b.content) {
        case (.leaf(.number(let x)), .leaf(.number(let y))): return x < y ? -1 : (x > y ? 1 : 0)
        case (.leaf(.string(let x)), .leaf(.string(let y))):
            return x == y ? 0 : (x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : 1)
        default: return 0
        }
    }
}

/// What a query orders by.
package enum DatabaseIndex: Sendable, Equatable, Hashable {
    case priority
    case key
    case value
    case child([String])

    /// The value a child is sorted by under this index.
    package func indexedValue(_ node: DatabaseNode) -> DatabaseNode {
        switch self {
        case .priority: node.priority.map { DatabaseNode(leaf: $0) } ?? .empty
        case .key: .empty
        case .value: node
        case .child(let path): node.child(atPath: path)
        }
    }

    package func compare(_ a: (key: String, node: DatabaseNode), _ b: (key: String, node: DatabaseNode)) -> Int {
        if self != .key {
            let byValue = DatabaseOrdering.compareValues(indexedValue(a.node), indexedValue(b.node))
            if byValue != 0 { return byValue }
        }
        return DatabaseOrdering.compareNames(a.key, b.key)
    }

    /// The wire name (`i`): absent for priority.
    var wire: String? {
        switch self {
        case .priority: nil
        case .key: ".key"
        case .value: ".value"
        case .child(let path): path.joined(separator: "/")
        }
    }
}

/// A query's ordering, range and limit (Firebase's `QueryParams`), applied to the client's data
/// and sent as the wire query (`q`).
package struct DatabaseQueryParams: Sendable, Equatable, Hashable {
    package struct Bound: Sendable, Equatable, Hashable {
        package var value: DatabaseLeaf?
        /// The key tie-break given by the app (`childKey:`), if any.
        package var name: String?
        package var inclusive: Bool
    }

    package enum Limit: Sendable, Equatable, Hashable {
        case first(Int)
        case last(Int)
    }

    package var index: DatabaseIndex = .priority
    package var start: Bound?
    package var end: Bound?
    package var limit: Limit?

    package init() {}

    /// Start, end or limit: sent with a tag; an index alone is a default listen sorted locally.
    package var filters: Bool { start != nil || end != nil || limit != nil }

    static func boundNode(_ value: DatabaseLeaf?) -> DatabaseNode { value.map { DatabaseNode(leaf: $0) } ?? .empty }

    /// The post a start bound compares children against (Firebase's `makePost`).
    func post(_ bound: Bound, isStart: Bool) -> (key: String, node: DatabaseNode) {
        if index == .key, case .string(let key)? = bound.value { return (key, .empty) }
        let name = bound.name ?? (isStart == bound.inclusive ? DatabaseOrdering.minName : DatabaseOrdering.maxName)
        var node = Self.boundNode(bound.value)
        if index == .priority {
            // The post for the priority index carries the value as its priority.
            node = DatabaseNode(content: .children(["_": DatabaseNode(leaf: .bool(true))]), priority: bound.value)
        }
        if case .child(let path) = index { node = DatabaseNode.empty.setting(path, to: Self.boundNode(bound.value)) }
        return (name, node)
    }

    package func matches(_ key: String, _ node: DatabaseNode) -> Bool {
        if let start {
            let order = index.compare(post(start, isStart: true), (key, node))
            if start.inclusive ? order > 0 : order >= 0 { return false }
        }
        if let end {
            let order = index.compare((key, node), post(end, isStart: false))
            if end.inclusive ? order > 0 : order >= 0 { return false }
        }
        return true
    }

    /// The children in this query's order (all of them, before range and limit).
    package func sorted(_ node: DatabaseNode) -> [(key: String, node: DatabaseNode)] {
        node.children.map { (key: $0.key, node: $0.value) }.sorted { index.compare($0, $1) < 0 }
    }

    /// The children the query selects, in its order.
    package func window(_ node: DatabaseNode) -> [(key: String, node: DatabaseNode)] {
        var children = sorted(node).filter { matches($0.key, $0.node) }
        switch limit {
        case .first(let n)?: children = Array(children.prefix(n))
        case .last(let n)?: children = Array(children.suffix(n))
        case nil: break
        }
        return children
    }

    /// What the query's listeners see of `node`: the node itself without filters, else only the
    /// selected children.
    package func view(_ node: DatabaseNode) -> DatabaseNode {
        guard filters else { return node }
        var children: [String: DatabaseNode] = [:]
        for (key, child) in window(node) { children[key] = child }
        return DatabaseNode(content: .children(children))
    }

    /// The wire query object (`q`), nil for a default listen.
    package var wire: DatabaseJSON? {
        guard filters || index != .priority else { return nil }
        var members: [(String, DatabaseJSON)] = []
        if let start {
            members.append(("sp", start.value?.json ?? .null))
            if let name = start.name {
                members.append(("sn", .string(name)))
            } else if !start.inclusive && index != .key {
                members.append(("sn", .string(DatabaseOrdering.maxName)))
            }
            members.append(("sin", .bool(start.inclusive)))
        }
        if let end {
            members.append(("ep", end.value?.json ?? .null))
            if let name = end.name {
                members.append(("en", .string(name)))
            } else if !end.inclusive && index != .key {
                members.append(("en", .string(DatabaseOrdering.minName)))
            }
            members.append(("ein", .bool(end.inclusive)))
        }
        switch limit {
        case .first(let n)?:
            members.append(("l", .number(Double(n))))
            members.append(("vf", .string("l")))
        case .last(let n)?:
            members.append(("l", .number(Double(n))))
            members.append(("vf", .string("r")))
        case nil: break
        }
        if let i = index.wire { members.append(("i", .string(i))) }
        return .object(members)
    }
}
