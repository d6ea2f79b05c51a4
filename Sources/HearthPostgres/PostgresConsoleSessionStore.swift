public import HearthCore
public import Foundation
import PostgresNIO

/// The console's sign-in sessions in `console_sessions` (migration 11 of ``PostgresSchema``):
/// every replica over the database knows every session, so a browser signed in through one
/// replica stays signed in whichever replica a load balancer sends it to, and signing out
/// anywhere ends it everywhere. The key is the SHA-256 of the session id (the cookie), never the
/// id. Times are kept in milliseconds.
public struct PostgresConsoleSessionStore: ConsoleSessionStore {
    let backend: PostgresBackend

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    static func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
    static func ms(_ interval: TimeInterval) -> Int64 { Int64((interval * 1000).rounded()) }

    public func create(key: String, _ session: ConsoleSessionRecord, limits: ConsoleSessionLimits) async throws {
        let now = Self.ms(session.createdAt)
        let idleSince = now - Self.ms(limits.idleTimeout)
        let createdSince = now - Self.ms(limits.absoluteTimeout)
        let keep = max(limits.capacity, 1)
        try await backend.writeCommitted { db in
            try await db.execute("DELETE FROM console_sessions WHERE last_seen_ms < \(idleSince) OR created_ms < \(createdSince)")
            try await db.execute(
                """
                INSERT INTO console_sessions (key, name, method, csrf_token, created_ms, last_seen_ms)
                VALUES (\(key), \(session.name), \(session.method), \(session.csrfToken), \(Self.ms(session.createdAt)), \(Self.ms(session.lastSeen)))
                ON CONFLICT (key) DO UPDATE SET name = excluded.name, method = excluded.method, csrf_token = excluded.csrf_token,
                    created_ms = excluded.created_ms, last_seen_ms = excluded.last_seen_ms
                """)
            try await db.execute(
                """
                DELETE FROM console_sessions WHERE key IN (
                    SELECT key FROM console_sessions ORDER BY (key = \(key)) DESC, last_seen_ms DESC, key OFFSET \(keep))
                """)
        }
    }

    public func touch(key: String, now: Date, limits: ConsoleSessionLimits) async throws -> ConsoleSessionRecord? {
        let at = Self.ms(now)
        let idleSince = at - Self.ms(limits.idleTimeout)
        let createdSince = at - Self.ms(limits.absoluteTimeout)
        return try await backend.writeCommitted { db in
            let rows = try await db.rows(
                """
                UPDATE console_sessions SET last_seen_ms = greatest(last_seen_ms, \(at))
                WHERE key = \(key) AND last_seen_ms >= \(idleSince) AND created_ms >= \(createdSince)
                RETURNING name, method, csrf_token, created_ms, last_seen_ms
                """)
            guard let row = rows.first else {
                try await db.execute("DELETE FROM console_sessions WHERE key = \(key)")
                return nil
            }
            let (name, method, csrf, created, seen) = try row.decode((String, String, String, Int64, Int64).self)
            return ConsoleSessionRecord(name: name, method: method, csrfToken: csrf, createdAt: Self.date(created), lastSeen: Self.date(seen))
        }
    }

    public func remove(key: String) async throws {
        try await backend.writeCommitted { db in
            try await db.execute("DELETE FROM console_sessions WHERE key = \(key)")
        }
    }
}
