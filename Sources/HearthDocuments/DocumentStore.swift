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

/// Write access inside one atomic, durable transaction.
public protocol DocumentWriter: DocumentReader {
    /// Stores a document (insert or replace) with its new index entries, removing `oldEntries`.
    func put(_ database: String, _ document: Document, entries: [IndexEntry], oldEntries: [IndexEntry]) throws
    func delete(_ database: String, _ path: ResourcePath, oldEntries: [IndexEntry]) throws
    /// Keeps the previous state of a document for reads at a past time.
    func recordHistory(_ database: String, _ path: ResourcePath, previous: Document?, until: Timestamp) throws
    func insertIndexEntries(_ database: String, _ entries: [IndexEntry]) throws
    func saveIndexDefinition(_ definition: IndexDefinition) throws
    func setLastCommitTime(_ time: Timestamp) throws
    /// Removes every document of a database (the emulator's clear endpoint).
    func clearDatabase(_ database: String) throws
    /// All databases that hold documents.
    func databases() throws -> [String]
}

/// The persistence an engine runs on. Reads see a consistent snapshot; writes are serialized,
/// atomic and durable before they return (implementations may group several into one commit).
public protocol DocumentStore: Sendable {
    func read<T: Sendable>(_ body: @escaping @Sendable (any DocumentReader) throws -> T) async throws -> T
    func write<T: Sendable>(_ body: @escaping @Sendable (any DocumentWriter) throws -> T) async throws -> T
}
