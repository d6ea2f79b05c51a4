public import HearthAuth
import PostgresNIO

/// Sign-in attempts counted in `auth_sign_in_attempts` (migration 10): every server over the
/// database counts the same attempts, so the limits hold for all of them together. The key is
/// stored as its UTF-8 bytes (`bytea`: a key may hold any character). Old attempts are
/// forgotten on the way: a record deletes its key's attempts outside the window, and one
/// record in 64 those of every key.
extension PostgresAuthStore: SignInAttemptStore {
    static func key(_ key: String) -> ByteBuffer { ByteBuffer(bytes: Array(key.utf8)) }

    public func attempts(_ key: String, after since: Int64) async throws -> Int {
        let key = Self.key(key)
        return try await backend.read { session in
            try await session.value("SELECT count(*) FROM auth_sign_in_attempts WHERE key = \(key) AND at_ms > \(since)", as: Int.self) ?? 0
        }
    }

    public func recordAttempt(_ key: String, at time: Int64, forgetting: Int64) async throws {
        let key = Self.key(key)
        let everyKey = Int.random(in: 0..<64) == 0
        try await backend.writeCommitted { session in
            try await session.execute("INSERT INTO auth_sign_in_attempts (key, at_ms) VALUES (\(key), \(time))")
            if everyKey {
                try await session.execute("DELETE FROM auth_sign_in_attempts WHERE at_ms <= \(forgetting)")
            } else {
                try await session.execute("DELETE FROM auth_sign_in_attempts WHERE key = \(key) AND at_ms <= \(forgetting)")
            }
        }
    }

    public func resetAttempts(_ key: String) async throws {
        let key = Self.key(key)
        try await backend.writeCommitted { session in
            try await session.execute("DELETE FROM auth_sign_in_attempts WHERE key = \(key)")
        }
    }
}
