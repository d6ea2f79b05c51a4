import HearthCore
import Synchronization

/// A bounded cache of the latest version of recently read or written documents (and of
/// known-missing ones), so point reads skip storage.
///
/// Reads must never go back in time. Storage becomes newer than the cache the moment a
/// commit is durable, before ``committed(_:_:at:)`` installs its results; a reader that
/// went to storage in that window must not see the older cached version afterwards. So a
/// commit marks the documents it writes as in flight for its whole duration
/// (``beginWrite(_:_:)``): lookups of in-flight documents miss and read storage, which is
/// monotonic on its own, until the last commit touching them has installed its version.
/// Writers install versions in commit order (newer update times win); a reader may only
/// fill an entry if no commit was in flight when it began and none started or ended while
/// it read, so a stale read can never install a version older than one already seen.
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

    /// What one commit has marked in flight, returned by ``beginWrite(_:_:)``.
    struct WriteTicket: Sendable {
        var database: String
        /// nil: the whole database (clearing it).
        var keys: [Key]?
    }

    struct State: Sendable {
        var entries: [Key: Entry] = [:]
        var epoch: UInt64 = 0
        /// Commits between ``beginWrite(_:_:)`` and ``committed(_:_:at:)``/``abortWrite(_:)``.
        var writing = 0
        /// How many in-flight commits write each document.
        var inFlight: [Key: Int] = [:]
        /// How many in-flight operations rewrite each whole database.
        var inFlightDatabases: [String: Int] = [:]

        func isInFlight(_ key: Key) -> Bool {
            writing > 0 && (inFlight[key] != nil || inFlightDatabases[key.database] != nil)
        }

        mutating func finish(_ ticket: WriteTicket) {
            epoch &+= 1
            writing -= 1
            if let keys = ticket.keys {
                for key in keys {
                    if let n = inFlight[key], n > 1 { inFlight[key] = n - 1 } else { inFlight[key] = nil }
                }
            } else if let n = inFlightDatabases[ticket.database], n > 1 {
                inFlightDatabases[ticket.database] = n - 1
            } else {
                inFlightDatabases[ticket.database] = nil
            }
        }
    }

    let capacity: Int
    let state = Mutex(State())

    static let defaultCapacity = 100_000

    /// `capacity` 0: no cache (lookups miss, nothing is kept; several servers share the store).
    init(capacity: Int = defaultCapacity) {
        self.capacity = capacity
    }

    /// The cached state: `.some(nil)` means known missing; nil means not cached (or being
    /// written right now).
    func lookup(_ database: String, _ path: ResourcePath) -> Document?? {
        guard capacity > 0 else { return nil }
        let key = Key(database: database, path: path)
        return state.withLock { s in s.isInFlight(key) ? nil : s.entries[key].map { $0.document } }
    }

    /// The epoch a storage read begins in, or nil if a commit is in flight (its result may
    /// or may not be visible to the read, so the read must not fill the cache).
    func beginRead() -> UInt64? { state.withLock { $0.writing == 0 ? $0.epoch : nil } }

    /// A commit writing `paths` (nil: every document of the database) is about to make
    /// changes durable.
    func beginWrite(_ database: String, _ paths: [ResourcePath]?) -> WriteTicket {
        let ticket = WriteTicket(database: database, keys: paths.map { $0.map { Key(database: database, path: $0) } })
        state.withLock { s in
            s.epoch &+= 1
            s.writing += 1
            if let keys = ticket.keys {
                for key in keys { s.inFlight[key, default: 0] += 1 }
            } else {
                s.inFlightDatabases[database, default: 0] += 1
            }
        }
        return ticket
    }

    /// A commit failed. Nothing should have changed, but a failure reported after the
    /// storage commit (cancellation, an I/O error on the way back) cannot be told apart, so
    /// its documents are dropped from the cache rather than trusted.
    func abortWrite(_ ticket: WriteTicket) {
        state.withLock { s in
            s.finish(ticket)
            if let keys = ticket.keys {
                for key in keys { s.entries[key] = nil }
            } else {
                s.entries = s.entries.filter { $0.key.database != ticket.database }
            }
        }
    }

    /// Fills entries from a storage read that began at `epoch`.
    func fill(_ database: String, _ items: [(ResourcePath, Document?)], epoch: UInt64?) {
        guard capacity > 0 else { return }
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

    /// Installs the states a commit (begun with ``beginWrite(_:_:)``) produced and ends it.
    func committed(_ ticket: WriteTicket, _ items: [(ResourcePath, Document?)], at time: Timestamp) {
        state.withLock { s in
            s.finish(ticket)
            guard capacity > 0 else { return }
            if s.entries.count + items.count > capacity { s.entries.removeAll(keepingCapacity: true) }
            for (p, d) in items {
                let key = Key(database: ticket.database, path: p)
                let version = d?.updateTime ?? time
                if let old = s.entries[key], old.version > version { continue }
                s.entries[key] = Entry(document: d, version: version)
            }
        }
    }

    /// Clears a database's entries and ends the operation begun with
    /// `beginWrite(database, nil)`.
    func cleared(_ ticket: WriteTicket) {
        state.withLock { s in
            s.finish(ticket)
            s.entries = s.entries.filter { $0.key.database != ticket.database }
        }
    }
}
