public import Foundation
import Synchronization

/// The data a transaction block reads and changes (`FIRMutableData`). Children obtained with
/// ``childData(byAppendingPath:)`` write through to the same transaction.
public final class MutableData: Sendable, CustomStringConvertible {
    final class Root: Sendable {
        let node: Mutex<DatabaseNode>
        init(_ node: DatabaseNode) { self.node = Mutex(node) }
    }

    let root: Root
    let path: [String]

    package convenience init(node: DatabaseNode) {
        self.init(root: Root(node), path: [])
    }

    init(root: Root, path: [String]) {
        self.root = root
        self.path = path
    }

    package var node: DatabaseNode {
        get { root.node.withLock { $0.child(atPath: path) } }
        set { root.node.withLock { $0 = $0.setting(path, to: newValue) } }
    }

    /// The value at this location (`NSNull` when empty, as `DataSnapshot.value`); set any
    /// supported type, or nil/`NSNull` to delete. An unsupported value leaves the data unchanged.
    public var value: Any? {
        get { node.appValue() }
        set {
            guard let json = try? DatabaseValues.json(newValue) else {
                Database.logger.warning("MutableData.value: unsupported value of type \(type(of: newValue)); unchanged")
                return
            }
            let priority = node.priority
            var updated = DatabaseNode(json: json)
            if updated.priority == nil, !updated.isEmpty { updated.priority = priority }
            node = updated
        }
    }

    public var priority: Any? {
        get { node.priority?.appValue }
        set {
            var current = node
            guard !current.isEmpty else { return }
            current.priority = (try? DatabaseValues.leaf(newValue)) ?? nil
            node = current
        }
    }

    /// The last key of this location (nil at the transaction's own location).
    public var key: String? { path.last }

    public var childrenCount: UInt { UInt(node.children.count) }

    public func hasChildren() -> Bool { !node.children.isEmpty }

    public func hasChild(atPath path: String) -> Bool { !node.child(atPath: DatabaseValues.segments(path)).isEmpty }

    public func childData(byAppendingPath path: String) -> MutableData {
        MutableData(root: root, path: self.path + DatabaseValues.segments(path))
    }

    /// The children as `MutableData`, in key order.
    public var children: NSEnumerator {
        let keys = node.children.keys.sorted { DatabaseOrdering.compareNames($0, $1) < 0 }
        return SnapshotEnumerator(keys.map { childData(byAppendingPath: $0) })
    }

    public var description: String { "MutableData (\(key ?? "")) \(node.exportJSON().serialized())" }
}

/// What a transaction block answers (`FIRTransactionResult`).
public final class TransactionResult: Sendable {
    let node: DatabaseNode?

    init(node: DatabaseNode?) { self.node = node }

    /// Commit `value`'s data (the block's argument, changed).
    public static func success(withValue value: MutableData) -> TransactionResult { TransactionResult(node: value.root.node.withLock { $0 }) }

    /// Give up: nothing is written; the completion sees `committed == false`.
    public static func abort() -> TransactionResult { TransactionResult(node: nil) }
}

/// Placeholders the server replaces when it writes (`FIRServerValue`).
public enum ServerValue {
    /// The server's time in milliseconds since 1970: `{".sv": "timestamp"}`.
    public static func timestamp() -> [AnyHashable: Any] { [".sv": "timestamp"] }

    /// The current number plus `delta` (`delta` when there is no number): `{".sv": {"increment": delta}}`.
    public static func increment(_ delta: NSNumber) -> [AnyHashable: Any] { [".sv": ["increment": delta]] }
}
