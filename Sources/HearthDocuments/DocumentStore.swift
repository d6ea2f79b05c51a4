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

/// Read access to one consistent snapshot of the data. Implementations: SQLite, PostgreSQL.
/// Calls are synchronous inside the snapshot's scope (like GRDB's `read { db in }`).
public protocol DocumentReader {
    func document(_ database: String, _ path: ResourcePath) throws -> Document?
    /// Documents of a scope in `__name__` order, within a range of ``IndexKey/encodePath`` keys.
    /// `visit` returns false to stop.
    func scanDocuments(
        _ database: String, _ scope: IndexScope, _ range: KeyRange, reverse: Bool,
        _ visit: (Document) throws -> Bool
    ) throws
    /// Index entries of a scope within a key range, in key order (or reversed). `visit` returns false to stop.
    func scanIndex(
        _ database: String, scope: String, _ range: KeyRange, reverse: Bool, _ visit: (IndexEntry) throws -> Bool
    ) throws
    /// Ids of the collections directly under a document (or the root).
    func collectionIds(_ database: String, parent: ResourcePath) throws -> [String]
    /// Whether any document lies strictly below the path (used for missing documents with children).
    func hasDescendants(_ database: String, _ path: ResourcePath) throws -> Bool
    /// Document paths below a prefix that have children but may not exist (for `showMissing`).
    func descendantParents(_ database: String, collection: ResourcePath) throws -> [ResourcePath]
    /// Composite index definitions created so far (declared or automatic).
    func indexDefinitions() throws -> [IndexDefinition]
    /// The state of a document at a past time, from the version history (nil: did not exist).
    func document(_ database: String, _ path: ResourcePath, at time: Timestamp) throws -> Document?
    /// The most recent commit time.
    func lastCommitTime() throws -> Timestamp?
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
    /// The commit time (taken from the engine's ``CommitClock`` before planning: transforms
    /// and the rules' `request.time` use it). The store records history rows at this time and
    /// raises its last commit time to at least it.
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
}

/// The persistence an engine runs on — the seam every backend implements (SQLite today,
/// PostgreSQL next). Reads see a consistent snapshot. A commit is planned and judged by the
/// engine *before* it reaches the store (so the security rules may read documents
/// asynchronously, and no database lock is held while they do); the store then applies it
/// atomically and durably, checking inside its own transaction that everything the plan read
/// is unchanged. Implementations may group several commits into one storage transaction.
/// Nothing here holds a lock across an `await`: every callback the store makes is synchronous
/// and pure (no I/O).
public protocol DocumentStore: Sendable {
    /// Runs `body` over one consistent snapshot (queries, List, Listen, counting: the scans
    /// that have no asynchronous operation of their own yet).
    func read<T: Sendable>(_ body: @escaping @Sendable (any DocumentReader) throws -> T) async throws -> T

    // Point reads and the engine's metadata: asynchronous operations of their own, so that a
    // backend with an asynchronous driver implements them directly (no synchronous reader).

    /// The documents at `paths` (any number, repeats allowed), in order, nil for each missing
    /// one, all read from one consistent snapshot: as they are now (`time` nil), or as they were
    /// at a past time — from the version history, like ``DocumentReader/document(_:_:at:)``.
    func documents(_ database: String, _ paths: [ResourcePath], at time: Timestamp?) async throws -> [Document?]

    /// Ids of the collections directly under a document (or the root), as they are now, in
    /// UTF-8 byte order, each once (``DocumentReader/collectionIds(_:parent:)``).
    func collectionIds(_ database: String, parent: ResourcePath) async throws -> [String]

    /// Composite index definitions created so far (declared or automatic), by id.
    func indexDefinitions() async throws -> [IndexDefinition]

    /// The most recent commit time (nil: nothing was ever committed or cleared).
    func lastCommitTime() async throws -> Timestamp?

    /// Applies one commit, atomically and durably before it returns. Inside its transaction
    /// the store, in this order:
    /// 1. checks ``DocumentCommitRequest/indexVersion`` (else throws ``DocumentStoreConflict/indexes``)
    ///    and every expectation (else throws ``DocumentStoreConflict/document(database:path:)``);
    /// 2. reads the current state of every document of ``DocumentCommitRequest/writing`` and
    ///    calls `plan` with them (same order) — a pure, synchronous function that returns the
    ///    mutations and the caller's result, or throws to apply nothing;
    /// 3. stores each mutation (the document, its index entries, a history row with the previous
    ///    state until the commit time) and raises the last commit time to at least the commit's.
    /// Any error leaves the data unchanged.
    func commit<T: Sendable>(
        _ request: DocumentCommitRequest, plan: @escaping @Sendable ([Document?]) throws -> ([DocumentMutation], T)
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
