public import HearthCore
public import Logging
import Synchronization
import Foundation
import CoreMetrics

/// How a read chooses its snapshot.
public enum ReadConsistency: Sendable, Equatable {
    case latest
    case transaction(TransactionID)
    case readTime(Timestamp)
}

/// The document engine: the single write path (validate, preconditions, transforms, commit)
/// and every read, over any ``DocumentStore``. Knows nothing of HTTP or gRPC.
public final class DocumentEngine: Sendable {
    public struct Configuration: Sendable {
        /// Fail queries that need a composite index that was not declared (Firestore's behaviour).
        public var strictIndexes: Bool
        /// How long old document versions are kept for reads at a past time.
        public var historyRetention: Int64
        public var transactionTimeout: Int64
        public var transactionIdleTimeout: Int64
        /// The longest a read, commit or write waits for a document lock before it is ABORTED
        /// ("Transaction lock timeout.").
        public var lockWaitLimit: Duration
        /// How long a read-write transaction may hold a document lock that others wait for
        /// before it is aborted.
        public var lockHoldLimit: Duration
        /// Several servers share the store (PostgreSQL with the shared clock): the change feed is
        /// fed externally from the store's commit log (a service of the backend, e.g.
        /// `PostgresCommitFeed`, calls ``ChangeFeed/deliver(_:)``; the engine publishes nothing
        /// itself), and there is no document cache (every point read goes to the store: another
        /// server's write would leave it stale). docs/postgres.md, "Several replicas".
        public var replicated: Bool
        /// The bytes every transaction id this engine hands out starts with (several replicas: the
        /// replica's id, so that another replica knows whose transaction a request names and hands
        /// it there; docs/postgres.md, "Transactions across replicas"). Empty for one server.
        public var transactionIDPrefix: [UInt8] = []

        public init(strictIndexes: Bool = false, replicated: Bool = false) {
            self.replicated = replicated
            self.strictIndexes = strictIndexes
            historyRetention = 3_600_000_000
            transactionTimeout = 270_000_000
            transactionIdleTimeout = 60_000_000
            lockWaitLimit = .seconds(20)
            lockHoldLimit = .seconds(10)
        }
    }

    public let store: any DocumentStore
    public let configuration: Configuration
    public let clock: CommitClock
    let logger: Logger
    let indexes: Mutex<[String: [IndexDefinition]]>
    let transactions: Mutex<TransactionTable>
    /// Per-document locks of read-write transactions and the writes that wait for them.
    let locks: DocumentLocks
    let cache: DocumentCache
    /// Every durable commit, in order: what realtime listeners are fed from.
    public let feed: ChangeFeed
    /// Routes the feed to Listen streams.
    public let listeners: ListenerHub

    public init(store: any DocumentStore, configuration: Configuration = .init(), logger: Logger = Logger(label: "hearth.documents")) async throws {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        let last = try await store.lastCommitTime()
        let defs = try await store.indexDefinitions()
        clock = CommitClock(after: last)
        feed = ChangeFeed(position: last ?? Timestamp(microseconds: 0), external: configuration.replicated)
        cache = DocumentCache(capacity: configuration.replicated ? 0 : DocumentCache.defaultCapacity)
        listeners = ListenerHub(position: last ?? Timestamp(microseconds: 0))
        feed.subscribe(listeners)
        indexes = Mutex(Dictionary(grouping: defs, by: \.database))
        transactions = Mutex(TransactionTable())
        locks = DocumentLocks(
            limits: .init(
                waitLimit: configuration.lockWaitLimit, holdLimit: configuration.lockHoldLimit,
                retryRetention: .microseconds(configuration.transactionTimeout)))
    }

    func compositeIndexes(_ database: String) -> [IndexDefinition] {
        indexes.withLock { $0[database] ?? [] }
    }

    // MARK: Reads

    /// One document (nil if missing) and the read time of the snapshot.
    public func get(
        _ database: DatabaseName, _ path: ResourcePath, mask: [FieldPath]? = nil, consistency: ReadConsistency = .latest
    ) async throws -> (Document?, Timestamp) {
        let results = try await batchGet(database, [path], mask: mask, consistency: consistency)
        return (results.documents[0], results.readTime)
    }

    public struct BatchGetResult: Sendable {
        public var documents: [Document?]
        public var readTime: Timestamp
    }

    public func batchGet(
        _ database: DatabaseName, _ paths: [ResourcePath], mask: [FieldPath]? = nil, consistency: ReadConsistency = .latest
    ) async throws -> BatchGetResult {
        for p in paths {
            try p.validate()
            guard p.isDocument else { throw HearthError.invalidArgument("\"\(p.text)\" is not a document path.") }
        }
        let (readTime, txn) = try snapshot(for: consistency, database: database)
        if let lock = txn?.lock { try await lockReads(lock, database, paths, mode: .exclusive) }
        let db = database.database
        let docs: [Document?]
        if readTime == nil, let cached = cachedDocuments(db, paths) {
            docs = cached
        } else {
            let epoch = cache.beginRead()
            docs = try await store.documents(db, paths, at: readTime)
            if readTime == nil { cache.fill(db, Array(zip(paths, docs)), epoch: epoch) }
        }
        if let txn { recordReads(txn.id, zip(paths, docs).map { ($0, $1?.updateTime) }) }
        return BatchGetResult(documents: docs.map { $0?.masked(mask) }, readTime: readTime ?? clock.current())
    }

    /// All of the documents from the cache, or nil if any is not cached.
    func cachedDocuments(_ db: String, _ paths: [ResourcePath]) -> [Document?]? {
        var out: [Document?] = []
        out.reserveCapacity(paths.count)
        for p in paths {
            guard let hit = cache.lookup(db, p) else { return nil }
            out.append(hit)
        }
        return out
    }

    /// A read-write transaction a read belongs to: where to record the read, who locks it.
    struct ReadingTransaction {
        var id: TransactionID
        var lock: LockOwnerID?
    }

    /// The snapshot time to read at (nil = latest) and the read-write transaction to record reads in.
    func snapshot(for consistency: ReadConsistency, database: DatabaseName) throws(HearthError) -> (Timestamp?, ReadingTransaction?) {
        switch consistency {
        case .latest: return (nil, nil)
        case .readTime(let t):
            try checkReadTime(t)
            return (t, nil)
        case .transaction(let id):
            let txn = try transaction(id, database: database)
            if txn.readOnly { return (txn.readTime, nil) }
            return (nil, ReadingTransaction(id: id, lock: txn.lock))
        }
    }

    func checkReadTime(_ t: Timestamp) throws(HearthError) {
        guard t.isValid else { throw .invalidArgument("read_time is not a valid timestamp.") }
        let now = clock.current()
        if t.microseconds < now.microseconds - configuration.historyRetention {
            throw .failedPrecondition("read_time is older than the oldest allowed read time (1 hour).")
        }
        if t.microseconds > now.microseconds + 1_000_000 {
            throw .invalidArgument("read_time cannot be in the future.")
        }
    }

    // MARK: Writes

    /// Commits writes atomically (and, with a transaction, only if its reads still hold).
    /// `authorizer` (security rules) sees every planned change before anything is stored.
    /// Counted as `hearth_firestore_commits_total{outcome}` and timed as
    /// `hearth_firestore_commit_duration_seconds` (whatever transport asked).
    public func commit(
        _ database: DatabaseName, _ writes: [Write], transaction: TransactionID? = nil, authorizer: (any WriteAuthorizer)? = nil
    ) async throws -> CommitResult {
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            let result = try await commitUnmeasured(database, writes, transaction: transaction, authorizer: authorizer)
            Self.measureCommit(start, outcome: "committed")
            return result
        } catch {
            Self.measureCommit(start, outcome: "failed")
            throw error
        }
    }

    static func measureCommit(_ start: UInt64, outcome: String) {
        Counter(label: "hearth_firestore_commits_total", dimensions: [("outcome", outcome)]).increment()
        CoreMetrics.Timer(label: "hearth_firestore_commit_duration_seconds").recordNanoseconds(
            Int64(DispatchTime.now().uptimeNanoseconds - start))
    }

    private func commitUnmeasured(
        _ database: DatabaseName, _ writes: [Write], transaction: TransactionID?, authorizer: (any WriteAuthorizer)?
    ) async throws -> CommitResult {
        if writes.count > DocumentLimits.maxWritesPerCommit {
            throw HearthError.invalidArgument("A maximum of 500 entities can be modified in a commit.")
        }
        for w in writes { try validate(w) }
        let db = database.database
        let documents = writes.map { LockedDocument(db, $0.path) }
        guard let transaction else {
            // A non-transactional write waits for transactions holding its documents.
            if writes.isEmpty { return try await apply(database, writes, check: nil, authorizer: authorizer) }
            let owner = try await locks.lockForWrite(documents)
            do {
                let result = try await apply(database, writes, check: nil, authorizer: authorizer)
                locks.end(owner, committed: true)
                return result
            } catch {
                locks.end(owner, committed: false)
                throw error
            }
        }
        let txn = try takeTransaction(transaction, database: database)
        if txn.readOnly && !writes.isEmpty {
            throw HearthError.invalidArgument("Cannot modify entities in a read-only transaction.")
        }
        let check = TransactionCheck(reads: txn.reads, queries: txn.queries)
        guard let lock = txn.lock else { return try await apply(database, writes, check: check, authorizer: authorizer) }
        do {
            // Exclusive locks on what it writes; once granted it waits for nothing and is never aborted.
            try await locks.lockForCommit(lock, documents)
            let result = try await apply(database, writes, check: check, authorizer: authorizer)
            finishCommit(transaction, txn, committed: true)
            return result
        } catch {
            finishCommit(transaction, txn, committed: false)
            throw error
        }
    }

    /// How often a commit is planned again when something it read changed before the store
    /// applied it (documents the rules read, composite indexes added meanwhile).
    static let maxPlanAttempts = 8

    static let contention = HearthError(.aborted, "Too much contention on these documents. Please try again.")

    /// The commit itself, its locks (if any) held: plan → judge → apply.
    ///
    /// Without an authorizer the plan is made inside the store's transaction from the documents
    /// it finds (one job of SQLite's group commit, as before). With one, the documents are read
    /// first, the writes planned and judged by the rules (which may read documents, holding no
    /// database lock), and the store applies the judged plan only if every document the plan and
    /// the rules read is unchanged; otherwise the commit is planned and judged again.
    func apply(
        _ database: DatabaseName, _ writes: [Write], check: TransactionCheck?, authorizer: (any WriteAuthorizer)?
    ) async throws -> CommitResult {
        let db = database.database
        let paths = Self.distinct(writes.map(\.path))
        if let check { try await verifyQueries(check, database) }
        let transactionReads = check.map { check in
            check.reads.map { DocumentExpectation(database: db, path: $0.key, updateTime: $0.value) }
        } ?? []
        var attempt = 0
        while true {
            attempt += 1
            // Judged commits read what they write before planning (from the cache where it can:
            // the documents are locked, and the store checks them again).
            var stored: [ResourcePath: Document?]?
            if authorizer != nil { stored = Dictionary(uniqueKeysWithValues: zip(paths, try await latestDocuments(db, paths))) }
            let ticket = cache.beginWrite(db, writes.map(\.path))
            let time = feed.reserve(clock)
            let (defs, indexVersion) = indexSnapshot(db)
            let outcome: (CommitResult, [DocumentChange])
            do {
                var expectations = transactionReads
                var judged: CommitPlan?
                if let authorizer, let stored {
                    let planned = try plan(writes, database, time, stored: stored)
                    let changes = planned.plans.enumerated().map { i, p in
                        DocumentChange(path: p.write.path, before: p.current, after: p.after, index: i)
                    }
                    let peek = CommitPeek(engine: self, database: db, before: planned.before, after: planned.after)
                    try await authorizer.authorize(changes, database: database, time: time, documents: peek)
                    if let failed = planned.plans.lazy.compactMap(\.preconditionFailure).first { throw failed }
                    expectations += peek.expectations
                    judged = planned
                }
                let request = DocumentCommitRequest(
                    database: db, time: time, writing: paths, expectations: expectations, indexVersion: indexVersion)
                outcome = try await store.commit(request) { [self, judged, stored] current, assigned in
                    let found = Dictionary(uniqueKeysWithValues: zip(paths, current))
                    let planned: CommitPlan
                    if let judged, let stored {
                        // The rules judged the plan at `time` (request.time, server timestamps) and
                        // these states; if the store assigned another time or a state changed since,
                        // plan and judge again.
                        guard assigned == time else { throw DocumentStoreConflict.commitTime(assigned: assigned) }
                        for path in paths where found[path]??.updateTime != stored[path]??.updateTime {
                            throw DocumentStoreConflict.document(database: db, path: path)
                        }
                        planned = judged
                    } else {
                        planned = try self.plan(writes, database, assigned, stored: found)
                        if let failed = planned.plans.lazy.compactMap(\.preconditionFailure).first { throw failed }
                    }
                    return (
                        planned.plans.compactMap { Self.mutation($0, defs) },
                        (
                            CommitResult(commitTime: assigned, writeResults: planned.plans.map(\.result)),
                            Self.netChanges(writes.map(\.path), before: planned.before, after: planned.after)
                        )
                    )
                }
            } catch let conflict as DocumentStoreConflict {
                cache.abortWrite(ticket)
                feed.abandon(time)
                if case .document(let conflicted, let path) = conflict, conflicted == db, let check, check.reads[path] != nil {
                    throw HearthError(
                        .aborted,
                        "Transaction aborted: the document \(path.text) was modified by another transaction after it was read; retry the transaction.")
                }
                if attempt >= Self.maxPlanAttempts { throw Self.contention }
                if conflict == .indexes { try await reloadIndexes() }
                // Another engine's commit took a later time meanwhile: propose after it.
                if case .commitTime(let assigned) = conflict { clock.observe(assigned) }
                continue
            } catch {
                cache.abortWrite(ticket)
                feed.abandon(time)
                throw error
            }
            let (result, changes) = outcome
            cache.committed(ticket, zip(writes, result.writeResults).map { ($0.path, $1.document) }, at: result.commitTime)
            feed.publish(CommittedChanges(database: db, commitTime: result.commitTime, changes: changes), reserved: time)
            return result
        }
    }

    /// The writes of a commit planned one after another (a later write to a document sees the
    /// earlier ones), from the stored state of every document they write.
    struct CommitPlan: Sendable {
        var plans: [PlannedWrite] = []
        var before: [ResourcePath: Document?] = [:]
        var after: [ResourcePath: Document?] = [:]
    }

    func plan(_ writes: [Write], _ database: DatabaseName, _ time: Timestamp, stored: [ResourcePath: Document?]) throws(HearthError) -> CommitPlan {
        var planned = CommitPlan()
        planned.plans.reserveCapacity(writes.count)
        for write in writes {
            let current: Document? = planned.after[write.path] ?? stored[write.path] ?? nil
            if planned.before[write.path] == nil { planned.before[write.path] = .some(current) }
            let plan = try plan(write, database, time, current: current)
            planned.after[write.path] = .some(plan.after)
            planned.plans.append(plan)
        }
        return planned
    }

    /// Each path once, in first-seen order.
    static func distinct(_ paths: [ResourcePath]) -> [ResourcePath] {
        var seen = Set<ResourcePath>()
        return paths.filter { seen.insert($0).inserted }
    }

    /// The latest stored state of documents (from the cache where it has them) — what the
    /// security rules' `get()`/`exists()` read around reads and writes.
    public func latestDocuments(_ database: String, _ paths: [ResourcePath]) async throws -> [Document?] {
        if let cached = cachedDocuments(database, paths) { return cached }
        let epoch = cache.beginRead()
        let docs = try await store.documents(database, paths, at: nil)
        cache.fill(database, Array(zip(paths, docs)), epoch: epoch)
        return docs
    }

    /// Applies writes independently (non-atomic): each succeeds or fails on its own, and
    /// `authorizer` judges each alone.
    public func batchWrite(
        _ database: DatabaseName, _ writes: [Write], authorizer: (any WriteAuthorizer)? = nil
    ) async throws -> (outcomes: [BatchWriteOutcome], commitTime: Timestamp) {
        if writes.count > DocumentLimits.maxWritesPerCommit {
            throw HearthError.invalidArgument("A maximum of 500 entities can be modified in a commit.")
        }
        let db = database.database
        let owner = try await locks.lockForWrite(writes.map { LockedDocument(db, $0.path) })
        do {
            let result = try await applyIndependently(database, writes, authorizer: authorizer)
            locks.end(owner, committed: true)
            return result
        } catch {
            locks.end(owner, committed: false)
            throw error
        }
    }

    /// A batch write planned (and, with rules, judged) write by write: what each did.
    struct BatchPlan: Sendable {
        var outcomes: [BatchWriteOutcome] = []
        var applied: [PlannedWrite] = []
        var before: [ResourcePath: Document?] = [:]
        var after: [ResourcePath: Document?] = [:]
        var expectations: [DocumentExpectation] = []

        mutating func record(_ plan: PlannedWrite) {
            outcomes.append(.success(plan.result))
            applied.append(plan)
            if before[plan.write.path] == nil { before[plan.write.path] = .some(plan.current) }
            after[plan.write.path] = .some(plan.after)
        }
    }

    /// Plans each write alone (a failing one is left out); with an authorizer, judges each alone.
    func planBatch(
        _ writes: [Write], _ database: DatabaseName, _ time: Timestamp, stored: [ResourcePath: Document?]
    ) throws(HearthError) -> BatchPlan {
        var batch = BatchPlan()
        for write in writes {
            do throws(HearthError) {
                try validate(write)
                let current: Document? = batch.after[write.path] ?? stored[write.path] ?? nil
                let plan = try plan(write, database, time, current: current)
                if let failed = plan.preconditionFailure { throw failed }
                batch.record(plan)
            } catch {
                batch.outcomes.append(.failure(error))
            }
        }
        return batch
    }

    func applyIndependently(
        _ database: DatabaseName, _ writes: [Write], authorizer: (any WriteAuthorizer)?
    ) async throws -> (outcomes: [BatchWriteOutcome], commitTime: Timestamp) {
        let db = database.database
        let paths = Self.distinct(writes.map(\.path))
        var attempt = 0
        while true {
            attempt += 1
            var stored: [ResourcePath: Document?]?
            if authorizer != nil { stored = Dictionary(uniqueKeysWithValues: zip(paths, try await latestDocuments(db, paths))) }
            let ticket = cache.beginWrite(db, writes.map(\.path))
            let time = feed.reserve(clock)
            let (defs, indexVersion) = indexSnapshot(db)
            let outcome: (BatchPlan, Timestamp)
            do {
                var judged: BatchPlan?
                if let authorizer, let stored {
                    var planned = BatchPlan()
                    for (i, write) in writes.enumerated() {
                        do throws(HearthError) {
                            try validate(write)
                            let current: Document? = planned.after[write.path] ?? stored[write.path] ?? nil
                            let plan = try plan(write, database, time, current: current)
                            let peek = CommitPeek(engine: self, database: db, before: [write.path: current], after: [write.path: plan.after])
                            try await authorizer.authorize(
                                [DocumentChange(path: write.path, before: current, after: plan.after, index: i)], database: database,
                                time: time, documents: peek)
                            if let failed = plan.preconditionFailure { throw failed }
                            planned.expectations += peek.expectations
                            planned.record(plan)
                        } catch {
                            planned.outcomes.append(.failure(error))
                        }
                    }
                    judged = planned
                }
                let request = DocumentCommitRequest(
                    database: db, time: time, writing: paths, expectations: judged?.expectations ?? [], indexVersion: indexVersion)
                outcome = try await store.commit(request) { [self, judged, stored] current, assigned in
                    let found = Dictionary(uniqueKeysWithValues: zip(paths, current))
                    let planned: BatchPlan
                    if let judged, let stored {
                        guard assigned == time else { throw DocumentStoreConflict.commitTime(assigned: assigned) }
                        for path in paths where found[path]??.updateTime != stored[path]??.updateTime {
                            throw DocumentStoreConflict.document(database: db, path: path)
                        }
                        planned = judged
                    } else {
                        planned = try self.planBatch(writes, database, assigned, stored: found)
                    }
                    return (planned.applied.compactMap { Self.mutation($0, defs) }, (planned, assigned))
                }
            } catch let conflict as DocumentStoreConflict {
                cache.abortWrite(ticket)
                feed.abandon(time)
                if attempt >= Self.maxPlanAttempts { throw Self.contention }
                if conflict == .indexes { try await reloadIndexes() }
                // Another engine's commit took a later time meanwhile: propose after it.
                if case .commitTime(let assigned) = conflict { clock.observe(assigned) }
                continue
            } catch {
                cache.abortWrite(ticket)
                feed.abandon(time)
                throw error
            }
            let (batch, committed) = outcome
            let order = batch.applied.map(\.write.path)
            feed.publish(
                CommittedChanges(database: db, commitTime: committed, changes: Self.netChanges(order, before: batch.before, after: batch.after)),
                reserved: time)
            cache.committed(ticket, batch.applied.map { ($0.write.path, $0.result.document) }, at: committed)
            return (batch.outcomes, committed)
        }
    }

    func validate(_ write: Write) throws(HearthError) {
        try write.path.validate()
        guard write.path.isDocument else {
            throw .invalidArgument("Document name \"\(write.path.text)\" has odd number of segments, expected a document path.")
        }
        if case .update(let fields, let mask) = write.kind {
            try DocumentLimits.validate(path: write.path, fields: fields)
            if let mask {
                for p in mask where p.isDocumentName { throw .invalidArgument("Update mask cannot contain __name__.") }
            }
        }
        var seen = Set<FieldPath>()
        for t in write.transforms {
            try Transforms.validate(t)
            if !seen.insert(t.field).inserted {
                throw .invalidArgument("Field transforms cannot contain the same field path twice (\(t.field.canonical)).")
            }
        }
        if case .update(_, let mask?) = write.kind {
            for t in write.transforms where mask.contains(where: { $0.isPrefix(of: t.field) || t.field.isPrefix(of: $0) }) {
                throw .invalidArgument("Cannot have both a field transform and an update on field \(t.field.canonical).")
            }
        }
    }

    /// What one write will do, worked out before anything is stored.
    struct PlannedWrite: Sendable {
        var write: Write
        var current: Document?
        var after: Document?
        var result: WriteResult
        /// The document changes (false for a no-op update and for deleting a missing document).
        var changes: Bool
        /// A failed precondition; thrown after the rules have judged the commit, so a caller
        /// the rules refuse learns nothing about whether the document exists.
        var preconditionFailure: HearthError?
    }

    /// One write inside a commit: precondition, the update, transforms, limits.
    func plan(_ write: Write, _ database: DatabaseName, _ time: Timestamp, current: Document?) throws(HearthError) -> PlannedWrite {
        let name = database.name(of: write.path)
        var failure: HearthError?
        switch write.precondition {
        case .exists(true)?:
            if current == nil { failure = HearthError(.notFound, "No document to update: \(name)") }
        case .exists(false)?:
            if current != nil { failure = HearthError(.alreadyExists, "Document already exists: \(name)") }
        case .updateTime(let t)? where t > time:
            failure = HearthError(.invalidArgument, "The update_time precondition (\(t.rfc3339)) is in the future.")
        case .updateTime(let t)?:
            if current?.updateTime != t {
                failure = HearthError(.failedPrecondition, "The document was updated after the given update time (\(name)).")
            }
        case nil: break
        }
        var fields: [String: Value]
        switch write.kind {
        case .delete:
            return PlannedWrite(
                write: write, current: current, after: nil, result: WriteResult(updateTime: nil, transformResults: []),
                changes: current != nil, preconditionFailure: failure)
        case .update(let newFields, nil):
            fields = newFields
        case .update(let newFields, let mask?):
            fields = current?.fields ?? [:]
            let source = Value.map(newFields)
            for p in mask {
                if let v = source.value(at: p) { FieldMask.set(&fields, p.segments[...], v) } else { FieldMask.remove(&fields, p.segments[...]) }
            }
        case .transform:
            fields = current?.fields ?? [:]
        }
        var transformResults: [Value] = []
        for t in write.transforms {
            let (value, result) = Transforms.apply(t.operation, to: Value.map(fields).value(at: t.field), commitTime: time)
            FieldMask.set(&fields, t.field.segments[...], value)
            transformResults.append(result)
        }
        try DocumentLimits.validate(path: write.path, fields: fields)
        if let current, Value.identical(current.fields, fields) {
            return PlannedWrite(
                write: write, current: current, after: current,
                result: WriteResult(updateTime: current.updateTime, transformResults: transformResults, document: current),
                changes: false, preconditionFailure: failure)
        }
        let doc = Document(path: write.path, fields: fields, createTime: current?.createTime ?? time, updateTime: time)
        return PlannedWrite(
            write: write, current: current, after: doc,
            result: WriteResult(updateTime: time, transformResults: transformResults, document: doc), changes: true,
            preconditionFailure: failure)
    }

    /// What the store must do for a planned write: the document, its index entries (replacing
    /// the old document's) and the history it replaces; nil when the write changes nothing.
    static func mutation(_ plan: PlannedWrite, _ defs: [IndexDefinition]) -> DocumentMutation? {
        guard plan.changes else { return nil }
        let oldEntries = plan.current.map { IndexEntries.all($0, defs) } ?? []
        return DocumentMutation(
            path: plan.write.path, document: plan.after, entries: plan.after.map { IndexEntries.all($0, defs) } ?? [],
            oldEntries: oldEntries, previous: plan.current)
    }

    /// The composite indexes of a database and the highest index id known (15: none yet).
    func indexSnapshot(_ db: String) -> ([IndexDefinition], Int) {
        indexes.withLock { all in
            var highest = 15  // composite ids start at 16
            for defs in all.values { for def in defs { highest = max(highest, Int(def.id)) } }
            return (all[db] ?? [], highest)
        }
    }

    /// Reads the composite index definitions again (another writer added one).
    package func reloadIndexes() async throws {
        let defs = try await store.indexDefinitions()
        indexes.withLock { $0 = Dictionary(grouping: defs, by: \.database) }
    }

    /// Removes every document of a database (the emulator's clear endpoint).
    public func clear(_ database: DatabaseName) async throws {
        let db = database.database
        let ticket = cache.beginWrite(db, nil)
        let time = feed.reserve(clock)
        do {
            try await store.clear(db, time: time)
        } catch {
            cache.abortWrite(ticket)
            feed.abandon(time)
            throw error
        }
        cache.cleared(ticket)
        feed.publish(CommittedChanges(database: db, commitTime: time, changes: [], cleared: true), reserved: time)
        endLocks(transactions.withLock { $0.removeAll(database: database) })
    }

    // MARK: Collections

    public func listCollectionIds(_ database: DatabaseName, parent: ResourcePath, consistency: ReadConsistency = .latest) async throws -> [String] {
        try parent.validate()
        guard parent.isRoot || parent.isDocument else {
            throw HearthError.invalidArgument("Parent \"\(parent.text)\" must be a document or the database root.")
        }
        let db = database.database
        let (readTime, _) = try snapshot(for: consistency, database: database)
        guard let readTime else { return try await store.collectionIds(db, parent: parent) }
        // At a past time: the collections of the documents that existed then.
        let nq = try NormalizedQuery(Query(parent: parent, collectionId: "", allDescendants: true), database: database)
        let docs = try await executeQuery(nq, readTime: readTime).documents
        var ids: [String] = []
        var seen = Set<[UInt8]>()
        for d in docs where d.path.segments.count > parent.segments.count {
            let id = d.path.segments[parent.segments.count]
            if seen.insert(Array(id.utf8)).inserted { ids.append(id) }
        }
        return ids.sorted { ValueOrdering.compareUTF8($0, $1) < 0 }
    }
}
