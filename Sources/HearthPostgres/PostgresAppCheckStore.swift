public import HearthCore
public import HearthAppCheck
import PostgresNIO

/// HearthAppCheck's ``AppCheckStore`` over PostgreSQL (migration 3 of ``PostgresSchema``), with
/// the tables of `GRDBAppCheckStore`. A limited-use token id is consumed by one
/// `INSERT … ON CONFLICT DO NOTHING` on its primary key, so it is single-use across every server
/// on the database: of two servers consuming one id at once, exactly one sees it fresh.
public struct PostgresAppCheckStore: AppCheckStore {
    let backend: PostgresBackend

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    public func addApp(_ appID: String, at time: Timestamp) async throws {
        try await backend.writeCommitted { session in
            try await session.execute(
                "INSERT INTO app_check_apps (app_id, created_us) VALUES (\(appID), \(time.microseconds)) ON CONFLICT (app_id) DO NOTHING")
        }
    }

    public func removeApp(_ appID: String) async throws -> Bool {
        try await backend.writeCommitted { session in
            try await session.exists("DELETE FROM app_check_apps WHERE app_id = \(appID) RETURNING 1")
        }
    }

    public func isRegistered(_ appID: String) async throws -> Bool {
        try await backend.read { session in try await session.exists("SELECT 1 FROM app_check_apps WHERE app_id = \(appID)") }
    }

    public func apps() async throws -> [(appID: String, created: Timestamp)] {
        let rows = try await backend.read { session in
            try await session.rows("SELECT app_id, created_us FROM app_check_apps ORDER BY app_id").map { row in
                let (appID, created) = try row.decode((String, Int64).self)
                return RegisteredApp(appID: appID, created: created)
            }
        }
        return rows.map { (appID: $0.appID, created: Timestamp(microseconds: $0.created)) }
    }

    struct RegisteredApp: Sendable {
        var appID: String
        var created: Int64
    }

    public func addDebugToken(appID: String, digest: [UInt8], name: String, at time: Timestamp) async throws {
        try await backend.writeCommitted { session in
            // An unregistered app fails the foreign key (as in SQLite), surfaced as an error.
            try await session.execute(
                """
                INSERT INTO app_check_debug_tokens (app_id, digest, name, created_us)
                VALUES (\(appID), \(ByteBuffer(bytes: digest)), \(name), \(time.microseconds))
                ON CONFLICT (app_id, digest) DO UPDATE SET name = excluded.name
                """)
        }
    }

    public func hasDebugToken(appID: String, digest: [UInt8]) async throws -> Bool {
        try await backend.read { session in
            try await session.exists("SELECT 1 FROM app_check_debug_tokens WHERE app_id = \(appID) AND digest = \(ByteBuffer(bytes: digest))")
        }
    }

    public func debugTokens(appID: String) async throws -> [(name: String, digestPrefix: String, created: Timestamp)] {
        let rows = try await backend.read { session in
            try await session.rows(
                "SELECT name, digest, created_us FROM app_check_debug_tokens WHERE app_id = \(appID) ORDER BY created_us, digest"
            ).map { row in
                let (name, digest, created) = try row.decode((String, ByteBuffer, Int64).self)
                return DebugToken(name: name, digest: Array(digest.readableBytesView), created: created)
            }
        }
        return rows.map { token in
            (name: token.name, digestPrefix: token.digest.prefix(4).map(Self.hex).joined(), created: Timestamp(microseconds: token.created))
        }
    }

    struct DebugToken: Sendable {
        var name: String
        var digest: [UInt8]
        var created: Int64
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    public func removeDebugTokens(appID: String, name: String) async throws -> Int {
        try await backend.writeCommitted { session in
            try await session.rows("DELETE FROM app_check_debug_tokens WHERE app_id = \(appID) AND name = \(name) RETURNING 1").count
        }
    }

    public func consume(tokenID: String, expires: Int64, now: Int64) async throws -> Bool {
        try await backend.writeCommitted { session in
            try await session.execute("DELETE FROM app_check_consumed WHERE expires < \(now)")
            let inserted = try await session.exists(
                "INSERT INTO app_check_consumed (token_id, expires) VALUES (\(tokenID), \(expires)) ON CONFLICT (token_id) DO NOTHING RETURNING 1")
            return !inserted
        }
    }
}
