public import HearthCore
import Foundation
public import Testing

/// The behaviour every ``ConsoleSessionStore`` must have, run unchanged against each one: in
/// memory (HearthCoreTests), PostgreSQL (HearthPostgresTests). Times are whole milliseconds, the
/// precision a database keeps.
public enum ConsoleSessionStoreConformance {
    public typealias Case = StoreConformanceCase<any ConsoleSessionStore>

    public static let all: [Case] = [
        Case(name: "a session is kept, touched and removed", store: lifecycle),
        Case(name: "a session ends when idle too long or too long after sign-in", store: expiry),
        Case(name: "past the capacity the least recently seen sessions go", store: capacity),
        Case(name: "the last-seen time never moves back", store: neverBack),
        Case(name: "several servers touching and creating at once", store: concurrent),
    ]

    static let t0 = Date(timeIntervalSince1970: 1_790_000_000)
    static let limits = ConsoleSessionLimits(idleTimeout: 60, absoluteTimeout: 600, capacity: 3)

    static func record(_ name: String, at: Date, csrf: String = "csrf") -> ConsoleSessionRecord {
        ConsoleSessionRecord(name: name, method: "password", csrfToken: csrf + "-" + name, createdAt: at, lastSeen: at)
    }

    static func lifecycle(_ store: any ConsoleSessionStore) async throws {
        #expect(try await store.touch(key: "missing", now: t0, limits: limits) == nil)
        let alice = ConsoleSessionRecord(name: "alice@example.com", method: "serviceAccount", csrfToken: "tok", createdAt: t0, lastSeen: t0)
        try await store.create(key: "k-alice", alice, limits: limits)
        let later = t0.addingTimeInterval(30)
        var seen = alice
        seen.lastSeen = later
        #expect(try await store.touch(key: "k-alice", now: later, limits: limits) == seen)
        #expect(try await store.touch(key: "k-bob", now: later, limits: limits) == nil)
        try await store.remove(key: "k-alice")
        #expect(try await store.touch(key: "k-alice", now: later, limits: limits) == nil)
        try await store.remove(key: "k-alice")
    }

    static func expiry(_ store: any ConsoleSessionStore) async throws {
        try await store.create(key: "idle", record("idle", at: t0), limits: limits)
        try await store.create(key: "busy", record("busy", at: t0), limits: limits)
        // Exactly the idle timeout: still live.
        #expect(try await store.touch(key: "idle", now: t0.addingTimeInterval(60), limits: limits) != nil)
        // One request every 50 s keeps "busy" alive until the absolute timeout.
        var now = t0
        while now.timeIntervalSince(t0) + 50 <= 600 {
            now = now.addingTimeInterval(50)
            #expect(try await store.touch(key: "busy", now: now, limits: limits) != nil, "busy at +\(now.timeIntervalSince(t0)) s")
        }
        #expect(try await store.touch(key: "idle", now: t0.addingTimeInterval(121), limits: limits) == nil)
        #expect(try await store.touch(key: "busy", now: t0.addingTimeInterval(601), limits: limits) == nil)
        // Forgotten: even a touch with a time inside its life finds nothing now.
        #expect(try await store.touch(key: "busy", now: t0.addingTimeInterval(590), limits: limits) == nil)
    }

    static func capacity(_ store: any ConsoleSessionStore) async throws {
        for (i, name) in ["a", "b", "c"].enumerated() {
            try await store.create(key: name, record(name, at: t0.addingTimeInterval(Double(i))), limits: limits)
        }
        // "a" is seen again: "b" is now the least recently seen.
        #expect(try await store.touch(key: "a", now: t0.addingTimeInterval(5), limits: limits) != nil)
        try await store.create(key: "d", record("d", at: t0.addingTimeInterval(6)), limits: limits)
        let now = t0.addingTimeInterval(7)
        #expect(try await store.touch(key: "b", now: now, limits: limits) == nil)
        for name in ["a", "c", "d"] {
            #expect(try await store.touch(key: name, now: now, limits: limits)?.name == name, "\(name) kept")
        }
        // Ended sessions make room before live ones go.
        let muchLater = t0.addingTimeInterval(100)
        try await store.create(key: "e", record("e", at: muchLater), limits: limits)
        try await store.create(key: "f", record("f", at: muchLater.addingTimeInterval(1)), limits: limits)
        try await store.create(key: "g", record("g", at: muchLater.addingTimeInterval(2)), limits: limits)
        for name in ["e", "f", "g"] {
            #expect(try await store.touch(key: name, now: muchLater.addingTimeInterval(3), limits: limits)?.name == name, "\(name) kept")
        }
    }

    static func neverBack(_ store: any ConsoleSessionStore) async throws {
        try await store.create(key: "k", record("k", at: t0), limits: limits)
        #expect(try await store.touch(key: "k", now: t0.addingTimeInterval(40), limits: limits)?.lastSeen == t0.addingTimeInterval(40))
        // A replica whose request was older answers with the newer time.
        #expect(try await store.touch(key: "k", now: t0.addingTimeInterval(20), limits: limits)?.lastSeen == t0.addingTimeInterval(40))
    }

    static func concurrent(_ store: any ConsoleSessionStore) async throws {
        let wide = ConsoleSessionLimits(idleTimeout: 60, absoluteTimeout: 600, capacity: 1000)
        try await store.create(key: "shared", record("shared", at: t0), limits: wide)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for server in 0..<8 {
                group.addTask {
                    for i in 0..<10 {
                        let now = t0.addingTimeInterval(Double(i + 1))
                        #expect(try await store.touch(key: "shared", now: now, limits: wide) != nil)
                        try await store.create(key: "s\(server)-\(i)", record("s\(server)-\(i)", at: now), limits: wide)
                    }
                }
            }
            try await group.waitForAll()
        }
        let now = t0.addingTimeInterval(20)
        #expect(try await store.touch(key: "shared", now: now, limits: wide)?.lastSeen == now)
        for server in 0..<8 {
            for i in 0..<10 {
                #expect(try await store.touch(key: "s\(server)-\(i)", now: now, limits: wide) != nil)
            }
        }
    }
}
