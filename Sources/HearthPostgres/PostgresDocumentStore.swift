public import HearthCore
public import HearthDocuments
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Firestore's documents in PostgreSQL: HearthDocuments' ``DocumentStore`` with the tables and
/// semantics of `SQLiteDocumentStore` (migration 4 of ``PostgresSchema``).
///
/// - **Commits** are one transaction each: it checks the index version and every expectation,
///   reads the documents the commit writes, calls the pure plan, and stores documents, index
///   entries, history rows and the commit time. Its first statement takes advisory locks on the
///   documents it writes and expects, its databases and the index definitions (see "Locks"
///   below), so each of its later statements sees the last commit of all it reads, unchanged
///   until it commits: commits are serializable across every server on the database, and two
///   that share no document neither wait for nor refuse each other. A serialization failure
///   or deadlock rolls everything back and runs it again, the plan included. A conflict throws
///   ``DocumentStoreConflict`` exactly as SQLite does.
/// - **Reads** are one snapshot per operation (REPEATABLE READ READ ONLY, or one statement).
///   Scans read pages of rows (keyset pagination, ``pageSize`` rows at most) inside that one
///   snapshot, run the filter row by row and stop once `limit` documents passed it, so a query's
///   cost follows its result size, not its collection's.
/// - **Commit times**: with ``sharedClock`` (several servers: `hearth serve --database-url`), from one
///   row, `firestore_clock` (migration 7), taken after a commit's locks and reads:
///   `GREATEST(last + 1, proposed)`, handed to the plan, held until COMMIT — so commit times are
///   unique, strictly increasing and in visibility order across every server (docs/postgres.md,
///   "Several replicas"). Without it, the engine's proposed time. Either way each commit also
///   inserts its time into `firestore_commit_times`; the last commit time is the highest of both.
/// - **The commit log** (with ``sharedClock``): each commit, `clear` and added index also writes a
///   row of `firestore_commit_log` (migration 8) and notifies ``commitChannel`` in its
///   transaction; every server's ``PostgresCommitFeed`` feeds its engine's change feed from it.
/// - **Composite index definitions** are read inside each commit's transaction, so a commit
///   planned before another server added an index is refused (``DocumentStoreConflict/indexes``),
///   and ``createIndex(_:entries:)`` back-fills in the transaction that adds the definition.
public final class PostgresDocumentStore: DocumentStore {
    let backend: PostgresBackend
    let historyRetentionMicros: Int64
    /// Whether commits take their times from the database's one clock (`firestore_clock`), for
    /// several servers on one database; off: the engine's proposed time is the commit time, as
    /// with SQLite (the default, for one engine alone). On, commits are also logged for the
    /// servers' ``PostgresCommitFeed``s, and the engine must be `replicated` (its change feed fed
    /// from the log): its in-process feed could hand two of its own concurrent commits to
    /// listeners out of commit-time order (docs/postgres.md, "Several replicas").
    let sharedClock: Bool
    /// Commits of this process, to prune old history rows every ``pruneInterval`` commits.
    let commits = Atomic<Int>(0)
    /// Writers of one document in this process queue here before they lease a connection.
    let localLocks = LocalLocks()

    /// The most rows a scan reads with one statement.
    static let pageSize = 256
    static let pruneInterval = 1000

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    /// History rows (reads at a past time) are kept `historyRetentionMicros` (one hour), as SQLite does.
    public init(backend: PostgresBackend, historyRetentionMicros: Int64 = 3_600_000_000, sharedClock: Bool = false) {
        self.backend = backend
        self.historyRetentionMicros = historyRetentionMicros
        self.sharedClock = sharedClock
    }

    // MARK: Encoding (the SQLite store's: `ValueCodec` bytes, microsecond times, `IndexKey` name keys)

    static func bytes(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    /// How many of an index entry key's first bytes its indexed column `ikey` holds (migration 4
    /// and the removal in ``apply(_:_:_:time:)`` say 1024 too).
    static let indexedKeyLength = 1024

    /// `key`'s first ``indexedKeyLength`` bytes: its `ikey`. Truncation keeps order loosely
    /// (`a <= b` gives `ikey(a) <= ikey(b)`), so a condition on the key also bounds `ikey`.
    static func indexedKey(_ key: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: key.prefix(indexedKeyLength)) }

    /// How many characters of a parent collection's (or a history row's) path its indexed column
    /// `iparent` (`ipath`) holds (migration 6 says 256 too): at most 1 KiB of UTF-8.
    static let indexedParentLength = 256

    /// A document row matching parent `p` and name key `k` (SQL expressions) exactly: every column
    /// of the primary key (migration 6), then the full values (`d` is the row's table alias).
    static func documentMatch(_ d: String, parent p: String, nameKey k: String) -> String {
        "\(d).parent_hash = decode(md5(\(p)), 'hex') AND \(d).iname = substring(\(k) FROM 1 FOR 1024) AND \(d).name_hash = sha256(\(k))"
            + " AND \(d).parent = \(p) AND \(d).name_key = \(k)"
    }

    /// A document path's key columns: its parent collection and its name key.
    static func key(_ path: ResourcePath) -> (parent: String, nameKey: ByteBuffer) {
        (path.parent.text, bytes(IndexKey.encodePath(path)))
    }

    static func decodeDocument(path: ResourcePath, data: ByteBuffer, create: Int64, update: Int64) throws -> Document {
        Document(
            path: path, fields: try ValueCodec.decode(Array(data.readableBytesView)),
            createTime: Timestamp(microseconds: create), updateTime: Timestamp(microseconds: update))
    }

    /// Rows of `path, data, create_us, update_us` as documents.
    static func documents(_ rows: [PostgresRow]) throws -> [Document] {
        try rows.map { row in
            let (path, data, create, update) = try row.decode((String, ByteBuffer, Int64, Int64).self)
            return try decodeDocument(path: ResourcePath(parsing: path), data: data, create: create, update: update)
        }
    }

    // MARK: Transactions

    /// Errors of the store's own making inside a transaction (a conflict, the plan's error),
    /// which must reach the caller unchanged: the backend maps anything else a transaction throws
    /// to a ``HearthError``. None of them is retryable, so the transaction ends with it.
    final class OwnError: Sendable {
        let error = Mutex<(any Error)?>(nil)

        func record(_ error: any Error) -> any Error {
            self.error.withLock { $0 = error }
            return error
        }

        func take() -> (any Error)? { error.withLock { $0 } }
    }

    /// Runs `body` as one write transaction under `locks` (``PostgresBackend/writeLocked(_:_:)``),
    /// the store's own errors passed through unchanged.
    func write<Result: Sendable>(
        locking locks: [PostgresBackend.AdvisoryLock], _ body: @escaping @Sendable (PostgresSession, OwnError) async throws -> Result
    ) async throws -> Result {
        let own = OwnError()
        do {
            return try await backend.writeLocked(locks) { session in try await body(session, own) }
        } catch {
            throw own.take() ?? error
        }
    }

    // MARK: Locks
    //
    // Every write of this store runs under advisory locks standing for what it reads, taken by
    // its first statement (``PostgresBackend/writeLocked(_:_:)``, READ COMMITTED): a commit locks
    // each document it writes (exclusive) and each it expects unchanged (shared), its databases
    // (shared) and the index definitions (shared); createIndex locks the index definitions and
    // its database, clear its database, exclusively. So whatever a write reads after its locks
    // is the last committed state and stays so until it commits, on every server: writes are
    // serializable, and two that share no document never wait for or refuse each other.

    /// The most documents a commit locks one by one: each lock is a slot of PostgreSQL's shared
    /// lock table (`max_locks_per_transaction` × connections). A larger commit locks its
    /// databases exclusively instead (it waits for, and holds off, every other write to them).
    static let maximumLockedDocuments = 32

    /// FNV-1a of `text`, as a lock key. A collision only makes two writers queue together.
    static func lockKey(_ text: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return Int64(bitPattern: hash)
    }

    static func documentLock(_ database: String, _ path: ResourcePath) -> Int64 {
        lockKey("firestore-document\u{0}\(database)\u{0}\(path.text)")
    }

    static func databaseLock(_ database: String) -> Int64 { lockKey("firestore-database\u{0}\(database)") }

    static let indexesLock = lockKey("firestore-index-definitions")

    /// The locks of a commit (see above).
    static func locks(_ request: DocumentCommitRequest) -> [PostgresBackend.AdvisoryLock] {
        typealias Lock = PostgresBackend.AdvisoryLock
        let databases = Set([request.database] + request.expectations.map(\.database))
        var locks = [Lock(key: indexesLock, exclusive: false)]
        let documents = Set(request.writing.map { documentLock(request.database, $0) } + request.expectations.map { documentLock($0.database, $0.path) })
        guard documents.count <= maximumLockedDocuments else {
            return locks + databases.map { Lock(key: databaseLock($0), exclusive: true) }
        }
        locks += databases.map { Lock(key: databaseLock($0), exclusive: false) }
        locks += request.expectations.map { Lock(key: documentLock($0.database, $0.path), exclusive: false) }
        locks += request.writing.map { Lock(key: documentLock(request.database, $0), exclusive: true) }
        return locks
    }

    // MARK: Metadata

    public func indexDefinitions() async throws -> [IndexDefinition] {
        try await backend.read { session in try await Self.indexDefinitions(session) }
    }

    static func indexDefinitions(_ session: PostgresSession) async throws -> [IndexDefinition] {
        let decoder = JSONDecoder()
        return try await session.rows("SELECT definition FROM firestore_index_definitions ORDER BY id").map {
            try decoder.decode(IndexDefinition.self, from: Data(try $0.decode(String.self).utf8))
        }
    }

    /// The highest composite index id (15 when there is none; composite ids start at 16).
    static func highestIndexID(_ session: PostgresSession) async throws -> Int {
        Int(try await session.value("SELECT coalesce(max(id), 15)::int8 FROM firestore_index_definitions", as: Int64.self) ?? 15)
    }

    public func lastCommitTime() async throws -> Timestamp? {
        try await backend.read { session in try await Self.lastCommitTime(session) }
    }

    static func lastCommitTime(_ session: PostgresSession) async throws -> Timestamp? {
        // The shared clock's row and the commits recorded without it (``sharedClock`` off).
        let last = try await session.value(
            "SELECT GREATEST((SELECT last_us FROM firestore_clock), (SELECT coalesce(max(time_us), 0) FROM firestore_commit_times))",
            as: Int64.self) ?? 0
        return last == 0 ? nil : Timestamp(microseconds: last)
    }

    /// The commit's time from the one clock of every server on the database (`firestore_clock`,
    /// migration 7): the least time above the last one taken that is at least `proposed`. Taken
    /// after the commit's locks and reads and held (the row lock) until it commits, so commit
    /// times are unique, strictly increasing and in the order commits become visible.
    static func takeCommitTime(_ session: PostgresSession, proposed: Timestamp) async throws -> Timestamp {
        let time = try await session.value(
            "UPDATE firestore_clock SET last_us = GREATEST(last_us + 1, \(proposed.microseconds)) RETURNING last_us", as: Int64.self)
        guard let time else { throw PostgresBackendError(.server(sqlState: "P0002"), endpoint: "", detail: "firestore_clock has no row") }
        return Timestamp(microseconds: time)
    }

    /// Records a commit time: the last commit time is the highest one recorded, so it only grows
    /// whatever order commits arrive in (they take their times before planning).
    static func recordCommitTime(_ session: PostgresSession, _ time: Timestamp) async throws {
        try await session.execute("INSERT INTO firestore_commit_times (time_us) VALUES (\(time.microseconds)) ON CONFLICT DO NOTHING")
    }

    // MARK: Commits

    public func commit<T: Sendable>(
        _ request: DocumentCommitRequest, plan: @escaping @Sendable ([Document?], Timestamp) throws -> ([DocumentMutation], T)
    ) async throws -> T {
        let locks = Self.locks(request)
        let local = Set(locks.filter(\.exclusive).map(\.key)).sorted()
        await localLocks.lock(local)
        defer { localLocks.unlock(local) }
        let result = try await write(locking: locks) { session, own in
            let read = try await Self.commitReads(session, request)
            guard read.indexVersion == request.indexVersion else { throw own.record(DocumentStoreConflict.indexes) }
            if let failed = read.failedExpectation { throw own.record(DocumentStoreConflict.document(database: failed.database, path: failed.path)) }
            let time = self.sharedClock ? try await Self.takeCommitTime(session, proposed: request.time) : request.time
            let planned: ([DocumentMutation], T)
            do { planned = try plan(read.current, time) } catch { throw own.record(error) }
            try await Self.apply(session, planned.0, request.database, time: time, logged: self.sharedClock, committing: true)
            return planned.1
        }
        await pruneNowAndThen()
        return result
    }

    /// What a commit reads before its plan, in one statement: the index version (the row
    /// numbered 0), the update time of each expectation's document (rows 1…, by position; NULL:
    /// missing) and the documents it writes (rows numbered -1).
    struct CommitReads {
        var indexVersion = 15
        var failedExpectation: DocumentExpectation?
        var current: [Document?] = []
    }

    static func commitReads(_ session: PostgresSession, _ request: DocumentCommitRequest) async throws -> CommitReads {
        let expectations = request.expectations
        let expected = expectations.map { key($0.path) }
        let writing = request.writing.map(key)
        let rows = try await session.rows(
            """
            SELECT 0::int8, (SELECT coalesce(max(id), 15)::int8 FROM firestore_index_definitions), NULL::text, NULL::bytea, NULL::int8
            UNION ALL
            SELECT r.n, d.update_us, NULL, NULL, NULL
            FROM unnest(\(expectations.map(\.database))::text[], \(expected.map(\.parent))::text[], \(expected.map(\.nameKey))::bytea[])
                WITH ORDINALITY AS r(db, parent, name_key, n)
            LEFT JOIN firestore_documents AS d ON d.db = r.db AND \(unescaped: documentMatch("d", parent: "r.parent", nameKey: "r.name_key"))
            UNION ALL
            SELECT -1, d.update_us, d.path, d.data, d.create_us
            FROM unnest(\(writing.map(\.parent))::text[], \(writing.map(\.nameKey))::bytea[]) AS w(parent, name_key)
            JOIN firestore_documents AS d ON d.db = \(request.database) AND \(unescaped: documentMatch("d", parent: "w.parent", nameKey: "w.name_key"))
            """)
        var reads = CommitReads()
        var updateTimes = [Int64?](repeating: nil, count: expectations.count)
        var byPath: [String: Document] = [:]
        for row in rows {
            let (n, time, path, data, create) = try row.decode((Int64, Int64?, String?, ByteBuffer?, Int64?).self)
            switch n {
            case 0: reads.indexVersion = Int(time ?? 15)
            case -1:
                if let path, let data, let create, let time {
                    byPath[path] = try decodeDocument(path: ResourcePath(parsing: path), data: data, create: create, update: time)
                }
            default: updateTimes[Int(n) - 1] = time
            }
        }
        reads.failedExpectation = zip(expectations, updateTimes).first { e, time in time.map(Timestamp.init(microseconds:)) != e.updateTime }?.0
        reads.current = request.writing.map { byPath[$0.text] }
        return reads
    }

    /// The documents at `paths` as they are in the caller's transaction, in order (nil: missing).
    static func currentDocuments(_ session: PostgresSession, _ database: String, _ paths: [ResourcePath]) async throws -> [Document?] {
        guard !paths.isEmpty else { return [] }
        let keys = paths.map(key)
        let rows = try await session.rows(
            """
            SELECT d.path, d.data, d.create_us, d.update_us
            FROM unnest(\(keys.map(\.parent))::text[], \(keys.map(\.nameKey))::bytea[]) AS w(parent, name_key)
            JOIN firestore_documents AS d ON d.db = \(database) AND \(unescaped: documentMatch("d", parent: "w.parent", nameKey: "w.name_key"))
            """)
        var byPath: [String: Document] = [:]
        for doc in try documents(rows) { byPath[doc.path.text] = doc }
        return paths.map { byPath[$0.text] }
    }

    /// Stores a commit's mutations at `time` in one statement whatever the commit's size: the
    /// index entries the new ones replace removed and the new ones added, the documents stored
    /// or removed, a history row each with the state it replaces (NULL data: it was missing;
    /// an existing row for the path and time is kept, as SQLite's `INSERT OR IGNORE`), and the
    /// commit time. The parts touch disjoint rows (an entry's key ends with its document's name).
    /// `logged` (the shared clock): also the commit's row in `firestore_commit_log` — the paths
    /// it changed — and its notification on ``commitChannel`` (see ``logCommit(_:_:time:paths:cleared:indexes:)``).
    /// `committing`: the statement is the transaction's last, its COMMIT pipelined behind it
    /// (``PostgresSession/executeThenCommit(_:)``).
    static func apply(
        _ session: PostgresSession, _ mutations: [DocumentMutation], _ database: String, time: Timestamp, logged: Bool = false,
        committing: Bool = false
    ) async throws {
        if Set(mutations.map(\.path)).count < mutations.count {
            // The engine sends one mutation per document; should one come twice, they apply in order.
            for m in mutations { try await apply(session, [m], database, time: time) }
            if logged { try await logCommit(session, database, time: time, paths: distinctPaths(mutations)) }
            return
        }
        var removed: [IndexEntry] = []
        var added: [IndexEntry] = []
        for m in mutations {
            let old = Set(m.oldEntries)
            let new = m.document == nil ? [] : Set(m.entries)
            removed += old.subtracting(new)
            added += new.subtracting(old)
        }
        added = lastOfEachKey(added)
        let puts = mutations.compactMap(\.document)
        let putKeys = puts.map { key($0.path) }
        let gone = mutations.filter { $0.document == nil }.map { key($0.path) }
        let previous = mutations.map(\.previous)
        let statement: PostgresQuery =
            """
            WITH removed AS (
                DELETE FROM firestore_index_entries WHERE db = \(database) AND (scope_hash, ikey, key_hash, scope, key) IN (
                    SELECT decode(md5(s), 'hex'), substring(k FROM 1 FOR 1024), sha256(k), s, k
                    FROM unnest(\(removed.map(\.scope))::text[], \(removed.map { bytes($0.key) })::bytea[]) AS t(s, k))),
            added AS (
                INSERT INTO firestore_index_entries (db, scope, key, doc)
                SELECT \(database), * FROM unnest(\(added.map(\.scope))::text[], \(added.map { bytes($0.key) })::bytea[], \(added.map(\.document))::text[])
                ON CONFLICT (db, scope_hash, ikey, key_hash) DO UPDATE SET doc = excluded.doc),
            put AS (
                INSERT INTO firestore_documents (db, parent, name_key, path, collection_id, data, create_us, update_us)
                SELECT \(database), * FROM unnest(
                    \(putKeys.map(\.parent))::text[], \(putKeys.map(\.nameKey))::bytea[], \(puts.map(\.path.text))::text[],
                    \(puts.map(\.path.collectionId))::text[], \(puts.map { bytes(ValueCodec.encode($0.fields)) })::bytea[],
                    \(puts.map(\.createTime.microseconds))::int8[], \(puts.map(\.updateTime.microseconds))::int8[])
                ON CONFLICT (db, parent_hash, iname, name_hash) DO UPDATE SET data = excluded.data, update_us = excluded.update_us),
            gone AS (
                DELETE FROM firestore_documents AS d USING unnest(\(gone.map(\.parent))::text[], \(gone.map(\.nameKey))::bytea[]) AS g(parent, name_key)
                WHERE d.db = \(database) AND \(unescaped: documentMatch("d", parent: "g.parent", nameKey: "g.name_key"))),
            history AS (
                INSERT INTO firestore_history (until_us, db, path, path_hash, data, create_us, update_us)
                SELECT \(time.microseconds), \(database), p, sha256(convert_to(p, 'UTF8')), CASE WHEN e THEN d END, CASE WHEN e THEN c END, CASE WHEN e THEN u END
                FROM unnest(
                    \(mutations.map(\.path.text))::text[], \(previous.map { $0 != nil })::bool[],
                    \(previous.map { bytes($0.map { ValueCodec.encode($0.fields) } ?? []) })::bytea[],
                    \(previous.map { $0?.createTime.microseconds ?? 0 })::int8[], \(previous.map { $0?.updateTime.microseconds ?? 0 })::int8[])
                    AS t(p, e, d, c, u)
                ON CONFLICT DO NOTHING),
            times AS (INSERT INTO firestore_commit_times (time_us) VALUES (\(time.microseconds)) ON CONFLICT DO NOTHING),
            logged AS (
                INSERT INTO firestore_commit_log (time_us, db, paths)
                SELECT \(time.microseconds), \(database), \(distinctPaths(mutations))::text[] WHERE \(logged))
            SELECT CASE WHEN \(logged) THEN pg_notify(\(commitChannel), \(database + ":" + String(time.microseconds))) END
            """
        if committing { try await session.executeThenCommit(statement) } else { try await session.execute(statement) }
    }

    /// The channel every commit on the shared clock notifies, with `database:time_us` (a wake-up:
    /// the log is the truth).
    package static let commitChannel = "hearth_commits"

    /// The documents a commit changed, each once, in the order first changed.
    static func distinctPaths(_ mutations: [DocumentMutation]) -> [String] {
        var seen = Set<String>()
        return mutations.map(\.path.text).filter { seen.insert($0).inserted }
    }

    /// A commit's row in `firestore_commit_log` (migration 8) and its notification, in the
    /// commit's transaction (PostgreSQL sends the notification only if it commits, in commit
    /// order): the documents it changed (`paths`), or that it emptied the database (`cleared`), or
    /// that it added a composite index (`indexes`: other servers reload their definitions).
    static func logCommit(
        _ session: PostgresSession, _ database: String, time: Timestamp, paths: [String], cleared: Bool = false, indexes: Bool = false
    ) async throws {
        try await session.execute(
            """
            WITH logged AS (
                INSERT INTO firestore_commit_log (time_us, db, paths, cleared, indexes)
                VALUES (\(time.microseconds), \(database), \(paths)::text[], \(cleared), \(indexes)))
            SELECT pg_notify(\(commitChannel), \(database + ":" + String(time.microseconds)))
            """)
    }

    /// One entry per scope and key, the last given (one statement may not touch a row twice;
    /// as with one INSERT OR REPLACE each).
    static func lastOfEachKey(_ entries: [IndexEntry]) -> [IndexEntry] {
        struct Key: Hashable {
            let scope: String
            let key: [UInt8]
        }
        var latest: [Key: Int] = [:]
        for (i, e) in entries.enumerated() { latest[Key(scope: e.scope, key: e.key)] = i }
        return latest.count == entries.count ? entries : latest.values.sorted().map { entries[$0] }
    }

    /// Adds entries, replacing any with the same scope and key (createIndex's back-fill).
    static func insertEntries(_ session: PostgresSession, _ database: String, _ entries: [IndexEntry]) async throws {
        guard !entries.isEmpty else { return }
        let kept = lastOfEachKey(entries)
        try await session.execute(
            """
            INSERT INTO firestore_index_entries (db, scope, key, doc)
            SELECT \(database), * FROM unnest(
                \(kept.map(\.scope))::text[], \(kept.map { bytes($0.key) })::bytea[], \(kept.map(\.document))::text[])
            ON CONFLICT (db, scope_hash, ikey, key_hash) DO UPDATE SET doc = excluded.doc
            """)
    }

    /// Every ``pruneInterval`` commits of this process, ``prune()``: apart from the commit, which
    /// has succeeded already, so a failure here is only logged.
    func pruneNowAndThen() async {
        let count = commits.add(1, ordering: .relaxed).newValue
        guard count % Self.pruneInterval == 0 else { return }
        do {
            try await prune()
        } catch {
            backend.logger.warning("pruning the document history failed", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes history rows older than the retention, and commit times below the highest.
    func prune() async throws {
        let cutoff = Int64(Date().timeIntervalSince1970 * 1_000_000) - historyRetentionMicros
        try await backend.writeCommitted { session in
            try await session.execute("DELETE FROM firestore_history WHERE until_us < \(cutoff)")
            try await session.execute("DELETE FROM firestore_commit_log WHERE time_us < \(cutoff)")
            try await session.execute("DELETE FROM firestore_commit_times WHERE time_us < (SELECT max(time_us) FROM firestore_commit_times)")
            // Last, so the clock row is held only until COMMIT: the change feeds' horizon.
            try await session.execute("UPDATE firestore_clock SET pruned_us = GREATEST(pruned_us, \(cutoff))")
        }
    }

    // MARK: Indexes and clearing

    public func createIndex(
        _ proposed: IndexDefinition, entries: @escaping @Sendable (Document, IndexDefinition) -> [IndexEntry]
    ) async throws -> IndexDefinition? {
        // The index definitions (commits wait) and the database (so clear waits too) exclusively.
        let locks: [PostgresBackend.AdvisoryLock] = [.init(key: Self.indexesLock, exclusive: true), .init(key: Self.databaseLock(proposed.database), exclusive: true)]
        return try await write(locking: locks) { session, _ in
            let existing = try await Self.indexDefinitions(session)
            if existing.contains(where: {
                $0.database == proposed.database && $0.collectionGroup == proposed.collectionGroup && $0.groupScope == proposed.groupScope
                    && $0.fields == proposed.fields
            }) {
                return nil
            }
            var def = proposed
            def.id = UInt32(try await Self.highestIndexID(session) + 1)
            let json = String(decoding: try JSONEncoder().encode(def), as: UTF8.self)
            try await session.execute("INSERT INTO firestore_index_definitions (id, definition) VALUES (\(Int64(def.id)), \(json))")
            // Back-fill from every document of the group, a page at a time, in this transaction:
            // a commit planned before it either commits first (and is read here) or is refused.
            var cursor = DocumentCursor(database: def.database, scope: .group(def.collectionGroup), range: .all, reverse: false)
            cursor.pageSize = 1000
            while let page = try await cursor.nextPage(session) {
                try await Self.insertEntries(session, def.database, page.flatMap { entries($0.document, def) })
            }
            if self.sharedClock {
                // Other servers reload their index definitions when their feed reads this row.
                let time = try await Self.takeCommitTime(session, proposed: Timestamp(microseconds: 0))
                try await Self.logCommit(session, def.database, time: time, paths: [], indexes: true)
            }
            return def
        }
    }

    public func clear(_ database: String, time: Timestamp) async throws {
        try await write(locking: [.init(key: Self.databaseLock(database), exclusive: true)]) { session, _ in
            try await session.execute("DELETE FROM firestore_documents WHERE db = \(database)")
            try await session.execute("DELETE FROM firestore_index_entries WHERE db = \(database)")
            try await session.execute("DELETE FROM firestore_history WHERE db = \(database)")
            guard self.sharedClock else {
                try await session.execute("UPDATE firestore_clock SET last_us = GREATEST(last_us, \(time.microseconds))")
                return
            }
            // A commit of its own on the shared clock, logged: every server's feed empties its listeners' views.
            let assigned = try await Self.takeCommitTime(session, proposed: time)
            try await Self.logCommit(session, database, time: assigned, paths: [], cleared: true)
        }
    }
}
