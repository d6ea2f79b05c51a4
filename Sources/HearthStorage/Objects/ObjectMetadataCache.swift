import Synchronization

/// Object rows recently read, so that a GET of a popular object skips SQLite. Correctness
/// first — a read that starts after a write was acknowledged sees that write:
///
/// 1. Only ``ObjectStore`` writes objects (the CLI touches access keys, never objects), and
///    every one of its object writes calls ``invalidate(_:_:)`` after its transaction, before
///    it returns (and before any replaced blob is deleted), whether the transaction succeeded
///    or not.
/// 2. A read that missed stores its row only if no invalidation happened since before it
///    read (the ``epoch`` it noted then is still current): a slow reader holding an old row
///    cannot put it back after a writer removed it.
/// 3. Bounded: at most ``capacity`` rows; when full, everything is dropped (a cheap, rare
///    reset instead of LRU bookkeeping on every hit).
final class ObjectMetadataCache: Sendable {
    struct Key: Hashable, Sendable {
        var bucket: String
        var name: String
    }

    struct State {
        var rows: [Key: StorageObject] = [:]
        /// Incremented by every invalidation.
        var epoch: UInt64 = 0
    }

    let capacity: Int
    let state = Mutex(State())

    /// `capacity` 0 disables the cache.
    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    func object(_ bucket: String, _ name: String) -> StorageObject? {
        guard capacity > 0 else { return nil }
        return state.withLock { $0.rows[Key(bucket: bucket, name: name)] }
    }

    /// The current epoch; note it before reading a row from the database.
    var epoch: UInt64 { state.withLock { $0.epoch } }

    /// Stores a row read from the database, unless an invalidation happened since `epoch`.
    func insert(_ object: StorageObject, readAt epoch: UInt64) {
        guard capacity > 0 else { return }
        state.withLock { s in
            guard s.epoch == epoch else { return }
            if s.rows.count >= capacity { s.rows.removeAll(keepingCapacity: true) }
            s.rows[Key(bucket: object.bucket, name: object.name)] = object
        }
    }

    /// Forgets the row of `bucket`/`name` and stops slower readers from storing theirs.
    func invalidate(_ bucket: String, _ name: String) {
        state.withLock { s in
            s.epoch &+= 1
            s.rows.removeValue(forKey: Key(bucket: bucket, name: name))
        }
    }

    var count: Int { state.withLock { $0.rows.count } }
}
