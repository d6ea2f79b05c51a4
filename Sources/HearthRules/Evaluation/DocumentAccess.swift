public import HearthCore

/// How `get()`, `exists()`, `getAfter()` and `existsAfter()` read documents. The caller
/// implements it over its own storage; calls are synchronous and made at most once per
/// document per request (the ledger caches results).
public protocol RulesDocumentLookup {
    /// The document's fields, or nil when it does not exist. With `afterWrites`, the document
    /// as it would be if every write of the request (single write, batch or transaction)
    /// had been applied.
    func document(database: String, path: ResourcePath, afterWrites: Bool) throws -> [String: Value]?
}

/// Documents held in memory: the state before the request and, where the request writes,
/// after it. Useful in tests and for `hearth rules test`.
public struct RulesDocumentSet: RulesDocumentLookup, Sendable {
    public var before: [String: [String: Value]]
    /// Documents the request writes: new data, or nil for a delete. Others are unchanged.
    public var writes: [String: [String: Value]?]

    public init(before: [String: [String: Value]] = [:], writes: [String: [String: Value]?] = [:]) {
        self.before = before
        self.writes = writes
    }

    /// Keys are `database/path`, e.g. `(default)/users/alice`.
    public static func key(database: String, path: ResourcePath) -> String { database + "/" + path.text }

    public func document(database: String, path: ResourcePath, afterWrites: Bool) throws -> [String: Value]? {
        let k = Self.key(database: database, path: path)
        if afterWrites, let w = writes[k] { return w }
        return before[k]
    }
}

/// Counts document accesses against Firebase's budget: 10 per single-document request or
/// query, 20 per batch or transaction with 10 still applying to each of its writes (2 for
/// Storage's `firestore.get`). Accesses to a document already read in this request are
/// answered from the cache and do not count. Pass the same ledger to every evaluation of one
/// batch or transaction.
public struct DocumentAccessLedger: Sendable {
    public var limitPerEvaluation: Int
    public var totalLimit: Int
    public private(set) var total: Int = 0
    var cache: [String: RulesValue?] = [:]

    public init(limitPerEvaluation: Int, totalLimit: Int) {
        self.limitPerEvaluation = limitPerEvaluation
        self.totalLimit = totalLimit
    }

    public static var singleDocument: DocumentAccessLedger { DocumentAccessLedger(limitPerEvaluation: 10, totalLimit: 10) }
    public static var batch: DocumentAccessLedger { DocumentAccessLedger(limitPerEvaluation: 10, totalLimit: 20) }
    public static var storage: DocumentAccessLedger { DocumentAccessLedger(limitPerEvaluation: 2, totalLimit: 2) }

    mutating func record(_ key: String, _ value: RulesValue?) {
        cache[key] = .some(value)
        total += 1
    }
}
