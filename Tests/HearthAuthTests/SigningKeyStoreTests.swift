import Testing
import HearthCore
import HearthJWT
import HearthStoreConformance
@testable import HearthAuth

/// Key rings shared through a ``SigningKeyStore``: the store conformance suite in memory, and
/// two servers' rings over one store signing and verifying alike through a rotation.
@Suite struct SigningKeyStoreTests {
    @Test(arguments: SigningKeyStoreConformance.all)
    func conformance(_ scenario: SigningKeyStoreConformance.Case) async throws {
        try await scenario.run { InMemorySigningKeyStore() }
    }

    @Test func ringsOverOneStoreSignAndVerifyAlike() async throws {
        let clock = TestClock()
        let policy = KeyRing.Policy(rotationInterval: 7200, maxTokenLifetime: 3600, clockSkew: 300)
        let store = InMemorySigningKeyStore()
        let a = try await KeyRing(store: store, ring: "auth", policy: policy, clock: clock.clock)
        let b = try await KeyRing(store: store, ring: "auth", policy: policy, clock: clock.clock)
        #expect(a.publishedKeys.count == 2)  // active + next
        #expect(a.publishedKeys.map(\.kid) == b.publishedKeys.map(\.kid))
        #expect(try await store.keys(ring: "auth").map(\.kid) == a.publishedKeys.map(\.kid))
        let sa = TokenService(projectID: "demo-proj", keyRing: a, clock: clock.clock)
        let sb = TokenService(projectID: "demo-proj", keyRing: b, clock: clock.clock)
        let alice = Account(uid: "alice", createdAt: 0, validSince: 0)
        let t1 = try sa.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)
        #expect(try sb.verifyIDToken(t1).uid == "alice")

        // The next key's time comes before anyone synchronized: both sign with the stored next
        // key (published a whole interval ahead), never with one of their own.
        clock.advance(seconds: 7200)
        let next = a.publishedKeys[1].kid
        let t2 = try sb.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)
        #expect(JWT.parse(t2)?.keyID == next)
        #expect(try sa.verifyIDToken(t2).uid == "alice")
        #expect(a.publishedKeys.count == 2 && b.publishedKeys.count == 2)

        // Synchronizing (in either order) adds one new next key, the same for both.
        try await b.synchronize()
        try await a.synchronize()
        #expect(a.publishedKeys.count == 3)
        #expect(a.publishedKeys.map(\.kid) == b.publishedKeys.map(\.kid))
        #expect(try await store.keys(ring: "auth").count == 3)

        // Once every token the first key signed has expired, it leaves the store and both rings.
        clock.advance(seconds: 3600 + 300)
        try await a.synchronize()
        try await b.synchronize()
        #expect(try await store.keys(ring: "auth").map(\.kid) == a.publishedKeys.map(\.kid))
        #expect(a.publishedKeys.count == 2 && a.publishedKeys[0].kid == next)
        #expect(b.publishedKeys.map(\.kid) == a.publishedKeys.map(\.kid))

        // Another ring name is another ring.
        let appCheck = try await KeyRing(store: store, ring: "app-check", policy: policy, clock: clock.clock)
        #expect(Set(appCheck.publishedKeys.map(\.kid)).isDisjoint(with: a.publishedKeys.map(\.kid)))
        #expect(try await store.keys(ring: "auth").count == 2)
    }

    @Test func aStoredKeyThatIsNotItsIdIsRefused() async throws {
        let store = InMemorySigningKeyStore()
        let policy = KeyRing.Policy(rotationInterval: 7200)
        let honest = try await KeyRing(store: store, ring: "auth", policy: policy)
        let stored = try await store.keys(ring: "auth")
        // A row whose key is another's: loading it is DATA_LOSS, not a key signing under a false id.
        let forged = InMemorySigningKeyStore()
        _ = try await forged.add(
            StoredSigningKey(kid: stored[0].kid, activatesAt: stored[0].activatesAt, privateKeyPEM: stored[1].privateKeyPEM), ring: "auth",
            ifLatestActivation: nil)
        await #expect(throws: HearthError.self) { _ = try await KeyRing(store: forged, ring: "auth", policy: policy) }
        #expect(honest.publishedKeys.count == 2)
    }

    /// A server whose clock is behind the one that made the first key still signs (with that
    /// key, which is published), instead of failing to start.
    @Test func aServerWithASlowClockSignsWithTheStoredKey() async throws {
        let store = InMemorySigningKeyStore()
        let policy = KeyRing.Policy(rotationInterval: 7200)
        let ahead = TestClock()
        let behind = TestClock()
        ahead.advance(seconds: 3)
        let first = try await KeyRing(store: store, ring: "auth", policy: policy, clock: ahead.clock)
        let slow = try await KeyRing(store: store, ring: "auth", policy: policy, clock: behind.clock)
        #expect(slow.publishedKeys.map(\.kid) == first.publishedKeys.map(\.kid))
        #expect(try slow.activeKey().kid == first.publishedKeys[0].kid)
    }
}
