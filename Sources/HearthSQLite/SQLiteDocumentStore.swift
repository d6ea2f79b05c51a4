public import GRDB
public import HearthCore
public import HearthDocuments
import Foundation
import Synchronization
import CoreMetrics

/// The embedded persistence: one SQLite database (WAL, `synchronous=FULL`) behind the
/// engine's ``DocumentStore`` protocol.
///
/// Writes are group-committed: concurrent callers queue their write bodies, one writer runs
/// as many as are waiting inside a single SQLite transaction (each in its own savepoint, so a
/// failing body changes nothing), commits once — one fsync — and only then answers them all.
public final class SQLiteDocumentStore: DocumentStore, Sendable {
    public let writer: any DatabaseWriter
    private let queue = DispatchQueue(label: "hearth.sqlite.writer", qos: .userInitiated)
    private let pending = Mutex<PendingWrites>(PendingWrites())
    private let historyRetentionMicros: Int64
    /// Copies the WAL into the database beside the writer (path-based stores only).
    private let checkpointer: WALCheckpointer?
    /// The highest composite index id stored, so that each commit checks its plan's index
    /// version without a query in the writer's serial section. Only writer jobs change it
    /// (`createIndex`), and a failed group commit reads it again from the database.
    private let indexVersion = Mutex(15)

    struct PendingWrites {
        var jobs: [WriteJob] = []
        var draining = false
        var commits = 0
    }

    struct WriteJob: Sendable {
        /// Runs the body inside a savepoint; returns how to answer the caller once the commit is known.
        let run: @Sendable (Database) -> @Sendable ((any Error)?) -> Void
        /// Answers the caller when the job never ran (the transaction could not start).
        let fail: @Sendable (any Error) -> Void
    }

    /// Opens (creating if needed) the database file at `path`.
    public convenience init(path: String, historyRetentionMicros: Int64 = 3_600_000_000) throws {
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // SQLite's default page cache (2 MiB a connection) holds a small share of the B-tree
            // pages a stream of writes touches (each document write lands on about six random
            // leaves), so most page reads were system calls copying from the page cache (10% of a
            // REST create's server time). 32 MiB a connection, allocated only as pages are read.
            try db.execute(sql: "PRAGMA cache_size = -32768")
            // Group commit runs each caller's writes in a savepoint of one transaction, and SQLite
            // keeps the original of every page a savepoint changes in a statement journal, which
            // spilled to a temporary file past 64 KiB: extra page writes for every document. In
            // memory, the journal is only ever a copy (it is never needed after a crash).
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // A checkpoint copies each page once however often the WAL holds it; at SQLite's
            // default of 1,000 pages the same interior and index pages were copied over and over
            // (8 page reads and 8 writes per document). 16,384 pages (64 MiB of WAL) coalesce
            // them: 10% less server CPU per REST create, same durability.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 16384")
        }
        config.busyMode = .timeout(10)
        config.maximumReaderCount = 8
        let pool = try DatabasePool(path: path, configuration: config)
        try self.init(writer: pool, historyRetentionMicros: historyRetentionMicros, checkpointer: try WALCheckpointer(path: path))
    }

    /// An in-memory database (tests).
    public static func inMemory() throws -> SQLiteDocumentStore {
        try SQLiteDocumentStore(writer: DatabaseQueue(), historyRetentionMicros: 3_600_000_000)
    }

    public convenience init(writer: any DatabaseWriter, historyRetentionMicros: Int64 = 3_600_000_000) throws {
        try self.init(writer: writer, historyRetentionMicros: historyRetentionMicros, checkpointer: nil)
    }

    private init(writer: any DatabaseWriter, historyRetentionMicros: Int64, checkpointer: WALCheckpointer?) throws {
        self.writer = writer
        self.historyRetentionMicros = historyRetentionMicros
        self.checkpointer = checkpointer
        try Self.migrator.migrate(writer)
        let stored = try writer.read { db in try SQLiteAccess(db: db).highestIndexID() }
        indexVersion.withLock { $0 = stored }
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("documents-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE documents(
                      db TEXT NOT NULL, parent TEXT NOT NULL, name_key BLOB NOT NULL, path TEXT NOT NULL,
                      collection_id TEXT NOT NULL, data BLOB NOT NULL, create_us INTEGER NOT NULL, update_us INTEGER NOT NULL,
                      PRIMARY KEY(db, parent, name_key)) WITHOUT ROWID;
                    CREATE INDEX documents_by_group ON documents(db, collection_id, name_key);
                    CREATE TABLE index_entries(
                      db TEXT NOT NULL, scope TEXT NOT NULL, key BLOB NOT NULL, doc TEXT NOT NULL,
                      PRIMARY KEY(db, scope, key)) WITHOUT ROWID;
                    CREATE TABLE history(
                      until_us INTEGER NOT NULL, db TEXT NOT NULL, path TEXT NOT NULL, data BLOB,
                      create_us INTEGER, update_us INTEGER,
                      PRIMARY KEY(until_us, db, path)) WITHOUT ROWID;
                    CREATE TABLE index_definitions(id INTEGER PRIMARY KEY, definition TEXT NOT NULL);
                    CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
                    """)
        }
        // One B-tree for documents instead of two: v1 keyed them by (db, parent, name_key) and
        // kept `documents_by_group` (db, collection_id, name_key) beside it for collection-group
        // scans, so every document write landed on two random leaves. Keyed by (db,
        // collection_id, name_key), a group is one run of the key, a collection the part of its
        // group's run below the collection's name key (``SQLiteAccess/keysBelow(_:)``). 14% fewer
        // WAL frames per created document (docs/performance.md, "The write path").
        m.registerMigration("documents-v2-one-btree") { db in
            try db.execute(
                sql: """
                    CREATE TABLE documents_v2(
                      db TEXT NOT NULL, collection_id TEXT NOT NULL, name_key BLOB NOT NULL, parent TEXT NOT NULL,
                      path TEXT NOT NULL, data BLOB NOT NULL, create_us INTEGER NOT NULL, update_us INTEGER NOT NULL,
                      PRIMARY KEY(db, collection_id, name_key)) WITHOUT ROWID;
                    INSERT INTO documents_v2(db, collection_id, name_key, parent, path, data, create_us, update_us)
                      SELECT db, collection_id, name_key, parent, path, data, create_us, update_us FROM documents
                      ORDER BY db, collection_id, name_key;
                    DROP TABLE documents;
                    ALTER TABLE documents_v2 RENAME TO documents;
                    """)
        }
        return m
    }

    // MARK: DocumentStore

    public func snapshot(_ request: DocumentSnapshotRead) async throws -> DocumentSnapshot {
        try await writer.read { db in try SQLiteAccess(db: db).snapshot(request) }
    }

    public func countDocuments(_ database: String, upTo limit: Int) async throws -> Int {
        try await writer.read { db in try SQLiteAccess(db: db).countDocuments(database, upTo: limit) }
    }

    /// Visits every document of a database, in one read transaction, threading `state` through
    /// (the data directory's export streams them to a file). Synchronous inside the snapshot:
    /// SQLite only, not part of ``DocumentStore``.
    public func forEachDocument<State: Sendable>(
        _ database: String, _ state: State, _ visit: @escaping @Sendable (inout State, Document) throws -> Void
    ) async throws -> State {
        try await writer.read { db in
            var state = state
            try SQLiteAccess(db: db).scanDocuments(database, .descendants(.root), .all, reverse: false) { doc in
                try visit(&state, doc)
                return true
            }
            return state
        }
    }

    public func documents(_ database: String, _ paths: [ResourcePath], at time: Timestamp?) async throws -> [Document?] {
        try await writer.read { db in
            let access = SQLiteAccess(db: db)
            if let time { return try paths.map { try access.document(database, $0, at: time) } }
            return try paths.map { try access.document(database, $0) }
        }
    }

    public func collectionIds(_ database: String, parent: ResourcePath) async throws -> [String] {
        try await writer.read { db in try SQLiteAccess(db: db).collectionIds(database, parent: parent) }
    }

    /// The ids of the databases that hold documents, in byte order (a skip-scan of the
    /// primary key: one lookup per database).
    public func databaseIDs() async throws -> [String] {
        try await writer.read { db in
            var ids: [String] = []
            var next = try String.fetchOne(db, sql: "SELECT db FROM documents ORDER BY db LIMIT 1")
            while let id = next {
                ids.append(id)
                next = try String.fetchOne(db, sql: "SELECT db FROM documents WHERE db > ? ORDER BY db LIMIT 1", arguments: [id])
            }
            return ids
        }
    }

    public func indexDefinitions() async throws -> [IndexDefinition] {
        try await writer.read { db in try SQLiteAccess(db: db).indexDefinitions() }
    }

    public func lastCommitTime() async throws -> Timestamp? {
        try await writer.read { db in try SQLiteAccess(db: db).lastCommitTime() }
    }

    public func commit<T: Sendable>(
        _ request: DocumentCommitRequest, plan: @escaping @Sendable ([Document?], Timestamp) throws -> ([DocumentMutation], T)
    ) async throws -> T {
        try await write { db in
            let access = SQLiteAccess(db: db)
            guard self.indexVersion.withLock({ $0 }) == request.indexVersion else { throw DocumentStoreConflict.indexes }
            for e in request.expectations where try access.updateTime(e.database, e.path) != e.updateTime {
                throw DocumentStoreConflict.document(database: e.database, path: e.path)
            }
            let current = try request.writing.map { try access.document(request.database, $0) }
            // The engine's clock is the only one: the proposed time is the commit time.
            let (mutations, result) = try plan(current, request.time)
            for m in mutations { try access.apply(m, request.database, time: request.time) }
            try access.raiseLastCommitTime(request.time)
            return result
        }
    }

    public func createIndex(
        _ proposed: IndexDefinition, entries: @escaping @Sendable (Document, IndexDefinition) -> [IndexEntry]
    ) async throws -> IndexDefinition? {
        try await write { db in
            let access = SQLiteAccess(db: db)
            let existing = try access.indexDefinitions()
            if existing.contains(where: {
                $0.database == proposed.database && $0.collectionGroup == proposed.collectionGroup && $0.groupScope == proposed.groupScope
                    && $0.fields == proposed.fields
            }) {
                return nil
            }
            var def = proposed
            def.id = UInt32(try access.highestIndexID() + 1)
            try access.saveIndexDefinition(def)
            var batch: [IndexEntry] = []
            try access.scanDocuments(def.database, .group(def.collectionGroup), .all, reverse: false) { doc in
                batch += entries(doc, def)
                if batch.count >= 1000 {
                    try access.insertEntries(def.database, batch)
                    batch.removeAll(keepingCapacity: true)
                }
                return true
            }
            try access.insertEntries(def.database, batch)
            self.indexVersion.withLock { $0 = Int(def.id) }
            return def
        }
    }

    public func clear(_ database: String, time: Timestamp) async throws {
        try await write { db in
            let access = SQLiteAccess(db: db)
            try access.clearDatabase(database)
            try access.raiseLastCommitTime(time)
        }
    }

    /// Runs `body` as one job of the group commit: inside a savepoint of the writer's current
    /// transaction; answered once that transaction is durable. `body` is synchronous and does
    /// no I/O but SQLite's.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = WriteJob(run: { db in
                do {
                    var value: T?
                    try db.inSavepoint {
                        value = try body(db)
                        return .commit
                    }
                    let result = value!
                    return { error in
                        if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: result) }
                    }
                } catch {
                    return { _ in continuation.resume(throwing: error) }
                }
            }, fail: { continuation.resume(throwing: $0) })
            let start = pending.withLock { state -> Bool in
                state.jobs.append(job)
                if state.draining { return false }
                state.draining = true
                return true
            }
            if start { queue.async { self.drain() } }
        }
    }

    /// The writer loop: takes every waiting job, commits them together, answers them.
    private func drain() {
        while true {
            let (jobs, commits) = pending.withLock { state -> ([WriteJob], Int) in
                let jobs = state.jobs
                state.jobs = []
                if jobs.isEmpty { state.draining = false }
                state.commits += 1
                return (jobs, state.commits)
            }
            if jobs.isEmpty { return }
            var finishers: [@Sendable ((any Error)?) -> Void] = []
            finishers.reserveCapacity(jobs.count)
            let retention = historyRetentionMicros
            do {
                try writer.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        for job in jobs { finishers.append(job.run(db)) }
                        if commits % 1000 == 0 {
                            let cutoff = Int64(Date().timeIntervalSince1970 * 1_000_000) - retention
                            try db.execute(sql: "DELETE FROM history WHERE until_us < ?", arguments: [cutoff])
                        }
                        return .commit
                    }
                }
                for f in finishers { f(nil) }
            } catch {
                // Rolled back: an index a job added is gone again.
                if let stored = try? writer.read({ db in try SQLiteAccess(db: db).highestIndexID() }) {
                    indexVersion.withLock { $0 = stored }
                }
                for f in finishers { f(error) }
                for job in jobs.dropFirst(finishers.count) { job.fail(error) }
            }
        }
    }
}

/// Checkpoints the WAL from a connection of its own, every 50 ms, while the group-commit writer
/// goes on appending: a PASSIVE checkpoint copies the frames committed so far without blocking
/// writers or readers. SQLite's own auto-checkpoint, which runs inside the writer and stalls
/// every waiting commit, then finds most frames already copied.
final class WALCheckpointer: Sendable {
    private let connection: DatabaseQueue
    private nonisolated(unsafe) let timer: any DispatchSourceTimer  // set up once, then only cancelled

    init(path: String, interval: DispatchTimeInterval = .milliseconds(50)) throws {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        config.label = "hearth.sqlite.checkpointer"
        connection = try DatabaseQueue(path: path, configuration: config)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "hearth.sqlite.checkpoint", qos: .utility))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        // `hearth_sqlite_checkpoint_duration_seconds` and `hearth_sqlite_wal_bytes` by database file.
        let dimensions = [("database", URL(fileURLWithPath: path).lastPathComponent)]
        let duration = CoreMetrics.Timer(label: "hearth_sqlite_checkpoint_duration_seconds", dimensions: dimensions)
        let walBytes = Gauge(label: "hearth_sqlite_wal_bytes", dimensions: dimensions)
        let wal = path + "-wal"
        timer.setEventHandler { [connection] in
            // Busy (another checkpoint running) or failed: the next tick, or the writer's own, does it.
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try? connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            duration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
            var info = stat()
            if stat(wal, &info) == 0 { walBytes.record(Int64(info.st_size)) }
        }
        timer.resume()
    }

    deinit { timer.cancel() }
}
