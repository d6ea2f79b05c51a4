import Synchronization

/// What one durable write changed, as the change feed delivers it.
public struct DatabaseChange: Sendable {
    public enum Kind: Sendable {
        /// The node at `path` was replaced (empty: deleted).
        case set(path: DatabasePath, node: DatabaseNode)
        /// Children of `path` were replaced, each at its path relative to `path`.
        case update(path: DatabasePath, children: [(DatabasePath, DatabaseNode)])
        /// The namespace's rules were replaced (listeners re-check that they may still read).
        case rules
    }

    public var namespace: String
    /// The namespace's revision after the write: changes arrive in increasing revisions
    /// (a `rules` change is not a write and carries 0).
    public var revision: Int64
    public var kind: Kind
}

/// Receives the change feed. `deliver` runs with the feed's lock held, in commit order: it
/// must only hand the change on (enqueue), never wait.
public protocol DatabaseChangeSubscriber: AnyObject, Sendable {
    func deliver(_ change: DatabaseChange)
}

/// Every durable write of the engine, exactly once, in commit order. The engine publishes a
/// write after its store reported it durable and before the writer is told, while it still
/// holds the write lock: so the feed's order is the commit order.
public final class DatabaseChangeFeed: Sendable {
    struct Subscription {
        let id: Int
        let namespace: String
        let subscriber: any DatabaseChangeSubscriber
    }

    struct State {
        var nextID = 0
        var subscriptions: [Int: Subscription] = [:]
    }

    let state = Mutex(State())

    public init() {}

    /// Subscribes to one namespace's changes; returns the token for ``unsubscribe(_:)``.
    public func subscribe(namespace: String, _ subscriber: any DatabaseChangeSubscriber) -> Int {
        state.withLock { s in
            s.nextID += 1
            s.subscriptions[s.nextID] = Subscription(id: s.nextID, namespace: namespace, subscriber: subscriber)
            return s.nextID
        }
    }

    public func unsubscribe(_ token: Int) {
        _ = state.withLock { $0.subscriptions.removeValue(forKey: token) }
    }

    public var subscriberCount: Int { state.withLock { $0.subscriptions.count } }

    func publish(_ change: DatabaseChange) {
        state.withLock { s in
            for subscription in s.subscriptions.values where subscription.namespace == change.namespace {
                subscription.subscriber.deliver(change)
            }
        }
    }
}
