import Crypto
import HearthCore
import HearthStorage
import Foundation
import Synchronization

/// Who signed in to the console, and how.
struct ConsolePrincipal: Sendable, Equatable {
    /// Shown in the console and in logs: an email, a service account, or `admin-token`.
    var name: String
    /// `password` (a console user), `serviceAccount`, or `token` (the admin credential).
    var method: String
}

/// The console's sign-in sessions, kept in a ``ConsoleSessionStore``: in memory on one server (a
/// restart ends them), in the database that replicas share (PostgreSQL: a session started
/// through one replica holds on every replica). A session ends after `idleTimeout` without a
/// request, or `absoluteTimeout` after sign-in, whichever is first.
///
/// A session id is 256 random bits sent only in an HttpOnly cookie; the store keeps only its
/// SHA-256. Its CSRF token is another 256 bits that the page reads from `GET /api/session` and
/// echoes in `X-CSRF-Token` on every change (the server compares in constant time).
final class ConsoleSessions: Sendable {
    struct Session: Sendable {
        var principal: ConsolePrincipal
        var csrfToken: String
        var createdAt: Date
        var lastSeen: Date
    }

    let store: any ConsoleSessionStore
    let limits: ConsoleSessionLimits
    var idleTimeout: TimeInterval { limits.idleTimeout }
    var absoluteTimeout: TimeInterval { limits.absoluteTimeout }
    /// Sign-in failures in the current minute (all clients of this server): past a few, answers slow down.
    private let failures = Mutex<(minute: Int64, count: Int)>((0, 0))

    init(store: any ConsoleSessionStore = InMemoryConsoleSessionStore(), limits: ConsoleSessionLimits = ConsoleSessionLimits()) {
        self.store = store
        self.limits = limits
    }

    static func randomToken() -> String { Base64.urlEncode(SecureRandom.bytes(32)) }

    /// The store's key for a session id: its SHA-256, hex.
    static func key(_ id: String) -> String {
        SigV4.hex(SHA256.hash(data: Array(id.utf8)))
    }

    /// Starts a session; returns its id and CSRF token. The least recently seen session goes when full.
    func create(_ principal: ConsolePrincipal, now: Date = Date()) async throws -> (id: String, session: Session) {
        let id = Self.randomToken()
        let session = Session(principal: principal, csrfToken: Self.randomToken(), createdAt: now, lastSeen: now)
        try await store.create(
            key: Self.key(id),
            ConsoleSessionRecord(name: principal.name, method: principal.method, csrfToken: session.csrfToken, createdAt: now, lastSeen: now),
            limits: limits)
        return (id, session)
    }

    /// The live session with this id (its idle clock restarted), or nil.
    func session(_ id: String, now: Date = Date()) async throws -> Session? {
        guard let record = try await store.touch(key: Self.key(id), now: now, limits: limits) else { return nil }
        return Session(
            principal: ConsolePrincipal(name: record.name, method: record.method), csrfToken: record.csrfToken,
            createdAt: record.createdAt, lastSeen: record.lastSeen)
    }

    func end(_ id: String) async throws { try await store.remove(key: Self.key(id)) }

    /// Records a failed sign-in; returns how long to wait before answering (0 for the first five a minute).
    func recordFailure(now: Date = Date()) -> Duration {
        let minute = Int64(now.timeIntervalSince1970 / 60)
        let count = failures.withLock { f in
            if f.minute != minute { f = (minute, 0) }
            f.count += 1
            return f.count
        }
        return count <= 5 ? .zero : .seconds(min(count - 5, 5))
    }
}
