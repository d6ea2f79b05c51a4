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

    mutating func removeAll(database: DatabaseName) {
        open = open.filter { $0.value.database != database }
    }

    mutating func expire(now: Int64, total: Int64, idle: Int64) {
        open = open.filter { now - $0.value.started < total && now - $0.value.lastUsed < idle }
    }
}

extension DocumentEngine {
    static let invalidTransaction = "The referenced transaction has expired or is no longer valid."

    /// Starts a transaction. Read-only transactions read one snapshot (at `readTime`, or now).
    public func beginTransaction(_ database: DatabaseName, readOnly: Bool, readTime: Timestamp? = nil, retrying: TransactionID? = nil) throws(HearthError) -> TransactionID {
        if let readTime {
            guard readOnly else { throw .invalidArgument("read_time is only allowed in read-only transactions.") }
            try checkReadTime(readTime)
        }
        var raw = [UInt8](repeating: 0, count: 16)
        var rng = SystemRandomNumberGenerator()
        for i in raw.indices { raw[i] = UInt8.random(in: 0...255, using: &rng) }
        let id = TransactionID(bytes: raw)
        let now = clock.current().microseconds
        let state = TransactionState(
            database: database, readOnly: readOnly, readTime: readOnly ? (readTime ?? clock.current()) : nil, started: now, lastUsed: now)
        let cfg = configuration
        transactions.withLock { table in
            table.expire(now: now, total: cfg.transactionTimeout, idle: cfg.transactionIdleTimeout)
            if let retrying { table.open[retrying] = nil }
            table.open[id] = state
        }
        return id
    }

    public func rollback(_ database: DatabaseName, _ id: TransactionID) throws(HearthError) {
        let removed = transactions.withLock { table in table.open.removeValue(forKey: id) }
        guard let removed, removed.database == database else { throw .invalidArgument(Self.invalidTransaction) }
    }

    func transaction(_ id: TransactionID, database: DatabaseName) throws(HearthError) -> TransactionState {
        let now = clock.current().microseconds
        let cfg = configuration
        let state: TransactionState? = transactions.withLock { table in
            guard var s = table.open[id], s.database == database else { return nil }
            if now - s.started >= cfg.transactionTimeout || now - s.lastUsed >= cfg.transactionIdleTimeout {
                table.open[id] = nil
                return nil
            }
            s.lastUsed = now
            table.open[id] = s
            return s
        }
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

    /// Serializability check at commit: everything the transaction read is unchanged.
    func verify(_ check: TransactionCheck, _ database: DatabaseName, _ r: any DocumentWriter) throws {
        let db = database.database
        for (path, seen) in check.reads where try r.document(db, path)?.updateTime != seen {
            throw HearthError(.aborted, "Transaction aborted: the document \(path.text) was modified by another transaction after it was read; retry the transaction.")
        }
        for (q, seen) in check.queries {
            let now = try executeQuery(q, r, readTime: nil)
            let current = Dictionary(now.map { ($0.path, $0.updateTime) }, uniquingKeysWith: { a, _ in a })
            if current != seen {
                throw HearthError(.aborted, "Transaction aborted: the results of a query it ran changed before it committed; retry the transaction.")
            }
        }
    }
}
