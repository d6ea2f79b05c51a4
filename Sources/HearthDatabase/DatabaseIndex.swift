import HearthCore

/// An `.indexOn` index: the children of every location matching ``location`` (a rules path,
/// `nil` for a `$wildcard` key) ordered by ``order`` — a child path (`".indexOn": "height"`)
/// or the child's own value (`".indexOn": ".value"`). Stores keep one entry per existing child
/// of each matching location, updated in the same transaction as the leaves.
public struct DatabaseIndexSpec: Sendable, Hashable, CustomStringConvertible {
    public enum Order: Sendable, Hashable {
        case value
        case child(DatabasePath)
    }

    /// The location's keys from the root; nil matches any key (`$uid`).
    public var location: [String?]
    public var order: Order

    public init(location: [String?], order: Order) {
        self.location = location
        self.order = order
    }

    /// Parses an `.indexOn` entry (`".value"` or a child path); nil when it names nothing
    /// an index can hold (`.key`/`.priority` are always indexed, invalid paths are ignored).
    public init?(location: [String?], indexOn entry: String) {
        if entry == ".value" {
            self.init(location: location, order: .value)
            return
        }
        guard let path = try? DatabasePath.parse(entry), !path.isRoot else { return nil }
        self.init(location: location, order: .child(path))
    }

    /// `.indexOn`'s own spelling of the order: `.value` or the child path (`metrics/views`).
    public var indexOnName: String {
        switch order {
        case .value: ".value"
        case .child(let path): path.keys.joined(separator: "/")
        }
    }

    /// A stable text form, `/users/$/posts#height` (`$` for a wildcard; neither `$` nor `#`
    /// can occur in a key), that stores use as the index's name.
    public var description: String {
        "/" + location.map { $0 ?? "$" }.joined(separator: "/") + "#" + indexOnName
    }

    /// Parses ``description``.
    public init?(name: String) {
        guard let hash = name.lastIndex(of: "#") else { return nil }
        let location = name[..<hash].split(separator: "/").map { $0 == "$" ? nil : String($0) }
        self.init(location: location, indexOn: String(name[name.index(after: hash)...]))
    }

    /// Whether `path` is a location this index covers.
    public func matches(_ path: DatabasePath) -> Bool {
        path.keys.count == location.count && zip(location, path.keys).allSatisfy { $0 == nil || $0 == $1 }
    }

    /// Whether a location this index covers can lie at or under `path`.
    package func mayCoverLocationsWithin(_ path: DatabasePath) -> Bool {
        path.keys.count <= location.count && zip(location, path.keys).allSatisfy { $0 == nil || $0 == $1 }
    }

    /// For a path strictly below a covered location: that location and the child's key.
    package func entry(containing path: DatabasePath) -> (location: DatabasePath, child: String)? {
        guard path.keys.count > location.count, path.keys[location.count] != DatabaseNode.priorityKey else { return nil }
        let prefix = DatabasePath(Array(path.keys.prefix(location.count)))
        guard matches(prefix) else { return nil }
        return (prefix, path.keys[location.count])
    }

    /// The row whose value decides a child's sort value: the child itself (`.value`) or its
    /// descendant at the child path.
    package func sortPath(location: DatabasePath, child: String) -> DatabasePath {
        switch order {
        case .value: location.child(child)
        case .child(let path): location.child(child).appending(path)
        }
    }

    /// Whether this index serves queries ordered by `order`.
    public func serves(_ order: DatabaseQuery.Order) -> Bool {
        switch (self.order, order) {
        case (.value, .value): true
        case (.child(let a), .child(let b)): a == b
        default: false
        }
    }
}

/// The byte encodings an index orders by: a sort value (rank byte, then an order-preserving
/// form of the number or the string's UTF-16 code units) and a child key (32-bit integer keys
/// first, numerically, then the others by UTF-16). Compared as bytes (`memcmp`), they order
/// exactly as ``DatabaseOrdering`` does, so a store sorts and ranges index rows natively.
public enum DatabaseIndexKey {
    /// The sort key of a value (`isObject`: a node with children, which all tie).
    public static func sortKey(_ value: DatabaseScalar?, isObject: Bool = false) -> [UInt8] {
        let rank = DatabaseOrdering.rank(value, isObject: isObject)
        var out: [UInt8] = [UInt8(rank.rawValue)]
        guard !isObject, let value else { return out }
        switch value {
        case .bool: break
        case .number(let number):
            let bits = (number == 0 ? 0.0 : number).bitPattern  // -0 sorts as 0
            let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ordered >> shift)) }
        case .string(let string):
            appendUTF16(string, to: &out)
        }
        return out
    }

    public static func childKey(_ key: String) -> [UInt8] {
        if let integer = DatabaseOrdering.integerKey(key) {
            let ordered = UInt32(bitPattern: integer) ^ 0x8000_0000
            return [0, UInt8(ordered >> 24), UInt8(truncatingIfNeeded: ordered >> 16), UInt8(truncatingIfNeeded: ordered >> 8), UInt8(truncatingIfNeeded: ordered)]
        }
        var out: [UInt8] = [1]
        appendUTF16(key, to: &out)
        return out
    }

    static func appendUTF16(_ string: String, to out: inout [UInt8]) {
        for unit in string.utf16 {
            out.append(UInt8(unit >> 8))
            out.append(UInt8(truncatingIfNeeded: unit))
        }
    }

    /// The sort key of the node whose subtree's first row (in path-key order) is `first`:
    /// none → null; a row at `path` itself → that scalar; anything below → an object.
    public static func sortKey(at path: DatabasePath, firstLeaf first: DatabaseLeaf?) -> [UInt8] {
        guard let first else { return sortKey(nil) }
        guard first.path == path else { return sortKey(nil, isObject: true) }
        let scalar = (try? JSON.parse(first.value)).flatMap(DatabaseScalar.init)
        return sortKey(scalar)
    }
}

/// What a query asks of an index: a byte range of sort keys and a limit from either end.
public struct DatabaseIndexRange: Sendable, Equatable {
    public var lower: (key: [UInt8], inclusive: Bool)?
    public var upper: (key: [UInt8], inclusive: Bool)?
    public var limit: Int?
    /// `limitToLast`: the last `limit` entries (returned in ascending order all the same).
    public var fromEnd: Bool

    public init(lower: (key: [UInt8], inclusive: Bool)? = nil, upper: (key: [UInt8], inclusive: Bool)? = nil, limit: Int? = nil, fromEnd: Bool = false) {
        self.lower = lower
        self.upper = upper
        self.limit = limit
        self.fromEnd = fromEnd
    }

    /// The range a query's filters and limits select.
    public init(_ query: DatabaseQuery) {
        func key(_ bound: DatabaseQuery.Bound) -> [UInt8] { DatabaseIndexKey.sortKey(bound) }
        self.init()
        if let equal = query.equalTo {
            lower = (key(equal), true)
            upper = (key(equal), true)
        }
        if let start = query.startAt { lower = (key(start), true) }
        if let start = query.startAfter { lower = (key(start), false) }
        if let end = query.endAt { upper = (key(end), true) }
        if let end = query.endBefore { upper = (key(end), false) }
        if let first = query.limitToFirst { limit = first }
        if let last = query.limitToLast {
            limit = last
            fromEnd = true
        }
    }

    /// Whether `key` lies within the bounds.
    public func contains(_ key: [UInt8]) -> Bool {
        if let lower {
            if key.lexicographicallyPrecedes(lower.key) { return false }
            if !lower.inclusive && key == lower.key { return false }
        }
        if let upper {
            if upper.key.lexicographicallyPrecedes(key) { return false }
            if !upper.inclusive && key == upper.key { return false }
        }
        return true
    }

    public static func == (a: DatabaseIndexRange, b: DatabaseIndexRange) -> Bool {
        a.lower?.key == b.lower?.key && a.lower?.inclusive == b.lower?.inclusive && a.upper?.key == b.upper?.key
            && a.upper?.inclusive == b.upper?.inclusive && a.limit == b.limit && a.fromEnd == b.fromEnd
    }
}

/// What a commit does to a namespace's indexes, worked out from the commit alone: the
/// locations whose every entry goes (a subtree cleared at or above them) and the children
/// whose entry must be recomputed from the leaves after the commit.
package struct DatabaseIndexChanges {
    package var clearedLocations: [(spec: DatabaseIndexSpec, within: DatabasePath)] = []
    package var touched: [DatabaseIndexSpec: [DatabasePath: Set<String>]] = [:]

    package init(_ commit: DatabaseTreeCommit, specs: [DatabaseIndexSpec]) {
        let changed = commit.clearedSubtrees + commit.clearedLeaves + commit.writtenLeaves.map(\.path)
        for spec in specs {
            for path in commit.clearedSubtrees where spec.mayCoverLocationsWithin(path) {
                clearedLocations.append((spec, path))
            }
            var children: [DatabasePath: Set<String>] = [:]
            for path in changed {
                guard let entry = spec.entry(containing: path) else { continue }
                children[entry.location, default: []].insert(entry.child)
            }
            if !children.isEmpty { touched[spec] = children }
        }
    }
}
