import GRDB
public import HearthCore
import HearthDocuments
import Foundation
import GRDBSQLite

/// Loads many documents into a document store that holds none (`hearth import`), much faster
/// than commits of 500 through the engine, and with the same result: the same document rows,
/// the same index entries (``IndexEntries/all(_:_:)``, the engine's own code, with the store's
/// composite index definitions), a history row for each (it did not exist before the load),
/// and the last commit time raised to the load's single commit time.
///
/// The documents go into a new database file beside the store (`<path>.bulk-<random>`) with
/// no journal and no fsync (a failed load just deletes the file), index entries sorted in large
/// chunks before they are inserted (so the index B-tree is written nearly in order), through
/// prepared statements bound directly. ``load(chunk:_:)`` ends by making the file durable; ``install()``
/// renames it over the store's file, so the load is all or nothing. The store must not be open
/// anywhere (no server running on it).
public final class SQLiteDocumentBulkLoad {
    /// Why a load was refused or failed.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The store already holds documents (in the named database).
        case storeNotEmpty(database: String)
        /// The load names the same document twice.
        case duplicate(database: String, path: ResourcePath)
        /// A document the engine would refuse (path, size, depth or field names).
        case invalid(String)
        /// SQLite failed (disk full, I/O error).
        case storage(String)

        public var description: String {
            switch self {
            case .storeNotEmpty(let db): "the document store already holds documents (database \(db))"
            case .duplicate(let db, let path): "document \(path.text) appears twice (database \(db))"
            case .invalid(let m): m
            case .storage(let m): "writing the document store failed: \(m)"
            }
        }
    }

    /// The store's file.
    public let path: String
    /// The load's commit time: every document's create and update time.
    public let time: Timestamp
    let stagingPath: String
    let queue: DatabaseQueue
    /// Composite index definitions, by database.
    let composites: [String: [IndexDefinition]]
    var loaded = false
    var closed = false

    /// Opens a load into the store at `path` (created if missing), which must hold no
    /// documents (else ``Failure/storeNotEmpty(database:)``).
    public init(path: String) throws {
        self.path = path
        // What the store holds besides documents: composite index definitions and its metadata.
        let (definitions, meta, last) = try Self.readExisting(path)
        composites = Dictionary(grouping: definitions.map(\.definition), by: \.database)
        time = CommitClock(after: last).next()
        stagingPath = path + ".bulk-\(UInt32.random(in: .min ... .max))"
        var config = Configuration()
        config.prepareDatabase { db in
            // A new file only this load writes; a failure deletes it, so no journal and no fsync
            // until the end.
            try db.execute(sql: "PRAGMA journal_mode = OFF")
            try db.execute(sql: "PRAGMA synchronous = OFF")
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            // 256 MiB of page cache: the document and history B-trees grow at their ends, each
            // chunk of sorted index entries lands across the whole index.
            try db.execute(sql: "PRAGMA cache_size = -262144")
        }
        config.label = "hearth.sqlite.bulk-load"
        do {
            queue = try DatabaseQueue(path: stagingPath, configuration: config)
        } catch {
            throw Failure.storage("\(error)")
        }
        do {
            try SQLiteDocumentStore.migrator.migrate(queue)
            try queue.write { db in
                for def in definitions {
                    try db.execute(sql: "INSERT INTO index_definitions(id, definition) VALUES (?, ?)", arguments: [def.id, def.json])
                }
                for (key, value) in meta {
                    try db.execute(sql: "INSERT INTO meta(key, value) VALUES (?, ?)", arguments: [key, value])
                }
            }
        } catch {
            discard()
            throw Failure.storage("\(error)")
        }
    }

    deinit {
        if !closed { try? queue.close() }
    }

    /// The first database (in id order) of the store at `path` that holds a document, or nil
    /// (also when there is no store yet). Opens and closes its own connection.
    public static func firstDatabaseWithDocuments(path: String) throws -> String? {
        do {
            _ = try readExisting(path)
            return nil
        } catch Failure.storeNotEmpty(let database) {
            return database
        }
    }

    /// A composite index definition's row, copied as it is.
    struct StoredDefinition {
        var id: Int64
        var json: String
        var definition: IndexDefinition
    }

    /// Index definitions and metadata of the store at `path`, and its last commit time; throws
    /// ``Failure/storeNotEmpty(database:)`` if it holds a document.
    static func readExisting(_ path: String) throws -> ([StoredDefinition], [(String, DatabaseValue)], Timestamp?) {
        guard FileManager.default.fileExists(atPath: path) else { return ([], [], nil) }
        typealias Found = (definitions: [StoredDefinition], meta: [(String, DatabaseValue)], last: Timestamp?, nonEmpty: String?)
        do {
            let existing = try DatabaseQueue(path: path)
            defer { try? existing.close() }
            let found = try existing.read { db -> Found? in
                guard try db.tableExists("documents") else { return nil }
                let access = SQLiteAccess(db: db)
                let any = try String.fetchOne(db, sql: "SELECT db FROM documents ORDER BY db LIMIT 1")
                let meta = try Row.fetchAll(db, sql: "SELECT key, value FROM meta").map { ($0[0] as String, $0[1] as DatabaseValue) }
                let decoder = JSONDecoder()
                let definitions = try Row.fetchAll(db, sql: "SELECT id, definition FROM index_definitions ORDER BY id").map { row in
                    let json: String = row[1]
                    return StoredDefinition(
                        id: row[0], json: json, definition: try decoder.decode(IndexDefinition.self, from: Data(json.utf8)))
                }
                return (definitions, meta, try access.lastCommitTime(), any)
            }
            guard let found else { return ([], [], nil) }
            if let db = found.nonEmpty { throw Failure.storeNotEmpty(database: db) }
            return (found.definitions, found.meta, found.last)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.storage("\(error)")
        }
    }

    /// Adds documents: `body` calls the ``Writer``'s `add` for each. Everything is written in
    /// one transaction of the new file, which is then made durable (fsync); then ``install()``
    /// (or ``discard()``). Any error (`body`'s too) discards the file. Returns the count.
    ///
    /// Two threads share the work: the caller's runs `body` and prepares each document (checks,
    /// encoding, index entries), a writer thread inserts the prepared batches into SQLite.
    @discardableResult
    public func load(chunk: Int = 1_000_000, _ body: (Writer) throws -> Void) throws -> Int {
        precondition(!loaded && !closed, "one load per SQLiteDocumentBulkLoad")
        loaded = true
        let pipe = BatchPipe()
        let inserted = InsertResult()
        let (queue, time, stagingPath) = (self.queue, self.time, self.stagingPath)
        DispatchQueue(label: "hearth.sqlite.bulk-load.writer", qos: .userInitiated).async {
            inserted.finish(Result { try Self.insert(queue, pipe, time: time, chunk: chunk) })
        }
        do {
            let writer = Writer(pipe: pipe, time: time, composites: composites)
            do {
                try body(writer)
                try writer.send()
                pipe.close()
            } catch {
                pipe.fail(error)
            }
            let count = try inserted.wait()
            try queue.close()
            closed = true
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: stagingPath))
            defer { try? handle.close() }
            try handle.synchronize()
            return count
        } catch let failure as Failure {
            discard()
            throw failure
        } catch let e as HearthError {
            discard()
            throw Failure.invalid(e.message)
        } catch {
            discard()
            throw error
        }
    }

    /// The writer thread: inserts every batch the pipe delivers, in one transaction, then
    /// switches the file to WAL. Fails the pipe (so the caller stops) on an error.
    static func insert(_ queue: DatabaseQueue, _ pipe: BatchPipe, time: Timestamp, chunk: Int) throws -> Int {
        do {
            return try queue.writeWithoutTransaction { db in
                var count = 0
                try db.inTransaction(.exclusive) {
                    let inserter = try Inserter(db: db, time: time, chunk: chunk)
                    while let batch = try pipe.receive() { try inserter.insert(batch) }
                    try inserter.flushEntries()
                    try SQLiteAccess(db: db).raiseLastCommitTime(time)
                    count = inserter.count
                    return .commit
                }
                // The store's own journal mode, kept in the file's header.
                try db.execute(sql: "PRAGMA locking_mode = NORMAL")
                let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                guard mode == "wal" else { throw Failure.storage("the loaded file stayed in journal mode \(mode ?? "?")") }
                return count
            }
        } catch {
            pipe.fail(error)
            throw error
        }
    }

    /// A document ready to insert: its row's columns and its index entries.
    struct Prepared: Sendable {
        var database: String
        var parent: String
        var nameKey: [UInt8]
        var path: ResourcePath
        var text: String
        var collectionId: String
        var data: [UInt8]
        var entries: [IndexEntry]
    }

    /// Prepared batches from the caller's thread to the writer thread, at most `capacity`
    /// waiting; either side's failure stops the other.
    final class BatchPipe: @unchecked Sendable {
        // NSCondition guards every field below.
        private let condition = NSCondition()
        private var batches: [[Prepared]] = []
        private var closed = false
        private var failure: (any Error)?
        private let capacity = 8

        func send(_ batch: [Prepared]) throws {
            condition.lock()
            defer { condition.unlock() }
            while batches.count >= capacity && failure == nil { condition.wait() }
            if let failure { throw failure }
            batches.append(batch)
            condition.broadcast()
        }

        /// The next batch; nil once closed and drained; throws the caller's failure.
        func receive() throws -> [Prepared]? {
            condition.lock()
            defer { condition.unlock() }
            while batches.isEmpty && !closed && failure == nil { condition.wait() }
            if let failure { throw failure }
            guard !batches.isEmpty else { return nil }
            let batch = batches.removeFirst()
            condition.broadcast()
            return batch
        }

        func close() {
            condition.lock()
            closed = true
            condition.broadcast()
            condition.unlock()
        }

        func fail(_ error: any Error) {
            condition.lock()
            if failure == nil { failure = error }
            batches.removeAll()
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The writer thread's outcome, waited for by the caller.
    final class InsertResult: @unchecked Sendable {
        // The semaphore orders the write of `result` before its read.
        private var result: Result<Int, any Error>?
        private let done = DispatchSemaphore(value: 0)

        func finish(_ result: Result<Int, any Error>) {
            self.result = result
            done.signal()
        }

        func wait() throws -> Int {
            done.wait()
            return try result!.get()
        }
    }

    /// Adds documents inside ``SQLiteDocumentBulkLoad/load(chunk:_:)``.
    public final class Writer {
        let pipe: BatchPipe
        let time: Timestamp
        let composites: [String: [IndexDefinition]]
        var batch: [Prepared] = []
        /// Documents added so far.
        public private(set) var count = 0

        init(pipe: BatchPipe, time: Timestamp, composites: [String: [IndexDefinition]]) {
            self.pipe = pipe
            self.time = time
            self.composites = composites
            batch.reserveCapacity(1000)
        }

        /// Adds one document of `database`, validated as the engine validates a write.
        public func add(database: String, path: ResourcePath, fields: [String: Value]) throws {
            do {
                try path.validate()
                guard path.isDocument else {
                    throw HearthError.invalidArgument("Document name \"\(path.text)\" has odd number of segments, expected a document path.")
                }
                try DocumentLimits.validate(path: path, fields: fields)
            } catch let e as HearthError {
                throw Failure.invalid(e.message)
            }
            let doc = Document(path: path, fields: fields, createTime: time, updateTime: time)
            batch.append(Prepared(
                database: database, parent: path.parent.text, nameKey: IndexKey.encodePath(path), path: path, text: path.text,
                collectionId: path.collectionId, data: ValueCodec.encode(fields), entries: IndexEntries.all(doc, composites[database] ?? [])))
            count += 1
            if batch.count >= 1000 { try send() }
        }

        func send() throws {
            guard !batch.isEmpty else { return }
            try pipe.send(batch)
            batch.removeAll(keepingCapacity: true)
        }
    }

    /// The writer thread's statements and pending index entries.
    final class Inserter {
        let time: Timestamp
        let chunk: Int
        let document: Statement
        let entry: Statement
        let history: Statement
        var pending: [(database: String, entry: IndexEntry)] = []
        var count = 0

        init(db: Database, time: Timestamp, chunk: Int) throws {
            self.time = time
            self.chunk = chunk
            document = try db.makeStatement(sql: """
                INSERT INTO documents(db, parent, name_key, path, collection_id, data, create_us, update_us)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            entry = try db.makeStatement(sql: "INSERT OR REPLACE INTO index_entries(db, scope, key, doc) VALUES (?, ?, ?, ?)")
            history = try db.makeStatement(
                sql: "INSERT OR IGNORE INTO history(until_us, db, path, data, create_us, update_us) VALUES (?, ?, ?, NULL, NULL, NULL)")
            pending.reserveCapacity(chunk + 4096)
        }

        func insert(_ batch: [Prepared]) throws {
            let micros = time.microseconds
            for d in batch {
                let rc = SQLiteDocumentBulkLoad.run(document) { st in
                    SQLiteDocumentBulkLoad.bind(st, 1, d.database)
                    SQLiteDocumentBulkLoad.bind(st, 2, d.parent)
                    SQLiteDocumentBulkLoad.bind(st, 3, d.nameKey)
                    SQLiteDocumentBulkLoad.bind(st, 4, d.text)
                    SQLiteDocumentBulkLoad.bind(st, 5, d.collectionId)
                    SQLiteDocumentBulkLoad.bind(st, 6, d.data)
                    sqlite3_bind_int64(st, 7, micros)
                    sqlite3_bind_int64(st, 8, micros)
                }
                if rc == SQLITE_CONSTRAINT { throw Failure.duplicate(database: d.database, path: d.path) }
                try SQLiteDocumentBulkLoad.check(rc)
                try SQLiteDocumentBulkLoad.check(
                    SQLiteDocumentBulkLoad.run(history) { st in
                        sqlite3_bind_int64(st, 1, micros)
                        SQLiteDocumentBulkLoad.bind(st, 2, d.database)
                        SQLiteDocumentBulkLoad.bind(st, 3, d.text)
                    })
                for e in d.entries { pending.append((d.database, e)) }
                count += 1
            }
            if pending.count >= chunk { try flushEntries() }
        }

        /// Sorts the pending index entries by their primary key and inserts them: each chunk is
        /// written into the index in order.
        func flushEntries() throws {
            pending.sort { a, b in
                if a.database != b.database { return a.database.utf8.lexicographicallyPrecedes(b.database.utf8) }
                if a.entry.scope != b.entry.scope { return a.entry.scope.utf8.lexicographicallyPrecedes(b.entry.scope.utf8) }
                return SQLiteDocumentBulkLoad.compare(a.entry.key, b.entry.key) < 0
            }
            for (database, e) in pending {
                try SQLiteDocumentBulkLoad.check(
                    SQLiteDocumentBulkLoad.run(entry) { st in
                        SQLiteDocumentBulkLoad.bind(st, 1, database)
                        SQLiteDocumentBulkLoad.bind(st, 2, e.scope)
                        SQLiteDocumentBulkLoad.bind(st, 3, e.key)
                        SQLiteDocumentBulkLoad.bind(st, 4, e.document)
                    })
            }
            pending.removeAll(keepingCapacity: true)
        }
    }

    /// Replaces the store's file with the loaded one (checking again that the store still holds
    /// no documents), and makes the rename durable.
    public func install() throws {
        precondition(loaded && closed, "install() before load(_:)")
        let fm = FileManager.default
        do {
            // Checkpoints the store's WAL into its file and closes it: nothing of it may be
            // applied to the new file.
            if fm.fileExists(atPath: path) {
                _ = try Self.readExisting(path)
                let existing = try DatabaseQueue(path: path)
                try existing.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
                try existing.close()
            }
            for suffix in ["-wal", "-shm", "-journal"] where fm.fileExists(atPath: path + suffix) {
                try fm.removeItem(atPath: path + suffix)
            }
            guard rename(stagingPath, path) == 0 else { throw Failure.storage("cannot rename \(stagingPath): \(String(cString: strerror(errno)))") }
            let dir = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY)
            if dir >= 0 {
                _ = fsync(dir)
                _ = close(dir)
            }
        } catch let failure as Failure {
            discard()
            throw failure
        } catch {
            discard()
            throw Failure.storage("\(error)")
        }
    }

    /// Deletes the loaded file (the store is as it was).
    public func discard() {
        if !closed {
            try? queue.close()
            closed = true
        }
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: stagingPath + suffix) }
    }

    // MARK: SQLite's C API (raw, bound parameters only)

    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    static func bind(_ st: OpaquePointer, _ i: Int32, _ text: String) {
        var text = text
        text.withUTF8 { b in _ = sqlite3_bind_text(st, i, b.baseAddress, Int32(b.count), transient) }
    }

    static func bind(_ st: OpaquePointer, _ i: Int32, _ blob: [UInt8]) {
        blob.withUnsafeBytes { b in _ = sqlite3_bind_blob(st, i, b.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(b.count), transient) }
    }

    /// Binds, steps once and resets a statement; the step's result code.
    static func run(_ statement: Statement, _ bindings: (OpaquePointer) -> Void) -> Int32 {
        let st = statement.sqliteStatement
        bindings(st)
        let rc = sqlite3_step(st)
        sqlite3_reset(st)
        return rc & 0xff
    }

    static func check(_ rc: Int32) throws {
        guard rc == SQLITE_DONE else {
            throw Failure.storage(String(cString: sqlite3_errstr(rc)))
        }
    }

    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int32 {
        a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                let n = min(pa.count, pb.count)
                let c = n == 0 ? 0 : memcmp(pa.baseAddress!, pb.baseAddress!, n)
                if c != 0 { return c }
                return pa.count < pb.count ? -1 : (pa.count > pb.count ? 1 : 0)
            }
        }
    }
}
