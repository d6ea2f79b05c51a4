import HearthCore
import Foundation
import Synchronization

/// Who signed in to the console, and how.
struct ConsolePrincipal: Sendable, Equatable {
    /// Shown in the console and in logs: an email, a service account, or `admin-token`.
    var name: String
    /// `password` (a console user), `serviceAccount`, or `token` (the admin credential).
    var method: String
}

/// The console's sign-in sessions, held in memory: a session ends when the server restarts,
/// after `idleTimeout` without a request, or `absoluteTimeout` after sign-in, whichever is first.
///
/// A session id is 256 random bits sent only in an HttpOnly cookie; its CSRF token is another
/// 256 bits that the page reads from `GET /api/session` and echoes in `X-CSRF-Token` on every
/// change (the server compares in constant time).
final class ConsoleSessions: Sendable {
    struct Session: Sendable {
        var principal: ConsolePrincipal
        var csrfToken: String
        var createdAt: Date
        var lastSeen: Date
    }

    let idleTimeout: TimeInterval
    let absoluteTimeout: TimeInterval
    let capacity: Int
    private let sessions = Mutex<[String: Session]>([:])
    /// Sign-in failures in the current minute (all clients): past a few, answers slow down.
    private let failures = Mutex<(minute: Int64, count: Int)>((0, 0))

    init(idleTimeout: TimeInterval = 30 * 60, absoluteTimeout: TimeInterval = 12 * 3600, capacity: Int = 256) {
        self.idleTimeout = idleTimeout
        self.absoluteTimeout = absoluteTimeout
        self.capacity = capacity
    }

    static func randomToken() -> String { Base64.urlEncode(SecureRandom.bytes(32)) }

    /// Starts a session; returns its id and CSRF token. The oldest session goes when full.
    func create(_ principal: ConsolePrincipal, now: Date = Date()) -> (id: String, session: Session) {
        let id = Self.randomToken()
        let session = Session(principal: principal, csrfToken: Self.randomToken(), createdAt: now, lastSeen: now)
        sessions.withLock { all in
            all = all.filter { !expired($0.value, now: now) }
            if all.count >= capacity, let oldest = all.min(by: { $0.value.lastSeen < $1.value.lastSeen }) {
                all.removeValue(forKey: oldest.key)
            }
            all[id] = session
        }
        return (id, session)
    }

    /// The live session with this id (its idle clock restarted), or nil.
    func session(_ id: String, now: Date = Date()) -> Session? {
        sessions.withLock { all in
            guard var s = all[id] else { return nil }
            if expired(s, now: now) {
                all.removeValue(forKey: id)
                return nil
            }
            s.lastSeen = now
            all[id] = s
            return s
        }
    }

    func end(_ id: String) { _ = sessions.withLock { $0.removeValue(forKey: id) } }

    private func expired(_ s: Session, now: Date) -> Bool {
        now.timeIntervalSince(s.lastSeen) > idleTimeout || now.timeIntervalSince(s.createdAt) > absoluteTimeout
    }

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
