import HearthCore
import Synchronization

/// A bounded cache of the latest version of recently read or written documents (and of
/// known-missing ones), so point reads skip storage. Writers install new versions in commit
/// order (newer update times win); a reader may only fill an entry if no commit was in
/// flight when it began and none started or ended while it read, so a stale read can never
/// install a version older than one another reader already saw in storage.
final class DocumentCache: Sendable {
    struct Key: Hashable, Sendable {
        var database: String
        var path: ResourcePath
    }

    struct Entry: Sendable {
        var document: Document?
        /// The commit that produced this state (update time, or the delete's commit time).
        var version: Timestamp
    }

    struct State: Sendable {
        var entries: [Key: Entry] = [:]
        var epoch: UInt64 = 0
        /// Commits between ``beginWrite()`` and ``committed(_:_:at:)``/``abortWrite()``.
        var writing = 0
    }

    let capacity: Int
    let state = Mutex(State())

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// The cached state: `.some(nil)` means known missing; nil means not cached.
    func lookup(_ database: String, _ path: ResourcePath) -> Document?? {
        state.withLock { $0.entries[Key(database: database, path: path)].map { $0.document } }
    }

    /// The epoch a storage read begins in, or nil if a commit is in flight (its result may
    /// or may not be visible to the read, so the read must not fill the cache).
    func beginRead() -> UInt64? { state.withLock { $0.writing == 0 ? $0.epoch : nil } }

    /// A commit is about to make changes durable.
    func beginWrite() {
        state.withLock { s in
            s.epoch &+= 1
            s.writing += 1
        }
    }

    /// A commit failed: nothing changed.
    func abortWrite() {
        state.withLock { s in
            s.epoch &+= 1
            s.writing -= 1
        }
    }

    /// Fills entries from a storage read that began at `epoch`.
    func fill(_ database: String, _ items: [(ResourcePath, Document?)], epoch: UInt64?) {
        state.withLock { s in
            guard let epoch, s.epoch == epoch, s.writing == 0 else { return }
            if s.entries.count + items.count > capacity { s.entries.removeAll(keepingCapacity: true) }
            for (p, d) in items {
                let key = Key(database: database, path: p)
                if s.entries[key] == nil {
                    s.entries[key] = Entry(document: d, version: d?.updateTime ?? Timestamp(seconds: Int64.min, nanos: 0))
                }
            }
        }
    }

    /// Installs the states a commit (begun with ``beginWrite()``) produced.
    func committed(_ database: String, _ items: [(ResourcePath, Document?)], at time: Timestamp) {
        state.withLock { s in
            s.epoch &+= 1
            s.writing -= 1
            if s.entries.count + items.count > capacity { s.entries.removeAll(keepingCapacity: true) }
            for (p, d) in items {
                let key = Key(database: database, path: p)
                let version = d?.updateTime ?? time
                if let old = s.entries[key], old.version > version { continue }
                s.entries[key] = Entry(document: d, version: version)
            }
        }
    }

    func removeAll(_ database: String) {
        state.withLock { s in
            s.epoch &+= 1
            s.entries = s.entries.filter { $0.key.database != database }
        }
    }
}
