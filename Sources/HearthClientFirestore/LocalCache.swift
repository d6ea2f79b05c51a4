import Foundation
import GRDB
import HearthFirestoreProto
import SwiftProtobuf
import Synchronization

/// The client's cache in SQLite (GRDB), one file per app and database, or in memory
/// (`MemoryCacheSettings`): remote documents as the server last sent them with their version (a
/// missing document is kept as a row without bytes, with the version at which it was known
/// missing), listen targets with their resume tokens and read times and the
/// documents each last matched, and the queue of writes not yet acknowledged, per user.
///
/// Every change is one SQLite transaction; the queue is written before a write is applied locally,
/// so a write the app was told about survives the process being killed. A file that cannot be
/// opened or read as this schema (corrupted, or another program's) is deleted and rebuilt empty.
/// Damage deeper in the file is looked for after opening, off the app's path (`checkIntegrity()`,
/// SQLite's `quick_check`, 26 ms on a 10,000-document file): a damaged file is marked, and the
/// next launch rebuilds it before reading anything.
final class LocalCache: Sendable {
    typealias Document = Google_Firestore_V1_Document

    static let schemaVersion = 3
    let database: DatabaseQueue
    /// Where the file is (nil in memory).
    let fileURL: URL?
    /// Whether opening found a damaged file and started again.
    let rebuilt: Bool

    init(fileURL: URL?) throws {
        self.fileURL = fileURL
        guard let fileURL else {
            database = try DatabaseQueue()
            rebuilt = false
            try Self.migrate(database)
            return
        }
        try FileManager.default.createDirectory(at: fileURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        do {
            // An earlier launch's check found the file damaged: rebuild it now.
            if FileManager.default.fileExists(atPath: Self.damageMarker(fileURL).path) {
                throw LocalCacheError.damaged("marked damaged by an earlier integrity check")
            }
            let queue = try DatabaseQueue(path: fileURL.path, configuration: Self.configuration)
            try Self.migrate(queue)
            database = queue
            rebuilt = false
        } catch {
            // Damaged or foreign: the cache is a cache, so start again rather than fail the app.
            for suffix in ["", "-wal", "-shm", "-journal"] {
                try? FileManager.default.removeItem(atPath: fileURL.path + suffix)
            }
            try? FileManager.default.removeItem(at: Self.damageMarker(fileURL))
            let queue = try DatabaseQueue(path: fileURL.path, configuration: Self.configuration)
            try Self.migrate(queue)
            database = queue
            rebuilt = true
        }
    }

    /// WAL with `synchronous = NORMAL`: a committed transaction survives the process being killed
    /// (not necessarily a power cut), without an fsync per write.
    static var configuration: Configuration {
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        return config
    }

    /// The file next to the cache whose presence says "rebuild at the next open".
    static func damageMarker(_ fileURL: URL) -> URL {
        URL(fileURLWithPath: fileURL.path + ".damaged")
    }

    /// SQLite's `quick_check` over the whole file, on a connection of its own (WAL lets it read
    /// while the app's connection works). A damaged file is marked for a rebuild at the next open
    /// and false returned; the session goes on with what it can read (a read that hits the damage
    /// fails as a cache error, never a crash). True for a memory cache, or when the check could not
    /// run for another reason than damage (e.g. the file was removed).
    @discardableResult
    func checkIntegrity() -> Bool {
        guard let fileURL else { return true }
        var readOnly = Configuration()
        readOnly.readonly = true
        var verdict: String
        do {
            let checker = try DatabaseQueue(path: fileURL.path, configuration: readOnly)
            verdict = try checker.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check").joined(separator: "; ") }
            try checker.close()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            verdict = "\(error)"
        } catch {
            return true
        }
        guard verdict != "ok" else { return true }
        markDamaged(verdict)
        return false
    }

    /// Marks the file for a rebuild at the next open (reading it failed in a way only damage explains).
    func markDamaged(_ reason: String) {
        guard let fileURL else { return }
        _ = FileManager.default.createFile(atPath: Self.damageMarker(fileURL).path, contents: Data(reason.utf8))
    }

    static func migrate(_ queue: DatabaseQueue) throws {
        try queue.write { db in
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            if version == schemaVersion { return }
            if version == 1 {
                // Version 1 had no version columns: 0 means "read it from the document".
                try db.execute(sql: """
                    ALTER TABLE remote_documents ADD COLUMN version_seconds INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE remote_documents ADD COLUMN version_nanos INTEGER NOT NULL DEFAULT 0;
                    """)
            }
            if version == 1 || version == 2 {
                // Version 2 kept no last results: a target without one runs its query at the first snapshot.
                try db.execute(sql: """
                    ALTER TABLE targets ADD COLUMN result BLOB;
                    ALTER TABLE targets ADD COLUMN result_sequence INTEGER NOT NULL DEFAULT 0;
                    PRAGMA user_version = \(schemaVersion);
                    """)
                return
            }
            guard version == 0 else { throw LocalCacheError.damaged("schema version \(version)") }
            try db.execute(sql: """
                CREATE TABLE remote_documents (
                    path TEXT PRIMARY KEY NOT NULL,
                    collection_path TEXT NOT NULL,
                    collection_id TEXT NOT NULL,
                    document BLOB,
                    size INTEGER NOT NULL,
                    sequence INTEGER NOT NULL,
                    version_seconds INTEGER NOT NULL DEFAULT 0,
                    version_nanos INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX remote_documents_collection ON remote_documents(collection_path);
                CREATE INDEX remote_documents_group ON remote_documents(collection_id);
                CREATE INDEX remote_documents_sequence ON remote_documents(sequence);
                CREATE TABLE targets (
                    target_key TEXT PRIMARY KEY NOT NULL,
                    resume_token BLOB NOT NULL,
                    read_time BLOB,
                    sequence INTEGER NOT NULL,
                    result BLOB,
                    result_sequence INTEGER NOT NULL DEFAULT 0
                );
                CREATE TABLE target_documents (
                    target_key TEXT NOT NULL,
                    path TEXT NOT NULL,
                    PRIMARY KEY (target_key, path)
                );
                CREATE INDEX target_documents_path ON target_documents(path);
                CREATE TABLE mutations (
                    batch_id INTEGER PRIMARY KEY AUTOINCREMENT,
                    uid TEXT NOT NULL,
                    writes BLOB NOT NULL,
                    local_write_seconds INTEGER NOT NULL,
                    local_write_nanos INTEGER NOT NULL
                );
                PRAGMA user_version = \(schemaVersion);
                """)
        }
    }

    // MARK: Remote documents

    static func collectionPath(_ path: String) -> (path: String, id: String) {
        let segments = path.split(separator: "/")
        return (segments.dropLast().joined(separator: "/"), segments.count >= 2 ? String(segments[segments.count - 2]) : "")
    }

    /// Stores the server's version of documents (nil: known not to exist at `missingVersion`).
    /// A document's version is its `update_time`; news older than what the cache holds for a path
    /// is ignored (Watch can lag a write the server already acknowledged), so the cache never goes
    /// back in time. A version-less entry (no update time, no `missingVersion`) is always stored.
    /// Returns the paths stored.
    @discardableResult
    static func putRemote(
        _ db: GRDB.Database, _ documents: [(path: String, document: Document?)], sequence: Int64,
        missingVersion: Google_Protobuf_Timestamp? = nil
    ) throws -> [String] {
        var stored: [String] = []
        for (path, document) in documents {
            let version: Google_Protobuf_Timestamp? = if let document { document.hasUpdateTime ? document.updateTime : nil } else { missingVersion }
            if let version, let cached = try self.version(db, path), ValueOrder.compareTimestamps(cached, version) > 0 { continue }
            let bytes = try document.map { try $0.serializedBytes() as Data }
            let (collection, id) = collectionPath(path)
            try db.executeCached(
                sql: """
                    INSERT INTO remote_documents (path, collection_path, collection_id, document, size, sequence, version_seconds, version_nanos)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(path) DO UPDATE SET document = excluded.document, size = excluded.size, sequence = excluded.sequence,
                    version_seconds = excluded.version_seconds, version_nanos = excluded.version_nanos
                    """,
                arguments: [path, collection, id, bytes, (bytes?.count ?? 0) + path.utf8.count, sequence, version?.seconds ?? 0, Int64(version?.nanos ?? 0)])
            stored.append(path)
        }
        return stored
    }

    /// The version the cache holds for a path (nil: not cached, or cached without a version).
    static func version(_ db: GRDB.Database, _ path: String) throws -> Google_Protobuf_Timestamp? {
        guard let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT version_seconds, version_nanos, document IS NOT NULL AS present FROM remote_documents WHERE path = ?"),
            arguments: [path])
        else { return nil }
        var version = Google_Protobuf_Timestamp()
        version.seconds = row["version_seconds"]
        version.nanos = Int32(clamping: row["version_nanos"] as Int64)
        if version.seconds != 0 || version.nanos != 0 { return version }
        // A row from schema version 1: the document knows its version.
        guard row["present"] as Bool, case .some(.some(let document)) = try remote(db, path), document.hasUpdateTime else { return nil }
        return document.updateTime
    }

    /// Forgets documents, except those the cache holds at a version newer than `unlessNewerThan`
    /// (a write acknowledged after the point Watch speaks of).
    static func removeRemote(_ db: GRDB.Database, _ paths: [String], unlessNewerThan readTime: Google_Protobuf_Timestamp? = nil) throws {
        for path in paths {
            if let readTime, let cached = try version(db, path), ValueOrder.compareTimestamps(cached, readTime) > 0 { continue }
            try db.executeCached(sql: "DELETE FROM remote_documents WHERE path = ?", arguments: [path])
        }
    }

    /// A cached document: `.some(nil)` when known missing, nil when not cached.
    func remote(_ path: String) throws -> Document?? {
        try database.read { db in try Self.remote(db, path) }
    }

    static func remote(_ db: GRDB.Database, _ path: String) throws -> Document?? {
        guard let row = try Row.fetchOne(db, sql: "SELECT document FROM remote_documents WHERE path = ?", arguments: [path]) else { return nil }
        guard let bytes = row["document"] as Data? else { return .some(nil) }
        return .some(try Document(serializedBytes: bytes))
    }

    func remote(paths: [String]) throws -> [String: Document] {
        let rows = try database.read { db in
            var rows: [(path: String, bytes: Data)] = []
            rows.reserveCapacity(paths.count)
            let statement = try db.cachedStatement(sql: "SELECT document FROM remote_documents WHERE path = ?")
            for path in paths {
                if let bytes = try Data.fetchOne(statement, arguments: [path]) { rows.append((path, bytes)) }
            }
            return rows
        }
        return try Self.decode(rows)
    }

    /// Decodes cached documents' bytes; a large read is split across the cores (a cold start's
    /// first snapshot of a big target is mostly protobuf decoding).
    static func decode(_ rows: [(path: String, bytes: Data)]) throws -> [String: Document] {
        let parts = rows.count < 2_000 ? 1 : min(ProcessInfo.processInfo.activeProcessorCount, 8)
        if parts <= 1 {
            var out: [String: Document] = [:]
            out.reserveCapacity(rows.count)
            for row in rows { out[row.path] = try Document(serializedBytes: row.bytes) }
            return out
        }
        let decoded = Mutex<[[(String, Document)]]>([])
        let failure = Mutex<(any Error)?>(nil)
        let size = (rows.count + parts - 1) / parts
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            var chunk: [(String, Document)] = []
            chunk.reserveCapacity(size)
            do {
                for row in rows[min(rows.count, part * size)..<min(rows.count, (part + 1) * size)] {
                    chunk.append((row.path, try Document(serializedBytes: row.bytes)))
                }
            } catch {
                failure.withLock { $0 = error }
            }
            decoded.withLock { $0.append(chunk) }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        var out: [String: Document] = [:]
        out.reserveCapacity(rows.count)
        for chunk in decoded.withLock({ $0 }) { for (path, document) in chunk { out[path] = document } }
        return out
    }

    /// Every cached existing document of a collection (or, for a group, of every collection with the id).
    func remote(collectionPath: String?, collectionID: String) throws -> [String: Document] {
        let rows = try database.read { db in
            let cursor = if let collectionPath {
                try Row.fetchCursor(db, sql: "SELECT path, document FROM remote_documents WHERE collection_path = ? AND document IS NOT NULL", arguments: [collectionPath])
            } else {
                try Row.fetchCursor(db, sql: "SELECT path, document FROM remote_documents WHERE collection_id = ? AND document IS NOT NULL", arguments: [collectionID])
            }
            var rows: [(path: String, bytes: Data)] = []
            while let row = try cursor.next() {
                guard let bytes = row["document"] as Data? else { continue }
                rows.append((row["path"], bytes))
            }
            return rows
        }
        return try Self.decode(rows)
    }

    /// A cached existing document's row, undecoded.
    struct RemoteRow: Sendable {
        let path: String
        let bytes: Data
        /// nil when the row has no version (schema version 1).
        let version: Google_Protobuf_Timestamp?
        /// When it was last written or used.
        let sequence: Int64
    }

    /// Every cached existing document of a collection (or group), as bytes.
    func remoteRows(collectionPath: String?, collectionID: String) throws -> [RemoteRow] {
        try database.read { db in
            let columns = "SELECT path, document, version_seconds, version_nanos, sequence FROM remote_documents"
            let cursor = if let collectionPath {
                try Row.fetchCursor(db, sql: "\(columns) WHERE collection_path = ? AND document IS NOT NULL", arguments: [collectionPath])
            } else {
                try Row.fetchCursor(db, sql: "\(columns) WHERE collection_id = ? AND document IS NOT NULL", arguments: [collectionID])
            }
            var rows: [RemoteRow] = []
            while let row = try cursor.next() {
                guard let bytes = row[1] as Data? else { continue }
                let seconds: Int64 = row[2], nanos: Int64 = row[3]
                var version: Google_Protobuf_Timestamp?
                if seconds != 0 || nanos != 0 {
                    var v = Google_Protobuf_Timestamp()
                    v.seconds = seconds
                    v.nanos = Int32(clamping: nanos)
                    version = v
                }
                rows.append(RemoteRow(path: row[0], bytes: bytes, version: version, sequence: row[4]))
            }
            return rows
        }
    }

    // MARK: Targets

    /// What a query target last showed the app: its documents in order, each with the version it
    /// had (nil: it had pending writes, or no version), and the sequence number at that point
    /// (documents written later have a higher one). A new instance's first snapshot starts from it.
    struct StoredResult: Sendable, Equatable {
        var entries: [Entry]
        var sequence: Int64

        struct Entry: Sendable, Equatable {
            let path: String
            let version: Google_Protobuf_Timestamp?
        }

        /// Length-prefixed paths with their versions (seconds, nanos; -1 for none), little-endian.
        func encoded() -> Data {
            var out = Data()
            out.reserveCapacity(entries.count * 48)
            func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
            for entry in entries {
                let utf8 = Array(entry.path.utf8)
                append(UInt32(utf8.count))
                out.append(contentsOf: utf8)
                append(entry.version?.seconds ?? -1)
                append(entry.version?.nanos ?? -1)
            }
            return out
        }

        /// nil when the bytes are not such a list.
        init?(encoded data: Data, sequence: Int64) {
            var entries: [Entry] = []
            var index = data.startIndex
            func read<T: FixedWidthInteger>(_: T.Type) -> T? {
                let size = MemoryLayout<T>.size
                guard data.endIndex - index >= size else { return nil }
                var value = T.zero
                withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: data[index..<index + size]) }
                index += size
                return T(littleEndian: value)
            }
            while index < data.endIndex {
                guard let length = read(UInt32.self), data.endIndex - index >= Int(length) else { return nil }
                let path = String(decoding: data[index..<index + Int(length)], as: UTF8.self)
                index += Int(length)
                guard let seconds = read(Int64.self), let nanos = read(Int32.self) else { return nil }
                var version: Google_Protobuf_Timestamp?
                if seconds >= 0, nanos >= 0 {
                    var v = Google_Protobuf_Timestamp()
                    v.seconds = seconds
                    v.nanos = nanos
                    version = v
                }
                entries.append(Entry(path: path, version: version))
            }
            self.init(entries: entries, sequence: sequence)
        }

        init(entries: [Entry], sequence: Int64) {
            self.entries = entries
            self.sequence = sequence
        }
    }

    func storedResult(_ key: String) throws -> StoredResult? {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT result, result_sequence FROM targets WHERE target_key = ?", arguments: [key]),
                let bytes = row[0] as Data?
            else { return nil }
            return StoredResult(encoded: bytes, sequence: row[1])
        }
    }

    /// Records what a target showed (after `putTarget` in the same transaction).
    static func putResult(_ db: GRDB.Database, key: String, result: StoredResult) throws {
        try db.executeCached(
            sql: "UPDATE targets SET result = ?, result_sequence = ? WHERE target_key = ?", arguments: [result.encoded(), result.sequence, key])
    }

    struct TargetState: Sendable {
        var resumeToken: Data
        var readTime: Google_Protobuf_Timestamp?
        var paths: [String]
    }

    func target(_ key: String) throws -> TargetState? {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT resume_token, read_time FROM targets WHERE target_key = ?", arguments: [key]) else { return nil }
            let readTime = try (row["read_time"] as Data?).map { try Google_Protobuf_Timestamp(serializedBytes: $0) }
            let paths = try String.fetchAll(db, sql: "SELECT path FROM target_documents WHERE target_key = ?", arguments: [key])
            return TargetState(resumeToken: row["resume_token"], readTime: readTime, paths: paths)
        }
    }

    /// How many of a target's documents are cached as existing.
    func cachedCount(target key: String) throws -> Int {
        try database.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM remote_documents WHERE document IS NOT NULL
                    AND path IN (SELECT path FROM target_documents WHERE target_key = ?)
                    """, arguments: [key]) ?? 0
        }
    }

    /// Records a target; with `previousPaths` (what this session last wrote for it) only the
    /// difference in its documents is written.
    static func putTarget(_ db: GRDB.Database, key: String, state: TargetState, sequence: Int64, previousPaths: Set<String>? = nil) throws {
        let readTime = try state.readTime.map { try $0.serializedBytes() as Data }
        try db.executeCached(
            sql: """
                INSERT INTO targets (target_key, resume_token, read_time, sequence) VALUES (?, ?, ?, ?)
                ON CONFLICT(target_key) DO UPDATE SET resume_token = excluded.resume_token, read_time = excluded.read_time, sequence = excluded.sequence
                """,
            arguments: [key, state.resumeToken, readTime, sequence])
        var added = state.paths
        if let previousPaths {
            let now = Set(state.paths)
            added = state.paths.filter { !previousPaths.contains($0) }
            for path in previousPaths where !now.contains(path) {
                try db.executeCached(sql: "DELETE FROM target_documents WHERE target_key = ? AND path = ?", arguments: [key, path])
            }
        } else {
            try db.execute(sql: "DELETE FROM target_documents WHERE target_key = ?", arguments: [key])
        }
        for path in added {
            try db.executeCached(sql: "INSERT OR IGNORE INTO target_documents (target_key, path) VALUES (?, ?)", arguments: [key, path])
        }
    }

    /// Marks a target and its documents used now (for the LRU order); never lowers a sequence
    /// (it runs in the background, maybe after newer writes).
    func touchTarget(_ key: String, sequence: Int64) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE targets SET sequence = MAX(sequence, ?) WHERE target_key = ?", arguments: [sequence, key])
            try db.execute(
                sql: """
                    UPDATE remote_documents SET sequence = ? WHERE sequence < ?
                    AND path IN (SELECT path FROM target_documents WHERE target_key = ?)
                    """,
                arguments: [sequence, sequence, key])
        }
    }

    func highestSequence() throws -> Int64 {
        try database.read { db in
            let docs = try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM remote_documents") ?? 0
            let targets = try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM targets") ?? 0
            return max(docs, targets)
        }
    }

    // MARK: Mutation queue

    struct Batch: Sendable {
        let batchID: Int64
        let writes: [Google_Firestore_V1_Write]
        let localWriteTime: Google_Protobuf_Timestamp
    }

    /// Appends a batch durably and returns it with its id (ids only grow, so they are the queue order).
    func enqueue(uid: String, writes: [Google_Firestore_V1_Write], localWriteTime: Google_Protobuf_Timestamp) throws -> Batch {
        var container = Google_Firestore_V1_WriteRequest()
        container.writes = writes
        let bytes: Data = try container.serializedBytes()
        let id = try database.write { db -> Int64 in
            try db.execute(
                sql: "INSERT INTO mutations (uid, writes, local_write_seconds, local_write_nanos) VALUES (?, ?, ?, ?)",
                arguments: [uid, bytes, localWriteTime.seconds, Int64(localWriteTime.nanos)])
            return db.lastInsertedRowID
        }
        return Batch(batchID: id, writes: writes, localWriteTime: localWriteTime)
    }

    func batches(uid: String) throws -> [Batch] {
        try database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT batch_id, writes, local_write_seconds, local_write_nanos FROM mutations WHERE uid = ? ORDER BY batch_id",
                arguments: [uid]
            ).map { row in
                var time = Google_Protobuf_Timestamp()
                time.seconds = row["local_write_seconds"]
                time.nanos = Int32(clamping: row["local_write_nanos"] as Int64)
                let container = try Google_Firestore_V1_WriteRequest(serializedBytes: row["writes"] as Data)
                return Batch(batchID: row["batch_id"], writes: container.writes, localWriteTime: time)
            }
        }
    }

    static func removeBatch(_ db: GRDB.Database, _ batchID: Int64) throws {
        try db.executeCached(sql: "DELETE FROM mutations WHERE batch_id = ?", arguments: [batchID])
    }

    // MARK: Garbage collection

    /// Bytes of cached documents (what the size limit counts).
    func byteSize() throws -> Int64 {
        try database.read { db in try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM remote_documents") ?? 0 }
    }

    /// Least recently used first, removes documents in no active target and with no pending write
    /// until the cache holds at most `thresholdBytes`; inactive targets that lose a document go too
    /// (their resume token would no longer describe what is cached). Returns how many documents went.
    @discardableResult
    func collectGarbage(thresholdBytes: Int64, activeTargets: Set<String>, pinned: Set<String>) throws -> Int {
        try database.write { db in
            var size = try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM remote_documents") ?? 0
            guard size > thresholdBytes else { return 0 }
            var retained = pinned
            for key in activeTargets {
                retained.formUnion(try String.fetchAll(db, sql: "SELECT path FROM target_documents WHERE target_key = ?", arguments: [key]))
            }
            let rows = try Row.fetchAll(db, sql: "SELECT path, size FROM remote_documents ORDER BY sequence, path")
            var removed = 0
            var staleTargets = Set<String>()
            for row in rows where size > thresholdBytes {
                let path: String = row["path"]
                guard !retained.contains(path) else { continue }
                try db.execute(sql: "DELETE FROM remote_documents WHERE path = ?", arguments: [path])
                staleTargets.formUnion(try String.fetchAll(db, sql: "SELECT target_key FROM target_documents WHERE path = ?", arguments: [path]))
                size -= row["size"] as Int64
                removed += 1
            }
            for key in staleTargets.subtracting(activeTargets) {
                try db.execute(sql: "DELETE FROM targets WHERE target_key = ?", arguments: [key])
                try db.execute(sql: "DELETE FROM target_documents WHERE target_key = ?", arguments: [key])
            }
            return removed
        }
    }
}

enum LocalCacheError: Error {
    case damaged(String)
}

extension GRDB.Database {
    /// Runs one statement through the connection's statement cache: parsed once per connection,
    /// not once per call as `execute(sql:)` does (the listener path runs these per document).
    func executeCached(sql: String, arguments: StatementArguments) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
