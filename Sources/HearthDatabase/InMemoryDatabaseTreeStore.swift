import Synchronization

/// A ``DatabaseTreeStore`` in memory, for tests and ephemeral servers: leaves in a sorted
/// array per namespace (binary search to a subtree's range), under a mutex.
public final class InMemoryDatabaseTreeStore: DatabaseTreeStore {
    struct Namespace {
        var revision: Int64 = 0
        /// Sorted by key bytes.
        var rows: [(key: [UInt8], leaf: DatabaseLeaf)] = []
        var rules: String?

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
}
