import HearthCore

/// The tree as stored: each `node(at:)` is one subtree read.
struct StoredTreeView: DatabaseTreeView {
    let store: any DatabaseTreeStore
    let namespace: String

    func node(at path: [String]) async throws -> JSON? {
        let node = try await subtree(DatabasePath(path))
        return node.isEmpty ? nil : node.exportJSON()
    }

    func subtree(_ path: DatabasePath) async throws -> DatabaseNode {
        let subtree = try await store.subtree(namespace: namespace, at: path)
        return DatabaseNode(leaves: subtree.leaves, base: path)
    }
}

/// The tree as a write would leave it: the stored tree with the write's nodes laid over it.
struct WrittenTreeView: DatabaseTreeView {
    let stored: StoredTreeView
    /// Absolute paths and the nodes that replace them, in the write's order.
    let writes: [(DatabasePath, DatabaseNode)]

    func node(at keys: [String]) async throws -> JSON? {
        let path = DatabasePath(keys)
        var node: DatabaseNode
        var rest = writes[...]
        if let covering = writes.lastIndex(where: { path.isWithin($0.0) }) {
            node = writes[covering].1.descendant(path.relative(to: writes[covering].0))
            rest = writes[(covering + 1)...]
        } else {
            node = try await stored.subtree(path)
        }
        for (written, value) in rest where written.isWithin(path) && written != path {
            node.replace(written.relative(to: path), with: value)
        }
        return node.isEmpty ? nil : node.exportJSON()
    }
}
