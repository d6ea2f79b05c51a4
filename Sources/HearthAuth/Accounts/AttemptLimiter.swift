public import Synchronization

/// Where servers sharing a database count sign-in attempts, so that the limits hold for all of
/// them together (one server counts in memory: ``AttemptLimiter``). Keys are the limiter's own
/// (`<limiter> <what>`: an address, an email, a phone number or session); times in milliseconds.
public protocol SignInAttemptStore: Sendable {
    /// How many attempts of `key` were recorded after `since`.
    func attempts(_ key: String, after since: Int64) async throws -> Int
    /// Records an attempt of `key` at `time`; attempts (of any key) at or before `forgetting`
    /// may be forgotten.
    func recordAttempt(_ key: String, at time: Int64, forgetting: Int64) async throws
    /// Forgets every attempt of `key`.
    func resetAttempts(_ key: String) async throws
}

/// Sliding-window counters of sign-in attempts, per account and per client address.
/// In memory by default: a restart forgets them, which errs on the side of letting users in.
/// With a ``SignInAttemptStore`` (servers sharing a PostgreSQL database) the counts are the
/// store's, so N servers allow the limit, not N times it.
final class AttemptLimiter: Sendable {
    struct Limit: Sendable {
        var attempts: Int
        var windowMillis: Int64
    }

    let limit: Limit
    /// The limiter's name, prefixed to its keys in `store`.
    let name: String
    let store: (any SignInAttemptStore)?
    let events = Mutex<[String: [Int64]]>([:])

    init(_ limit: Limit, name: String = "", store: (any SignInAttemptStore)? = nil) {
        self.limit = limit
        self.name = name
        self.store = store
    }

    /// Whether `key` is over its limit (or over `attempts`, when given) at `now`.
    func isBlocked(_ key: String, now: Int64, limit attempts: Int? = nil) async throws -> Bool {
        let allowed = attempts ?? limit.attempts
        if let store { return try await store.attempts(name + " " + key, after: now - limit.windowMillis) >= allowed }
        return events.withLock { e in
            let recent = (e[key] ?? []).filter { $0 > now - limit.windowMillis }
            e[key] = recent.isEmpty ? nil : recent
            return recent.count >= allowed
        }
    }

    func record(_ key: String, now: Int64) async throws {
        if let store { return try await store.recordAttempt(name + " " + key, at: now, forgetting: now - limit.windowMillis) }
        events.withLock { e in
            if e.count > 100_000 { e = e.filter { $0.value.last ?? 0 > now - limit.windowMillis } }
            e[key, default: []].append(now)
        }
    }

    func reset(_ key: String) async throws {
        if let store { return try await store.resetAttempts(name + " " + key) }
        _ = events.withLock { $0.removeValue(forKey: key) }
    }
}
