import HearthAuth
import HearthCore
import Testing

@testable import HearthPostgres

/// The auth engine over ``PostgresAuthStore``: its flows end to end, and two servers (two pools
/// over one database) racing on one email and one code — the uniqueness and single use that only
/// the database can enforce across servers. (The store itself runs the shared conformance suite
/// in PostgresStoreConformanceTests.)
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresAuthStoreTests {
    /// RSA keys are slow to generate in debug builds: one ring for every engine here.
    static let ring: KeyRing = try! KeyRing(directory: nil, policy: .init(rotationInterval: 1_000_000_000))

    static func engine(_ backend: PostgresBackend) -> AuthEngine {
        AuthEngine(
            store: PostgresAuthStore(backend: backend), tokens: TokenService(projectID: "demo-proj", keyRing: ring),
            configuration: .init(passwordHashing: .testing))
    }

    /// Two engines over one migrated database, each with its own pool: two servers.
    static func twoServers() async throws -> (AuthEngine, AuthEngine) {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        return (engine(await TestPostgres.shared.start(settings)), engine(await TestPostgres.shared.start(settings)))
    }

    static func expectAuthError<T>(_ code: AuthErrorCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T) async {
        do {
            _ = try await body()
            Issue.record("expected \(code.rawValue), got success", sourceLocation: sourceLocation)
        } catch let error as HearthError {
            #expect(error.authErrorCode == code, "got \(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
        }
    }

    /// `count` calls of `body` at once; the successes and the failures' auth error codes.
    static func race<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> T) async -> (won: [T], lost: [String]) {
        await withTaskGroup(of: Result<T, any Error>.self) { group in
            for i in 0..<count { group.addTask { do { return .success(try await body(i)) } catch { return .failure(error) } } }
            var won: [T] = []
            var lost: [String] = []
            for await result in group {
                switch result {
                case .success(let value): won.append(value)
                case .failure(let error): lost.append((error as? HearthError)?.authErrorCode?.rawValue ?? "\(error)")
                }
            }
            return (won, lost)
        }
    }

    @Test func signUpSignInRefreshAndAResetCode() async throws {
        let e = Self.engine(try await TestPostgres.shared.freshBackend())
        let s = try await e.signUp(email: "Alice@Example.com", password: "secret1", displayName: "Alice")
        #expect(s.account.email == "alice@example.com" && s.isNewUser)
        #expect(try await e.verifyIDToken(s.idToken, checkRevoked: true).uid == s.account.uid)
        await Self.expectAuthError(.emailExists) { try await e.signUp(email: "alice@example.com", password: "secret2") }
        let signedIn = try await e.signInWithPassword(email: "ALICE@example.com", password: "secret1")
        #expect(signedIn.account.uid == s.account.uid && !signedIn.isNewUser)
        await Self.expectAuthError(.invalidPassword) { try await e.signInWithPassword(email: "alice@example.com", password: "wrong!!") }

        let refreshed = try await e.refresh(s.refreshToken)
        #expect(refreshed.account.uid == s.account.uid)
        #expect(try await e.verifyIDToken(refreshed.idToken, checkRevoked: true).uid == s.account.uid)

        // The reset code works once; the old password stops working.
        let code = try await e.createOOBCode(.passwordReset, email: "alice@example.com")
        _ = try await e.resetPassword(oobCode: code.code, newPassword: "new-secret")
        await Self.expectAuthError(.invalidOOBCode) { try await e.resetPassword(oobCode: code.code, newPassword: "other-secret") }
        await Self.expectAuthError(.invalidPassword) { try await e.signInWithPassword(email: "alice@example.com", password: "secret1") }
        _ = try await e.signInWithPassword(email: "alice@example.com", password: "new-secret")

        // A revocation deletes the refresh tokens.
        try await e.revokeTokens(uid: s.account.uid)
        await Self.expectAuthError(.invalidRefreshToken) { try await e.refresh(s.refreshToken) }
        // Deleting the account frees its email.
        try await e.deleteAccount(uid: s.account.uid)
        #expect(try await e.signUp(email: "alice@example.com", password: "secret1").account.uid != s.account.uid)
    }

    @Test func twoServersSigningUpOneEmailCreateOneAccount() async throws {
        let (first, second) = try await Self.twoServers()
        for round in 0..<4 {
            let email = "same\(round)@example.com"
            let result = await Self.race(8) { i in try await (i % 2 == 0 ? first : second).signUp(email: email, password: "secret1") }
            #expect(result.won.count == 1, "round \(round): \(result.lost)")
            #expect(result.lost == Array(repeating: AuthErrorCode.emailExists.rawValue, count: 7), "round \(round)")
            #expect(try await second.account(email: email)?.uid == result.won.first?.account.uid)
        }
    }

    @Test func twoServersConsumingOneResetCodeUseItOnce() async throws {
        let (first, second) = try await Self.twoServers()
        _ = try await first.signUp(email: "a@example.com", password: "secret1")
        for round in 0..<4 {
            let code = try await first.createOOBCode(.passwordReset, email: "a@example.com")
            let result = await Self.race(8) { i in
                try await (i % 2 == 0 ? first : second).resetPassword(oobCode: code.code, newPassword: "password-\(round)-\(i)")
            }
            #expect(result.won.count == 1, "round \(round): \(result.lost)")
            #expect(result.lost == Array(repeating: AuthErrorCode.invalidOOBCode.rawValue, count: 7), "round \(round)")
        }
        #expect(try await second.oobCodes().isEmpty)
    }

    @Test func twoServersLinkingOneProviderUserLinkItOnce() async throws {
        let (first, second) = try await Self.twoServers()
        let identity = ProviderIdentity(
            providerID: "google.com", rawID: "g-1", email: "g@example.com", emailVerified: true, displayName: nil, photoURL: nil,
            claims: .object([]))
        let result = await Self.race(8) { i in try await (i % 2 == 0 ? first : second).signIn(with: identity) }
        #expect(result.lost.isEmpty)
        let sessions = result.won.compactMap { $0.session }
        #expect(sessions.count == 8)
        #expect(Set(sessions.map(\.account.uid)).count == 1)
        #expect(sessions.filter(\.isNewUser).count == 1)
    }

    @Test func twoServersSignWithTheStoredKeys() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let stores = [
            PostgresSigningKeyStore(backend: await TestPostgres.shared.start(settings)),
            PostgresSigningKeyStore(backend: await TestPostgres.shared.start(settings)),
        ]
        let policy = KeyRing.Policy(rotationInterval: 6 * 3600)
        // Both start at once on an empty ring: one set of keys comes out, the same for both.
        let rings = try await withThrowingTaskGroup(of: KeyRing.self) { group in
            for store in stores { group.addTask { try await KeyRing(store: store, ring: "auth", policy: policy) } }
            return try await group.reduce(into: [KeyRing]()) { $0.append($1) }
        }
        #expect(rings[0].publishedKeys.count == 2)
        #expect(rings[0].publishedKeys.map(\.kid) == rings[1].publishedKeys.map(\.kid))
        #expect(try await stores[1].keys(ring: "auth").map(\.kid) == rings[0].publishedKeys.map(\.kid))
        // A token one server signs, the other verifies.
        let account = Account(uid: "alice", createdAt: 0, validSince: 0)
        let token = try TokenService(projectID: "demo-proj", keyRing: rings[0]).mintIDToken(
            for: account, signInProvider: "password", authTime: AuthClock.system.seconds)
        #expect(try TokenService(projectID: "demo-proj", keyRing: rings[1]).verifyIDToken(token).uid == "alice")
        // A third server starting later adopts them.
        let late = try await KeyRing(store: stores[0], ring: "auth", policy: policy)
        #expect(late.publishedKeys.map(\.kid) == rings[0].publishedKeys.map(\.kid))
    }

    /// PostgreSQL's text holds no U+0000: lookups by such a key find nothing, and a change set
    /// that would store one is INVALID_ARGUMENT with nothing applied — not an INTERNAL error.
    @Test func aNULCharacterIsABadArgumentNotAFailure() async throws {
        let store = PostgresAuthStore(backend: try await TestPostgres.shared.freshBackend())
        #expect(try await store.account(uid: "a\u{0}b") == nil)
        #expect(try await store.account(email: "a\u{0}@example.com") == nil)
        #expect(try await store.oobCode("c\u{0}") == nil)
        #expect(try await store.refreshToken(hash: "\u{0}") == nil)
        let good = Account(uid: "u1", email: "a@example.com", createdAt: 1, validSince: 1)
        var bad = Account(uid: "u2", createdAt: 1, validSince: 1)
        bad.displayName = "x\u{0}y"
        do {
            try await store.apply(AuthChangeSet(mutations: [.saveAccount(good), .saveAccount(bad)]))
            Issue.record("a NUL character was stored")
        } catch let error as HearthError {
            #expect(error.code == .invalidArgument, "\(error)")
        }
        #expect(try await store.account(uid: "u1") == nil)
    }
}
