public import HearthCore
import Synchronization

/// ``AppCheckStore`` in memory, behind one lock: for tests, and the reference the store
/// conformance suite holds `GRDBAppCheckStore` (HearthSQLite) to. Nothing survives the process.
public final class InMemoryAppCheckStore: AppCheckStore {
    struct DebugToken {
        var name: String
        var created: Timestamp
    }

    struct State {
        var apps: [String: Timestamp] = [:]
        var debugTokens: [String: [[UInt8]: DebugToken]] = [:]
        var consumed: [String: Int64] = [:]
    }

    let state = Mutex(State())

    public init() {}

    public func addApp(_ appID: String, at time: Timestamp) async throws {
        state.withLock { s in
            if s.apps[appID] == nil { s.apps[appID] = time }
        }
    }

    public func removeApp(_ appID: String) async throws -> Bool {
        state.withLock { s in
            s.debugTokens[appID] = nil
            return s.apps.removeValue(forKey: appID) != nil
        }
    }

    public func isRegistered(_ appID: String) async throws -> Bool {
        state.withLock { $0.apps[appID] != nil }
    }

    public func apps() async throws -> [(appID: String, created: Timestamp)] {
        state.withLock { s in
            s.apps.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { (appID: $0.key, created: $0.value) }
        }
    }

    public func addDebugToken(appID: String, digest: [UInt8], name: String, at time: Timestamp) async throws {
        try state.withLock { s throws(HearthError) in
            guard s.apps[appID] != nil else { throw HearthError(.notFound, "App \(appID) is not registered.") }
            if s.debugTokens[appID]?[digest] != nil {
                s.debugTokens[appID]?[digest]?.name = name
            } else {
                s.debugTokens[appID, default: [:]][digest] = DebugToken(name: name, created: time)
            }
        }
    }

    public func hasDebugToken(appID: String, digest: [UInt8]) async throws -> Bool {
        state.withLock { $0.debugTokens[appID]?[digest] != nil }
    }

    public func debugTokens(appID: String) async throws -> [(name: String, digestPrefix: String, created: Timestamp)] {
        let digits = Array("0123456789abcdef")
        return state.withLock { s in
            (s.debugTokens[appID] ?? [:]).sorted { $0.value.created.microseconds < $1.value.created.microseconds }.map { digest, token in
                let prefix = String(digest.prefix(4).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
                return (name: token.name, digestPrefix: prefix, created: token.created)
            }
        }
    }

    public func removeDebugTokens(appID: String, name: String) async throws -> Int {
        state.withLock { s in
            let matching = (s.debugTokens[appID] ?? [:]).filter { $0.value.name == name }.keys
            for digest in matching { s.debugTokens[appID]?[digest] = nil }
            return matching.count
        }
    }

    public func consume(tokenID: String, expires: Int64, now: Int64) async throws -> Bool {
        state.withLock { s in
            s.consumed = s.consumed.filter { $0.value >= now }
            if s.consumed[tokenID] != nil { return true }
            s.consumed[tokenID] = expires
            return false
        }
    }
}
