import Foundation

/// A location with an order, a range and a limit (`FIRDatabaseQuery`); observers see the
/// children the query selects, in its order.
public class DatabaseQuery: @unchecked Sendable {
    public let database: Database
    let path: [String]
    let params: DatabaseQueryParams

    init(database: Database, path: [String], params: DatabaseQueryParams) {
        self.database = database
        self.path = path
        self.params = params
    }

    /// The location without the query.
    public var ref: DatabaseReference { DatabaseReference(database: database, path: path) }

    func with(_ change: (inout DatabaseQueryParams) -> Void) -> DatabaseQuery {
        var params = self.params
        change(&params)
        return DatabaseQuery(database: database, path: path, params: params)
    }

    static func leaf(_ value: Any?) -> DatabaseLeaf? {
        do { return try DatabaseValues.leaf(value) } catch {
            Database.logger.warning("query bound \(String(describing: value)) is not a string, number or boolean; nil is used")
            return nil
        }
    }

    // MARK: Ordering

    public func queryOrdered(byChild key: String) -> DatabaseQuery { with { $0.index = .child(DatabaseValues.segments(key)) } }
    public func queryOrderedByKey() -> DatabaseQuery { with { $0.index = .key } }
    public func queryOrderedByValue() -> DatabaseQuery { with { $0.index = .value } }
    public func queryOrderedByPriority() -> DatabaseQuery { with { $0.index = .priority } }

    // MARK: Limits

    public func queryLimited(toFirst limit: UInt) -> DatabaseQuery { with { $0.limit = .first(Int(limit)) } }
    public func queryLimited(toLast limit: UInt) -> DatabaseQuery { with { $0.limit = .last(Int(limit)) } }

    // MARK: Ranges

    public func queryStarting(atValue startValue: Any?) -> DatabaseQuery { queryStarting(atValue: startValue, childKey: nil) }
    public func queryStarting(atValue startValue: Any?, childKey: String?) -> DatabaseQuery {
        let value = Self.leaf(startValue)
        return with { $0.start = .init(value: value, name: childKey, inclusive: true) }
    }
    public func queryStarting(afterValue startAfterValue: Any?) -> DatabaseQuery { queryStarting(afterValue: startAfterValue, childKey: nil) }
    public func queryStarting(afterValue startAfterValue: Any?, childKey: String?) -> DatabaseQuery {
        let value = Self.leaf(startAfterValue)
        return with { $0.start = .init(value: value, name: childKey, inclusive: false) }
    }
    public func queryEnding(atValue endValue: Any?) -> DatabaseQuery { queryEnding(atValue: endValue, childKey: nil) }
    public func queryEnding(atValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        let value = Self.leaf(endValue)
        return with { $0.end = .init(value: value, name: childKey, inclusive: true) }
    }
    public func queryEnding(beforeValue endValue: Any?) -> DatabaseQuery { queryEnding(beforeValue: endValue, childKey: nil) }
    public func queryEnding(beforeValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        let value = Self.leaf(endValue)
        return with { $0.end = .init(value: value, name: childKey, inclusive: false) }
    }
    public func queryEqual(toValue value: Any?) -> DatabaseQuery { queryEqual(toValue: value, childKey: nil) }
    public func queryEqual(toValue value: Any?, childKey: String?) -> DatabaseQuery {
        let leaf = Self.leaf(value)
        return with {
            $0.start = .init(value: leaf, name: childKey, inclusive: true)
            $0.end = .init(value: leaf, name: childKey, inclusive: true)
        }
    }

    // MARK: Observers

    func snapshot(_ event: DatabaseEvent) -> DataSnapshot {
        let location = event.childKey.map { ref.child($0) } ?? ref
        return DataSnapshot(node: event.node, ref: location, index: params.index)
    }

    func register(
        _ eventType: DataEventType, once: Bool, block: @escaping @Sendable (DataSnapshot, String?) -> Void,
        cancel: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        var onCancel: (@Sendable (DatabaseError) -> Void)?
        if let cancel { onCancel = { error in cancel(error.nsError) } }
        return database.repo.observe(
            path: path, params: params, type: eventType, once: once,
            onEvent: { [self] event in block(snapshot(event), event.previousSiblingKey) }, onCancel: onCancel)
    }

    /// Calls `block` for every event of `eventType` until removed; `.value` first once the data is complete.
    @discardableResult
    public func observe(_ eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void) -> DatabaseHandle {
        register(eventType, once: false, block: { snapshot, _ in block(snapshot) }, cancel: nil)
    }

    /// As `observe(_:with:)`; `cancelBlock` gets the error when the server refuses or revokes the listen.
    @discardableResult
    public func observe(
        _ eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        register(eventType, once: false, block: { snapshot, _ in block(snapshot) }, cancel: cancelBlock)
    }

    /// Child events with the key of the sibling before the child in the query's order (nil: first).
    @discardableResult
    public func observe(
        _ eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void
    ) -> DatabaseHandle {
        register(eventType, once: false, block: block, cancel: nil)
    }

    @discardableResult
    public func observe(
        _ eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) -> DatabaseHandle {
        register(eventType, once: false, block: block, cancel: cancelBlock)
    }

    /// Calls `block` once, for the first event of `eventType`, then removes itself.
    public func observeSingleEvent(of eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void) {
        _ = register(eventType, once: true, block: { snapshot, _ in block(snapshot) }, cancel: nil)
    }

    public func observeSingleEvent(
        of eventType: DataEventType, with block: @escaping @Sendable (DataSnapshot) -> Void,
        withCancel cancelBlock: (@Sendable (any Error) -> Void)?
    ) {
        _ = register(eventType, once: true, block: { snapshot, _ in block(snapshot) }, cancel: cancelBlock)
    }

    public func observeSingleEvent(
        of eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping @Sendable (DataSnapshot, String?) -> Void
    ) {
        _ = register(eventType, once: true, block: block, cancel: nil)
    }

    /// The first event of `eventType` (the Apple SDK's async form: it does not throw, and waits
    /// as long as no event comes; use `getData()` to see errors).
    public func observeSingleEvent(of eventType: DataEventType) async -> DataSnapshot {
        await observeSingleEventAndPreviousSiblingKey(of: eventType).0
    }

    public func observeSingleEventAndPreviousSiblingKey(of eventType: DataEventType) async -> (DataSnapshot, String?) {
        await withCheckedContinuation { continuation in
            _ = register(eventType, once: true, block: { snapshot, previous in continuation.resume(returning: (snapshot, previous)) }, cancel: nil)
        }
    }

    /// Every event of `eventType` as an `AsyncSequence`; ends with the error when the listen is
    /// refused or revoked, and removes its observer when the consumer stops.
    public func snapshots(of eventType: DataEventType) -> AsyncThrowingStream<DataSnapshot, any Error> {
        AsyncThrowingStream { continuation in
            let handle = register(
                eventType, once: false, block: { snapshot, _ in continuation.yield(snapshot) },
                cancel: { error in continuation.finish(throwing: error) })
            let repo = database.repo
            continuation.onTermination = { _ in repo.removeObserver(handle) }
        }
    }

    public func removeObserver(withHandle handle: DatabaseHandle) { database.repo.removeObserver(handle) }

    /// Removes every observer at this location (queries at it included; not those of children).
    public func removeAllObservers() { database.repo.removeAllObservers(path: path) }

    /// Keeps this query's data listened (and so current) without observers.
    public func keepSynced(_ keepSynced: Bool) { database.repo.keepSynced(path: path, params: params, keepSynced) }

    /// The server's current data for the query (one `g` request); throws the server's refusal.
    public func getData() async throws -> DataSnapshot {
        let cached = database.repo.cachedWhileOffline(path: path, params: params)
        if cached.offline {
            // As the Apple SDK: offline, answer from a listened location's data or fail at once.
            guard let node = cached.node else {
                throw DatabaseError.server(
                    status: "unavailable",
                    message: "Unable to get latest value for query \(ref.url), client offline with no active listeners and no matching disk cache entries"
                ).nsError
            }
            return DataSnapshot(node: params.view(node), ref: ref, index: params.index)
        }
        let reply = await database.repo.request("g", .object([("p", DatabaseRepo.wirePath(path)), ("q", params.wire ?? .object([]))]))
        guard reply.status == "ok" else { throw DatabaseError.server(status: reply.status, message: reply.data.stringValue).nsError }
        return DataSnapshot(node: params.view(DatabaseNode(json: reply.data)), ref: ref, index: params.index)
    }

    public func getData(completion block: @escaping @Sendable ((any Error)?, DataSnapshot?) -> Void) {
        let queue = database.callbackQueue
        Task {
            do {
                let snapshot = try await getData()
                queue.async { block(nil, snapshot) }
            } catch {
                queue.async { block(error, nil) }
            }
        }
    }
}
