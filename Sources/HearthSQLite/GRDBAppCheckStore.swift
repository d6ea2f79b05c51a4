public import HearthCore
public import HearthAppCheck
public import GRDB
import Foundation

/// HearthAppCheck's ``AppCheckStore`` over SQLite (`<data-dir>/app-check.sqlite`, WAL): the server and
/// `hearth admin app-check` share it. Statements bind every value.
public struct GRDBAppCheckStore: AppCheckStore {
    let writer: any DatabaseWriter

    public init(writer: any DatabaseWriter) throws {
        self.writer = writer
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE app_check_apps(app_id TEXT PRIMARY KEY, created_us INTEGER NOT NULL);
                    CREATE TABLE app_check_debug_tokens(
                        app_id TEXT NOT NULL REFERENCES app_check_apps(app_id) ON DELETE CASCADE,
                        digest BLOB NOT NULL, name TEXT NOT NULL, created_us INTEGER NOT NULL, PRIMARY KEY(app_id, digest));
                    CREATE TABLE app_check_consumed(token_id TEXT PRIMARY KEY, expires INTEGER NOT NULL);
                    CREATE INDEX app_check_consumed_expiry ON app_check_consumed(expires);
                    """)
        }
        try migrator.migrate(writer)
    }

    /// Opens (creating) the store at `path`.
    public static func open(path: String) throws -> GRDBAppCheckStore {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        return try GRDBAppCheckStore(writer: DatabasePool(path: path, configuration: configuration))
    }

    public func addApp(_ appID: String, at time: Timestamp) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT INTO app_check_apps(app_id, created_us) VALUES (?, ?) ON CONFLICT(app_id) DO NOTHING",
                arguments: [appID, time.microseconds])
        }
    }

    public func removeApp(_ appID: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM app_check_apps WHERE app_id = ?", arguments: [appID])
            return db.changesCount > 0
        }
    }

    public func isRegistered(_ appID: String) async throws -> Bool {
        try await writer.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM app_check_apps WHERE app_id = ?)", arguments: [appID]) ?? false
        }
    }

    public func apps() async throws -> [(appID: String, created: Timestamp)] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT app_id, created_us FROM app_check_apps ORDER BY app_id").map {
                (appID: $0["app_id"], created: Timestamp(microseconds: $0["created_us"]))
            }
        }
    }

    public func addDebugToken(appID: String, digest: [UInt8], name: String, at time: Timestamp) async throws {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO app_check_debug_tokens(app_id, digest, name, created_us) VALUES (?, ?, ?, ?)
                    ON CONFLICT(app_id, digest) DO UPDATE SET name = excluded.name
                    """,
                arguments: [appID, Data(digest), name, time.microseconds])
        }
    }

    public func hasDebugToken(appID: String, digest: [UInt8]) async throws -> Bool {
        try await writer.read { db in
            try Bool.fetchOne(
                db, sql: "SELECT EXISTS(SELECT 1 FROM app_check_debug_tokens WHERE app_id = ? AND digest = ?)",
                arguments: [appID, Data(digest)]) ?? false
        }
    }

    public func debugTokens(appID: String) async throws -> [(name: String, digestPrefix: String, created: Timestamp)] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT name, digest, created_us FROM app_check_debug_tokens WHERE app_id = ? ORDER BY created_us", arguments: [appID])
                .map { row in
                    let digest: Data = row["digest"]
                    return (name: row["name"], digestPrefix: digest.prefix(4).map { String(format: "%02x", $0) }.joined(),
                            created: Timestamp(microseconds: row["created_us"]))
                }
        }
    }

    public func removeDebugTokens(appID: String, name: String) async throws -> Int {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM app_check_debug_tokens WHERE app_id = ? AND name = ?", arguments: [appID, name])
            return db.changesCount
        }
    }

    public func consume(tokenID: String, expires: Int64, now: Int64) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM app_check_consumed WHERE expires < ?", arguments: [now])
            try db.execute(
                sql: "INSERT INTO app_check_consumed(token_id, expires) VALUES (?, ?) ON CONFLICT(token_id) DO NOTHING",
                arguments: [tokenID, expires])
            return db.changesCount == 0
        }
    }
}
