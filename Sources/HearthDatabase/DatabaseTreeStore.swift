/// A subtree as a store reads it: the namespace's revision at the read and the leaves at or
/// under the path, read from one consistent snapshot.
public struct DatabaseSubtree: Sendable {
    public var revision: Int64
    public var leaves: [DatabaseLeaf]

    public init(revision: Int64, leaves: [DatabaseLeaf]) {
        self.revision = revision
        self.leaves = leaves
    }
}

/// One atomic change to a namespace's leaves, planned by the engine and applied by a store
/// only if the namespace is still at `expectedRevision` (optimistic: nothing is held between
/// planning and applying, so a store may be SQLite in-process or PostgreSQL across servers).
public struct DatabaseTreeCommit: Sendable {
    public var namespace: String
    public var expectedRevision: Int64
    /// Every leaf at or under these paths is removed (first).
    public var clearedSubtrees: [DatabasePath]
    /// Leaves at exactly these paths are removed (scalars that become objects).
    public var clearedLeaves: [DatabasePath]
    /// Leaves written (after the removals).
    public var writtenLeaves: [DatabaseLeaf]
    /// What the commit is to listeners (``DatabaseChange/init(_:revision:)`` rebuilds the change
    /// from it): a store shared by several servers logs it for the others' feeds. Nil for a
    /// commit made outside the engine (an import): their listeners then re-read the namespace.
    public var event: Event?

    /// The write a commit carries out, as the engine's feed reports it.
    public enum Event: Sendable, Equatable {
        /// `set`: the node at `clearedSubtrees[0]` replaced by the written leaves under it.
        case set
        /// `update` at `base`: each cleared subtree replaced by the written leaves under it.
        case update(base: DatabasePath)
    }

    public init(
        namespace: String, expectedRevision: Int64, clearedSubtrees: [DatabasePath], clearedLeaves: [DatabasePath], writtenLeaves: [DatabaseLeaf],
        event: Event? = nil
    ) {
        self.namespace = namespace
        self.expectedRevision = expectedRevision
        self.clearedSubtrees = clearedSubtrees
        self.clearedLeaves = clearedLeaves
        self.writtenLeaves = writtenLeaves
        self.event = event
    }
}

/// Where the Realtime Database keeps its trees: one row per leaf keyed by the path's
/// order-preserving byte key (``DatabasePathKey``), so a subtree is one range scan. Every
/// method is async and self-contained (no callbacks run inside a store transaction), so an
/// implementation may hold its database lock only inside one call.
public protocol DatabaseTreeStore: Sendable {
    /// The leaves at or under `path` and the namespace's revision (0 for a new namespace).
    func subtree(namespace: String, at path: DatabasePath) async throws -> DatabaseSubtree
    /// The leaves at exactly these paths (the scalars among a write's ancestors).
    func leaves(namespace: String, at paths: [DatabasePath]) async throws -> [DatabaseLeaf]
    /// Applies `commit` atomically and durably if the namespace is at its expected revision;
    /// returns the new revision, or nil when another writer got there first.
    func apply(_ commit: DatabaseTreeCommit) async throws -> Int64?
    /// The namespace's rules text, if rules were ever set.
    func rules(namespace: String) async throws -> String?
    func setRules(_ text: String, namespace: String) async throws
    /// A number that changes whenever `namespace`'s rules are replaced, when other processes
    /// may replace them (several servers over one database): the engine then checks it before
    /// each use of its compiled rules. Nil (the default) when only this process writes the
    /// store, so the engine keeps the rules it compiled until it replaces them itself.
    func rulesVersion(namespace: String) async throws -> Int64?

    // MARK: Indexes (`.indexOn`)

    /// The indexes the store keeps for `namespace`.
    func indexes(namespace: String) async throws -> Set<DatabaseIndexSpec>
    /// Makes `specs` the namespace's indexes, in one transaction: entries of indexes no longer
    /// listed are dropped, new indexes are built from the leaves. From then on every
    /// ``apply(_:)`` updates them in the transaction that changes the leaves.
    func setIndexes(_ specs: Set<DatabaseIndexSpec>, namespace: String) async throws
    /// The children of `location` that `range` selects in `index`'s order, read from the index
    /// with their subtrees in one snapshot (cost in proportion to the result, not to the
    /// location); nil when the store keeps no such index.
    func indexedChildren(namespace: String, location: DatabasePath, index: DatabaseIndexSpec, range: DatabaseIndexRange) async throws -> DatabaseSubtree?
}

extension DatabaseTreeStore {
    public func rulesVersion(namespace: String) async throws -> Int64? { nil }

    /// A store without index support: queries are served by scanning.
    public func indexes(namespace: String) async throws -> Set<DatabaseIndexSpec> { [] }
    public func setIndexes(_ specs: Set<DatabaseIndexSpec>, namespace: String) async throws {}
    public func indexedChildren(namespace: String, location: DatabasePath, index: DatabaseIndexSpec, range: DatabaseIndexRange) async throws -> DatabaseSubtree? { nil }
}
