import Testing
import Foundation
import GRDB
import HearthCore
import HearthJWT
@testable import HearthAuth
@testable import HearthSQLite

enum Backend: String, CaseIterable, Sendable {
    case memory, sqliteQueue, sqliteFile

    func makeStore() throws -> any AuthStore {
        switch self {
        case .memory: return InMemoryAuthStore()
        case .sqliteQueue: return try GRDBAuthStore(writer: DatabaseQueue())
        case .sqliteFile:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-auth-\(UUID().uuidString).sqlite").path
            return try GRDBAuthStore(writer: DatabasePool(path: path))
        }
    }
}

/// An engine over one backend with a hand-moved clock and cheap scrypt.
struct Harness {
    let clock = TestClock()
    let engine: AuthEngine

    init(_ backend: Backend, configuration: AuthEngine.Configuration = .init(passwordHashing: .testing)) throws {
        let tokens = TokenService(projectID: "demo-proj", keyRing: sharedRing, clock: clock.clock)
        engine = AuthEngine(store: try backend.makeStore(), tokens: tokens, configuration: configuration)
    }
}

@Suite struct AuthEngineTests {
    @Test(arguments: Backend.allCases)
    func signUpAndSignIn(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let s = try await e.signUp(email: "Alice@Example.com", password: "secret1", displayName: "Alice")
        #expect(s.account.email == "alice@example.com" && s.isNewUser)
        #expect(try await e.verifyIDToken(s.idToken, checkRevoked: true).uid == s.account.uid)
        await expectAuthError(.emailExists) { try await e.signUp(email: "alice@example.com", password: "secret2") }
        await expectAuthError(.weakPassword) { try await e.signUp(email: "b@example.com", password: "12345") }
        await expectAuthError(.missingPassword) { try await e.signUp(email: "b@example.com", password: nil) }
        await expectAuthError(.invalidEmail) { try await e.signUp(email: "not-an-email", password: "secret1") }
        do {
            _ = try await e.signUp(email: "b@example.com", password: "1")
        } catch let err as HearthError {
            #expect(err.message == "WEAK_PASSWORD : Password should be at least 6 characters")
        }
        let again = try await e.signInWithPassword(email: "ALICE@example.com", password: "secret1")
        #expect(again.account.uid == s.account.uid && !again.isNewUser)
        await expectAuthError(.invalidPassword) { try await e.signInWithPassword(email: "alice@example.com", password: "wrong!!") }
        await expectAuthError(.emailNotFound) { try await e.signInWithPassword(email: "nobody@example.com", password: "secret1") }
        _ = try await e.updateAccount(uid: s.account.uid, AccountUpdate(disabled: true))
        await expectAuthError(.userDisabled) { try await e.signInWithPassword(email: "alice@example.com", password: "secret1") }
        await expectAuthError(.userDisabled) { try await e.verifyIDToken(s.idToken, checkRevoked: true) }
        await expectAuthError(.userDisabled) { try await e.refresh(s.refreshToken) }
    }

    @Test(arguments: Backend.allCases)
    func deletionsAreReportedAfterTheyCommit(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let deletions = e.accountDeletions.subscribe()
        #expect(e.accountDeletions.subscriberCount == 1)
        for i in 0..<4 { _ = try await e.createAccount(NewAccount(uid: "u\(i)")) }
        try await e.deleteAccount(uid: "u0")
        await expectAuthError(.userNotFound) { try await e.deleteAccount(uid: "u0") }  // nothing reported
        _ = try await e.updateAccount(uid: "u2", AccountUpdate(disabled: true))
        // Only the deleted ones: u1 is enabled (not forced), "missing" does not exist.
        #expect(try await e.deleteAccounts(uids: ["u1", "u2", "missing"], force: false).map(\.uid) == ["u1"])
        let session = try await e.signUp(email: "self@example.com", password: "secret1")
        try await e.deleteAccount(idToken: session.idToken)
        var iterator = deletions.makeAsyncIterator()
        #expect(await iterator.next() == ["u0"])
        #expect(await iterator.next() == ["u2"])
        #expect(await iterator.next() == [session.account.uid])
        // A subscriber that stops listening is forgotten.
        iterator = AsyncStream<[String]> { $0.finish() }.makeAsyncIterator()
        _ = consume deletions
        #expect(e.accountDeletions.subscriberCount == 0)
    }

    @Test func enumerationProtectionCollapsesErrors() async throws {
        let h = try Harness(.memory, configuration: .init(passwordHashing: .testing, emailEnumerationProtection: true))
        _ = try await h.engine.signUp(email: "a@example.com", password: "secret1")
        await expectAuthError(.invalidLoginCredentials) { try await h.engine.signInWithPassword(email: "a@example.com", password: "nope!!") }
        await expectAuthError(.invalidLoginCredentials) { try await h.engine.signInWithPassword(email: "z@example.com", password: "nope!!") }
    }

    @Test func attemptLimits() async throws {
        let h = try Harness(.memory, configuration: .init(passwordHashing: .testing, accountFailureLimit: 3, addressAttemptLimit: 5))
        let e = h.engine
        _ = try await e.signUp(email: "a@example.com", password: "secret1")
        for _ in 0..<3 { await expectAuthError(.invalidPassword) { try await e.signInWithPassword(email: "a@example.com", password: "bad!!!") } }
        await expectAuthError(.tooManyAttempts) { try await e.signInWithPassword(email: "a@example.com", password: "secret1") }
        h.clock.advance(seconds: 301)
        _ = try await e.signInWithPassword(email: "a@example.com", password: "secret1")
        // Per client address, whatever the account.
        for i in 0..<5 {
            await expectAuthError(.emailNotFound) { try await e.signInWithPassword(email: "x\(i)@example.com", password: "p4ssword", clientAddress: "10.0.0.9") }
        }
        await expectAuthError(.tooManyAttempts) { try await e.signInWithPassword(email: "a@example.com", password: "secret1", clientAddress: "10.0.0.9") }
        _ = try await e.signInWithPassword(email: "a@example.com", password: "secret1", clientAddress: "10.0.0.10")
    }

    @Test func signUpLimits() async throws {
        let h = try Harness(.memory, configuration: .init(passwordHashing: .testing, accountFailureLimit: 2, addressAttemptLimit: 3))
        let e = h.engine
        // Per client address, counted apart from sign-ins (anonymous sign-ups too).
        for i in 0..<2 { _ = try await e.signUp(email: "u\(i)@example.com", password: "secret1", clientAddress: "10.0.0.1") }
        _ = try await e.signUp(email: nil, password: nil, clientAddress: "10.0.0.1")
        await expectAuthError(.tooManyAttempts) { try await e.signUp(email: "u9@example.com", password: "secret1", clientAddress: "10.0.0.1") }
        _ = try await e.signInWithPassword(email: "u0@example.com", password: "secret1", clientAddress: "10.0.0.1")
        // Sign-ups of a registered address: limited per address, without locking the owner's sign-in.
        for i in 0..<2 {
            await expectAuthError(.emailExists) { try await e.signUp(email: "u0@example.com", password: "secret1", clientAddress: "10.0.1.\(i)") }
        }
        await expectAuthError(.tooManyAttempts) { try await e.signUp(email: "u0@example.com", password: "secret1", clientAddress: "10.0.1.9") }
        _ = try await e.signInWithPassword(email: "u0@example.com", password: "secret1", clientAddress: "10.0.2.1")
        // The window passes.
        h.clock.advance(seconds: 301)
        _ = try await e.signUp(email: "u9@example.com", password: "secret1", clientAddress: "10.0.0.1")
        // Without an address (emulator mode, the Admin API) nothing is limited.
        for _ in 0..<4 { await expectAuthError(.emailExists) { try await e.signUp(email: "u0@example.com", password: "secret1") } }
    }

    @Test(arguments: Backend.allCases)
    func refreshAndRevocation(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let s = try await e.signUp(email: "a@example.com", password: "secret1")
        h.clock.advance(seconds: 3000)
        let r = try await e.refresh(s.refreshToken)
        #expect(r.refreshToken == s.refreshToken)
        let v = try await e.verifyIDToken(r.idToken)
        #expect(v.authTime == h.clock.seconds - 3000 && v.issuedAt == h.clock.seconds)
        await expectAuthError(.invalidRefreshToken) { try await e.refresh("garbage") }
        await expectAuthError(.missingRefreshToken) { try await e.refresh("") }
        h.clock.advance(seconds: 10)
        try await e.revokeTokens(uid: s.account.uid)
        await expectAuthError(.invalidRefreshToken) { try await e.refresh(s.refreshToken) }
        await expectAuthError(.tokenExpired) { try await e.verifyIDToken(r.idToken, checkRevoked: true) }
        #expect(try await e.verifyIDToken(r.idToken).uid == s.account.uid)  // signature-only check still passes
        let fresh = try await e.signInWithPassword(email: "a@example.com", password: "secret1")
        #expect(try await e.verifyIDToken(fresh.idToken, checkRevoked: true).uid == s.account.uid)
        try await e.deleteAccount(uid: s.account.uid)
        await expectAuthError(.userNotFound) { try await e.verifyIDToken(fresh.idToken, checkRevoked: true) }
        await expectAuthError(.invalidRefreshToken) { try await e.refresh(fresh.refreshToken) }
    }

    @Test(arguments: Backend.allCases)
    func anonymousLinkKeepsUID(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let anon = try await e.signUp(email: nil, password: nil)
        #expect(anon.account.isAnonymous)
        #expect(JWT.parse(anon.idToken)!.payload["firebase"]?["sign_in_provider"]?.stringValue == "anonymous")
        h.clock.advance(seconds: 3600 * 24)  // anonymous users need no recent login to link
        let refreshed = try await e.refresh(anon.refreshToken)
        let linked = try await e.linkEmailPassword(idToken: refreshed.idToken, email: "Anon@Example.com", password: "secret1")
        #expect(linked.account.uid == anon.account.uid && linked.account.email == "anon@example.com")
        let v = try await e.verifyIDToken(linked.idToken, checkRevoked: true)
        #expect(v.signInProvider == "password")
        #expect(try await e.signInWithPassword(email: "anon@example.com", password: "secret1").account.uid == anon.account.uid)
    }

    @Test(arguments: Backend.allCases)
    func clientUpdatesNeedRecentLogin(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let s = try await e.signUp(email: "a@example.com", password: "secret1")
        let (a, none) = try await e.updateAccount(idToken: s.idToken, AccountUpdate(displayName: "A", photoURL: "https://x/p.png"))
        #expect(a.displayName == "A" && none == nil)
        await expectAuthError(.adminOnlyOperation) { try await e.updateAccount(idToken: s.idToken, AccountUpdate(customClaims: "{}")) }
        h.clock.advance(seconds: 301)
        await expectAuthError(.credentialTooOld) { try await e.updateAccount(idToken: s.idToken, AccountUpdate(password: "secret2")) }
        await expectAuthError(.credentialTooOld) { try await e.deleteAccount(idToken: s.idToken) }
        let fresh = try await e.signInWithPassword(email: "a@example.com", password: "secret1")
        let (_, session) = try await e.updateAccount(idToken: fresh.idToken, AccountUpdate(password: "secret2"))
        let newSession = try #require(session)
        await expectAuthError(.invalidRefreshToken) { try await e.refresh(fresh.refreshToken) }
        _ = try await e.refresh(newSession.refreshToken)
        let (b, _) = try await e.updateAccount(idToken: newSession.idToken, AccountUpdate(deleteAttributes: [.displayName, .photoURL]))
        #expect(b.displayName == nil && b.photoURL == nil)
        try await e.deleteAccount(idToken: newSession.idToken)
        #expect(try await e.account(uid: s.account.uid) == nil)
    }

    @Test(arguments: Backend.allCases)
    func adminUpdatesAndClaims(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let a = try await e.createAccount(NewAccount(uid: "u1", email: "u1@example.com", password: "secret1", displayName: "U"))
        await expectAuthError(.duplicateLocalID) { try await e.createAccount(NewAccount(uid: "u1")) }
        await expectAuthError(.emailExists) { try await e.createAccount(NewAccount(uid: "u2", email: "U1@example.com")) }
        await expectAuthError(.userNotFound) { try await e.updateAccount(uid: "nobody", AccountUpdate(displayName: "x")) }
        await expectAuthError(.forbiddenClaim) { try await e.updateAccount(uid: "u1", AccountUpdate(customClaims: #"{"iss":"x"}"#)) }
        await expectAuthError(.claimsTooLarge) {
            try await e.updateAccount(uid: "u1", AccountUpdate(customClaims: "{\"k\":\"\(String(repeating: "x", count: 1000))\"}"))
        }
        await expectAuthError(.invalidClaims) { try await e.updateAccount(uid: "u1", AccountUpdate(customClaims: "[1]")) }
        let u = try await e.updateAccount(uid: "u1", AccountUpdate(customClaims: #"{"role":"admin"}"#, emailVerified: true))
        #expect(u.customClaims == #"{"role":"admin"}"# && u.emailVerified && u.uid == a.uid)
        let s = try await e.signInWithPassword(email: "u1@example.com", password: "secret1")
        let v = try await e.verifyIDToken(s.idToken)
        #expect(v.claims["role"]?.stringValue == "admin" && v.claims["email_verified"]?.boolValue == true)
        #expect(try await e.lookup(uids: ["u1", "zz"], emails: ["U1@EXAMPLE.COM"]).map(\.uid) == ["u1"])
    }

    @Test(arguments: Backend.allCases)
    func listingPagesAndBatchDelete(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        for i in 0..<7 { _ = try await e.createAccount(NewAccount(uid: "user\(i)")) }
        var seen: [String] = []
        var token: String? = nil
        repeat {
            let page = try await e.listAccounts(maxResults: 3, pageToken: token)
            seen += page.accounts.map(\.uid)
            token = page.nextPageToken
        } while token != nil
        #expect(seen == (0..<7).map { "user\($0)" })
        await expectAuthError(.invalidPageSelection) { try await e.listAccounts(maxResults: 0) }
        await expectAuthError(.invalidPageSelection) { try await e.listAccounts(pageToken: "!!!") }
        _ = try await e.updateAccount(uid: "user1", AccountUpdate(disabled: true))
        let errors = try await e.deleteAccounts(uids: ["user0", "user1", "missing"], force: false)
        #expect(errors.map(\.index) == [0])
        #expect(try await e.deleteAccounts(uids: ["user0", "user2"], force: true).isEmpty)
        #expect(try await e.listAccounts().accounts.map(\.uid) == ["user3", "user4", "user5", "user6"])
        try await e.deleteAllAccounts()
        #expect(try await e.listAccounts().accounts.isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func importWithHashesUpgradesOnSignIn(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let fb = try FirebaseScryptParameters(
            base64SignerKey: "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
            base64SaltSeparator: "Bw==", rounds: 8, memoryCost: 14)
        let salt = Array("NaCl".utf8)
        let errors = try await e.importAccounts([
            NewAccount(uid: "fb", email: "fb@example.com", passwordHash: .firebaseScrypt(
                fb, salt: b64("42xEC+ixf3L2lw=="),
                hash: b64("lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="))),
            NewAccount(uid: "pb", email: "pb@example.com", passwordHash: .pbkdf2SHA256(
                rounds: 100, salt: salt, hash: PBKDF2.derive(SHA256Alias.self, password: Array("pbkdf2pw".utf8), salt: salt, iterations: 100, length: 32))),
            NewAccount(uid: "dup", email: "fb@example.com"),
            NewAccount(uid: "bad", email: "nope"),
        ])
        #expect(errors.map(\.index) == [2, 3])
        let s = try await e.signInWithPassword(email: "fb@example.com", password: "user1password")
        #expect(s.account.passwordHash?.isNative(.testing) == true)
        #expect(try await e.account(uid: "fb")?.passwordHash?.isNative(.testing) == true)
        _ = try await e.signInWithPassword(email: "fb@example.com", password: "user1password")  // now with the native hash
        _ = try await e.signInWithPassword(email: "pb@example.com", password: "pbkdf2pw")
        await expectAuthError(.invalidPassword) { try await e.signInWithPassword(email: "pb@example.com", password: "wrong-pw") }
    }

    @Test(arguments: Backend.allCases)
    func oobCodes(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let s = try await e.signUp(email: "a@example.com", password: "secret1")
        await expectAuthError(.emailNotFound) { try await e.createOOBCode(.passwordReset, email: "b@example.com") }
        let reset = try await e.createOOBCode(.passwordReset, email: "A@example.com", continueURL: "https://app/done")
        #expect(try await e.oobCodes().map(\.code) == [reset.code])
        #expect(try await e.inspectOOBCode(reset.code).email == "a@example.com")
        await expectAuthError(.invalidOOBCode) { try await e.applyVerifyEmail(oobCode: reset.code) }
        let a = try await e.resetPassword(oobCode: reset.code, newPassword: "secret2")
        #expect(a.emailVerified)
        await expectAuthError(.invalidOOBCode) { try await e.resetPassword(oobCode: reset.code, newPassword: "secret3") }
        await expectAuthError(.invalidRefreshToken) { try await e.refresh(s.refreshToken) }
        _ = try await e.signInWithPassword(email: "a@example.com", password: "secret2")

        let verify = try await e.createOOBCode(.verifyEmail, email: "a@example.com")
        h.clock.advance(seconds: 3601)
        await expectAuthError(.expiredOOBCode) { try await e.applyVerifyEmail(oobCode: verify.code) }

        let link = try await e.createOOBCode(.emailSignIn, email: "new@example.com")
        let signedIn = try await e.signInWithEmailLink(email: "new@example.com", oobCode: link.code)
        #expect(signedIn.isNewUser && signedIn.account.emailVerified)
    }

    @Test(arguments: Backend.allCases)
    func customTokenSignIn(_ backend: Backend) async throws {
        let clock = TestClock()
        let tokens = TokenService(projectID: "demo-proj", keyRing: sharedRing, clock: clock.clock, allowUnsigned: true)
        let e = AuthEngine(store: try backend.makeStore(), tokens: tokens, configuration: .init(passwordHashing: .testing))
        let payload: JSON = .object([
            ("aud", .string(TokenService.customTokenAudience)), ("iss", .string("firebase-auth-emulator@example.com")),
            ("sub", .string("firebase-auth-emulator@example.com")), ("uid", .string("dev1")), ("iat", .int(clock.seconds)),
            ("exp", .int(clock.seconds + 3600)), ("claims", .object([("tier", .string("gold"))])),
        ])
        let custom = JWT.encode(header: .object([("alg", .string("none")), ("typ", .string("JWT"))]), payload: payload) { _ in [] }
        let s = try await e.signInWithCustomToken(custom)
        #expect(s.isNewUser && s.account.uid == "dev1")
        let v = try await e.verifyIDToken(s.idToken)
        #expect(v.signInProvider == "custom" && v.claims["tier"]?.stringValue == "gold")
        let r = try await e.refresh(s.refreshToken)
        #expect(try await e.verifyIDToken(r.idToken).claims["tier"]?.stringValue == "gold")
        #expect(try await e.signInWithCustomToken(custom).isNewUser == false)
    }

    @Test func sharesADatabaseFileWithOtherMigrations() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-shared-\(UUID().uuidString).sqlite").path
        let pool = try DatabasePool(path: path)
        var other = DatabaseMigrator()
        other.registerMigration("someone-else-v1") { db in try db.execute(sql: "CREATE TABLE documents(x)") }
        try other.migrate(pool)
        let store = try GRDBAuthStore(writer: pool)
        let engine = AuthEngine(store: store, tokens: TokenService(projectID: "p", keyRing: sharedRing), configuration: .init(passwordHashing: .testing))
        _ = try await engine.createAccount(NewAccount(uid: "x"))
        try other.migrate(pool)
        // Reopening runs no migration twice and keeps the data.
        let reopened = try GRDBAuthStore(writer: try DatabasePool(path: path))
        #expect(try await reopened.account(uid: "x")?.uid == "x")
    }
}

import Crypto
typealias SHA256Alias = Crypto.SHA256
