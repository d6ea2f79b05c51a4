import Testing
import Foundation
import HearthCore
import GRDB
@testable import HearthAuth
@testable import HearthSQLite

@Suite struct NonceTests {
    func identity(_ provider: String, nonce: JSON?) -> ProviderIdentity {
        var claims: [(String, JSON)] = [("sub", .string("u1"))]
        if let nonce { claims.append(("nonce", nonce)) }
        return ProviderIdentity(
            providerID: provider, rawID: "u1", email: nil, emailVerified: false, displayName: nil, photoURL: nil, claims: .object(claims))
    }

    @Test func appleComparesTheSHA256HexOfTheRawNonce() throws {
        let raw = "0123456789abcdef"
        // SHA-256("0123456789abcdef"), lower-case hex.
        let hashed = "9f9f5111f7b27a781f1f1ddde5ebc2dd2b796bfc7365c9c28b548e564176929f"
        #expect(AuthEngine.sha256Hex(raw) == hashed)
        try identity("apple.com", nonce: .string(hashed)).checkNonce(raw)
        #expect(throws: HearthError.self) { try identity("apple.com", nonce: .string(hashed)).checkNonce(hashed) }
        #expect(throws: HearthError.self) { try identity("apple.com", nonce: .string(hashed)).checkNonce("another") }
        #expect(throws: HearthError.self) { try identity("apple.com", nonce: .string(hashed)).checkNonce(nil) }
        #expect(throws: HearthError.self) { try identity("apple.com", nonce: nil).checkNonce(raw) }
        #expect(throws: HearthError.self) { try identity("apple.com", nonce: .number("5")).checkNonce(raw) }
        try identity("apple.com", nonce: nil).checkNonce(nil)
        try identity("apple.com", nonce: nil).checkNonce("")
    }

    @Test func otherProvidersCompareTheNonceAsGiven() throws {
        try identity("google.com", nonce: .string("n-1")).checkNonce("n-1")
        #expect(throws: HearthError.self) { try identity("google.com", nonce: .string("n-1")).checkNonce("n-2") }
        #expect(throws: HearthError.self) { try identity("oidc.corp", nonce: .string(AuthEngine.sha256Hex("n-1"))).checkNonce("n-1") }
        do {
            try identity("google.com", nonce: .string("n-1")).checkNonce(nil)
            Issue.record("a token with a nonce was accepted without one")
        } catch {
            #expect(error.authErrorCode == .missingOrInvalidNonce)
        }
    }
}

@Suite struct PasswordCostTests {
    @Test(arguments: [3, 15, 20, 31])
    func bcryptCostOutsideTheBoundIsRefusedWithoutHashing(_ cost: Int) throws {
        let ok = try BCrypt.hash("pw", salt: Array(repeating: 7, count: 16), cost: 4)
        let text = ok.replacingOccurrences(of: "$04$", with: cost < 10 ? "$0\(cost)$" : "$\(cost)$")
        let hash = PasswordHash.bcrypt(text)
        #expect(throws: HearthError.self) { try hash.checkCost() }
        let started = ContinuousClock.now
        #expect(throws: HearthError.self) { _ = try hash.verify("pw") }
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test func boundsForEveryAlgorithm() throws {
        try PasswordHash.bcrypt(try BCrypt.hash("pw", salt: Array(repeating: 1, count: 16), cost: 4)).checkCost()
        try PasswordHash.scrypt(logN: 15, r: 8, p: 1, salt: [1], hash: Array(repeating: 0, count: 32)).checkCost()
        try PasswordHash.scrypt(logN: 17, r: 8, p: 2, salt: [1], hash: Array(repeating: 0, count: 32)).checkCost()
        let refused: [PasswordHash] = [
            .scrypt(logN: 21, r: 1, p: 1, salt: [], hash: [1]),
            .scrypt(logN: 20, r: 8, p: 1, salt: [], hash: [1]),  // 1 GiB
            .scrypt(logN: 16, r: 8, p: 16, salt: [], hash: [1]),  // N·r·p = 2^23
            .scrypt(logN: 10, r: 8, p: 1, salt: [], hash: Array(repeating: 0, count: 100_000)),
            .firebaseScrypt(FirebaseScryptParameters(signerKey: [1], saltSeparator: [], rounds: 9, memoryCost: 14), salt: [], hash: [1]),
            .firebaseScrypt(FirebaseScryptParameters(signerKey: [1], saltSeparator: [], rounds: 8, memoryCost: 15), salt: [], hash: [1]),
            .pbkdf2SHA256(rounds: 120_001, salt: [], hash: Array(repeating: 0, count: 32)),
            .pbkdf2SHA256(rounds: 1000, salt: [], hash: Array(repeating: 0, count: 4096)),
            .hmacSHA256(key: [], order: .passwordFirst, salt: [], hash: Array(repeating: 0, count: 32)),
        ]
        for hash in refused {
            #expect(throws: HearthError.self, "\(hash.algorithmName)") { try hash.checkCost() }
            #expect(throws: HearthError.self, "\(hash.algorithmName)") { _ = try hash.verify("pw") }
        }
    }
}

@Suite struct PhoneTests {
    @Test(arguments: ["+15555550100", "+442071838750", "+12", "+123456789012345"])
    func validE164(_ number: String) throws { #expect(try AuthEngine.checkPhoneNumber(number) == number) }

    @Test(arguments: ["", "+", "+1", "15555550100", "+05555550100", "+1 555 555 0100", "+1234567890123456", "+1555abc", "+١٢٣"])
    func invalidE164(_ number: String) {
        #expect(throws: HearthError.self) { try AuthEngine.checkPhoneNumber(number) }
    }

    @Test(arguments: Backend.allCases)
    func phoneSignInCreatesThenFindsTheAccount(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let code = try await e.createPhoneCode(phoneNumber: "+15555550100")
        #expect(code.code.count == 6 && code.code.allSatisfy(\.isNumber))
        #expect(try await e.phoneCodes().map(\.sessionInfo) == [code.sessionInfo])
        let wrong = code.code == "000000" ? "111111" : "000000"
        await expectAuthError(.invalidCode) { try await e.signInWithPhoneNumber(sessionInfo: code.sessionInfo, code: wrong) }
        let first = try await e.signInWithPhoneNumber(sessionInfo: code.sessionInfo, code: code.code)
        #expect(first.isNewUser && first.account.phoneNumber == "+15555550100")
        #expect(first.account.providerUserInfo.map(\.providerID) == ["phone"])
        #expect(try await e.account(uid: first.account.uid)?.lastRefreshAt == h.clock.now.withLock { $0 })
        await expectAuthError(.invalidSessionInfo) { try await e.signInWithPhoneNumber(sessionInfo: code.sessionInfo, code: code.code) }

        let second = try await e.createPhoneCode(phoneNumber: "+15555550100")
        let again = try await e.signInWithPhoneNumber(sessionInfo: second.sessionInfo, code: second.code)
        #expect(!again.isNewUser && again.account.uid == first.account.uid)
        #expect(try await e.account(phoneNumber: "+15555550100")?.uid == first.account.uid)

        let late = try await e.createPhoneCode(phoneNumber: "+15555550101")
        h.clock.advance(seconds: 11 * 60)
        await expectAuthError(.sessionExpired) { try await e.signInWithPhoneNumber(sessionInfo: late.sessionInfo, code: late.code) }
        await expectAuthError(.missingSessionInfo) { try await e.signInWithPhoneNumber(sessionInfo: "", code: "1") }
        await expectAuthError(.missingCode) { try await e.signInWithPhoneNumber(sessionInfo: "x", code: "") }
    }

    @Test func codesPerNumberAreLimited() async throws {
        let h = try Harness(.memory)
        for _ in 0..<AuthEngine.phoneCodesPerNumber { _ = try await h.engine.createPhoneCode(phoneNumber: "+15555550199") }
        await expectAuthError(.tooManyAttempts) { try await h.engine.createPhoneCode(phoneNumber: "+15555550199") }
        _ = try await h.engine.createPhoneCode(phoneNumber: "+15555550198")
        h.clock.advance(seconds: 301)
        _ = try await h.engine.createPhoneCode(phoneNumber: "+15555550199")
    }

    @Test(arguments: Backend.allCases)
    func adminPhoneNumbersAreUnique(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        let a = try await e.createAccount(NewAccount(uid: "a", phoneNumber: "+15555550100"))
        #expect(a.phoneNumber == "+15555550100")
        await expectAuthError(.phoneNumberExists) { try await e.createAccount(NewAccount(uid: "b", phoneNumber: "+15555550100")) }
        await expectAuthError(.invalidPhoneNumber) { try await e.createAccount(NewAccount(uid: "b", phoneNumber: "555")) }
        _ = try await e.createAccount(NewAccount(uid: "b"))
        await expectAuthError(.phoneNumberExists) { try await e.updateAccount(uid: "b", AccountUpdate(phoneNumber: "+15555550100")) }
        let cleared = try await e.updateAccount(uid: "a", AccountUpdate(deleteProviders: ["phone"]))
        #expect(cleared.phoneNumber == nil)
        #expect(try await e.updateAccount(uid: "b", AccountUpdate(phoneNumber: "+15555550100")).phoneNumber == "+15555550100")
        #expect(try await e.lookup(phoneNumbers: ["+15555550100"]).map(\.uid) == ["b"])
        let errors = try await e.importAccounts([NewAccount(uid: "c", phoneNumber: "+15555550100"), NewAccount(uid: "d", phoneNumber: "+1777")])
        #expect(errors.map(\.index) == [0])
    }

    @Test(arguments: Backend.allCases)
    func tokensIssuedSetLastRefreshAt(_ backend: Backend) async throws {
        let h = try Harness(backend)
        let e = h.engine
        let s = try await e.signUp(email: "r@example.com", password: "secret1")
        #expect(try await e.account(uid: s.account.uid)?.lastRefreshAt == h.clock.now.withLock { $0 })
        h.clock.advance(seconds: 10)
        _ = try await e.signInWithPassword(email: "r@example.com", password: "secret1")
        #expect(try await e.account(uid: s.account.uid)?.lastRefreshAt == h.clock.now.withLock { $0 })
    }
}

@Suite struct ProviderConfigTests {
    func oidc(_ fields: [(String, JSON)], id: String = "oidc.corp") throws -> ProviderConfig {
        try ProviderConfig(kind: .oidc, providerID: id, resource: .object(fields))
    }

    @Test func validation() throws {
        let ok = try oidc([("clientId", .string("c")), ("issuer", .string("https://idp.example.com")), ("enabled", .bool(true))])
        #expect(ok.oidc?.issuer == "https://idp.example.com" && ok.enabled)
        #expect(throws: HearthError.self) { try oidc([("clientId", .string("c")), ("issuer", .string("https://i.example"))], id: "corp") }
        #expect(throws: HearthError.self) { try oidc([("clientId", .string("c")), ("issuer", .string("https://i.example"))], id: "oidc.") }
        #expect(throws: HearthError.self) { try oidc([("issuer", .string("https://i.example"))]) }
        #expect(throws: HearthError.self) { try oidc([("clientId", .string("c")), ("issuer", .string("ftp://x"))]) }
        #expect(throws: HearthError.self) { try oidc([("clientId", .string("c")), ("issuer", .string("https://i.example")), ("x", .bool(true))]) }
        #expect(throws: HearthError.self) {
            try oidc([("clientId", .string("c")), ("issuer", .string("https://i.example")), ("responseType", .object([("code", .bool(true))]))])
        }
        #expect(throws: HearthError.self) {
            try ProviderConfig(kind: .saml, providerID: "saml.x", resource: .object([("idpConfig", .object([]))]))
        }
    }

    @Test func updateMaskSetsAndClearsFields() throws {
        let c = try oidc([("clientId", .string("c")), ("issuer", .string("https://i.example")), ("displayName", .string("D"))])
        let patch = JSON.object([
            ("clientId", .string("c2")), ("displayName", .null), ("clientSecret", .string("s")),
            ("responseType", .object([("code", .bool(true)), ("idToken", .bool(false))])),
        ])
        let u = try c.updated(with: patch, mask: ["clientId", "displayName", "clientSecret", "responseType.code", "responseType.idToken"])
        #expect(u.resource["clientId"]?.stringValue == "c2" && u.resource["displayName"] == nil)
        #expect(u.resource["responseType"]?["code"]?.boolValue == true && u.resource["issuer"]?.stringValue == "https://i.example")
        #expect(throws: HearthError.self) { try c.updated(with: patch, mask: ["nope"]) }
    }

    @Test(arguments: Backend.allCases)
    func crudThroughTheStore(_ backend: Backend) async throws {
        let e = try Harness(backend).engine
        let c = try oidc([("clientId", .string("c")), ("issuer", .string("https://i.example"))])
        _ = try await e.createProviderConfig(c)
        await #expect(throws: HearthError.self) { try await e.createProviderConfig(c) }
        #expect(try await e.providerConfig(.oidc, id: "oidc.corp") == c)
        await expectAuthError(.configurationNotFound) { try await e.providerConfig(.saml, id: "saml.corp") }
        #expect(try await e.providerConfigs(.oidc, after: nil, limit: 10).map(\.providerID) == ["oidc.corp"])
        #expect(try await e.providerConfigs(.saml, after: nil, limit: 10).isEmpty)
        try await e.deleteProviderConfig(.oidc, id: "oidc.corp")
        await expectAuthError(.configurationNotFound) { try await e.providerConfig(.oidc, id: "oidc.corp") }
    }
}

@Suite struct AuthStoreMigrationTests {
    @Test func aVersion2DatabaseGainsPhoneNumbersAndProviderConfigs() async throws {
        let queue = try GRDB.DatabaseQueue()
        try GRDBAuthStore.migrator.migrate(queue, upTo: "hearth-auth-v2-service-accounts")
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO auth_accounts(uid, email, email_verified, disabled, providers, created_at, valid_since)
                    VALUES ('u1', 'a@example.com', 0, 0, '[]', 1, 1)
                    """)
        }
        let store = try GRDBAuthStore(writer: queue)
        let old = try #require(try await store.account(uid: "u1"))
        #expect(old.email == "a@example.com" && old.phoneNumber == nil)
        var a = old
        a.phoneNumber = "+15555550100"
        try await store.apply(AuthChangeSet(mutations: [.saveAccount(a)]))
        #expect(try await store.account(phoneNumber: "+15555550100")?.uid == "u1")
        // The number is unique: a second account with it cannot be stored.
        await #expect(throws: AuthStoreConflict.phoneNumberTaken("+15555550100")) {
            let second = Account(uid: "u2", createdAt: 1, validSince: 1, phoneNumber: "+15555550100")
            try await store.apply(AuthChangeSet(mutations: [.saveAccount(second)]))
        }
        #expect(try await store.providerConfigs().isEmpty)
    }

    @Test func aVersion4DatabaseGainsTheProviderLinksTable() async throws {
        let queue = try GRDB.DatabaseQueue()
        try GRDBAuthStore.migrator.migrate(queue, upTo: "hearth-auth-v4-project-settings")
        // Two accounts that share a provider user (the old schema allowed it): the first by uid keeps the link.
        try await queue.write { db in
            for uid in ["u2", "u1"] {
                try db.execute(
                    sql: """
                        INSERT INTO auth_accounts(uid, email_verified, disabled, providers, created_at, valid_since)
                        VALUES (?, 0, 0, '[{"providerId":"google.com","rawId":"g1"},{"providerId":"github.com","rawId":"\(uid)"}]', 1, 1)
                        """, arguments: [uid])
            }
        }
        let store = try GRDBAuthStore(writer: queue)
        #expect(try await store.account(provider: "google.com", rawID: "g1")?.uid == "u1")
        #expect(try await store.account(provider: "github.com", rawID: "u2")?.uid == "u2")
        // Both can still be saved (the link is not new to either); a third account cannot take it.
        let u2 = try #require(try await store.account(uid: "u2"))
        try await store.apply(AuthChangeSet(mutations: [.saveAccount(u2)]))
        await #expect(throws: AuthStoreConflict.providerTaken(providerID: "google.com", rawID: "g1")) {
            let taker = Account(uid: "u3", providers: [ProviderUserInfo(providerID: "google.com", rawID: "g1")], createdAt: 1, validSince: 1)
            try await store.apply(AuthChangeSet(mutations: [.saveAccount(taker)]))
        }
    }
}
