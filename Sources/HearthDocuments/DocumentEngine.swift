public import HearthCore
public import Logging
import Synchronization
import Foundation

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

        public init(strictIndexes: Bool = false) {
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
    let cache = DocumentCache()
    /// Every durable commit, in order: what realtime listeners are fed from.
    public let feed: ChangeFeed
    /// Routes the feed to Listen streams.
    public let listeners: ListenerHub

    public init(store: any DocumentStore, configuration: Configuration = .init(), logger: Logger = Logger(label: "hearth.documents")) async throws {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        let (last, defs) = try await store.read { r in (try r.lastCommitTime(), try r.indexDefinitions()) }
        clock = CommitClock(after: last)
        feed = ChangeFeed(position: last ?? Timestamp(microseconds: 0))
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
            docs = try await store.read { r in
                try paths.map { p in try readTime.map { try r.document(db, p, at: $0) } ?? r.document(db, p) }
            }
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
    public func commit(
        _ database: DatabaseName, _ writes: [Write], transaction: TransactionID? = nil, authorizer: (any WriteAuthorizer)? = nil
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

    /// The commit itself, its locks (if any) held: one closure in the store's group commit.
    func apply(
        _ database: DatabaseName, _ writes: [Write], check: TransactionCheck?, authorizer: (any WriteAuthorizer)?
    ) async throws -> CommitResult {
        let db = database.database
        let ticket = cache.beginWrite(db, writes.map(\.path))
        let reserved = ReservedTime()
        let result: CommitResult
        let changes: [DocumentChange]
        do {
            (result, changes) = try await store.write { [self] w in
                if let check { try self.verify(check, database, w) }
                let time = self.feed.reserve(self.clock)
                reserved.time.withLock { $0 = time }
                var before: [ResourcePath: Document?] = [:]
                var after: [ResourcePath: Document?] = [:]
                var plans: [PlannedWrite] = []
                plans.reserveCapacity(writes.count)
                for write in writes {
                    let current: Document? = try after[write.path] ?? w.document(db, write.path)
                    if before[write.path] == nil { before[write.path] = .some(current) }
                    let plan = try self.plan(write, database, time, current: current)
                    after[write.path] = .some(plan.after)
                    plans.append(plan)
                }
                if let authorizer {
                    let changes = plans.enumerated().map { i, p in DocumentChange(path: p.write.path, before: p.current, after: p.after, index: i) }
                    try authorizer.authorize(
                        changes, database: database, time: time, documents: CommitPeek(writer: w, database: db, before: before, after: after))
                }
                if let failed = plans.lazy.compactMap(\.preconditionFailure).first { throw failed }
                for plan in plans { try self.persist(plan, db, time, w) }
                try w.setLastCommitTime(time)
                return (
                    CommitResult(commitTime: time, writeResults: plans.map(\.result)),
                    Self.netChanges(writes.map(\.path), before: before, after: after)
                )
            }
        } catch {
            cache.abortWrite(ticket)
            if let time = reserved.time.withLock({ $0 }) { feed.abandon(time) }
            throw error
        }
        cache.committed(ticket, zip(writes, result.writeResults).map { ($0.path, $1.document) }, at: result.commitTime)
        feed.publish(CommittedChanges(database: db, commitTime: result.commitTime, changes: changes))
        return result
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

    func applyIndependently(
        _ database: DatabaseName, _ writes: [Write], authorizer: (any WriteAuthorizer)?
    ) async throws -> (outcomes: [BatchWriteOutcome], commitTime: Timestamp) {
        let db = database.database
        let ticket = cache.beginWrite(db, writes.map(\.path))
        let reserved = ReservedTime()
        let result: ([BatchWriteOutcome], Timestamp)
        let changes: [DocumentChange]
        do {
            (result, changes) = try await store.write { [self] w in
                let time = self.feed.reserve(self.clock)
                reserved.time.withLock { $0 = time }
                var outcomes: [BatchWriteOutcome] = []
                var order: [ResourcePath] = []
                var before: [ResourcePath: Document?] = [:]
                var after: [ResourcePath: Document?] = [:]
                for (i, write) in writes.enumerated() {
                    do {
                        try self.validate(write)
                        let current = try w.document(db, write.path)
                        let plan = try self.plan(write, database, time, current: current)
                        if let authorizer {
                            let peek = CommitPeek(writer: w, database: db, before: [write.path: current], after: [write.path: plan.after])
                            try authorizer.authorize(
                                [DocumentChange(path: write.path, before: current, after: plan.after, index: i)], database: database,
                                time: time, documents: peek)
                        }
                        if let failed = plan.preconditionFailure { throw failed }
                        try self.persist(plan, db, time, w)
                        outcomes.append(.success(plan.result))
                        order.append(write.path)
                        if before[write.path] == nil { before[write.path] = .some(current) }
                        after[write.path] = .some(plan.after)
                    } catch let e as HearthError {
                        outcomes.append(.failure(e))
                    }
                }
                try w.setLastCommitTime(time)
                return ((outcomes, time), Self.netChanges(order, before: before, after: after))
            }
        } catch {
            cache.abortWrite(ticket)
            if let time = reserved.time.withLock({ $0 }) { feed.abandon(time) }
            throw error
        }
        feed.publish(CommittedChanges(database: db, commitTime: result.1, changes: changes))
        var changed: [(ResourcePath, Document?)] = []
        for (write, outcome) in zip(writes, result.0) {
            if case .success(let r) = outcome { changed.append((write.path, r.document)) }
        }
        cache.committed(ticket, changed, at: result.1)
        return (result.0, result.1)
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
    struct PlannedWrite {
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

    /// Stores a planned write: the document, its index entries and the history it replaces.
    func persist(_ plan: PlannedWrite, _ db: String, _ time: Timestamp, _ w: any DocumentWriter) throws {
        guard plan.changes else { return }
        let defs = compositeIndexes(db)
        if let doc = plan.after {
            try w.put(db, doc, entries: IndexEntries.all(doc, defs), oldEntries: plan.current.map { IndexEntries.all($0, defs) } ?? [])
        } else if let current = plan.current {
            try w.delete(db, plan.write.path, oldEntries: IndexEntries.all(current, defs))
        }
        try w.recordHistory(db, plan.write.path, previous: plan.current, until: time)
    }

    /// Removes every document of a database (the emulator's clear endpoint).
    public func clear(_ database: DatabaseName) async throws {
        let db = database.database
        let ticket = cache.beginWrite(db, nil)
        let reserved = ReservedTime()
        let time: Timestamp
        do {
            time = try await store.write { [self] w in
                let time = self.feed.reserve(self.clock)
                reserved.time.withLock { $0 = time }
                try w.clearDatabase(db)
                try w.setLastCommitTime(time)
                return time
            }
        } catch {
            cache.abortWrite(ticket)
            if let time = reserved.time.withLock({ $0 }) { feed.abandon(time) }
            throw error
        }
        cache.cleared(ticket)
        feed.publish(CommittedChanges(database: db, commitTime: time, changes: [], cleared: true))
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
        guard let readTime else { return try await store.read { r in try r.collectionIds(db, parent: parent) } }
        // At a past time: the collections of the documents that existed then.
        let nq = try NormalizedQuery(Query(parent: parent, collectionId: "", allDescendants: true), database: database)
        let docs = try await store.read { [self] r in
            var skipped = 0
            return try self.executeAtReadTime(nq, r, readTime, skipped: &skipped)
        }
        var ids: [String] = []
        var seen = Set<[UInt8]>()
        for d in docs where d.path.segments.count > parent.segments.count {
            let id = d.path.segments[parent.segments.count]
            if seen.insert(Array(id.utf8)).inserted { ids.append(id) }
        }
        return ids.sorted { ValueOrdering.compareUTF8($0, $1) < 0 }
    }
}
