import GRDB
import HearthCore
public import HearthDatabase
import Foundation

/// The Realtime Database's trees in SQLite (WAL, `synchronous=FULL`): one row per leaf,
/// keyed by (namespace, the path's order-preserving byte key), so a subtree is one range
/// scan of the primary key and a write touches only the rows it replaces. Each namespace's
/// revision and rules sit in a row of their own; ``apply(_:)`` checks and bumps the revision
/// in the same transaction as the leaf changes.
public final class SQLiteDatabaseTreeStore: DatabaseTreeStore {
    let pool: DatabasePool

    public init(path: String) throws {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        do {
            pool = try DatabasePool(path: path, configuration: config)
            try pool.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS rtdb_leaves (
                            ns TEXT NOT NULL, key BLOB NOT NULL, value TEXT NOT NULL, PRIMARY KEY (ns, key)
                        ) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS rtdb_namespaces (
                            ns TEXT PRIMARY KEY NOT NULL, revision INTEGER NOT NULL, rules TEXT
                        );
                        CREATE TABLE IF NOT EXISTS rtdb_indexes (
                            ns TEXT NOT NULL, idx TEXT NOT NULL, PRIMARY KEY (ns, idx)
                        ) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS rtdb_index_entries (
                            ns TEXT NOT NULL, idx TEXT NOT NULL, loc BLOB NOT NULL, sort BLOB NOT NULL, child BLOB NOT NULL,
                            name TEXT NOT NULL, PRIMARY KEY (ns, idx, loc, sort, child)
                        ) WITHOUT ROWID;
                        CREATE UNIQUE INDEX IF NOT EXISTS rtdb_index_entries_by_child ON rtdb_index_entries (ns, idx, loc, name);
                        """)
            }
        } catch {
            throw HearthError(.failedPrecondition, "Cannot open \(path): \(error)")
        }
    }

    static func revision(_ db: Database, _ namespace: String) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT revision FROM rtdb_namespaces WHERE ns = ?", arguments: [namespace]) ?? 0
    }

    static func leaf(_ row: Row) -> DatabaseLeaf {
        let key: Data = row[0]
        return DatabaseLeaf(path: DatabasePathKey.decode(Array(key)), value: row[1])
    }

    /// Every namespace that holds data, in order (exports).
    public func namespaces() async throws -> [String] {
        try await pool.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT ns FROM rtdb_leaves ORDER BY ns") }
    }

    public func subtree(namespace: String, at path: DatabasePath) async throws -> DatabaseSubtree {
        let (lower, upper) = DatabasePathKey.subtreeRange(path)
        return try await pool.read { db in
            let revision = try Self.revision(db, namespace)
            let rows: [Row]
            if let upper {
                rows = try Row.fetchAll(
                    db.cachedStatement(sql: "SELECT key, value FROM rtdb_leaves WHERE ns = ? AND key >= ? AND key < ?"),
                    arguments: [namespace, Data(lower), Data(upper)])
            } else {
                rows = try Row.fetchAll(
                    db.cachedStatement(sql: "SELECT key, value FROM rtdb_leaves WHERE ns = ?"), arguments: [namespace])
            }
            return DatabaseSubtree(revision: revision, leaves: rows.map(Self.leaf))
        }
    }

    public func leaves(namespace: String, at paths: [DatabasePath]) async throws -> [DatabaseLeaf] {
        try await pool.read { db in
            let statement = try db.cachedStatement(sql: "SELECT key, value FROM rtdb_leaves WHERE ns = ? AND key = ?")
            return try paths.compactMap { path in
                try Row.fetchOne(statement, arguments: [namespace, Data(DatabasePathKey.encode(path))]).map(Self.leaf)
            }
        }
    }

    public func apply(_ commit: DatabaseTreeCommit) async throws -> Int64? {
        try await pool.write { db in
            guard try Self.revision(db, commit.namespace) == commit.expectedRevision else { return nil }
            for path in commit.clearedSubtrees {
                let (lower, upper) = DatabasePathKey.subtreeRange(path)
                if let upper {
                    try db.cachedStatement(sql: "DELETE FROM rtdb_leaves WHERE ns = ? AND key >= ? AND key < ?")
                        .execute(arguments: [commit.namespace, Data(lower), Data(upper)])
                } else {
                    try db.cachedStatement(sql: "DELETE FROM rtdb_leaves WHERE ns = ?").execute(arguments: [commit.namespace])
                }
            }
            let delete = try db.cachedStatement(sql: "DELETE FROM rtdb_leaves WHERE ns = ? AND key = ?")
            for path in commit.clearedLeaves {
                try delete.execute(arguments: [commit.namespace, Data(DatabasePathKey.encode(path))])
            }
            let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO rtdb_leaves (ns, key, value) VALUES (?, ?, ?)")
            for leaf in commit.writtenLeaves {
                try insert.execute(arguments: [commit.namespace, Data(DatabasePathKey.encode(leaf.path)), leaf.value])
            }
            try Self.updateIndexes(db, commit)
            let revision = commit.expectedRevision + 1
            try db.execute(
                sql: """
                    INSERT INTO rtdb_namespaces (ns, revision) VALUES (?, ?)
                    ON CONFLICT (ns) DO UPDATE SET revision = excluded.revision
                    """,
                arguments: [commit.namespace, revision])
            return revision
        }
    }

    public func rules(namespace: String) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(db, sql: "SELECT rules FROM rtdb_namespaces WHERE ns = ?", arguments: [namespace])
        }
    }

    public func setRules(_ text: String, namespace: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO rtdb_namespaces (ns, revision, rules) VALUES (?, 0, ?)
                    ON CONFLICT (ns) DO UPDATE SET rules = excluded.rules
                    """,
                arguments: [namespace, text])
        }
    }

    // MARK: Indexes

    static func specs(_ db: Database, _ namespace: String) throws -> Set<DatabaseIndexSpec> {
        let names = try String.fetchAll(db.cachedStatement(sql: "SELECT idx FROM rtdb_indexes WHERE ns = ?"), arguments: [namespace])
        return Set(names.compactMap(DatabaseIndexSpec.init(name:)))
    }

    static func firstLeaf(_ db: Database, _ namespace: String, under path: DatabasePath) throws -> DatabaseLeaf? {
        let (lower, upper) = DatabasePathKey.subtreeRange(path)
        guard let upper else {
            return try Row.fetchOne(
                db.cachedStatement(sql: "SELECT key, value FROM rtdb_leaves WHERE ns = ? ORDER BY key LIMIT 1"), arguments: [namespace]
            ).map(Self.leaf)
        }
        return try Row.fetchOne(
            db.cachedStatement(sql: "SELECT key, value FROM rtdb_leaves WHERE ns = ? AND key >= ? AND key < ? ORDER BY key LIMIT 1"),
            arguments: [namespace, Data(lower), Data(upper)]
        ).map(Self.leaf)
    }

    /// Recomputes the entry of `child` of `location` in `spec` from the leaves.
    static func reindex(_ db: Database, _ namespace: String, _ spec: DatabaseIndexSpec, location: DatabasePath, child: String) throws {
        let name = spec.description
        let loc = Data(DatabasePathKey.encode(location))
        try db.cachedStatement(sql: "DELETE FROM rtdb_index_entries WHERE ns = ? AND idx = ? AND loc = ? AND name = ?")
            .execute(arguments: [namespace, name, loc, child])
        guard try firstLeaf(db, namespace, under: location.child(child)) != nil else { return }
        let sortPath = spec.sortPath(location: location, child: child)
        let sort = DatabaseIndexKey.sortKey(at: sortPath, firstLeaf: try firstLeaf(db, namespace, under: sortPath))
        try db.cachedStatement(sql: "INSERT INTO rtdb_index_entries (ns, idx, loc, sort, child, name) VALUES (?, ?, ?, ?, ?, ?)")
            .execute(arguments: [namespace, name, loc, Data(sort), Data(DatabaseIndexKey.childKey(child)), child])
    }

    /// Brings the namespace's indexes up to date with `commit`'s leaf changes (same transaction).
    static func updateIndexes(_ db: Database, _ commit: DatabaseTreeCommit) throws {
        let indexes = try Self.specs(db, commit.namespace)
        guard !indexes.isEmpty else { return }
        let changes = DatabaseIndexChanges(commit, specs: Array(indexes))
        for (spec, within) in changes.clearedLocations {
            let (lower, upper) = DatabasePathKey.subtreeRange(within)
            if let upper {
                try db.cachedStatement(sql: "DELETE FROM rtdb_index_entries WHERE ns = ? AND idx = ? AND loc >= ? AND loc < ?")
                    .execute(arguments: [commit.namespace, spec.description, Data(lower), Data(upper)])
            } else {
                try db.cachedStatement(sql: "DELETE FROM rtdb_index_entries WHERE ns = ? AND idx = ?")
                    .execute(arguments: [commit.namespace, spec.description])
            }
        }
        for (spec, locations) in changes.touched {
            for (location, children) in locations {
                for child in children { try reindex(db, commit.namespace, spec, location: location, child: child) }
            }
        }
    }

    public func indexes(namespace: String) async throws -> Set<DatabaseIndexSpec> {
        try await pool.read { db in try Self.specs(db, namespace) }
    }

    public func setIndexes(_ specs: Set<DatabaseIndexSpec>, namespace: String) async throws {
        try await pool.write { db in
            let existing = try Self.specs(db, namespace)
            for spec in existing.subtracting(specs) {
                try db.execute(sql: "DELETE FROM rtdb_index_entries WHERE ns = ? AND idx = ?", arguments: [namespace, spec.description])
                try db.execute(sql: "DELETE FROM rtdb_indexes WHERE ns = ? AND idx = ?", arguments: [namespace, spec.description])
            }
            let added = specs.subtracting(existing)
            guard !added.isEmpty else { return }
            for spec in added {
                try db.execute(sql: "INSERT INTO rtdb_indexes (ns, idx) VALUES (?, ?)", arguments: [namespace, spec.description])
            }
            // One pass over the namespace's leaves finds every covered child of the new indexes.
            var seen: [DatabaseIndexSpec: Set<DatabasePath>] = [:]
            let cursor = try Data.fetchCursor(db, sql: "SELECT key FROM rtdb_leaves WHERE ns = ? ORDER BY key", arguments: [namespace])
            var pending: [(DatabaseIndexSpec, DatabasePath, String)] = []
            while let key = try cursor.next() {
                let path = DatabasePathKey.decode(Array(key))
                for spec in added {
                    guard let entry = spec.entry(containing: path), seen[spec, default: []].insert(entry.location.child(entry.child)).inserted
                    else { continue }
                    pending.append((spec, entry.location, entry.child))
                }
            }
            for (spec, location, child) in pending { try Self.reindex(db, namespace, spec, location: location, child: child) }
        }
    }

    public func indexedChildren(
        namespace: String, location: DatabasePath, index: DatabaseIndexSpec, range: DatabaseIndexRange
    ) async throws -> DatabaseSubtree? {
        try await pool.read { db in
            guard try Self.specs(db, namespace).contains(index) else { return nil }
            var sql = "SELECT name FROM rtdb_index_entries WHERE ns = ? AND idx = ? AND loc = ?"
            var arguments: StatementArguments = [namespace, index.description, Data(DatabasePathKey.encode(location))]
            if let lower = range.lower {
                sql += lower.inclusive ? " AND sort >= ?" : " AND sort > ?"
                arguments += [Data(lower.key)]
            }
            if let upper = range.upper {
                sql += upper.inclusive ? " AND sort <= ?" : " AND sort < ?"
                arguments += [Data(upper.key)]
            }
            sql += range.fromEnd ? " ORDER BY sort DESC, child DESC" : " ORDER BY sort, child"
            if let limit = range.limit {
                sql += " LIMIT ?"
                arguments += [limit]
            }
            var names = try String.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
            if range.fromEnd { names.reverse() }
            let revision = try Self.revision(db, namespace)
            let statement = try db.cachedStatement(sql: "SELECT key, value FROM rtdb_leaves WHERE ns = ? AND key >= ? AND key < ?")
            var leaves: [DatabaseLeaf] = []
            for name in names {
                let (lower, upper) = DatabasePathKey.subtreeRange(location.child(name))
                guard let upper else { continue }  // a child is never the root
                leaves += try Row.fetchAll(statement, arguments: [namespace, Data(lower), Data(upper)]).map(Self.leaf)
            }
            return DatabaseSubtree(revision: revision, leaves: leaves)
        }
    }
}
