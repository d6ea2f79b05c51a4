public import HearthAuth
import HearthCore
public import Testing

/// The behaviour every ``SigningKeyStore`` must have, as scenarios that run unchanged against any
/// implementation: in memory (HearthAuthTests), PostgreSQL (HearthPostgresTests). Keys here are
/// opaque records (the store never parses the PEM); ``KeyRing`` over a store is tested apart.
public enum SigningKeyStoreConformance {
    public typealias Case = StoreConformanceCase<any SigningKeyStore>

    public static let all: [Case] = [
        Case(name: "keys are added after the latest activation a caller saw, and listed by activation", store: addAndList),
        Case(name: "rings are apart", store: ringsApart),
        Case(name: "removing keys", store: removal),
        Case(name: "servers adding the key that is due at once: exactly one is stored", store: concurrentAdds),
    ]

    static func key(_ kid: String, _ activatesAt: Int64) -> StoredSigningKey {
        StoredSigningKey(kid: kid, activatesAt: activatesAt, privateKeyPEM: "-----BEGIN PRIVATE KEY-----\n\(kid)\n-----END PRIVATE KEY-----\n")
    }

    static func addAndList(_ store: any SigningKeyStore) async throws {
        #expect(try await store.keys(ring: "auth").isEmpty)
        #expect(try await store.add(key("k1", 100), ring: "auth", ifLatestActivation: nil) == [key("k1", 100)])
        // Planned on an empty ring: refused, the stored ring comes back.
        #expect(try await store.add(key("k0", 50), ring: "auth", ifLatestActivation: nil) == [key("k1", 100)])
        #expect(try await store.add(key("k2", 200), ring: "auth", ifLatestActivation: 100) == [key("k1", 100), key("k2", 200)])
        // Planned on a stale latest activation: refused.
        #expect(try await store.add(key("k3", 300), ring: "auth", ifLatestActivation: 100) == [key("k1", 100), key("k2", 200)])
        #expect(try await store.add(key("k3", 300), ring: "auth", ifLatestActivation: 200) == [key("k1", 100), key("k2", 200), key("k3", 300)])
        #expect(try await store.keys(ring: "auth") == [key("k1", 100), key("k2", 200), key("k3", 300)])
    }

    static func ringsApart(_ store: any SigningKeyStore) async throws {
        _ = try await store.add(key("a1", 100), ring: "auth", ifLatestActivation: nil)
        #expect(try await store.keys(ring: "app-check").isEmpty)
        #expect(try await store.add(key("c1", 100), ring: "app-check", ifLatestActivation: nil) == [key("c1", 100)])
        try await store.remove(kids: ["a1"], ring: "app-check")
        #expect(try await store.keys(ring: "auth") == [key("a1", 100)])
    }

    static func removal(_ store: any SigningKeyStore) async throws {
        var latest: Int64? = nil
        for (i, at) in [Int64(100), 200, 300].enumerated() {
            _ = try await store.add(key("k\(i)", at), ring: "auth", ifLatestActivation: latest)
            latest = at
        }
        try await store.remove(kids: ["k0", "missing"], ring: "auth")
        #expect(try await store.keys(ring: "auth") == [key("k1", 200), key("k2", 300)])
        try await store.remove(kids: [], ring: "auth")
        #expect(try await store.keys(ring: "auth").count == 2)
        // The latest activation is what is stored now.
        #expect(try await store.add(key("k3", 400), ring: "auth", ifLatestActivation: 300).map(\.kid) == ["k1", "k2", "k3"])
    }

    static func concurrentAdds(_ store: any SigningKeyStore) async throws {
        var latest: Int64? = nil
        for round in 0..<4 {
            // Each server plans its own key on the same latest activation (a first key's time is each one's clock).
            let base = (latest ?? 0) + 100
            let planned = latest
            let results = try await withThrowingTaskGroup(of: [StoredSigningKey].self) { group in
                for server in 0..<8 {
                    group.addTask {
                        try await store.add(key("r\(round)-s\(server)", base + Int64(server)), ring: "auth", ifLatestActivation: planned)
                    }
                }
                return try await group.reduce(into: [[StoredSigningKey]]()) { $0.append($1) }
            }
            let stored = try await store.keys(ring: "auth")
            #expect(stored.count == round + 1, "round \(round): one key added")
            #expect(stored.last.map { $0.kid.hasPrefix("r\(round)-") } == true, "round \(round)")
            // Every server got the stored ring back, whichever key won.
            #expect(results.allSatisfy { $0 == stored }, "round \(round)")
            latest = stored.last?.activatesAt
        }
    }
}
