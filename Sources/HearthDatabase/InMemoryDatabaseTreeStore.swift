import Synchronization

/// A ``DatabaseTreeStore`` in memory, for tests and ephemeral servers: leaves in a sorted
/// array per namespace (binary search to a subtree's range), under a mutex; `.indexOn`
/// indexes as sorted entry arrays per covered location, updated under the same lock.
public final class InMemoryDatabaseTreeStore: DatabaseTreeStore {
    /// One covered location's entries, sorted by (sort key, child key).
    struct LocationEntries {
        var entries: [(sort: [UInt8], child: [UInt8], name: String)] = []
        var sortByName: [String: [UInt8]] = [:]

        func position(_ sort: [UInt8], _ child: [UInt8]) -> Int {
            var low = 0, high = entries.count
            while low < high {
                let mid = (low + high) / 2
                let entry = entries[mid]
                let before = entry.sort == sort ? entry.child.lexicographicallyPrecedes(child) : entry.sort.lexicographicallyPrecedes(sort)
                if before { low = mid + 1 } else { high = mid }
            }
            return low
        }

        /// The first position whose sort key is not before `sort` (`after`: not at or before).
        func boundary(_ sort: [UInt8], after: Bool) -> Int {
            var low = 0, high = entries.count
            while low < high {
                let mid = (low + high) / 2
                let key = entries[mid].sort
                let before = key.lexicographicallyPrecedes(sort) || (after && key == sort)
                if before { low = mid + 1 } else { high = mid }
            }
            return low
        }

        mutating func remove(_ name: String) {
            guard let sort = sortByName.removeValue(forKey: name) else { return }
            entries.remove(at: position(sort, DatabaseIndexKey.childKey(name)))
        }

        mutating func insert(_ name: String, sort: [UInt8]) {
            remove(name)
            let child = DatabaseIndexKey.childKey(name)
            entries.insert((sort, child, name), at: position(sort, child))
            sortByName[name] = sort
        }

        func select(_ range: DatabaseIndexRange) -> [String] {
            let start = range.lower.map { boundary($0.key, after: !$0.inclusive) } ?? 0
            let end = range.upper.map { boundary($0.key, after: $0.inclusive) } ?? entries.count
            guard start < end else { return [] }
            var selected = start..<end
            if let limit = range.limit, selected.count > limit {
                selected = range.fromEnd ? (end - limit)..<end : start..<(start + limit)
            }
            return entries[selected].map(\.name)
        }
    }

    struct Namespace {
        var revision: Int64 = 0
        /// Sorted by key bytes.
        var rows: [(key: [UInt8], leaf: DatabaseLeaf)] = []
        var rules: String?
        /// Per index, per covered location (its path key).
        var indexes: [DatabaseIndexSpec: [[UInt8]: LocationEntries]] = [:]

        func firstLeaf(under path: DatabasePath) -> DatabaseLeaf? {
            let subtree = range(path)
            return subtree.isEmpty ? nil : rows[subtree.lowerBound].leaf
        }

        /// Recomputes the entry of `child` of `location` in `spec` from the rows.
        mutating func reindex(_ spec: DatabaseIndexSpec, location: DatabasePath, child: String) {
            let key = DatabasePathKey.encode(location)
            var entries = indexes[spec]?[key] ?? LocationEntries()
            if firstLeaf(under: location.child(child)) == nil {
                entries.remove(child)
            } else {
                let sortPath = spec.sortPath(location: location, child: child)
                entries.insert(child, sort: DatabaseIndexKey.sortKey(at: sortPath, firstLeaf: firstLeaf(under: sortPath)))
            }
            indexes[spec, default: [:]][key] = entries.entries.isEmpty ? nil : entries
        }

        mutating func build(_ spec: DatabaseIndexSpec) {
            indexes[spec] = [:]
            var seen = Set<DatabasePath>()
            for row in rows {
                guard let entry = spec.entry(containing: row.leaf.path), seen.insert(entry.location.child(entry.child)).inserted else { continue }
                reindex(spec, location: entry.location, child: entry.child)
            }
        }

        func lowerBound(_ key: [UInt8]) -> Int {
            var low = 0, high = rows.count
            while low < high {
                let mid = (low + high) / 2
                if rows[mid].key.lexicographicallyPrecedes(key) { low = mid + 1 } else { high = mid }
            }
            return low
        }

        func range(_ path: DatabasePath) -> Range<Int> {
            let (lower, upper) = DatabasePathKey.subtreeRange(path)
            return lowerBound(lower)..<(upper.map(lowerBound) ?? rows.count)
        }

        mutating func remove(_ key: [UInt8]) {
            let index = lowerBound(key)
            if index < rows.count, rows[index].key == key { rows.remove(at: index) }
        }

        mutating func insert(_ leaf: DatabaseLeaf) {
            let key = DatabasePathKey.encode(leaf.path)
            let index = lowerBound(key)
            if index < rows.count, rows[index].key == key {
                rows[index].leaf = leaf
            } else {
                rows.insert((key, leaf), at: index)
            }
        }
    }

    let namespaces = Mutex<[String: Namespace]>([:])

    public init() {}

    public func subtree(namespace: String, at path: DatabasePath) async throws -> DatabaseSubtree {
        namespaces.withLock { all in
            let space = all[namespace] ?? Namespace()
            return DatabaseSubtree(revision: space.revision, leaves: space.rows[space.range(path)].map { $0.leaf })
        }
    }

    public func leaves(namespace: String, at paths: [DatabasePath]) async throws -> [DatabaseLeaf] {
        namespaces.withLock { all in
            guard let space = all[namespace] else { return [] }
            return paths.compactMap { path in
                let key = DatabasePathKey.encode(path)
                let index = space.lowerBound(key)
                return index < space.rows.count && space.rows[index].key == key ? space.rows[index].leaf : nil
            }
        }
    }

    public func apply(_ commit: DatabaseTreeCommit) async throws -> Int64? {
        namespaces.withLock { all in
            var space = all[commit.namespace] ?? Namespace()
            guard space.revision == commit.expectedRevision else { return nil }
            for path in commit.clearedSubtrees { space.rows.removeSubrange(space.range(path)) }
            for path in commit.clearedLeaves { space.remove(DatabasePathKey.encode(path)) }
            for leaf in commit.writtenLeaves { space.insert(leaf) }
            let changes = DatabaseIndexChanges(commit, specs: Array(space.indexes.keys))
            for (spec, within) in changes.clearedLocations {
                let (lower, upper) = DatabasePathKey.subtreeRange(within)
                space.indexes[spec] = space.indexes[spec]?.filter { key, _ in
                    key.lexicographicallyPrecedes(lower) || upper.map { !key.lexicographicallyPrecedes($0) } ?? false
                }
            }
            for (spec, locations) in changes.touched {
                for (location, children) in locations {
                    for child in children { space.reindex(spec, location: location, child: child) }
                }
            }
            space.revision += 1
            all[commit.namespace] = space
            return space.revision
        }
    }

    public func rules(namespace: String) async throws -> String? {
        namespaces.withLock { $0[namespace]?.rules }
    }

    public func setRules(_ text: String, namespace: String) async throws {
        namespaces.withLock { $0[namespace, default: Namespace()].rules = text }
    }

    public func indexes(namespace: String) async throws -> Set<DatabaseIndexSpec> {
        namespaces.withLock { Set(($0[namespace]?.indexes ?? [:]).keys) }
    }

    public func setIndexes(_ specs: Set<DatabaseIndexSpec>, namespace: String) async throws {
        namespaces.withLock { all in
            var space = all[namespace] ?? Namespace()
            for spec in space.indexes.keys where !specs.contains(spec) { space.indexes[spec] = nil }
            for spec in specs where space.indexes[spec] == nil { space.build(spec) }
            all[namespace] = space
        }
    }

    public func indexedChildren(
        namespace: String, location: DatabasePath, index: DatabaseIndexSpec, range: DatabaseIndexRange
    ) async throws -> DatabaseSubtree? {
        namespaces.withLock { all in
            let space = all[namespace] ?? Namespace()
            guard let locations = space.indexes[index] else { return nil }
            let names = locations[DatabasePathKey.encode(location)]?.select(range) ?? []
            var leaves: [DatabaseLeaf] = []
            for name in names { leaves += space.rows[space.range(location.child(name))].map(\.leaf) }
            return DatabaseSubtree(revision: space.revision, leaves: leaves)
        }
    }
}
