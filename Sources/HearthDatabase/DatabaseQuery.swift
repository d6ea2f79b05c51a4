/// A Realtime Database query: an order and filters applied to a node's children.
public struct DatabaseQuery: Sendable, Equatable {
    public enum Order: Sendable, Equatable {
        case key
        case value
        case priority
        case child(DatabasePath)
    }

    /// A bound: a JSON scalar or null (nil).
    public typealias Bound = DatabaseScalar?

    public var order: Order
    public var startAt: Bound?
    public var startAfter: Bound?
    public var endAt: Bound?
    public var endBefore: Bound?
    public var equalTo: Bound?
    public var limitToFirst: Int?
    public var limitToLast: Int?

    public init(order: Order) { self.order = order }

    /// Checks the combination of parameters as Firebase does.
    public func validated() throws(DatabaseError) -> DatabaseQuery {
        if limitToFirst != nil && limitToLast != nil {
            throw DatabaseError.invalidQuery("Can't combine limitToFirst and limitToLast")
        }
        if equalTo != nil && (startAt != nil || startAfter != nil || endAt != nil || endBefore != nil) {
            throw DatabaseError.invalidQuery("equalTo cannot be combined with startAt, startAfter, endAt or endBefore")
        }
        if startAt != nil && startAfter != nil { throw DatabaseError.invalidQuery("Can't combine startAt and startAfter") }
        if endAt != nil && endBefore != nil { throw DatabaseError.invalidQuery("Can't combine endAt and endBefore") }
        if order == .key {
            for bound in [startAt, startAfter, endAt, endBefore, equalTo] {
                guard let bound else { continue }
                guard case .string? = bound else {
                    throw DatabaseError.invalidQuery("When using orderBy:\"$key\", all filter values must be strings")
                }
            }
        }
        if order == .priority {
            for bound in [startAt, startAfter, endAt, endBefore, equalTo] {
                if case .bool?? = bound { throw DatabaseError.invalidQuery("Priority filter values must be strings, numbers or null") }
            }
        }
        return self
    }

    struct Entry {
        var key: String
        var sortValue: DatabaseScalar?
        var sortIsObject: Bool
    }

    func entry(_ key: String, _ child: DatabaseNode) -> Entry {
        switch order {
        case .key: return Entry(key: key, sortValue: .string(key), sortIsObject: false)
        case .value: return Entry(key: key, sortValue: child.value, sortIsObject: !child.children.isEmpty)
        case .priority: return Entry(key: key, sortValue: child.priority, sortIsObject: false)
        case .child(let path):
            let node = child.descendant(path)
            return Entry(key: key, sortValue: node.value, sortIsObject: !node.children.isEmpty)
        }
    }

    func compare(_ a: Entry, _ b: Entry) -> Int {
        if order == .key { return DatabaseOrdering.compareKeys(a.key, b.key) }
        let byValue = DatabaseOrdering.compare(a.sortValue, aIsObject: a.sortIsObject, b.sortValue, bIsObject: b.sortIsObject)
        return byValue != 0 ? byValue : DatabaseOrdering.compareKeys(a.key, b.key)
    }

    func compare(_ entry: Entry, bound: Bound) -> Int {
        if order == .key, case .string(let key)? = bound { return DatabaseOrdering.compareKeys(entry.key, key) }
        return DatabaseOrdering.compare(entry.sortValue, aIsObject: entry.sortIsObject, bound)
    }

    /// The keys of `node`'s children the query selects, in query order.
    public func selectedKeys(_ node: DatabaseNode) -> [String] {
        var entries = node.children.map { entry($0.key, $0.value) }
        entries.sort { compare($0, $1) < 0 }
        entries.removeAll { entry in
            if let bound = equalTo, compare(entry, bound: bound) != 0 { return true }
            if let bound = startAt, compare(entry, bound: bound) < 0 { return true }
            if let bound = startAfter, compare(entry, bound: bound) <= 0 { return true }
            if let bound = endAt, compare(entry, bound: bound) > 0 { return true }
            if let bound = endBefore, compare(entry, bound: bound) >= 0 { return true }
            return false
        }
        if let limit = limitToFirst, entries.count > limit { entries.removeLast(entries.count - limit) }
        if let limit = limitToLast, entries.count > limit { entries.removeFirst(entries.count - limit) }
        return entries.map(\.key)
    }

    /// `node` with only the selected children (a scalar has none: null).
    public func apply(_ node: DatabaseNode) -> DatabaseNode {
        var out = DatabaseNode()
        for key in selectedKeys(node) { out.children[key] = node.children[key] }
        return out
    }
}
