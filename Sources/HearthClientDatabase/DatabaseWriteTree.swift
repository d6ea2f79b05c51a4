/// The client's pending writes (Firebase's `FWriteTree`): every set, update, remove and
/// transaction this client made that the server has not answered yet, in the order they were
/// made, each with its write id. Observers see the server's data with these writes laid over it
/// (latency compensation); a write leaves the tree when the server acknowledges it (its data
/// then comes from the server) or refuses it (the view goes back to the server's data).
///
/// Pure: the repo owns one and asks it for a location's view.
package struct DatabaseWriteTree: Sendable {
    /// One node written at one absolute path: a set is one, an update one per child path.
    package struct Overwrite: Sendable, Equatable {
        package var path: [String]
        package var node: DatabaseNode

        package init(path: [String], node: DatabaseNode) {
            self.path = path
            self.node = node
        }
    }

    package struct Write: Sendable, Equatable {
        package var id: Int
        /// The write's data with server values resolved locally, in application order.
        package var overwrites: [Overwrite]
        /// False for a transaction run with `applyLocally: false`: kept for the transaction's
        /// bookkeeping, not shown to observers.
        package var visible: Bool
    }

    /// What observers of one location may be shown.
    package struct View: Sendable, Equatable {
        package var node: DatabaseNode
        /// True when `node` is the location's whole value (the server's complete data, or a
        /// local write at or above it); false when only some children are known (child events
        /// only, no value event).
        package var complete: Bool
    }

    package private(set) var writes: [Write] = []
    var nextID = 1

    package init() {}

    package var isEmpty: Bool { writes.isEmpty }

    /// Adds a write at the end; returns its id.
    @discardableResult
    package mutating func add(_ overwrites: [Overwrite], visible: Bool = true) -> Int {
        let id = nextID
        nextID += 1
        writes.append(Write(id: id, overwrites: overwrites, visible: visible))
        return id
    }

    /// Takes a write out (acknowledged or refused).
    @discardableResult
    package mutating func remove(_ id: Int) -> Write? {
        guard let index = writes.firstIndex(where: { $0.id == id }) else { return nil }
        return writes.remove(at: index)
    }

    package func write(_ id: Int) -> Write? { writes.first { $0.id == id } }

    static func isPrefix(_ prefix: [String], of path: [String]) -> Bool {
        prefix.count <= path.count && path.starts(with: prefix)
    }

    /// Whether `a` and `b` are the same location or one is above the other.
    package static func overlaps(_ a: [String], _ b: [String]) -> Bool { isPrefix(a, of: b) || isPrefix(b, of: a) }

    /// `base` (the value at `path`) with `overwrite` applied.
    static func apply(_ overwrite: Overwrite, to base: DatabaseNode, at path: [String]) -> DatabaseNode {
        if isPrefix(path, of: overwrite.path) {
            return base.setting(Array(overwrite.path.dropFirst(path.count)), to: overwrite.node)
        }
        if isPrefix(overwrite.path, of: path) {
            return overwrite.node.child(atPath: Array(path.dropFirst(overwrite.path.count)))
        }
        return base
    }

    /// The overwrites observers see, in order: `before` first (data acknowledged while the
    /// location's server data was incomplete), then every visible write not in `excluding`.
    func visibleOverwrites(before: [Overwrite], excluding: Set<Int>, includeHidden: Bool = false) -> [Overwrite] {
        before + writes.filter { ($0.visible || includeHidden) && !excluding.contains($0.id) }.flatMap(\.overwrites)
    }

    /// The value at `path` given the server's data there (`server`), with the writes laid over
    /// it; `includeHidden` counts transactions that do not apply locally too (what the next
    /// transaction runs on, as in Firebase's `latestState`).
    package func overlay(_ server: DatabaseNode, at path: [String], excluding: Set<Int> = [], includeHidden: Bool = false) -> DatabaseNode {
        visibleOverwrites(before: [], excluding: excluding, includeHidden: includeHidden).reduce(server) { Self.apply($1, to: $0, at: path) }
    }

    /// What observers of `path` see: the server's data with the writes over it when the server's
    /// data is complete (`server` non-nil); otherwise the value from the last write at or above
    /// `path` with the later writes over it; otherwise only the children that writes set whole
    /// (`path/key`), with deeper writes into those children applied.
    package func view(server: DatabaseNode?, at path: [String], before: [Overwrite] = []) -> View {
        let overwrites = visibleOverwrites(before: before, excluding: [])
        if let server {
            return View(node: overwrites.reduce(server) { Self.apply($1, to: $0, at: path) }, complete: true)
        }
        if let last = overwrites.lastIndex(where: { Self.isPrefix($0.path, of: path) }) {
            let node = overwrites[last...].reduce(DatabaseNode.empty) { Self.apply($1, to: $0, at: path) }
            return View(node: node, complete: true)
        }
        // Only children set whole are known; `.empty` records a child known to be absent.
        var known: [String: DatabaseNode] = [:]
        for overwrite in overwrites where Self.isPrefix(path, of: overwrite.path) && overwrite.path.count > path.count {
            let key = overwrite.path[path.count]
            guard key != ".priority" else { continue }
            let rest = Array(overwrite.path.dropFirst(path.count + 1))
            if rest.isEmpty {
                known[key] = overwrite.node
            } else if let child = known[key] {
                known[key] = child.setting(rest, to: overwrite.node)
            }
        }
        return View(node: DatabaseNode(content: .children(known.filter { !$0.value.isEmpty })), complete: false)
    }

    /// Whether some visible write touches `path` (at, above or below it).
    package func touches(_ path: [String]) -> Bool {
        writes.contains { $0.visible && $0.overwrites.contains { Self.overlaps($0.path, path) } }
    }
}
