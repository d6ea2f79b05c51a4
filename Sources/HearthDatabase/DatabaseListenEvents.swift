public import HearthCore

/// One event for a listener, as the REST stream and the WebSocket protocol carry them: a
/// `put` replaces the node at `path` (relative to the listened location), a `patch` replaces
/// the named children of the node at `path`.
public struct DatabaseListenEvent: Sendable, Equatable {
    public enum Kind: String, Sendable { case put, patch }

    public var kind: Kind
    public var path: DatabasePath
    public var data: JSON

    public init(kind: Kind, path: DatabasePath, data: JSON) {
        self.kind = kind
        self.path = path
        self.data = data
    }

    /// `{"path": "/…", "data": …}`.
    public var json: JSON { .object([("path", .string(path.description)), ("data", data)]) }

    /// The events a listener at `location` (without a query) gets for `change`: as fine-grained
    /// as the write (a push under the location is one `put` at its key), none when the write
    /// does not touch the location.
    public static func events(for change: DatabaseChange, at location: DatabasePath) -> [DatabaseListenEvent] {
        switch change.kind {
        case .set(let path, let node):
            return setEvents(path, node, at: location).map { [$0] } ?? []
        case .update(let base, let children):
            if base.isWithin(location), children.allSatisfy({ $0.0.keys.count == 1 }) {
                let data = JSON.object(children.map { ($0.0.keys[0], $0.1.plainJSON()) })
                return [DatabaseListenEvent(kind: .patch, path: base.relative(to: location), data: data)]
            }
            return children.compactMap { setEvents(base.appending($0.0), $0.1, at: location) }
        case .rules:
            return []
        }
    }

    static func setEvents(_ path: DatabasePath, _ node: DatabaseNode, at location: DatabasePath) -> DatabaseListenEvent? {
        if path.isWithin(location) {
            return DatabaseListenEvent(kind: .put, path: path.relative(to: location), data: node.plainJSON())
        }
        if location.isWithin(path) {
            return DatabaseListenEvent(kind: .put, path: .root, data: node.descendant(location.relative(to: path)).plainJSON())
        }
        return nil
    }

    /// Whether `change` touches `location` (a query listener then re-reads it).
    public static func touches(_ change: DatabaseChange, _ location: DatabasePath) -> Bool {
        switch change.kind {
        case .set(let path, _): return path.isWithin(location) || location.isWithin(path)
        case .update(let base, let children):
            return children.contains { child in
                let path = base.appending(child.0)
                return path.isWithin(location) || location.isWithin(path)
            }
        case .rules: return false
        }
    }
}
