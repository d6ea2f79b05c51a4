public import HearthCore
import Synchronization

/// Routes the change feed to Listen streams through an index of their targets, so a commit
/// costs work in proportion to the targets it can affect, not to the number of listeners.
///
/// A target is indexed by the narrowest key its definition allows: a document target by each
/// of its documents; a collection query by its collection, or — when it has a top-level
/// equality filter — by collection, field and value; a collection-group query by its
/// collection id. A change is offered to every target under the keys its document has before
/// and after the commit; the stream's state machine makes the exact decision.
public final class ListenerHub: ChangeFeedSubscriber {
    /// Where a target is filed.
    enum RouteKey: Hashable {
        case document(String, ResourcePath)
        case collection(String, ResourcePath)
        case equality(String, ResourcePath, FieldPath, Value)
        case group(String, String)
    }

    struct CollectionKey: Hashable {
        var database: String
        var collection: ResourcePath
    }

    struct Registration {
        var sink: ListenSink
        var keys: [RouteKey]
    }

    struct Waiter {
        var time: Timestamp
        var sink: ListenSink
    }

    struct State {
        var position: Timestamp
        var nextID: UInt64 = 1
        var registrations: [UInt64: Registration] = [:]
        var routes: [RouteKey: [UInt64: ListenSink]] = [:]
        /// Fields that equality-routed targets of a collection are filed under, with counts.
        var equalityFields: [CollectionKey: [FieldPath: Int]] = [:]
        var waiters: [Waiter] = []
        var sinks: [ObjectIdentifier: ListenSink] = [:]
    }

    let state: Mutex<State>

    init(position: Timestamp) {
        state = Mutex(State(position: position))
    }

    /// Handle of a registered target.
    public struct RegistrationID: Hashable, Sendable {
        let value: UInt64
    }

    /// How many targets are registered (for tests and metrics).
    public var targetCount: Int { state.withLock { $0.registrations.count } }

    /// How many streams are attached.
    public var streamCount: Int { state.withLock { $0.sinks.count } }

    /// The time of the last commit routed.
    public var position: Timestamp { state.withLock { $0.position } }

    // MARK: Streams and targets

    /// Attaches a stream's sink; it receives a tick with the current position at once.
    func attach(_ sink: ListenSink) {
        state.withLock { s in
            s.sinks[ObjectIdentifier(sink)] = sink
            sink.enqueueFromFeed(.tick(s.position))
        }
    }

    func detach(_ sink: ListenSink) {
        state.withLock { s in
            s.sinks[ObjectIdentifier(sink)] = nil
            s.waiters.removeAll { $0.sink === sink }
        }
    }

    /// Files a target of `sink`. Changes committed after this call reach the sink.
    func register(_ sink: ListenSink, database: String, target: ListenTargetSpec) -> RegistrationID {
        let keys = Self.routeKeys(database: database, target: target)
        return state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.registrations[id] = Registration(sink: sink, keys: keys)
            for key in keys {
                s.routes[key, default: [:]][id] = sink
                if case .equality(let db, let collection, let field, _) = key {
                    s.equalityFields[CollectionKey(database: db, collection: collection), default: [:]][field, default: 0] += 1
                }
            }
            return RegistrationID(value: id)
        }
    }

    func unregister(_ id: RegistrationID) {
        state.withLock { s in
            guard let r = s.registrations.removeValue(forKey: id.value) else { return }
            for key in r.keys {
                s.routes[key]?[id.value] = nil
                if s.routes[key]?.isEmpty == true { s.routes[key] = nil }
                if case .equality(let db, let collection, let field, _) = key {
                    let ck = CollectionKey(database: db, collection: collection)
                    if let n = s.equalityFields[ck]?[field], n > 1 {
                        s.equalityFields[ck]?[field] = n - 1
                    } else {
                        s.equalityFields[ck]?[field] = nil
                        if s.equalityFields[ck]?.isEmpty == true { s.equalityFields[ck] = nil }
                    }
                }
            }
        }
    }

    /// Sends `sink` a tick once every commit up to `time` has been routed.
    func notify(_ sink: ListenSink, atOrAfter time: Timestamp) {
        state.withLock { s in
            if s.position >= time {
                sink.enqueueFromFeed(.tick(s.position))
            } else {
                s.waiters.append(Waiter(time: time, sink: sink))
            }
        }
    }

    /// Sends every attached stream a tick with the current position, so idle streams can
    /// advance their resume tokens.
    func heartbeat() {
        state.withLock { s in
            for sink in s.sinks.values { sink.enqueueFromFeed(.tick(s.position)) }
        }
    }

    public func advance(to time: Timestamp) {
        state.withLock { s in
            guard time > s.position else { return }
            s.position = time
            s.releaseWaiters(at: time)
        }
    }

    /// Every stream re-syncs every target from storage (as a stream that fell behind its feed
    /// budget does: RESET, then the current results), then follows the feed from `time`.
    public func resynchronize(at time: Timestamp) {
        state.withLock { s in
            s.position = max(s.position, time)
            for sink in s.sinks.values { sink.overflow() }
            s.releaseWaiters(at: s.position)
        }
    }

    // MARK: Routing

    static func routeKeys(database: String, target: ListenTargetSpec) -> [RouteKey] {
        switch target {
        case .documents(let paths):
            return Array(Set(paths)).map { .document(database, $0) }
        case .query(let q):
            if q.allDescendants {
                return [.group(database, q.collectionId)]
            }
            if let (field, value) = equalityRoute(q.filter) {
                return [.equality(database, q.collectionPath, field, value)]
            }
            return [.collection(database, q.collectionPath)]
        }
    }

    /// A top-level equality constraint every result must satisfy (`field == value`, alone or
    /// inside a top-level AND), on an ordinary field.
    static func equalityRoute(_ filter: Query.Filter?) -> (FieldPath, Value)? {
        switch filter {
        case .field(let f, .equal, let v)? where !f.isDocumentName:
            return (f, v)
        case .and(let parts)?:
            for p in parts {
                if let r = equalityRoute(p) { return r }
            }
            return nil
        default:
            return nil
        }
    }

    public func deliver(_ batch: CommittedChanges) {
        state.withLock { s in
            s.position = batch.commitTime
            var bySink: [ObjectIdentifier: (ListenSink, [DocumentChange])] = [:]
            func offer(_ key: RouteKey, _ change: DocumentChange) {
                guard let targets = s.routes[key] else { return }
                for sink in targets.values {
                    let k = ObjectIdentifier(sink)
                    if var entry = bySink[k] {
                        if entry.1.last?.path != change.path { entry.1.append(change) }
                        bySink[k] = entry
                    } else {
                        bySink[k] = (sink, [change])
                    }
                }
            }
            if batch.cleared {
                for r in s.registrations.values where r.keys.contains(where: { $0.database == batch.database }) {
                    bySink[ObjectIdentifier(r.sink)] = (r.sink, [])
                }
                for (sink, _) in bySink.values { sink.enqueueFromFeed(.cleared(batch.commitTime, batch.database)) }
                bySink = [:]
            } else if !s.routes.isEmpty {
                let db = batch.database
                for change in batch.changes {
                    let path = change.path
                    offer(.document(db, path), change)
                    let collection = path.parent
                    offer(.collection(db, collection), change)
                    offer(.group(db, path.collectionId), change)
                    if let fields = s.equalityFields[CollectionKey(database: db, collection: collection)] {
                        for field in fields.keys {
                            let before = change.before.flatMap { Value.map($0.fields).value(at: field) }
                            let after = change.after.flatMap { Value.map($0.fields).value(at: field) }
                            if let before { offer(.equality(db, collection, field, before), change) }
                            if let after, after != before { offer(.equality(db, collection, field, after), change) }
                        }
                    }
                }
            }
            for (sink, changes) in bySink.values {
                sink.enqueueFromFeed(.changes(batch.commitTime, changes))
            }
            s.releaseWaiters(at: batch.commitTime)
        }
    }
}

extension ListenerHub.State {
    mutating func releaseWaiters(at time: Timestamp) {
        guard !waiters.isEmpty else { return }
        var keep: [ListenerHub.Waiter] = []
        for w in waiters {
            if w.time <= time {
                w.sink.enqueueFromFeed(.tick(time))
            } else {
                keep.append(w)
            }
        }
        waiters = keep
    }
}

extension ListenerHub.RouteKey {
    var database: String {
        switch self {
        case .document(let d, _), .collection(let d, _), .equality(let d, _, _, _), .group(let d, _): d
        }
    }
}
