/// One event for one observer: the child's (or the location's) node and, for child events,
/// the key of the sibling before it in the query's order.
package struct DatabaseEvent: Sendable, Equatable {
    package var type: DataEventType
    /// The child's key for child events; nil for `.value`.
    package var childKey: String?
    package var node: DatabaseNode
    package var previousSiblingKey: String?
}

/// Pure: the events an observer of one type sees when its view goes from `old` (nil: nothing
/// shown yet) to `new`, in Firebase's order — removed, added, moved, changed, then value —
/// each kind in the query's order.
package enum DatabaseEventGenerator {
    package static func events(for type: DataEventType, old: DatabaseNode?, new: DatabaseNode, params: DatabaseQueryParams) -> [DatabaseEvent] {
        if type == .value {
            guard old == nil || old != new else { return [] }
            return [DatabaseEvent(type: .value, childKey: nil, node: new, previousSiblingKey: nil)]
        }
        let oldChildren = old?.children ?? [:]
        let newOrdered = params.sorted(new)
        var previous: [String: String?] = [:]
        var last: String?
        for child in newOrdered {
            previous[child.key] = last
            last = child.key
        }
        var events: [DatabaseEvent] = []
        switch type {
        case .childRemoved:
            let removed = oldChildren.filter { new.children[$0.key] == nil }.map { (key: $0.key, node: $0.value) }
            for child in removed.sorted(by: { params.index.compare($0, $1) < 0 }) {
                events.append(DatabaseEvent(type: .childRemoved, childKey: child.key, node: child.node, previousSiblingKey: nil))
            }
        case .childAdded:
            for child in newOrdered where oldChildren[child.key] == nil {
                events.append(DatabaseEvent(type: .childAdded, childKey: child.key, node: child.node, previousSiblingKey: previous[child.key] ?? nil))
            }
        case .childMoved:
            for child in newOrdered {
                guard let before = oldChildren[child.key], before != child.node,
                    DatabaseOrdering.compareValues(params.index.indexedValue(before), params.index.indexedValue(child.node)) != 0
                else { continue }
                events.append(DatabaseEvent(type: .childMoved, childKey: child.key, node: child.node, previousSiblingKey: previous[child.key] ?? nil))
            }
        case .childChanged:
            for child in newOrdered {
                guard let before = oldChildren[child.key], before != child.node else { continue }
                events.append(
                    DatabaseEvent(type: .childChanged, childKey: child.key, node: child.node, previousSiblingKey: previous[child.key] ?? nil))
            }
        case .value: break
        }
        return events
    }
}
