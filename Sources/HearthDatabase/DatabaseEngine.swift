public import HearthCore
import Foundation

/// The Realtime Database: one JSON tree per namespace over a ``DatabaseTreeStore``.
///
/// Every write takes one path: the engine takes its write lock, reads the subtrees the write
/// replaces (and the scalars above them), builds the new nodes (key rules, limits, server
/// values), asks the ``DatabaseAuthorizer`` with views of the tree before and after, and
/// hands the store one ``DatabaseTreeCommit`` conditioned on the revision it read. Once the
/// store reports it durable, the change goes to the ``DatabaseChangeFeed`` and only then is
/// the writer answered — so listeners see writes in commit order and only durable ones.
public actor DatabaseEngine {
    public struct WriteOptions: Sendable {
        /// `if-match`: write only if the current value has this ETag.
        public var ifMatch: String?
        /// Largest number of bytes the write may replace and write (`writeSizeLimit`).
        public var sizeLimit: Int?
        /// Plan and judge the write (data, limits, rules) but store nothing: an onDisconnect
        /// operation is checked when it is registered.
        public var dryRun: Bool

        public init(ifMatch: String? = nil, sizeLimit: Int? = nil, dryRun: Bool = false) {
            self.ifMatch = ifMatch
            self.sizeLimit = sizeLimit
            self.dryRun = dryRun
        }
    }

    public enum WriteOutcome: Sendable {
        /// Written; the node now at the path (server values resolved).
        case written(DatabaseNode, revision: Int64)
        /// `if-match` did not match: the current node and its ETag.
        case preconditionFailed(current: DatabaseNode, etag: String)
    }

    public struct Snapshot: Sendable {
        public var node: DatabaseNode
        public var revision: Int64
        /// Set when an unindexed query was served by scanning (emulator mode): Firebase's hint.
        public var warning: String?
    }

    /// What a query ordered by a child or by value does when the rules declare no `.indexOn` for it.
    public enum UnindexedQueries: Sendable {
        /// Served by scanning the location's children, with a warning (the emulator).
        case scan
        /// Refused with Firebase's `Index not defined` error (production).
        case reject
    }

    let store: any DatabaseTreeStore
    let authorizer: any DatabaseAuthorizer
    public nonisolated let feed: DatabaseChangeFeed
    nonisolated let pushIDs = PushIDGenerator()
    let clock: @Sendable () -> Int64
    /// The compiled rules per namespace and the store's ``DatabaseTreeStore/rulesVersion(namespace:)``
    /// they were read at (nil: until this engine replaces them, or unknown after it did).
    var rulesByNamespace: [String: (version: Int64?, program: any DatabaseRulesProgram)] = [:]
    /// False once the store said it keeps no rules version (one process writes it): not asked again.
    var storeVersionsRules = true
    /// Per namespace with a rules-version read in flight: the callers that arrived during it,
    /// served by the next read (``rulesVersion(namespace:)``).
    var versionReads: [String: [CheckedContinuation<VersionTurn, Never>]] = [:]
    /// The callers a starting read serves (they queued before it began).
    var versionGroups: [String: [CheckedContinuation<VersionTurn, Never>]] = [:]

    enum VersionTurn: Sendable {
        /// Read the version for the group queued with you.
        case read
        case done(Result<Int64?, any Error>)
    }
    var writing = false
    var waiting: [CheckedContinuation<Void, Never>] = []
    static let maxAttempts = 16
    static let conflictBudget: Duration = .seconds(30)

    /// Wall-clock milliseconds since the epoch (server timestamps, push ids).
    public static let systemClock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// An engine over `store`. `feed` is where its writes go: a sequenced one
    /// (``DatabaseChangeFeed/sequenced``) when other servers write the same store and a
    /// commit-log reader feeds their writes in too.
    public init(
        store: any DatabaseTreeStore, authorizer: any DatabaseAuthorizer,
        clock: @escaping @Sendable () -> Int64 = DatabaseEngine.systemClock, feed: DatabaseChangeFeed = DatabaseChangeFeed()
    ) {
        self.store = store
        self.authorizer = authorizer
        self.clock = clock
        self.feed = feed
    }

    // MARK: Reads

    /// The node at `path` (the query applied), if the caller may read it. A query ordered by a
    /// child or by value is served from the `.indexOn` index that covers it; without one it is
    /// served by scanning (with ``Snapshot/warning``) or refused, as `unindexed` says.
    public func read(
        namespace: String, path: DatabasePath, query: DatabaseQuery? = nil, auth: DatabaseAuthContext, unindexed: UnindexedQueries = .scan
    ) async throws -> Snapshot {
        try await authorizeRead(namespace: namespace, path: path, query: query, auth: auth)
        guard let query else {
            let subtree = try await store.subtree(namespace: namespace, at: path)
            return Snapshot(node: DatabaseNode(leaves: subtree.leaves, base: path), revision: subtree.revision)
        }
        var warning: String?
        switch query.order {
        case .key, .priority:
            break
        case .child, .value:
            let program = try await rules(namespace: namespace)
            if let index = program.indexes.first(where: { $0.matches(path) && $0.serves(query.order) }),
                let subtree = try await store.indexedChildren(namespace: namespace, location: path, index: index, range: DatabaseIndexRange(query))
            {
                // The index selected the children; ordering them again costs only the result.
                return Snapshot(node: query.apply(DatabaseNode(leaves: subtree.leaves, base: path)), revision: subtree.revision)
            }
            if !program.indexes.contains(where: { $0.matches(path) && $0.serves(query.order) }) {
                let message = Self.indexNotDefined(query.order, at: path)
                if unindexed == .reject { throw DatabaseError(.invalidQuery, message) }
                warning = message
            }
        }
        let subtree = try await store.subtree(namespace: namespace, at: path)
        return Snapshot(node: query.apply(DatabaseNode(leaves: subtree.leaves, base: path)), revision: subtree.revision, warning: warning)
    }

    /// Throws Firebase's `Index not defined` when `query` needs an index that the rules do
    /// not declare (a transport that refuses unindexed queries checks before a stream starts).
    public func checkIndexed(namespace: String, path: DatabasePath, query: DatabaseQuery?) async throws {
        guard let query else { return }
        if try await !isIndexed(namespace: namespace, path: path, order: query.order) {
            throw DatabaseError(.invalidQuery, Self.indexNotDefined(query.order, at: path))
        }
    }

    /// Whether a query at `path` in `order` is served by an index (orders by key and priority need none).
    public func isIndexed(namespace: String, path: DatabasePath, order: DatabaseQuery.Order) async throws -> Bool {
        switch order {
        case .key, .priority: return true
        case .child, .value:
            let program = try await rules(namespace: namespace)
            return program.indexes.contains { $0.matches(path) && $0.serves(order) }
        }
    }

    /// Firebase's answer to a query ordered by a child (or by value) that no `.indexOn` covers.
    static func indexNotDefined(_ order: DatabaseQuery.Order, at path: DatabasePath) -> String {
        let name: String
        switch order {
        case .child(let child): name = child.keys.joined(separator: "/")
        default: name = ".value"
        }
        return "Index not defined, add \".indexOn\": \"\(name)\", for path \"\(path)\", to the rules"
    }

    /// Asks the authorizer whether `auth` may read `path` (with `query`); throws Permission denied.
    public func authorizeRead(namespace: String, path: DatabasePath, query: DatabaseQuery?, auth: DatabaseAuthContext) async throws {
        let rules = try await rules(namespace: namespace)
        let request = DatabaseReadRequest(
            namespace: namespace, path: path, query: query, auth: auth, data: StoredTreeView(store: store, namespace: namespace), now: clock())
        let decision = try await authorizer.authorizeRead(request, rules: rules)
        guard decision.allowed else { throw DatabaseError(.permissionDenied, DatabaseError.permissionDenied.message, cause: DenialReason(decision.reason)) }
    }

    // MARK: Writes

    /// Replaces the node at `path` with `value` (null deletes it).
    public func set(namespace: String, path: DatabasePath, value: JSON, auth: DatabaseAuthContext, options: WriteOptions = .init()) async throws -> WriteOutcome {
        try await write(namespace: namespace, base: path, entries: [(path, value)], isUpdate: false, auth: auth, options: options)
    }

    /// Replaces each child `path/<key path>` with its value, atomically (`PATCH`, multi-path update).
    public func update(namespace: String, path: DatabasePath, values: [(String, JSON)], auth: DatabaseAuthContext, options: WriteOptions = .init()) async throws -> WriteOutcome {
        var entries: [(DatabasePath, JSON)] = []
        for (key, value) in values {
            let relative = try DatabasePath.parse(key)
            guard !relative.isRoot else { throw DatabaseError.invalidData("update keys may not be empty.") }
            let absolute = path.appending(relative)
            guard absolute.keys.count <= DatabaseLimits.maxDepth else { throw DatabaseError.invalidPath("Path exceeds the maximum depth of \(DatabaseLimits.maxDepth)") }
            for (other, _) in entries where other.isWithin(absolute) || absolute.isWithin(other) {
                throw DatabaseError.invalidData("path \(absolute) overlaps \(other) in the same update.")
            }
            entries.append((absolute, value))
        }
        guard !entries.isEmpty else { return .written(.empty, revision: try await store.subtree(namespace: namespace, at: path).revision) }
        return try await write(namespace: namespace, base: path, entries: entries, isUpdate: true, auth: auth, options: options)
    }

    /// Writes `value` under a new push id child of `path`; returns the id.
    public func push(namespace: String, path: DatabasePath, value: JSON, auth: DatabaseAuthContext, options: WriteOptions = .init()) async throws -> String {
        guard path.keys.count < DatabaseLimits.maxDepth else { throw DatabaseError.invalidPath("Path exceeds the maximum depth of \(DatabaseLimits.maxDepth)") }
        let name = pushIDs.next(now: clock())
        _ = try await set(namespace: namespace, path: path.child(name), value: value, auth: auth, options: options)
        return name
    }

    func write(
        namespace: String, base: DatabasePath, entries: [(DatabasePath, JSON)], isUpdate: Bool, auth: DatabaseAuthContext, options: WriteOptions
    ) async throws -> WriteOutcome {
        await lock()
        defer { unlock() }
        // Attempts after a conflict: at least `maxAttempts`, and for `conflictBudget` — another
        // server over the same database may write the namespace many times in a row (its own
        // queue of writes) while this one waits its turn.
        let deadline = ContinuousClock.now + Self.conflictBudget
        for attempt in 0... {
            if attempt > 0 {
                guard attempt < Self.maxAttempts || ContinuousClock.now < deadline else { break }
                // Another writer of the namespace got there first. A random wait that doubles
                // per attempt, up to 200 ms, so two servers writing one namespace take turns
                // instead of colliding again at once.
                try await Task.sleep(for: .microseconds(Int.random(in: 0...min(500 << min(attempt, 12), 200_000))))
            }
            let rules = try await rules(namespace: namespace)
            let now = clock()
            var revision: Int64?
            var consistent = true
            var writes: [(DatabasePath, DatabaseNode)] = []
            var bytes = 0
            for (path, json) in entries {
                let subtree = try await store.subtree(namespace: namespace, at: path)
                if revision == nil { revision = subtree.revision } else if revision != subtree.revision { consistent = false }
                let old = DatabaseNode(leaves: subtree.leaves, base: path)
                if let ifMatch = options.ifMatch, ifMatch != old.etag {
                    return .preconditionFailed(current: old, etag: old.etag)
                }
                let new = try DatabaseNode.written(json, at: path.keys.count, existing: old, context: ServerValueContext(now: now))
                bytes += subtree.leaves.reduce(0) { $0 + $1.size }
                writes.append((path, new))
            }
            guard consistent, let revision else { continue }
            let written = writes.flatMap { $0.1.leaves(at: $0.0) }
            bytes += written.reduce(0) { $0 + $1.size }
            if let limit = options.sizeLimit, bytes > limit { throw DatabaseError.writeTooBig }
            var ancestors: [DatabasePath] = []
            var seen = Set<DatabasePath>()
            for (path, node) in writes where !node.isEmpty {
                var parent = path.parent
                while let current = parent {
                    if seen.insert(current).inserted { ancestors.append(current) }
                    parent = current.parent
                }
            }
            var scalarsAbove: [DatabasePath] = []
            if !ancestors.isEmpty { scalarsAbove = try await store.leaves(namespace: namespace, at: ancestors).map(\.path) }
            let stored = StoredTreeView(store: store, namespace: namespace)
            let after = WrittenTreeView(stored: stored, writes: writes)
            scalarsAbove += try await orphanedPriorities(namespace: namespace, writes: writes, after: after)
            let request = DatabaseWriteRequest(
                namespace: namespace, path: base, changedPaths: writes.map(\.0), auth: auth, before: stored,
                after: after, now: now)
            let decision = try await authorizer.authorizeWrite(request, rules: rules)
            guard decision.allowed else {
                throw DatabaseError(.permissionDenied, DatabaseError.permissionDenied.message, cause: DenialReason(decision.reason))
            }
            if options.dryRun { return .written(writes[0].1, revision: revision) }
            let commit = DatabaseTreeCommit(
                namespace: namespace, expectedRevision: revision, clearedSubtrees: writes.map(\.0), clearedLeaves: scalarsAbove,
                writtenLeaves: written, event: isUpdate ? .update(base: base) : .set)
            guard let newRevision = try await store.apply(commit) else { continue }
            let kind: DatabaseChange.Kind =
                isUpdate
                ? .update(path: base, children: writes.map { ($0.0.relative(to: base), $0.1) })
                : .set(path: writes[0].0, node: writes[0].1)
            if !feed.publish(DatabaseChange(namespace: namespace, revision: newRevision, kind: kind)) {
                // Another server's commit came first and this server's feed has not read it
                // yet: the listeners hear both, in order, before the writer is answered.
                await feed.waitUntilDelivered(namespace: namespace, revision: newRevision)
            }
            if isUpdate {
                var echo = DatabaseNode()
                for (path, node) in writes { echo.replace(path.relative(to: base), with: node) }
                return .written(echo, revision: newRevision)
            }
            return .written(writes[0].1, revision: newRevision)
        }
        throw DatabaseError(.unavailable, "The write kept conflicting with other writers; try again.")
    }

    /// The priority rows of ancestors that a deletion leaves without value or children: a
    /// node that no longer exists has no priority (a later write under it must not revive it).
    /// Only ancestors that have a priority are looked at, with one point read each.
    func orphanedPriorities(namespace: String, writes: [(DatabasePath, DatabaseNode)], after: WrittenTreeView) async throws -> [DatabasePath] {
        var candidates: [DatabasePath] = []
        var seen = Set<DatabasePath>()
        for (path, node) in writes where node.isEmpty {
            var parent = path.parent
            while let current = parent {
                if seen.insert(current).inserted { candidates.append(current.child(DatabaseNode.priorityKey)) }
                parent = current.parent
            }
        }
        guard !candidates.isEmpty else { return [] }
        var orphaned: [DatabasePath] = []
        for row in try await store.leaves(namespace: namespace, at: candidates) {
            guard let owner = row.path.parent else { continue }
            if try await after.node(at: owner.keys) == nil { orphaned.append(row.path) }
        }
        return orphaned
    }

    func lock() async {
        if !writing {
            writing = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func unlock() {
        if waiting.isEmpty {
            writing = false
        } else {
            waiting.removeFirst().resume()
        }
    }

    // MARK: Rules

    /// The rules in force for `namespace` (the authorizer's defaults when none were set). When
    /// other servers may replace them, the store's rules version is read first and the
    /// compiled rules are used only if it is the one they were read at: rules set on one
    /// server hold on every server from the next request on.
    public func rules(namespace: String) async throws -> any DatabaseRulesProgram {
        let version = try await rulesVersion(namespace: namespace)
        if let cached = rulesByNamespace[namespace], version == nil || cached.version == version { return cached.program }
        let program: any DatabaseRulesProgram
        if let text = try await store.rules(namespace: namespace) {
            program = try authorizer.compile(text)
        } else {
            program = authorizer.defaultRules()
        }
        // The store's indexes follow the rules' `.indexOn` (rebuilt if they differ, e.g. after
        // rules were replaced by a process that stopped before it rebuilt them).
        if try await store.indexes(namespace: namespace) != program.indexes {
            try await store.setIndexes(program.indexes, namespace: namespace)
        }
        if let cached = rulesByNamespace[namespace], version == nil || cached.version == version { return cached.program }
        // The text read after the version is as new as it or newer: at worst compiled again.
        rulesByNamespace[namespace] = (version, program)
        return program
    }

    /// The store's rules version for `namespace`, from a read that began after this call did (so
    /// it reflects every rules change completed before), shared by the calls that queued while
    /// the previous read ran: a burst — every listener of a location re-checking its read after
    /// a write — costs one read per round trip instead of one per call.
    func rulesVersion(namespace: String) async throws -> Int64? {
        guard storeVersionsRules else { return nil }
        if versionReads[namespace] != nil {
            switch await withCheckedContinuation({ versionReads[namespace, default: []].append($0) }) {
            case .done(let result): return try result.get()
            case .read: break
            }
        } else {
            versionReads[namespace] = []
        }
        let group = versionGroups.removeValue(forKey: namespace) ?? []
        let result: Result<Int64?, any Error>
        do { result = .success(try await store.rulesVersion(namespace: namespace)) } catch { result = .failure(error) }
        if case .success(nil) = result { storeVersionsRules = false }
        for caller in group { caller.resume(returning: .done(result)) }
        var queued = versionReads[namespace] ?? []
        if queued.isEmpty {
            versionReads[namespace] = nil
        } else {
            // The first caller that arrived during this read reads for the others.
            let reader = queued.removeFirst()
            versionGroups[namespace] = queued
            versionReads[namespace] = []
            reader.resume(returning: .read)
        }
        return try result.get()
    }

    /// Replaces `namespace`'s rules (admin only), after the authorizer accepted them.
    public func setRules(_ text: String, namespace: String, auth: DatabaseAuthContext) async throws {
        guard auth.isAdmin else { throw DatabaseError.permissionDenied }
        let program = try authorizer.compile(text)
        try await store.setRules(text, namespace: namespace)
        // Indexes are rebuilt under the write lock: no write of this engine sees half of them.
        await lock()
        defer { unlock() }
        try await store.setIndexes(program.indexes, namespace: namespace)
        rulesByNamespace[namespace] = (nil, program)
        feed.publish(DatabaseChange(namespace: namespace, revision: 0, kind: .rules))
    }
}

/// Why an authorizer refused (logged; in emulator mode a transport may show it).
public struct DenialReason: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
