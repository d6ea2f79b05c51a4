public import Foundation
import Synchronization

/// A console sign-in session as a ``ConsoleSessionStore`` keeps it. The session id itself (the
/// cookie) is never stored: the store's key is its SHA-256, so a read of the store cannot sign in.
public struct ConsoleSessionRecord: Sendable, Equatable {
    /// Who signed in: an email, a service account, or `admin-token`.
    public var name: String
    /// `password`, `serviceAccount` or `token`.
    public var method: String
    /// The session's CSRF token (useless without the cookie, which only the browser holds).
    public var csrfToken: String
    public var createdAt: Date
    public var lastSeen: Date

    public init(name: String, method: String, csrfToken: String, createdAt: Date, lastSeen: Date) {
        self.name = name
        self.method = method
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.lastSeen = lastSeen
    }
}

/// How long a console session lives, and how many a store keeps.
public struct ConsoleSessionLimits: Sendable, Equatable {
    /// A session ends after this long without a request...
    public var idleTimeout: TimeInterval
    /// ...or this long after sign-in, whichever is first.
    public var absoluteTimeout: TimeInterval
    /// Past this many live sessions, the least recently seen ones go.
    public var capacity: Int

    public init(idleTimeout: TimeInterval = 30 * 60, absoluteTimeout: TimeInterval = 12 * 3600, capacity: Int = 256) {
        self.idleTimeout = idleTimeout
        self.absoluteTimeout = absoluteTimeout
        self.capacity = capacity
    }

    /// Whether `session` has ended at `now`.
    public func expired(_ session: ConsoleSessionRecord, now: Date) -> Bool {
        now.timeIntervalSince(session.lastSeen) > idleTimeout || now.timeIntervalSince(session.createdAt) > absoluteTimeout
    }
}

/// Where the console's sign-in sessions live: in the server's memory alone
/// (``InMemoryConsoleSessionStore``: a restart signs everyone out), or in a database every
/// replica shares (`PostgresConsoleSessionStore`: a browser signed in through one replica is
/// signed in on all of them behind a load balancer). Conformance: `ConsoleSessionStoreConformance`.
public protocol ConsoleSessionStore: Sendable {
    /// Keeps `session` under `key`. Ended sessions are forgotten on the way, and the least recently
    /// seen ones past `limits.capacity`.
    func create(key: String, _ session: ConsoleSessionRecord, limits: ConsoleSessionLimits) async throws
    /// The session under `key` with its `lastSeen` moved to `now` (never back), or nil when there is
    /// none or it has ended (then it is forgotten).
    func touch(key: String, now: Date, limits: ConsoleSessionLimits) async throws -> ConsoleSessionRecord?
    /// Forgets the session under `key` (signing out); nothing when there is none.
    func remove(key: String) async throws
}

/// The sessions of one server, in its memory.
public final class InMemoryConsoleSessionStore: ConsoleSessionStore {
    private let sessions = Mutex<[String: ConsoleSessionRecord]>([:])

    public init() {}

    public func create(key: String, _ session: ConsoleSessionRecord, limits: ConsoleSessionLimits) async throws {
        sessions.withLock { all in
            all = all.filter { $0.key != key && !limits.expired($0.value, now: session.createdAt) }
            while all.count >= max(limits.capacity, 1), let oldest = all.min(by: { $0.value.lastSeen < $1.value.lastSeen }) {
                all.removeValue(forKey: oldest.key)
            }
            all[key] = session
        }
    }

    public func touch(key: String, now: Date, limits: ConsoleSessionLimits) async throws -> ConsoleSessionRecord? {
        sessions.withLock { all in
            guard var session = all[key] else { return nil }
            if limits.expired(session, now: now) {
                all.removeValue(forKey: key)
                return nil
            }
            session.lastSeen = max(session.lastSeen, now)
            all[key] = session
            return session
        }
    }

    public func remove(key: String) async throws {
        _ = sessions.withLock { $0.removeValue(forKey: key) }
    }
}
