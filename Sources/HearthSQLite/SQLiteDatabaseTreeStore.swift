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
}
