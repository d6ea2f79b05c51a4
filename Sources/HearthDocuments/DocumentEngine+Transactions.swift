public import HearthCore
import Foundation

/// An opaque transaction id (bytes on the wire).
public struct TransactionID: Sendable, Hashable {
    public var bytes: [UInt8]
    public init(bytes: [UInt8]) { self.bytes = bytes }
}

/// A transaction in progress: what it read (for validation at commit) and its limits.
struct TransactionState: Sendable {
    var database: DatabaseName
    var readOnly: Bool
    /// For read-only transactions: the snapshot every read uses.
    var readTime: Timestamp?
    /// For read-write transactions: who holds its document locks.
    var lock: LockOwnerID?
    /// The first attempt of the transactions this one retries (clients name either it or the
    /// latest attempt in `retry_transaction`).
    var retryRoot: TransactionID?
    var reads: [ResourcePath: Timestamp?] = [:]
    var queries: [(NormalizedQuery, [ResourcePath: Timestamp])] = []
    var started: Int64
    var lastUsed: Int64
}

struct TransactionCheck: Sendable {
    var reads: [ResourcePath: Timestamp?]
    var queries: [(NormalizedQuery, [ResourcePath: Timestamp])]
}

struct TransactionTable: Sendable {
    var open: [TransactionID: TransactionState] = [:]
    /// Read-write transactions that ended without committing, for `retry_transaction` (kept as
    /// long as an open transaction may live), oldest first.
    var retired: [TransactionID: (owner: LockOwnerID, ended: Int64, root: TransactionID?)] = [:]
    var retiredOrder: [TransactionID] = []
    var retiredHead = 0

    mutating func removeAll(database: DatabaseName) -> [TransactionState] {
        let gone = open.values.filter { $0.database == database }
        open = open.filter { $0.value.database != database }
        return gone
    }

    /// Removes transactions past their limits; returns them (their locks must be released).
    mutating func expire(now: Int64, total: Int64, idle: Int64) -> [TransactionState] {
        var gone: [TransactionState] = []
        for (id, state) in open where now - state.started >= total || now - state.lastUsed >= idle {
            open[id] = nil
            gone.append(state)
            retire(id, state, now: now)
        }
        while retiredHead < retiredOrder.count {
            let id = retiredOrder[retiredHead]
            if let entry = retired[id], now - entry.ended < total { break }
            retired[id] = nil
            retiredHead += 1
        }
        if retiredHead > 1024, retiredHead * 2 > retiredOrder.count {
            retiredOrder.removeFirst(retiredHead)
            retiredHead = 0
        }
        return gone
    }

    /// Keeps an ended transaction's lock owner for a retry, under its own id and under the id of
    /// the first attempt it retries.
    mutating func retire(_ id: TransactionID, _ state: TransactionState, now: Int64) {
        guard let owner = state.lock else { return }
        for key in [id] + (state.retryRoot.map { [$0] } ?? []) {
            retired[key] = (owner, now, state.retryRoot)
            retiredOrder.append(key)
        }
    }
}

extension DocumentEngine {
    static let invalidTransaction = "The referenced transaction has expired or is no longer valid."
    /// The random part of the ids Hearth hands out (after ``Configuration/transactionIDPrefix``);
    /// rollback accepts any id of this shape.
    static let transactionIDLength = 16

    /// Starts a transaction. Read-only transactions read one snapshot (at `readTime`, or now).
    /// A read-write transaction `retrying` an earlier one keeps that one's place in line.
    public func beginTransaction(_ database: DatabaseName, readOnly: Bool, readTime: Timestamp? = nil, retrying: TransactionID? = nil) throws(HearthError) -> TransactionID {
        if let readTime {
            guard readOnly else { throw .invalidArgument("read_time is only allowed in read-only transactions.") }
            try checkReadTime(readTime)
        }
        var raw = configuration.transactionIDPrefix
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<Self.transactionIDLength { raw.append(UInt8.random(in: 0...255, using: &rng)) }
        let id = TransactionID(bytes: raw)
        let now = clock.current().microseconds
        let cfg = configuration
        // The transaction retried: still open (the client did not roll it back) or ended.
        let (expired, previous, root) = transactions.withLock { table -> ([TransactionState], LockOwnerID?, TransactionID?) in
            let expired = table.expire(now: now, total: cfg.transactionTimeout, idle: cfg.transactionIdleTimeout)
            guard let retrying, !readOnly else { return (expired, nil, nil) }
            if let open = table.open[retrying], open.database == database {
                table.open[retrying] = nil
                return (expired, open.lock, open.retryRoot ?? retrying)
            }
            guard let entry = table.retired.removeValue(forKey: retrying) else { return (expired, nil, retrying) }
            return (expired, entry.owner, entry.root ?? retrying)
        }
        endLocks(expired)
        let lock = readOnly ? nil : locks.begin(retrying: previous)
        let state = TransactionState(
            database: database, readOnly: readOnly, readTime: readOnly ? (readTime ?? clock.current()) : nil, lock: lock, retryRoot: root,
            started: now, lastUsed: now)
        transactions.withLock { table in table.open[id] = state }
        return id
    }

    /// Ends a transaction without committing. Rolling back one that already ended (committed,
    /// aborted, expired, rolled back) is harmless, as in Firestore: clients roll back after a
    /// failed commit.
    public func rollback(_ database: DatabaseName, _ id: TransactionID) throws(HearthError) {
        guard id.bytes.count == configuration.transactionIDPrefix.count + Self.transactionIDLength else {
            throw .invalidArgument("Invalid transaction.")
        }
        let now = clock.current().microseconds
        let (removed, foreign) = transactions.withLock { table -> (TransactionState?, Bool) in
            guard let state = table.open[id] else { return (nil, false) }
            guard state.database == database else { return (nil, true) }
            table.open[id] = nil
            table.retire(id, state, now: now)
            return (state, false)
        }
        if foreign { throw .invalidArgument(Self.invalidTransaction) }
        if let lock = removed?.lock { locks.end(lock, committed: false) }
    }

    func endLocks(_ states: [TransactionState]) {
        for state in states { if let lock = state.lock { locks.end(lock, committed: false) } }
    }

    func transaction(_ id: TransactionID, database: DatabaseName) throws(HearthError) -> TransactionState {
        let now = clock.current().microseconds
        let cfg = configuration
        let (state, expired): (TransactionState?, TransactionState?) = transactions.withLock { table in
            guard var s = table.open[id], s.database == database else { return (nil, nil) }
            if now - s.started >= cfg.transactionTimeout || now - s.lastUsed >= cfg.transactionIdleTimeout {
                table.open[id] = nil
                table.retire(id, s, now: now)
                return (nil, s)
            }
            s.lastUsed = now
            table.open[id] = s
            return (s, nil)
        }
        if let expired { endLocks([expired]) }
        guard let state else { throw .invalidArgument(Self.invalidTransaction) }
        return state
    }

    /// Removes the transaction for its commit (a transaction commits at most once).
    func takeTransaction(_ id: TransactionID, database: DatabaseName) throws(HearthError) -> TransactionState {
        _ = try transaction(id, database: database)
        guard let state = transactions.withLock({ $0.open.removeValue(forKey: id) }) else {
            throw .invalidArgument(Self.invalidTransaction)
        }
        return state
    }

    /// Ends a transaction's locks after its commit; one that did not commit keeps its place in
    /// line for a retry.
    func finishCommit(_ id: TransactionID, _ state: TransactionState, committed: Bool) {
        guard let lock = state.lock else { return }
        if !committed {
            let now = clock.current().microseconds
            transactions.withLock { $0.retire(id, state, now: now) }
        }
        locks.end(lock, committed: committed)
    }

    /// Locks what a read-write transaction reads: documents it gets by name exclusively (before
    /// it reads them), documents a query returned shared.
    func lockReads(_ owner: LockOwnerID, _ database: DatabaseName, _ paths: [ResourcePath], mode: LockMode) async throws {
        let db = database.database
        try await locks.lockForRead(owner, paths.map { LockedDocument(db, $0) }, mode: mode)
    }

    func recordReads(_ id: TransactionID, _ reads: [(ResourcePath, Timestamp?)]) {
        transactions.withLock { table in
            for (p, t) in reads where table.open[id]?.reads[p] == nil {
                table.open[id]?.reads[p] = .some(t)
            }
        }
    }

    func recordQuery(_ id: TransactionID, _ query: NormalizedQuery, _ docs: [Document]) {
        transactions.withLock { table in
            table.open[id]?.queries.append((query, Dictionary(docs.map { ($0.path, $0.updateTime) }, uniquingKeysWith: { a, _ in a })))
            for d in docs where table.open[id]?.reads[d.path] == nil {
                table.open[id]?.reads[d.path] = .some(d.updateTime)
            }
        }
    }

    /// Serializability check at commit, part one: the queries the transaction ran still return
    /// what they returned (the documents it read are part two: expectations the store checks when
    /// it applies the commit). Under document locks this only fires for phantoms (documents that
    /// newly match a query it ran), and for a query result that kept changing between the scan
    /// and its locks.
    func verifyQueries(_ check: TransactionCheck, _ database: DatabaseName) async throws {
        guard !check.queries.isEmpty else { return }
        // Every query from one snapshot: their scans in one read, split again.
        let executions = check.queries.map { execution($0.0, readTime: nil) }
        let read = try await store.snapshot(DocumentSnapshotRead(database: database.database, scans: executions.flatMap(\.scans)))
        var next = 0
        for (execution, (_, seen)) in zip(executions, check.queries) {
            let now = execution.finish(Array(read.scans[next..<(next + execution.scans.count)])).documents
            next += execution.scans.count
            let current = Dictionary(now.map { ($0.path, $0.updateTime) }, uniquingKeysWith: { a, _ in a })
            if current != seen {
                throw HearthError(.aborted, "Transaction aborted: the results of a query it ran changed before it committed; retry the transaction.")
            }
        }
    }
}
