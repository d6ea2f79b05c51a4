import Synchronization

/// Sliding-window counters of sign-in attempts, per account and per client address.
/// In memory only: a restart forgets them, which errs on the side of letting users in.
final class AttemptLimiter: Sendable {
    struct Limit: Sendable {
        var attempts: Int
        var windowMillis: Int64
    }

    let limit: Limit
    let events = Mutex<[String: [Int64]]>([:])

    init(_ limit: Limit) { self.limit = limit }

    /// Whether `key` is over its limit (or over `attempts`, when given) at `now`.
    func isBlocked(_ key: String, now: Int64, limit attempts: Int? = nil) -> Bool {
        events.withLock { e in
            let recent = (e[key] ?? []).filter { $0 > now - limit.windowMillis }
            e[key] = recent.isEmpty ? nil : recent
            return recent.count >= (attempts ?? limit.attempts)
        }
    }

    func record(_ key: String, now: Int64) {
        events.withLock { e in
            if e.count > 100_000 { e = e.filter { $0.value.last ?? 0 > now - limit.windowMillis } }
            e[key, default: []].append(now)
        }
    }

    func reset(_ key: String) { _ = events.withLock { $0.removeValue(forKey: key) } }
}
