import Synchronization

/// Remembers tokens whose signature already verified, so a token presented again — an ID
/// token is sent with every request for up to an hour — costs a dictionary lookup instead of
/// an RSA verification. Only successes are stored (an attacker cannot mint entries), and the
/// caller re-checks everything time-dependent on a hit (expiry, key still published).
///
/// Bounded: two generations of at most `capacity` entries each; when the young one fills up,
/// the old one is dropped and the young one takes its place, and a hit in the old generation
/// moves the entry back to the young one — recently used tokens stay.
public final class VerifiedTokenCache<Value: Sendable>: Sendable {
    struct Generations {
        var young: [String: Value] = [:]
        var old: [String: Value] = [:]
    }

    public let capacity: Int
    let state = Mutex(Generations())

    /// `capacity` 0 disables the cache.
    public init(capacity: Int = 4096) {
        self.capacity = max(0, capacity)
    }

    public func value(for token: String) -> Value? {
        guard capacity > 0 else { return nil }
        return state.withLock { g in
            if let v = g.young[token] { return v }
            guard let v = g.old.removeValue(forKey: token) else { return nil }
            Self.insert(v, token, into: &g, capacity: capacity)
            return v
        }
    }

    public func insert(_ value: Value, for token: String) {
        guard capacity > 0 else { return }
        state.withLock { g in Self.insert(value, token, into: &g, capacity: capacity) }
    }

    public func removeAll() {
        state.withLock { $0 = Generations() }
    }

    public var count: Int { state.withLock { $0.young.count + $0.old.count } }

    static func insert(_ value: Value, _ token: String, into g: inout Generations, capacity: Int) {
        if g.young.count >= capacity && g.young[token] == nil {
            g.old = g.young
            g.young = [:]
        }
        g.young[token] = value
    }
}
