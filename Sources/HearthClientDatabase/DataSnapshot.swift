public import Foundation

/// What an observer listens for (`FIRDataEventType`, same raw values).
public enum DataEventType: Int, Sendable, CaseIterable {
    case childAdded = 0
    case childRemoved = 1
    case childChanged = 2
    case childMoved = 3
    case value = 4
}

/// The handle `observe` returns, for `removeObserver(withHandle:)`.
public typealias DatabaseHandle = UInt

/// An immutable copy of the data at a location (`FIRDataSnapshot`).
public final class DataSnapshot: Sendable, CustomStringConvertible {
    let node: DatabaseNode
    /// The location this snapshot is of.
    public let ref: DatabaseReference
    /// The order `children` walks in (the query's index).
    let index: DatabaseIndex

    package init(node: DatabaseNode, ref: DatabaseReference, index: DatabaseIndex = .priority) {
        self.node = node
        self.ref = ref
        self.index = index
    }

    /// `NSNull` when there is no data; otherwise `[String: Any]`, `[Any]` (objects whose keys are
    /// mostly-dense integers, Firebase's array rule), `String`, `Bool`, `Int` (integral numbers)
    /// or `Double`.
    public var value: Any? { node.appValue() }

    /// The value with `.priority` (and `.value` for leaves with a priority) included.
    public var valueInExportFormat: Any? { node.appValue(withPriority: true) }

    /// The last key of the location (`""` at the root).
    public var key: String { ref.key ?? "" }

    public var priority: Any? { node.priority?.appValue }

    public func exists() -> Bool { !node.isEmpty }

    public func hasChildren() -> Bool { !node.children.isEmpty }

    public var childrenCount: UInt { UInt(node.children.count) }

    /// True when the (possibly deep) child `path` has data.
    public func hasChild(_ childPathString: String) -> Bool {
        !node.child(atPath: DatabaseValues.segments(childPathString)).isEmpty
    }

    public func childSnapshot(forPath childPathString: String) -> DataSnapshot {
        let path = DatabaseValues.segments(childPathString)
        return DataSnapshot(node: node.child(atPath: path), ref: ref.child(childPathString))
    }

    /// The children as `DataSnapshot`s in the query's order (`for case let child as DataSnapshot in snapshot.children`).
    public var children: NSEnumerator { SnapshotEnumerator(childSnapshots) }

    /// The children as `DataSnapshot`s in the query's order.
    public var childSnapshots: [DataSnapshot] {
        var params = DatabaseQueryParams()
        params.index = index
        return params.sorted(node).map { DataSnapshot(node: $0.node, ref: ref.child($0.key)) }
    }

    public var description: String { "Snap (\(key)) \(node.exportJSON().serialized())" }

    /// Decodes the value with `Database.Decoder`.
    public func data<T: Decodable>(as type: T.Type, decoder: Database.Decoder = Database.Decoder()) throws -> T {
        try decoder.decode(type, from: node)
    }
}

/// `NSEnumerator` over a fixed array (what `children` returns, as in the Apple SDK).
final class SnapshotEnumerator: NSEnumerator {
    let items: [Any]
    var position = 0

    init(_ items: [Any]) {
        self.items = items
    }

    override func nextObject() -> Any? {
        guard position < items.count else { return nil }
        defer { position += 1 }
        return items[position]
    }
}
