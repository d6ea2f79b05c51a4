import HearthCore
public import HearthDatabase
import PostgresNIO

/// The Realtime Database's trees in PostgreSQL, with the tables and semantics of
/// `SQLiteDatabaseTreeStore`: one row per leaf keyed by (namespace, the path's order-preserving
/// byte key as `bytea`, whose order is `memcmp`), so a subtree is one range scan of the primary
/// key. ``apply(_:)`` checks and bumps the namespace's revision in the SERIALIZABLE transaction
/// that changes the leaves and the `.indexOn` entries, so two servers writing one namespace
/// conflict in the database: one commits, the other finds a newer revision (nil).
///
/// Every commit and every rules change also writes, in its transaction, one row of the
/// namespace's commit log (`rtdb_commit_log`, migration 9: the namespace's next `log_seq`, the
/// revision, what changed) and notifies `hearth_rtdb`: the feed across servers
/// (``PostgresDatabaseTreeFeed``, docs/postgres.md "Several replicas") reads it.
public struct PostgresDatabaseTreeStore: DatabaseTreeStore {
    let backend: PostgresBackend

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    static func bytes(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    static func revision(_ session: PostgresSession, _ namespace: String) async throws -> Int64 {
        try await session.value("SELECT revision FROM rtdb_namespaces WHERE ns = \(namespace)", as: Int64.self) ?? 0
    }

    static func leaves(_ rows: [PostgresRow]) throws -> [DatabaseLeaf] {
        try rows.map { row in
            let (key, value) = try row.decode((ByteBuffer, String).self)
            return DatabaseLeaf(path: DatabasePathKey.decode(key.readableBytesView), value: value)
        }
    }

    /// Every namespace that holds data, in order (exports).
    public func namespaces() async throws -> [String] {
        try await backend.read { session in
            try await session.rows(#"SELECT DISTINCT ns COLLATE "C" FROM rtdb_leaves ORDER BY 1"#).map { try $0.decode(String.self) }
        }
    }

    public func subtree(namespace: String, at path: DatabasePath) async throws -> DatabaseSubtree {
        // One statement, so one snapshot: the revision joined with the range scan (one row with
        // NULLs when there are no leaves).
        let (lower, upper) = DatabasePathKey.subtreeRange(path)
        return try await backend.read { session in
            let rows = try await session.rows(
                """
                SELECT r.revision, l.key, l.value
                FROM (SELECT coalesce((SELECT revision FROM rtdb_namespaces WHERE ns = \(namespace)), 0) AS revision) AS r
                LEFT JOIN rtdb_leaves AS l ON l.ns = \(namespace) AND l.key >= \(Self.bytes(lower))
                    AND (\(upper.map(Self.bytes))::bytea IS NULL OR l.key < \(upper.map(Self.bytes)))
                ORDER BY l.key
                """)
            var revision: Int64 = 0
            var leaves: [DatabaseLeaf] = []
            for row in rows {
                let (rowRevision, key, value) = try row.decode((Int64, ByteBuffer?, String?).self)
                revision = rowRevision
                if let key, let value { leaves.append(DatabaseLeaf(path: DatabasePathKey.decode(key.readableBytesView), value: value)) }
            }
            return DatabaseSubtree(revision: revision, leaves: leaves)
        }
    }

    public func leaves(namespace: String, at paths: [DatabasePath]) async throws -> [DatabaseLeaf] {
        guard !paths.isEmpty else { return [] }
        let keys = paths.map { Self.bytes(DatabasePathKey.encode($0)) }
        let found = try await backend.read { session in
            try Self.leaves(await session.rows("SELECT key, value FROM rtdb_leaves WHERE ns = \(namespace) AND key = ANY(\(keys))"))
        }
        // In the order asked for, like the SQLite store.
        var byPath: [DatabasePath: DatabaseLeaf] = [:]
        for leaf in found { byPath[leaf.path] = leaf }
        return paths.compactMap { byPath[$0] }
    }

    public func apply(_ commit: DatabaseTreeCommit) async throws -> Int64? {
        try await backend.write { session in
            let namespace = commit.namespace
            guard try await Self.revision(session, namespace) == commit.expectedRevision else { return nil }
            for path in commit.clearedSubtrees {
                let (lower, upper) = DatabasePathKey.subtreeRange(path)
                if let upper {
                    try await session.execute(
                        "DELETE FROM rtdb_leaves WHERE ns = \(namespace) AND key >= \(Self.bytes(lower)) AND key < \(Self.bytes(upper))")
                } else {
                    try await session.execute("DELETE FROM rtdb_leaves WHERE ns = \(namespace)")
                }
            }
            if !commit.clearedLeaves.isEmpty {
                let keys = commit.clearedLeaves.map { Self.bytes(DatabasePathKey.encode($0)) }
                try await session.execute("DELETE FROM rtdb_leaves WHERE ns = \(namespace) AND key = ANY(\(keys))")
            }
            if !commit.writtenLeaves.isEmpty {
                // Later writes of one path win, as with one INSERT OR REPLACE per leaf.
                var latest: [DatabasePath: String] = [:]
                var order: [DatabasePath] = []
                for leaf in commit.writtenLeaves {
                    if latest.updateValue(leaf.value, forKey: leaf.path) == nil { order.append(leaf.path) }
                }
                let keys = order.map { Self.bytes(DatabasePathKey.encode($0)) }
                let values = order.map { latest[$0]! }
                try await session.execute(
                    """
                    INSERT INTO rtdb_leaves (ns, key, value) SELECT \(namespace), k, v FROM unnest(\(keys)::bytea[], \(values)::text[]) AS t(k, v)
                    ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value
                    """)
            }
            try await Self.updateIndexes(session, commit)
            let revision = commit.expectedRevision + 1
            // The revision, the log row (what listeners elsewhere need: the paths replaced and
            // the leaves written under them) and the wake-up, in one statement.
            let kind: String
            var base: ByteBuffer?
            switch commit.event {
            case .set: kind = "set"
            case .update(let path):
                kind = "update"
                base = Self.bytes(DatabasePathKey.encode(path))
            case nil: kind = "reset"
            }
            let logged = commit.event == nil ? [] : commit.writtenLeaves
            let paths = commit.event == nil ? [] : commit.clearedSubtrees.map { Self.bytes(DatabasePathKey.encode($0)) }
            let keys = logged.map { Self.bytes(DatabasePathKey.encode($0.path)) }
            let values = logged.map(\.value)
            try await session.execute(
                """
                WITH n AS (
                    INSERT INTO rtdb_namespaces (ns, revision, log_seq) VALUES (\(namespace), \(revision), 1)
                    ON CONFLICT (ns) DO UPDATE SET revision = excluded.revision, log_seq = rtdb_namespaces.log_seq + 1
                    RETURNING log_seq),
                l AS (
                    INSERT INTO rtdb_commit_log (ns, seq, revision, kind, base, paths, keys, vals)
                    SELECT \(namespace), n.log_seq, \(revision), \(kind), \(base)::bytea, \(paths)::bytea[], \(keys)::bytea[], \(values)::text[] FROM n
                    RETURNING seq)
                SELECT pg_notify('\(unescaped: PostgresDatabaseTreeFeed.channel)', \(namespace) || ':' || \(String(revision))) FROM l
                """)
            return revision
        }
    }

    public func rules(namespace: String) async throws -> String? {
        try await backend.read { session in
            try await session.rows("SELECT rules FROM rtdb_namespaces WHERE ns = \(namespace)").first?.decode(String?.self) ?? nil
        }
    }

    public func setRules(_ text: String, namespace: String) async throws {
        try await backend.write { session in
            try await session.execute(
                """
                WITH n AS (
                    INSERT INTO rtdb_namespaces (ns, revision, rules, rules_version, log_seq) VALUES (\(namespace), 0, \(text), 1, 1)
                    ON CONFLICT (ns) DO UPDATE SET rules = excluded.rules, rules_version = rtdb_namespaces.rules_version + 1,
                        log_seq = rtdb_namespaces.log_seq + 1
                    RETURNING log_seq, revision),
                l AS (
                    INSERT INTO rtdb_commit_log (ns, seq, revision, kind, base, paths, keys, vals)
                    SELECT \(namespace), n.log_seq, n.revision, 'rules', NULL, '{}', '{}', '{}' FROM n
                    RETURNING seq)
                SELECT pg_notify('\(unescaped: PostgresDatabaseTreeFeed.channel)', \(namespace) || ':rules') FROM l
                """)
        }
    }

    /// `rtdb_namespaces.rules_version`, raised by every ``setRules(_:namespace:)`` of any server
    /// (0 before the first): engines check it before using the rules they compiled.
    public func rulesVersion(namespace: String) async throws -> Int64? {
        try await backend.read { session in
            try await session.value("SELECT rules_version FROM rtdb_namespaces WHERE ns = \(namespace)", as: Int64.self) ?? 0
        }
    }

    // MARK: Indexes

    static func specs(_ session: PostgresSession, _ namespace: String) async throws -> Set<DatabaseIndexSpec> {
        let names = try await session.rows("SELECT idx FROM rtdb_indexes WHERE ns = \(namespace)").map { try $0.decode(String.self) }
        return Set(names.compactMap(DatabaseIndexSpec.init(name:)))
    }

    static func firstLeaf(_ session: PostgresSession, _ namespace: String, under path: DatabasePath) async throws -> DatabaseLeaf? {
        let (lower, upper) = DatabasePathKey.subtreeRange(path)
        guard let upper else {
            return try leaves(await session.rows("SELECT key, value FROM rtdb_leaves WHERE ns = \(namespace) ORDER BY key LIMIT 1")).first
        }
        return try leaves(
            await session.rows(
                """
                SELECT key, value FROM rtdb_leaves WHERE ns = \(namespace) AND key >= \(bytes(lower)) AND key < \(bytes(upper))
                ORDER BY key LIMIT 1
                """)
        ).first
    }

    /// Recomputes the entry of `child` of `location` in `spec` from the leaves.
    static func reindex(
        _ session: PostgresSession, _ namespace: String, _ spec: DatabaseIndexSpec, location: DatabasePath, child: String
    ) async throws {
        let name = spec.description
        let loc = bytes(DatabasePathKey.encode(location))
        try await session.execute("DELETE FROM rtdb_index_entries WHERE ns = \(namespace) AND idx = \(name) AND loc = \(loc) AND name = \(child)")
        guard try await firstLeaf(session, namespace, under: location.child(child)) != nil else { return }
        let sortPath = spec.sortPath(location: location, child: child)
        let sort = DatabaseIndexKey.sortKey(at: sortPath, firstLeaf: try await firstLeaf(session, namespace, under: sortPath))
        try await session.execute(
            """
            INSERT INTO rtdb_index_entries (ns, idx, loc, sort, child, name)
            VALUES (\(namespace), \(name), \(loc), \(bytes(sort)), \(bytes(DatabaseIndexKey.childKey(child))), \(child))
            """)
    }

    /// Brings the namespace's indexes up to date with `commit`'s leaf changes (same transaction).
    static func updateIndexes(_ session: PostgresSession, _ commit: DatabaseTreeCommit) async throws {
        let indexes = try await specs(session, commit.namespace)
        guard !indexes.isEmpty else { return }
        let changes = DatabaseIndexChanges(commit, specs: Array(indexes))
        for (spec, within) in changes.clearedLocations {
            let (lower, upper) = DatabasePathKey.subtreeRange(within)
            if let upper {
                try await session.execute(
                    """
                    DELETE FROM rtdb_index_entries WHERE ns = \(commit.namespace) AND idx = \(spec.description)
                    AND loc >= \(bytes(lower)) AND loc < \(bytes(upper))
                    """)
            } else {
                try await session.execute("DELETE FROM rtdb_index_entries WHERE ns = \(commit.namespace) AND idx = \(spec.description)")
            }
        }
        for (spec, locations) in changes.touched {
            for (location, children) in locations {
                for child in children { try await reindex(session, commit.namespace, spec, location: location, child: child) }
            }
        }
    }

    public func indexes(namespace: String) async throws -> Set<DatabaseIndexSpec> {
        try await backend.read { session in try await Self.specs(session, namespace) }
    }

    public func setIndexes(_ specs: Set<DatabaseIndexSpec>, namespace: String) async throws {
        try await backend.write { session in
            let existing = try await Self.specs(session, namespace)
            for spec in existing.subtracting(specs) {
                try await session.execute("DELETE FROM rtdb_index_entries WHERE ns = \(namespace) AND idx = \(spec.description)")
                try await session.execute("DELETE FROM rtdb_indexes WHERE ns = \(namespace) AND idx = \(spec.description)")
            }
            let added = specs.subtracting(existing)
            guard !added.isEmpty else { return }
            for spec in added {
                try await session.execute("INSERT INTO rtdb_indexes (ns, idx) VALUES (\(namespace), \(spec.description))")
            }
            // One pass over the namespace's keys finds every covered child of the new indexes.
            var seen: [DatabaseIndexSpec: Set<DatabasePath>] = [:]
            var pending: [(DatabaseIndexSpec, DatabasePath, String)] = []
            for row in try await session.rows("SELECT key FROM rtdb_leaves WHERE ns = \(namespace) ORDER BY key") {
                let path = DatabasePathKey.decode(try row.decode(ByteBuffer.self).readableBytesView)
                for spec in added {
                    guard let entry = spec.entry(containing: path), seen[spec, default: []].insert(entry.location.child(entry.child)).inserted
                    else { continue }
                    pending.append((spec, entry.location, entry.child))
                }
            }
            for (spec, location, child) in pending { try await Self.reindex(session, namespace, spec, location: location, child: child) }
        }
    }

    public func indexedChildren(
        namespace: String, location: DatabasePath, index: DatabaseIndexSpec, range: DatabaseIndexRange
    ) async throws -> DatabaseSubtree? {
        try await backend.snapshot { session in
            let (indexed, revision) = try await session.rows(
                """
                SELECT EXISTS (SELECT 1 FROM rtdb_indexes WHERE ns = \(namespace) AND idx = \(index.description)),
                    coalesce((SELECT revision FROM rtdb_namespaces WHERE ns = \(namespace)), 0)
                """
            )[0].decode((Bool, Int64).self)
            guard indexed else { return nil }
            var binds = PostgresBindings()
            binds.append(namespace)
            binds.append(index.description)
            binds.append(Self.bytes(DatabasePathKey.encode(location)))
            var sql = "SELECT name FROM rtdb_index_entries WHERE ns = $1 AND idx = $2 AND loc = $3"
            if let lower = range.lower {
                binds.append(Self.bytes(lower.key))
                sql += (lower.inclusive ? " AND sort >= $" : " AND sort > $") + "\(binds.count)"
            }
            if let upper = range.upper {
                binds.append(Self.bytes(upper.key))
                sql += (upper.inclusive ? " AND sort <= $" : " AND sort < $") + "\(binds.count)"
            }
            sql += range.fromEnd ? " ORDER BY sort DESC, child DESC" : " ORDER BY sort, child"
            if let limit = range.limit {
                binds.append(Int64(limit))
                sql += " LIMIT $\(binds.count)"
            }
            // The SQL text above is built from constants only; every value is bound.
            var names = try await session.rows(PostgresQuery(unsafeSQL: sql, binds: binds)).map { try $0.decode(String.self) }
            if range.fromEnd { names.reverse() }
            guard !names.isEmpty else { return DatabaseSubtree(revision: revision, leaves: []) }
            // Every child's subtree in one range join, in the children's order (a child is never the root,
            // so every range has an upper bound).
            let ranges = names.map { DatabasePathKey.subtreeRange(location.child($0)) }
            let lowers = ranges.map { Self.bytes($0.lower) }
            let uppers = ranges.map { Self.bytes($0.upper ?? []) }
            let leaves = try Self.leaves(
                await session.rows(
                    """
                    SELECT l.key, l.value FROM unnest(\(lowers)::bytea[], \(uppers)::bytea[]) WITH ORDINALITY AS r(lower, upper, n)
                    JOIN rtdb_leaves AS l ON l.ns = \(namespace) AND l.key >= r.lower AND l.key < r.upper
                    ORDER BY r.n, l.key
                    """))
            return DatabaseSubtree(revision: revision, leaves: leaves)
        }
    }
}
