public import HearthAppCheck
public import Testing
import HearthCore

/// The scenarios every ``AppCheckStore`` passes — in-memory, SQLite, PostgreSQL — run by each
/// backend's test target with a factory for a fresh, empty store.
public enum AppCheckStoreConformance {
    /// One scenario, named for the test report.
    public typealias Case = StoreConformanceCase<any AppCheckStore>
    public typealias MakeStore = Case.MakeStore

    public static let all: [Case] = [
        Case(name: "appsAreRegisteredOnceAndRemovedWithTheirDebugTokens", body: appsAreRegisteredOnceAndRemovedWithTheirDebugTokens),
        Case(name: "debugTokensAreKeptByDigestAndRemovedByName", body: debugTokensAreKeptByDigestAndRemovedByName),
        Case(name: "aTokenIDIsConsumedOnceUntilItExpires", body: aTokenIDIsConsumedOnceUntilItExpires),
    ]

    /// Every scenario in turn, each on a fresh store.
    public static func runAll(make: MakeStore) async throws { try await Case.runAll(all, make: make) }

    static let app = "1:123456789012:ios:0a1b2c3d"
    static let web = "1:123456789012:web:ffff"

    static func appsAreRegisteredOnceAndRemovedWithTheirDebugTokens(_ make: MakeStore) async throws {
        let store = try await make()
        #expect(try await store.isRegistered(Self.app) == false)
        try await store.addApp(Self.web, at: Timestamp(microseconds: 5))
        try await store.addApp(Self.app, at: Timestamp(microseconds: 7))
        try await store.addApp(Self.app, at: Timestamp(microseconds: 9))
        let apps = try await store.apps()
        #expect(apps.map(\.appID) == [Self.app, Self.web])
        #expect(apps.map(\.created.microseconds) == [7, 5], "registering again changes nothing")
        #expect(try await store.isRegistered(Self.app))

        try await store.addDebugToken(appID: Self.app, digest: [0xAB, 0xCD, 0xEF, 0x01, 0x23], name: "ci", at: Timestamp(microseconds: 10))
        #expect(try await store.removeApp(Self.app))
        #expect(try await store.removeApp(Self.app) == false)
        #expect(try await store.isRegistered(Self.app) == false)
        #expect(try await store.hasDebugToken(appID: Self.app, digest: [0xAB, 0xCD, 0xEF, 0x01, 0x23]) == false)
        try await store.addApp(Self.app, at: Timestamp(microseconds: 11))
        #expect(try await store.debugTokens(appID: Self.app).isEmpty, "a re-registered app starts without tokens")
    }

    static func debugTokensAreKeptByDigestAndRemovedByName(_ make: MakeStore) async throws {
        let store = try await make()
        try await store.addApp(Self.app, at: Timestamp(microseconds: 1))
        try await store.addApp(Self.web, at: Timestamp(microseconds: 1))
        await #expect(throws: (any Error).self) {
            try await store.addDebugToken(appID: "1:0:ios:unknown", digest: [1], name: "x", at: Timestamp(microseconds: 2))
        }
        let first: [UInt8] = [0xAB, 0xCD, 0xEF, 0x01, 0x23]
        let second: [UInt8] = [0x00, 0x11, 0x22, 0x33, 0x44]
        try await store.addDebugToken(appID: Self.app, digest: first, name: "ci", at: Timestamp(microseconds: 10))
        try await store.addDebugToken(appID: Self.app, digest: second, name: "laptop", at: Timestamp(microseconds: 20))
        try await store.addDebugToken(appID: Self.app, digest: first, name: "ci-renamed", at: Timestamp(microseconds: 30))
        let tokens = try await store.debugTokens(appID: Self.app)
        #expect(tokens.map(\.name) == ["ci-renamed", "laptop"])
        #expect(tokens.map(\.digestPrefix) == ["abcdef01", "00112233"])
        #expect(tokens.map(\.created.microseconds) == [10, 20])
        #expect(try await store.hasDebugToken(appID: Self.app, digest: first))
        #expect(try await store.hasDebugToken(appID: Self.web, digest: first) == false, "tokens belong to one app")
        #expect(try await store.hasDebugToken(appID: Self.app, digest: Array(first.prefix(4))) == false)

        try await store.addDebugToken(appID: Self.app, digest: [9, 9, 9, 9], name: "laptop", at: Timestamp(microseconds: 40))
        #expect(try await store.removeDebugTokens(appID: Self.app, name: "laptop") == 2)
        #expect(try await store.removeDebugTokens(appID: Self.app, name: "laptop") == 0)
        #expect(try await store.removeDebugTokens(appID: Self.web, name: "ci-renamed") == 0)
        #expect(try await store.debugTokens(appID: Self.app).map(\.name) == ["ci-renamed"])
    }

    static func aTokenIDIsConsumedOnceUntilItExpires(_ make: MakeStore) async throws {
        let store = try await make()
        #expect(try await store.consume(tokenID: "t-1", expires: 100, now: 50) == false)
        #expect(try await store.consume(tokenID: "t-1", expires: 100, now: 60))
        #expect(try await store.consume(tokenID: "t-2", expires: 200, now: 60) == false)
        #expect(try await store.consume(tokenID: "t-1", expires: 100, now: 100), "still remembered at its expiry second")
        // Once expired it is forgotten (a token that old fails verification before it gets here).
        #expect(try await store.consume(tokenID: "t-1", expires: 300, now: 101) == false)
        #expect(try await store.consume(tokenID: "t-2", expires: 200, now: 101))
    }
}
