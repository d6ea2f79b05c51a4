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

    public init(namespace: String, revision: Int64, kind: Kind) {
        self.namespace = namespace
        self.revision = revision
        self.kind = kind
    }

    /// The change `commit` made, rebuilt from the commit alone — the leaves it wrote under each
    /// path it replaced — as another server's feed reads it back from a commit log; nil when the
    /// commit declares no ``DatabaseTreeCommit/event``.
    public init?(_ commit: DatabaseTreeCommit, revision: Int64) {
        guard let event = commit.event, let first = commit.clearedSubtrees.first else { return nil }
        func node(_ path: DatabasePath) -> DatabaseNode {
            DatabaseNode(leaves: commit.writtenLeaves.filter { $0.path.isWithin(path) }, base: path)
        }
        switch event {
        case .set:
            self.init(namespace: commit.namespace, revision: revision, kind: .set(path: first, node: node(first)))
        case .update(let base):
            let children = commit.clearedSubtrees.map { ($0.relative(to: base), node($0)) }
            self.init(namespace: commit.namespace, revision: revision, kind: .update(path: base, children: children))
        }
    }

    var isRules: Bool {
        if case .rules = kind { return true }
        return false
    }
}

/// Receives the change feed. `deliver` runs with the feed's lock held, in commit order: it
/// must only hand the change on (enqueue), never wait.
public protocol DatabaseChangeSubscriber: AnyObject, Sendable {
    func deliver(_ change: DatabaseChange)
}

/// Every durable write of the engine, exactly once, in commit order. The engine publishes a
/// write after its store reported it durable and before the writer is told, while it still
/// holds the write lock: so the feed's order is the commit order.
///
/// **Sequenced** (several servers over one database, docs/postgres.md "Several replicas"): the
/// feed has two sources — this server's engine and the store's commit log, which carries every
/// server's commits (``DatabaseChangeFeed/synchronize(revisions:resets:)`` starts it) — and it
/// delivers each namespace's revisions once each, in order, without gaps: a change already
/// delivered is dropped, one that arrives before the revisions below it is held until they
/// came. Until the first `synchronize`, every write is held. Rules changes are not writes and
/// go out at once.
public final class DatabaseChangeFeed: Sendable {
    struct Subscription {
        let id: Int
        let namespace: String
        let subscriber: any DatabaseChangeSubscriber
    }

    struct State {
        var nextID = 0
        var subscriptions: [Int: Subscription] = [:]
        // Sequenced feeds only.
        var synchronized = false
        /// The last revision delivered per namespace (absent: none since synchronizing, 0).
        var delivered: [String: Int64] = [:]
        /// Changes that arrived before a revision below them.
        var held: [String: [Int64: DatabaseChange]] = [:]

        func send(_ change: DatabaseChange) {
            for subscription in subscriptions.values where subscription.namespace == change.namespace {
                subscription.subscriber.deliver(change)
            }
        }

        /// Sends the held changes that now follow the last delivered revision.
        mutating func release(_ namespace: String) {
            guard var waiting = held[namespace] else { return }
            var last = delivered[namespace] ?? 0
            for revision in waiting.keys where revision <= last { waiting[revision] = nil }
            while let next = waiting.removeValue(forKey: last + 1) {
                send(next)
                last += 1
            }
            delivered[namespace] = last
            held[namespace] = waiting.isEmpty ? nil : waiting
        }
    }

    let state = Mutex(State())
    /// Whether revisions are put in order here (several servers); otherwise the one engine's
    /// write lock orders them and `publish` hands each on at once.
    public let sequenced: Bool

    public init(sequenced: Bool = false) {
        self.sequenced = sequenced
    }

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

    /// Whether anyone listens to `namespace` (a feed re-reads a namespace only for listeners).
    public func hasSubscribers(namespace: String) -> Bool {
        state.withLock { s in s.subscriptions.values.contains { $0.namespace == namespace } }
    }

    /// Hands `change` to its namespace's subscribers. True when it is delivered (now, or
    /// before: a sequenced feed drops a revision it delivered); false when a sequenced feed
    /// holds it until the revisions below it arrive.
    @discardableResult
    public func publish(_ change: DatabaseChange) -> Bool {
        state.withLock { s in
            guard sequenced, !change.isRules else {
                s.send(change)
                return true
            }
            let last = s.delivered[change.namespace] ?? 0
            if s.synchronized, change.revision <= last { return true }
            guard s.synchronized, change.revision == last + 1 else {
                s.held[change.namespace, default: [:]][change.revision] = change
                return false
            }
            s.send(change)
            s.delivered[change.namespace] = change.revision
            s.release(change.namespace)
            return true
        }
    }

    /// Sequenced feeds: the last revision of `namespace` delivered (0 before any).
    public func deliveredRevision(namespace: String) -> Int64 {
        state.withLock { $0.delivered[namespace] ?? 0 }
    }

    /// Sequenced feeds: from now on each namespace of `revisions` continues after its revision
    /// (a namespace not named continues after its last delivered revision, 0 at first). Each
    /// of `resets` — a `set` of a namespace's root as it is at its revision, which is the
    /// namespace's revision here — goes to the subscribers first, in place of what they could
    /// not be given (the log was pruned, or the feed was not running yet); held changes at or
    /// below the new revisions are dropped, later ones follow in order.
    public func synchronize(revisions: [String: Int64], resets: [DatabaseChange] = []) {
        state.withLock { s in
            s.synchronized = true
            for (namespace, revision) in revisions {
                s.delivered[namespace] = max(s.delivered[namespace] ?? 0, revision)
            }
            for reset in resets { s.send(reset) }
            for namespace in Array(s.held.keys) { s.release(namespace) }
        }
    }

    /// Waits (polling, up to `timeout`) until a sequenced feed delivered `revision` of
    /// `namespace`: a writer whose commit followed another server's answers after its
    /// listeners heard both, as they do when it follows its own.
    @discardableResult
    public func waitUntilDelivered(namespace: String, revision: Int64, timeout: Duration = .seconds(2)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while deliveredRevision(namespace: namespace) < revision, ContinuousClock.now < deadline {
            do { try await Task.sleep(for: .milliseconds(1)) } catch { break }
        }
        return deliveredRevision(namespace: namespace) >= revision
    }
}
