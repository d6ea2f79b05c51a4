public import HearthCore

/// Where an index entry or a name scan is scoped: one collection (`users/a/posts`) or every
/// collection with one id (a collection group).
public enum IndexScope: Sendable, Hashable {
    case collection(ResourcePath)
    case group(String)
    /// Every document below a parent, in any collection (kindless queries); unordered.
    case descendants(ResourcePath)

    /// The text form stored alongside entries.
    public var key: String {
        switch self {
        case .collection(let p): "c/" + p.text
        case .group(let id): "g/" + id
        case .descendants(let p): "d/" + p.text
        }
    }
}

/// One row of an index: an order-preserving key (which ends with the document's name) that
/// points at a document.
public struct IndexEntry: Sendable, Hashable {
    public var scope: String
    public var key: [UInt8]
    public var document: String

    public init(scope: String, key: [UInt8], document: String) {
        self.scope = scope
        self.key = key
        self.document = document
    }
}

/// A range of keys to scan: `lower` inclusive, `upper` exclusive; nil means unbounded.
public struct KeyRange: Sendable, Equatable {
    public var lower: [UInt8]?
    public var upper: [UInt8]?

    public init(lower: [UInt8]?, upper: [UInt8]?) {
        self.lower = lower
        self.upper = upper
    }

    public static func prefix(_ p: [UInt8]) -> KeyRange { KeyRange(lower: p, upper: IndexKey.successor(ofPrefix: p)) }

    public var isEmpty: Bool {
        guard let l = lower, let u = upper else { return false }
        return !l.lexicographicallyPrecedes(u)
    }
}

extension IndexScope {
    /// Whether a document path lies in the scope (by its path alone).
    public func contains(_ path: ResourcePath) -> Bool {
        guard path.isDocument else { return false }
        switch self {
        case .collection(let p): return path.parent == p
        case .group(let id): return path.collectionId == id
        case .descendants(let p): return p.isPrefix(of: path) && path.segments.count > p.segments.count
        }
    }
}

extension KeyRange {
    /// Every key.
    public static let all = KeyRange(lower: nil, upper: nil)

    /// Whether `key` lies in the range.
    public func contains(_ key: [UInt8]) -> Bool {
        if let lower, key.lexicographicallyPrecedes(lower) { return false }
        if let upper, !key.lexicographicallyPrecedes(upper) { return false }
        return true
    }
}

/// Where a ``DocumentScan`` reads.
public enum DocumentScanSource: Sendable, Hashable {
    /// The documents of a scope in `__name__` order, keyed by ``IndexKey/encodePath(_:)`` of their
    /// paths. `.descendants` (kindless queries, counts) is unordered and takes only ``KeyRange/all``.
    case documents(IndexScope)
    /// The entries of an index scope (an ``IndexScope/key``, as ``IndexEntry/scope`` stores it) in
    /// key order, each followed to the document it points at (an entry whose document is missing
    /// is skipped). Only now: index entries keep no history.
    case index(scope: String)
}

/// One scan of a ``DocumentSnapshotRead``: a key range of a source, in key order or reversed,
/// kept through a filter until a limit. The store runs `filter` on each document as it reads
/// and stops once `limit` documents passed, so a query's cost follows its result (the index
/// entries and documents it reads), as in a row-by-row scan — whether the store reads rows one
/// by one (SQLite) or in pages from a cursor (PostgreSQL).
public struct DocumentScan: Sendable {
    public var source: DocumentScanSource
    public var range: KeyRange
    public var reverse: Bool
    /// Keeps the documents it accepts (nil: all). Pure and synchronous, no I/O, like a commit's plan.
    public var filter: (@Sendable (Document) -> Bool)?
    /// The most documents to keep (nil: every one in the range).
    public var limit: Int?

    public init(
        _ source: DocumentScanSource, range: KeyRange = .all, reverse: Bool = false, limit: Int? = nil,
        filter: (@Sendable (Document) -> Bool)? = nil
    ) {
        self.source = source
        self.range = range
        self.reverse = reverse
        self.limit = limit
        self.filter = filter
    }
}

/// What one ``DocumentStore/snapshot(_:)`` reads: point reads, scans, the parents of missing
/// documents and the last commit time of a database, all from **one** consistent snapshot.
public struct DocumentSnapshotRead: Sendable {
    public var database: String
    /// nil: as the data is now. A past time: `paths` and `scans` read the state at that time from
    /// the version history (only ``DocumentScanSource/documents(_:)`` scans then; `.index` throws).
    public var time: Timestamp?
    /// Documents read by path (any number, repeats allowed).
    public var paths: [ResourcePath]
    public var scans: [DocumentScan]
    /// A collection whose document paths that have sub-collections are listed (List's
    /// `showMissing`), as they are now (the history keeps no parents).
    public var parentsBelow: ResourcePath?
    /// Whether to read the last commit time the snapshot includes.
    public var readsLastCommitTime: Bool

    public init(
        database: String, at time: Timestamp? = nil, paths: [ResourcePath] = [], scans: [DocumentScan] = [],
        parentsBelow: ResourcePath? = nil, readsLastCommitTime: Bool = false
    ) {
        self.database = database
        self.time = time
        self.paths = paths
        self.scans = scans
        self.parentsBelow = parentsBelow
        self.readsLastCommitTime = readsLastCommitTime
    }
}

/// The answer to a ``DocumentSnapshotRead``, part by part.
public struct DocumentSnapshot: Sendable {
    /// One per path asked, in order (nil: missing).
    public var documents: [Document?]
    /// One per scan asked, in order: the documents it kept, in scan order.
    public var scans: [[Document]]
    /// The document paths below ``DocumentSnapshotRead/parentsBelow`` (one level below the
    /// collection) that have documents under them, whether or not they exist; unordered.
    public var parents: [ResourcePath]
    /// The most recent commit time the snapshot includes, when asked (nil: none yet, or not asked).
    public var lastCommitTime: Timestamp?

    public init(documents: [Document?], scans: [[Document]], parents: [ResourcePath], lastCommitTime: Timestamp?) {
        self.documents = documents
        self.scans = scans
        self.parents = parents
        self.lastCommitTime = lastCommitTime
    }
}

/// A store was asked for something its contract excludes (a caller's bug, never the client's).
public enum DocumentStoreMisuse: Error, Sendable, Equatable {
    /// An index scan at a past time: index entries keep no history.
    case indexScanAtPastTime
}

/// A document a commit's plan (or the security rules judging it) read, as it was then: the
/// store applies the commit only if the document still has this update time (nil: still missing).
public struct DocumentExpectation: Sendable, Hashable {
    public var database: String
    public var path: ResourcePath
    public var updateTime: Timestamp?

    public init(database: String, path: ResourcePath, updateTime: Timestamp?) {
        self.database = database
        self.path = path
        self.updateTime = updateTime
    }
}

/// One document change of a commit, fully worked out by the engine: the store only stores it.
public struct DocumentMutation: Sendable {
    public var path: ResourcePath
    /// The new state (nil: delete the document).
    public var document: Document?
    /// The document's index entries after the change, and before it (the store replaces the
    /// old ones by the new ones).
    public var entries: [IndexEntry]
    public var oldEntries: [IndexEntry]
    /// The state the change replaces, kept in the history (until the commit time) for reads
    /// at a past time.
    public var previous: Document?

    public init(path: ResourcePath, document: Document?, entries: [IndexEntry], oldEntries: [IndexEntry], previous: Document?) {
        self.path = path
        self.document = document
        self.entries = entries
        self.oldEntries = oldEntries
        self.previous = previous
    }
}

/// What a commit asks of the store besides its mutations.
public struct DocumentCommitRequest: Sendable {
    /// The database (`(default)` or a named one) the commit writes.
    public var database: String
    /// The proposed commit time (taken from the engine's ``CommitClock`` before planning:
    /// transforms and the rules' `request.time` use it). The store assigns the commit time —
    /// this one (SQLite, in memory: the engine's clock is the only one), or, where several
    /// engines share the store (PostgreSQL), the least time above every commit before that is
    /// at least this one — and hands it to the plan.
    public var time: Timestamp
    /// The documents the commit writes; the store reads them inside its transaction and hands
    /// their current states to the plan, in this order.
    public var writing: [ResourcePath]
    /// Documents read while planning and judging, that must be unchanged.
    public var expectations: [DocumentExpectation]
    /// The highest composite index id the plan computed index entries with (15: none yet).
    /// A store whose indexes have moved on refuses the commit (``DocumentStoreConflict/indexes``).
    public var indexVersion: Int

    public init(database: String, time: Timestamp, writing: [ResourcePath], expectations: [DocumentExpectation], indexVersion: Int) {
        self.database = database
        self.time = time
        self.writing = writing
        self.expectations = expectations
        self.indexVersion = indexVersion
    }
}

/// A store refused a commit because what it was planned on has changed; nothing was applied.
/// The engine plans again (or, for a transaction's own reads, aborts it).
public enum DocumentStoreConflict: Error, Sendable, Equatable {
    /// A document of ``DocumentCommitRequest/expectations`` has another update time now.
    case document(database: String, path: ResourcePath)
    /// Composite indexes were added since the plan was made.
    case indexes
    /// The plan was made for another commit time than the store assigned (a plan judged by the
    /// rules before the store took its time throws it); the engine plans again after it.
    case commitTime(assigned: Timestamp)
}

/// The persistence an engine runs on — the seam every backend implements (SQLite today,
/// PostgreSQL next). Every member is one `async` operation that the store runs in one
/// transaction, with callbacks that are only pure, synchronous functions (a commit's plan, a
/// scan's filter), so an asynchronous driver implements each directly.
///
/// **Snapshots.** Each read operation sees one consistent snapshot: everything one operation
/// returns (all of a ``snapshot(_:)``'s parts, all of a ``documents(_:_:at:)``'s documents) is
/// as of one instant, never half of a commit. The engine puts what must agree into one operation
/// (a query's scans, a Listen target with its snapshot time, every query a transaction checks).
/// Work that spans several operations pins a read time instead: reads at a past time come from
/// the version history and are the same whenever they run (within the history's retention).
///
/// A commit is planned and judged by the
/// engine *before* it reaches the store (so the security rules may read documents
/// asynchronously, and no database lock is held while they do); the store then applies it
/// atomically and durably, checking inside its own transaction that everything the plan read
/// is unchanged. Implementations may group several commits into one storage transaction.
/// Nothing here holds a lock across an `await`: every callback the store makes is synchronous
/// and pure (no I/O).
public protocol DocumentStore: Sendable {
    /// Reads point documents, scans, missing documents' parents and the last commit time from
    /// one consistent snapshot (queries and aggregations, List, Listen's targets, transactions'
    /// query checks, reads at a past time). See ``DocumentSnapshotRead``.
    func snapshot(_ request: DocumentSnapshotRead) async throws -> DocumentSnapshot

    /// How many documents a database holds, counting stops at `limit` (overviews).
    func countDocuments(_ database: String, upTo limit: Int) async throws -> Int

    // Point reads and the engine's metadata: asynchronous operations of their own, so that a
    // backend with an asynchronous driver implements them directly (no synchronous reader).

    /// The documents at `paths` (any number, repeats allowed), in order, nil for each missing
    /// one, all read from one consistent snapshot: as they are now (`time` nil), or as they were
    /// at a past time — from the version history.
    func documents(_ database: String, _ paths: [ResourcePath], at time: Timestamp?) async throws -> [Document?]

    /// Ids of the collections directly under a document (or the root), as they are now, in
    /// UTF-8 byte order, each once.
    func collectionIds(_ database: String, parent: ResourcePath) async throws -> [String]

    /// Composite index definitions created so far (declared or automatic), by id.
    func indexDefinitions() async throws -> [IndexDefinition]

    /// The most recent commit time (nil: nothing was ever committed or cleared).
    func lastCommitTime() async throws -> Timestamp?

    /// Applies one commit, atomically and durably before it returns. Inside its transaction
    /// the store, in this order:
    /// 1. checks ``DocumentCommitRequest/indexVersion`` (else throws ``DocumentStoreConflict/indexes``)
    ///    and every expectation (else throws ``DocumentStoreConflict/document(database:path:)``);
    /// 2. reads the current state of every document of ``DocumentCommitRequest/writing``,
    ///    assigns the commit time (see ``DocumentCommitRequest/time``) and calls `plan` with the
    ///    documents (same order) and the time — a pure, synchronous function that returns the
    ///    mutations and the caller's result, or throws to apply nothing;
    /// 3. stores each mutation (the document, its index entries, a history row with the previous
    ///    state until the commit time) and raises the last commit time to at least the commit's.
    /// Any error leaves the data unchanged.
    func commit<T: Sendable>(
        _ request: DocumentCommitRequest, plan: @escaping @Sendable ([Document?], Timestamp) throws -> ([DocumentMutation], T)
    ) async throws -> T

    /// Adds a composite index unless an equal one (same database, collection group, scope and
    /// fields) exists — then returns nil — giving it the next id (16 and up), and back-fills its
    /// entries for every document of its collection group (`entries` is pure), atomically with
    /// respect to commits.
    func createIndex(
        _ proposed: IndexDefinition, entries: @escaping @Sendable (Document, IndexDefinition) -> [IndexEntry]
    ) async throws -> IndexDefinition?

    /// Removes every document (with its index entries and history) of a database, and raises
    /// the last commit time to at least `time` (the emulator's clear endpoint).
    func clear(_ database: String, time: Timestamp) async throws
}
