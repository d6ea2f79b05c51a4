import Testing
import HearthCore
@testable import HearthAuth

/// The engine over the plan → apply seam when requests race: single-use secrets stay single
/// use, and the store's conflicts become Firebase's answers.
@Suite struct AuthEngineConcurrencyTests {
    /// Runs `body` `count` times at once; the successes' results and the failures' auth error codes.
    func race<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> T) async -> (won: [T], lost: [AuthErrorCode?]) {
        await withTaskGroup(of: Result<T, any Error>.self) { group in
            for i in 0..<count { group.addTask { do { return .success(try await body(i)) } catch { return .failure(error) } } }
            var won: [T] = []
            var lost: [AuthErrorCode?] = []
            for await result in group {
                switch result {
                case .success(let value): won.append(value)
                case .failure(let error): lost.append((error as? HearthError)?.authErrorCode)
                }
            }
            return (won, lost)
        }
    }

    @Test(arguments: Backend.allCases)
    func anOOBCodeResetsThePasswordOnce(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        _ = try await e.signUp(email: "a@example.com", password: "secret1")
        let code = try await e.createOOBCode(.passwordReset, email: "a@example.com")
        let result = await race(12) { i in try await e.resetPassword(oobCode: code.code, newPassword: "new-password-\(i)") }
        #expect(result.won.count == 1)
        #expect(result.lost == Array(repeating: .invalidOOBCode, count: 11))
        #expect(try await e.oobCodes().isEmpty)
        // Exactly one of the new passwords is set: the winner's.
        let winner = try #require(result.won.first)
        let hash = try #require(try await e.account(uid: winner.uid)?.passwordHash)
        #expect(try (0..<12).filter { try hash.verify("new-password-\($0)") }.count == 1)
        #expect(winner.passwordHash == hash)
    }

    @Test(arguments: Backend.allCases)
    func anEmailLinkSignsInOnce(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        let code = try await e.createOOBCode(.emailSignIn, email: "new@example.com")
        let result = await race(12) { _ in try await e.signInWithEmailLink(email: "new@example.com", oobCode: code.code) }
        #expect(result.won.count == 1 && result.won.first?.isNewUser == true)
        #expect(result.lost == Array(repeating: .invalidOOBCode, count: 11))
        #expect(try await e.listAccounts().accounts.count == 1)
    }

    @Test(arguments: Backend.allCases)
    func aPhoneSessionSignsInOnce(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        let code = try await e.createPhoneCode(phoneNumber: "+15555550100")
        let result = await race(12) { _ in try await e.signInWithPhoneNumber(sessionInfo: code.sessionInfo, code: code.code) }
        #expect(result.won.count == 1 && result.won.first?.isNewUser == true)
        #expect(result.lost == Array(repeating: .invalidSessionInfo, count: 11))
        #expect(try await e.account(phoneNumber: "+15555550100")?.uid == result.won.first?.account.uid)
        #expect(try await e.listAccounts().accounts.count == 1)
    }

    @Test(arguments: Backend.allCases)
    func concurrentSignUpsOfOneEmail(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        let result = await race(12) { _ in try await e.signUp(email: "same@example.com", password: "secret1") }
        #expect(result.won.count == 1)
        #expect(result.lost == Array(repeating: .emailExists, count: 11))
        #expect(try await e.listAccounts().accounts.map(\.uid) == result.won.map(\.account.uid))
    }

    @Test(arguments: Backend.allCases)
    func concurrentFirstSignInsOfOneProviderUser(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        let identity = ProviderIdentity(
            providerID: "google.com", rawID: "g-1", email: "g@example.com", emailVerified: true, displayName: nil, photoURL: nil, claims: .object([]))
        let result = await race(8) { _ in try await e.signIn(with: identity) }
        #expect(result.lost.isEmpty)
        let sessions = result.won.compactMap { $0.session }
        #expect(sessions.count == 8)
        #expect(Set(sessions.map(\.account.uid)).count == 1)
        #expect(sessions.filter(\.isNewUser).count == 1)
        #expect(try await e.listAccounts().accounts.count == 1)
    }

    @Test(arguments: Backend.allCases)
    func refreshesRaceARevocation(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let s = try await e.signUp(email: "a@example.com", password: "secret1")
        h.clock.advance(seconds: 10)
        // Refreshes of one account at once all succeed (each plans again after a conflict).
        let refreshes = await race(8) { _ in try await e.refresh(s.refreshToken) }
        #expect(refreshes.won.count == 8 && refreshes.lost.isEmpty)
        try await e.revokeTokens(uid: s.account.uid)
        await expectAuthError(.invalidRefreshToken) { try await e.refresh(s.refreshToken) }
    }

    @Test(arguments: Backend.allCases)
    func importReportsProviderUsersLinkedElsewhere(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        let link = ProviderUserInfo(providerID: "google.com", rawID: "g-1")
        #expect(try await e.importAccounts([NewAccount(uid: "u1", providers: [link])]).isEmpty)
        let errors = try await e.importAccounts([NewAccount(uid: "u2", providers: [link]), NewAccount(uid: "u1", providers: [link])])
        #expect(errors == [BatchItemError(index: 0, uid: "u2", message: "raw id exists in other account in database")])
        #expect(try await e.account(provider: "google.com", rawID: "g-1")?.uid == "u1")
        // An item frees a link that a later one takes.
        #expect(try await e.importAccounts([NewAccount(uid: "u1"), NewAccount(uid: "u3", providers: [link])]).isEmpty)
        #expect(try await e.account(provider: "google.com", rawID: "g-1")?.uid == "u3")
    }
}
