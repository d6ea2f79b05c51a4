public import HearthCore
public import Testing

/// The behaviour every ``RuntimeRulesStore`` must have, run unchanged against each one: in memory
/// (HearthServerTests), PostgreSQL (HearthPostgresTests).
public enum RuntimeRulesStoreConformance {
    public typealias Case = StoreConformanceCase<any RuntimeRulesStore>

    public static let all: [Case] = [
        Case(name: "publishing replaces one service's scope and moves the version", store: publishing),
        Case(name: "cleared rules are kept as cleared", store: clearing),
        Case(name: "servers publishing at once: every publish gets its own version", store: concurrent),
    ]

    static func rules(_ service: String, _ scope: String, _ source: String?) -> RuntimeRules {
        RuntimeRules(service: service, scope: scope, fileName: "\(service).rules", source: source)
    }

    static func publishing(_ store: any RuntimeRulesStore) async throws {
        let start = try await store.version()
        #expect(try await store.snapshot().rules.isEmpty)
        let v1 = try await store.publish(rules("firestore", "p1", "A"))
        #expect(v1 > start)
        #expect(try await store.version() == v1)
        let v2 = try await store.publish(rules("firestore", "p2", "B"))
        let v3 = try await store.publish(rules("storage", "", "C"))
        #expect(v1 < v2 && v2 < v3)
        // The same service and scope again: replaced, not added.
        let v4 = try await store.publish(rules("firestore", "p1", "A2"))
        #expect(v4 > v3)
        let snapshot = try await store.snapshot()
        #expect(snapshot.version == v4)
        let found = Dictionary(uniqueKeysWithValues: snapshot.rules.map { ($0.service + "/" + $0.scope, $0) })
        #expect(found.count == 3)
        #expect(found["firestore/p1"] == rules("firestore", "p1", "A2"))
        #expect(found["firestore/p2"] == rules("firestore", "p2", "B"))
        #expect(found["storage/"] == rules("storage", "", "C"))
    }

    static func clearing(_ store: any RuntimeRulesStore) async throws {
        try await store.publish(rules("storage", "", "C"))
        let v = try await store.publish(rules("storage", "", nil))
        let snapshot = try await store.snapshot()
        #expect(snapshot.version == v)
        #expect(snapshot.rules == [rules("storage", "", nil)])
    }

    static func concurrent(_ store: any RuntimeRulesStore) async throws {
        let versions = try await withThrowingTaskGroup(of: Int64.self) { group in
            for server in 0..<8 {
                group.addTask { try await store.publish(rules("firestore", "p\(server % 2)", "server \(server)")) }
            }
            return try await group.reduce(into: [Int64]()) { $0.append($1) }
        }
        #expect(Set(versions).count == 8, "every publish moved the version")
        let snapshot = try await store.snapshot()
        #expect(snapshot.version == versions.max())
        #expect(snapshot.rules.count == 2)
    }
}
