public import HearthCore
public import HearthDatabase
public import HearthFiles

/// The lifecycle worker's view of the Realtime Database (``LifecycleDatabase``): the default
/// namespace of a ``DatabaseEngine``, with admin access (rules do not apply, as for any admin
/// write). Deletions go through the engine's single write path — one multi-path update of
/// nulls per batch — so event streams see them like any other write.
public struct DatabaseLifecycleAdapter: LifecycleDatabase {
    let engine: DatabaseEngine
    let namespace: String

    public init(engine: DatabaseEngine, project: String) {
        self.engine = engine
        self.namespace = DatabaseRESTResponder.defaultNamespace(project)
    }

    public func children(
        of parent: [String], where field: [String], _ op: LifecycleRules.Condition.Operator, _ value: JSON, limit: Int
    ) async throws -> [String] {
        guard let wanted = DatabaseScalar(value) else { return [] }
        let node = try await engine.read(namespace: namespace, path: DatabasePath(parent), auth: .admin).node
        var keys: [String] = []
        for key in node.children.keys.sorted() {
            guard let actual = node.children[key]?.descendant(DatabasePath(field)).value, Self.holds(actual, op, wanted) else { continue }
            keys.append(key)
            if keys.count >= limit { break }
        }
        return keys
    }

    /// `actual op wanted`: numbers with numbers, strings with strings; `==` on any scalar.
    static func holds(_ actual: DatabaseScalar, _ op: LifecycleRules.Condition.Operator, _ wanted: DatabaseScalar) -> Bool {
        switch (op, actual, wanted) {
        case (.equal, _, _): return actual == wanted
        case (.lessThan, .number(let a), .number(let b)): return a < b
        case (.lessThanOrEqual, .number(let a), .number(let b)): return a <= b
        case (.lessThan, .string(let a), .string(let b)): return a.utf8.lexicographicallyPrecedes(b.utf8)
        case (.lessThanOrEqual, .string(let a), .string(let b)): return !b.utf8.lexicographicallyPrecedes(a.utf8)
        default: return false
        }
    }

    public func existing(_ paths: [[String]]) async throws -> [[String]] {
        var out: [[String]] = []
        for path in paths where !path.isEmpty {
            if !(try await engine.read(namespace: namespace, path: DatabasePath(path), auth: .admin).node.isEmpty) { out.append(path) }
        }
        return out
    }

    public func delete(_ paths: [[String]]) async throws {
        let targets = paths.filter { !$0.isEmpty }
        guard !targets.isEmpty else { return }
        // One atomic update from the root; a path inside another listed one is covered by it.
        let sorted = targets.sorted { $0.count < $1.count }
        var kept: [[String]] = []
        for path in sorted where !kept.contains(where: { path.starts(with: $0) }) { kept.append(path) }
        _ = try await engine.update(
            namespace: namespace, path: .root, values: kept.map { ($0.joined(separator: "/"), JSON.null) }, auth: .admin)
    }
}
