public import HearthAuth
import HearthCore
public import Testing

/// The behaviour every ``AuthStore`` must have, as scenarios that run unchanged against any
/// implementation: in-memory and SQLite (HearthAuthTests), PostgreSQL (HearthPostgresTests).
/// Each scenario gets a fresh, empty store from the caller's factory and records failures
/// with `#expect`, so a test target runs them as
///
/// ```swift
/// @Test(arguments: AuthStoreConformance.scenarios)
/// func authStore(_ scenario: AuthStoreConformance.Scenario) async throws {
///     try await scenario.run { try MyAuthStore(…) }
/// }
/// ```
///
/// or all at once with ``runAll(make:)``.
public enum AuthStoreConformance {
    /// One named scenario.
    public typealias Scenario = StoreConformanceCase<any AuthStore>
    public typealias Factory = Scenario.MakeStore

    public static let scenarios: [Scenario] = [
        Scenario(name: "accounts round-trip and are found by every key", store: accountsRoundTrip),
        Scenario(name: "accounts list in uid order, after a uid, up to a limit", store: accountListing),
        Scenario(name: "emails, phone numbers and provider users are unique", store: uniqueness),
        Scenario(name: "a failed change set applies nothing", store: atomicity),
        Scenario(name: "every kind of expectation is checked", store: expectations),
        Scenario(name: "deleting an account deletes its tokens and codes", store: accountDeletionCascades),
        Scenario(name: "deleting all accounts keeps the project's configuration", store: deleteAllKeepsConfiguration),
        Scenario(name: "codes are listed oldest first and expire", store: codesAndExpiry),
        Scenario(name: "service accounts, provider configs and settings", store: configuration),
        Scenario(name: "a single-use code is consumed once under concurrency", store: singleUseUnderConcurrency),
        Scenario(name: "concurrent updates of one account: exactly one wins", store: concurrentUpdates),
        Scenario(name: "concurrent claims of one email: exactly one wins", store: concurrentEmailClaims),
        Scenario(name: "concurrent claims of one phone number or provider user: exactly one wins", store: concurrentPhoneAndProviderClaims),
        Scenario(name: "change sets resting on each other's records: exactly one applies", store: writeSkew),
        Scenario(name: "a refresh racing a revocation: exactly one applies", store: refreshRacingRevocation),
    ]

    /// Runs every scenario, each on a fresh store from `make`.
    public static func runAll(make: Factory) async throws { try await Scenario.runAll(scenarios, make: make) }

    // MARK: Fixtures

    static func account(_ uid: String, email: String? = nil, phone: String? = nil, providers: [ProviderUserInfo] = []) -> Account {
        Account(
            uid: uid, email: email, emailVerified: true, passwordHash: .scrypt(logN: 1, r: 8, p: 1, salt: [1, 2, 3], hash: [4, 5, 6]),
            passwordUpdatedAt: 1_700_000_000_123, displayName: "Name \(uid)", photoURL: "https://example.com/\(uid).png", disabled: false,
            customClaims: #"{"role":"admin"}"#, providers: providers, createdAt: 1_700_000_000_000, lastLoginAt: 1_700_000_000_500,
            lastRefreshAt: nil, validSince: 1_700_000_000, phoneNumber: phone)
    }

    static func google(_ rawID: String) -> ProviderUserInfo {
        ProviderUserInfo(providerID: "google.com", rawID: rawID, email: "\(rawID)@gmail.com", displayName: "G \(rawID)", photoURL: nil)
    }

    static func token(_ hash: String, uid: String, createdAt: Int64 = 1_700_000_000) -> RefreshTokenRecord {
        RefreshTokenRecord(tokenHash: hash, uid: uid, signInProvider: "password", authTime: createdAt, extraClaims: nil, createdAt: createdAt)
    }

    static func oob(_ code: String, uid: String?, createdAt: Int64 = 1_000, expiresAt: Int64 = 10_000) -> OOBCode {
        OOBCode(
            code: code, requestType: .passwordReset, email: "\(uid ?? "nobody")@example.com", uid: uid, continueURL: "https://app/done",
            createdAt: createdAt, expiresAt: expiresAt)
    }

    static func phoneCode(_ session: String, createdAt: Int64 = 1_000, expiresAt: Int64 = 10_000) -> PhoneVerificationCode {
        PhoneVerificationCode(sessionInfo: session, phoneNumber: "+15555550100", code: "123456", createdAt: createdAt, expiresAt: expiresAt)
    }

    static func save(_ store: any AuthStore, _ accounts: Account...) async throws {
        try await store.apply(AuthChangeSet(mutations: accounts.map { .saveAccount($0) }))
    }

    /// Expects `changes` to be refused with `conflict`.
    static func expectConflict(
        _ conflict: AuthStoreConflict, applying changes: AuthChangeSet, to store: any AuthStore,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await store.apply(changes)
            Issue.record("expected \(conflict), the change set was applied", sourceLocation: sourceLocation)
        } catch let error as AuthStoreConflict {
            #expect(error == conflict, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected \(conflict), got \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Scenarios

    static func accountsRoundTrip(_ store: any AuthStore) async throws {
        #expect(try await store.account(uid: "u1") == nil)
        var a = account("u1", email: "a@example.com", phone: "+15555550100", providers: [google("g1")])
        try await save(store, a)
        #expect(try await store.account(uid: "u1") == a)
        #expect(try await store.account(email: "a@example.com") == a)
        #expect(try await store.account(phoneNumber: "+15555550100") == a)
        #expect(try await store.account(provider: "google.com", rawID: "g1") == a)
        #expect(try await store.account(provider: "google.com", rawID: "g2") == nil)
        #expect(try await store.account(provider: "facebook.com", rawID: "g1") == nil)
        #expect(try await store.account(email: "b@example.com") == nil)

        // Saving again replaces every field; cleared ones come back nil.
        a.email = "b@example.com"
        a.phoneNumber = nil
        a.passwordHash = nil
        a.passwordUpdatedAt = nil
        a.displayName = nil
        a.customClaims = nil
        a.disabled = true
        a.lastRefreshAt = 1_700_000_009_000
        a.providers = []
        try await save(store, a)
        #expect(try await store.account(uid: "u1") == a)
        #expect(try await store.account(email: "a@example.com") == nil)
        #expect(try await store.account(email: "b@example.com") == a)
        #expect(try await store.account(phoneNumber: "+15555550100") == nil)
        #expect(try await store.account(provider: "google.com", rawID: "g1") == nil)

        // Every password hash scheme round-trips.
        let hashes: [PasswordHash] = [
            .scrypt(logN: 14, r: 8, p: 1, salt: [9, 8, 7], hash: [1, 2]),
            .firebaseScrypt(FirebaseScryptParameters(signerKey: [1, 2], saltSeparator: [3], rounds: 8, memoryCost: 14), salt: [4], hash: [5]),
            .pbkdf2SHA256(rounds: 100, salt: [1], hash: [2]),
            .hmacSHA256(key: [7], order: .saltFirst, salt: [1], hash: [2]),
        ]
        for (i, hash) in hashes.enumerated() {
            var h = account("h\(i)")
            h.passwordHash = hash
            try await save(store, h)
            #expect(try await store.account(uid: "h\(i)") == h)
        }
    }

    static func accountListing(_ store: any AuthStore) async throws {
        #expect(try await store.accounts(after: nil, limit: 10).isEmpty)
        for uid in ["c", "a", "e", "b", "d"] { try await save(store, account(uid)) }
        #expect(try await store.accounts(after: nil, limit: 10).map(\.uid) == ["a", "b", "c", "d", "e"])
        #expect(try await store.accounts(after: nil, limit: 2).map(\.uid) == ["a", "b"])
        #expect(try await store.accounts(after: "b", limit: 2).map(\.uid) == ["c", "d"])
        #expect(try await store.accounts(after: "bb", limit: 10).map(\.uid) == ["c", "d", "e"])
        #expect(try await store.accounts(after: "e", limit: 10).isEmpty)
    }

    static func uniqueness(_ store: any AuthStore) async throws {
        try await save(store, account("u1", email: "a@example.com", phone: "+15555550100", providers: [google("g1")]))
        await expectConflict(
            .emailTaken("a@example.com"), applying: .init(mutations: [.saveAccount(account("u2", email: "a@example.com"))]), to: store)
        await expectConflict(
            .phoneNumberTaken("+15555550100"), applying: .init(mutations: [.saveAccount(account("u2", phone: "+15555550100"))]), to: store)
        await expectConflict(
            .providerTaken(providerID: "google.com", rawID: "g1"),
            applying: .init(mutations: [.saveAccount(account("u2", providers: [google("g1")]))]),
            to: store)
        #expect(try await store.account(uid: "u2") == nil)
        // The same raw id at another provider is another user.
        let other = ProviderUserInfo(providerID: "github.com", rawID: "g1")
        try await save(store, account("u2", providers: [other]))
        // An account keeps its own email, number and links when saved again.
        var u1 = try #require(try await store.account(uid: "u1"))
        u1.displayName = "renamed"
        try await save(store, u1)
        // Uniqueness is judged at its point in the change set: an email freed before is free.
        var moved = u1
        moved.email = "moved@example.com"
        moved.phoneNumber = nil
        moved.providers = []
        try await store.apply(
            AuthChangeSet(mutations: [
                .saveAccount(moved), .saveAccount(account("u3", email: "a@example.com", phone: "+15555550100", providers: [google("g1")])),
            ]))
        #expect(try await store.account(email: "a@example.com")?.uid == "u3")
        #expect(try await store.account(phoneNumber: "+15555550100")?.uid == "u3")
        #expect(try await store.account(provider: "google.com", rawID: "g1")?.uid == "u3")
        // A deleted account's email is free too.
        try await store.apply(AuthChangeSet(mutations: [.deleteAccount(uid: "u3"), .saveAccount(account("u4", email: "a@example.com"))]))
        #expect(try await store.account(email: "a@example.com")?.uid == "u4")
    }

    static func atomicity(_ store: any AuthStore) async throws {
        try await save(store, account("u1", email: "a@example.com"))
        let refused = AuthChangeSet(mutations: [
            .saveAccount(account("u2")), .insertRefreshToken(token("t2", uid: "u2")), .insertOOBCode(oob("c2", uid: "u2")),
            .saveServiceAccount(ServiceAccountRecord(clientEmail: "sa@x", clientID: "1", keyID: "k", publicKeyPEM: "pem", createdAt: 1)),
            .saveProjectSettings(AuthProjectSettings(emailEnumerationProtection: true)),
            .deleteAccount(uid: "u1"),
            .saveAccount(account("u3", email: "a@example.com")),  // fine: u1 was deleted above
            .saveAccount(account("u4", email: "a@example.com")),  // refused: u3 has it now
        ])
        await expectConflict(.emailTaken("a@example.com"), applying: refused, to: store)
        #expect(try await store.account(uid: "u1") != nil)
        #expect(try await store.account(uid: "u2") == nil)
        #expect(try await store.account(uid: "u3") == nil)
        #expect(try await store.refreshToken(hash: "t2") == nil)
        #expect(try await store.oobCode("c2") == nil)
        #expect(try await store.serviceAccounts().isEmpty)
        #expect(try await store.projectSettings() == AuthProjectSettings())
        // A failed expectation: nothing either.
        await expectConflict(
            .changed(.noAccounts), applying: .init(expectations: [.noAccounts], mutations: [.saveAccount(account("u5"))]), to: store)
        #expect(try await store.account(uid: "u5") == nil)
    }

    static func expectations(_ store: any AuthStore) async throws {
        let u1 = account("u1", email: "a@example.com", providers: [google("g1")])
        // Facts that hold on an empty store.
        try await store.apply(
            AuthChangeSet(
                expectations: [
                    .noAccounts, .account(uid: "u1", equals: nil), .providerLink(providerID: "google.com", rawID: "g1", uid: nil),
                    .serviceAccount(clientEmail: "sa@x", exists: false),
                    .providerConfig(id: "oidc.corp", equals: nil), .projectSettings(equals: AuthProjectSettings()),
                ],
                mutations: [.saveAccount(u1), .insertRefreshToken(token("t1", uid: "u1")), .insertOOBCode(oob("c1", uid: "u1")),
                    .insertPhoneCode(phoneCode("s1"))]))
        let sa = ServiceAccountRecord(clientEmail: "sa@x", clientID: "1", keyID: "k", publicKeyPEM: "pem", createdAt: 1)
        let config = try ProviderConfig(
            kind: .oidc, providerID: "oidc.corp", resource: .object([("clientId", .string("c")), ("issuer", .string("https://issuer.example.com"))]))
        let settings = AuthProjectSettings(emailEnumerationProtection: false)
        try await store.apply(AuthChangeSet(mutations: [.saveServiceAccount(sa), .saveProviderConfig(config), .saveProjectSettings(settings)]))

        // Facts that hold now.
        let holding: [AuthExpectation] = [
            .account(uid: "u1", equals: u1), .account(uid: "u2", equals: nil), .providerLink(providerID: "google.com", rawID: "g1", uid: "u1"),
            .providerLink(providerID: "google.com", rawID: "g2", uid: nil), .refreshToken(hash: "t1"), .oobCode("c1"),
            .phoneCode(sessionInfo: "s1"), .serviceAccount(clientEmail: "sa@x", exists: true),
            .serviceAccount(clientEmail: "other@x", exists: false), .providerConfig(id: "oidc.corp", equals: config),
            .providerConfig(id: "oidc.other", equals: nil), .projectSettings(equals: settings),
        ]
        try await store.apply(AuthChangeSet(expectations: holding, mutations: [.saveAccount(account("marker"))]))
        #expect(try await store.account(uid: "marker") != nil)

        // Each fact that no longer holds refuses the change set with itself.
        var changedU1 = u1
        changedU1.lastRefreshAt = 1
        let broken: [AuthExpectation] = [
            .account(uid: "u1", equals: changedU1), .account(uid: "u1", equals: nil), .account(uid: "u2", equals: u1),
            .providerLink(providerID: "google.com", rawID: "g1", uid: nil), .providerLink(providerID: "google.com", rawID: "g1", uid: "u2"),
            .providerLink(providerID: "google.com", rawID: "g2", uid: "u1"),
            .refreshToken(hash: "t9"), .oobCode("c9"), .phoneCode(sessionInfo: "s9"), .serviceAccount(clientEmail: "sa@x", exists: false),
            .serviceAccount(clientEmail: "other@x", exists: true), .providerConfig(id: "oidc.corp", equals: nil),
            .providerConfig(id: "oidc.other", equals: config), .projectSettings(equals: AuthProjectSettings()), .noAccounts,
        ]
        for expectation in broken {
            await expectConflict(
                .changed(expectation), applying: AuthChangeSet(expectations: holding + [expectation], mutations: [.deleteAccount(uid: "u1")]),
                to: store)
        }
        #expect(try await store.account(uid: "u1") == u1)
    }

    static func accountDeletionCascades(_ store: any AuthStore) async throws {
        try await store.apply(
            AuthChangeSet(mutations: [
                .saveAccount(account("u1", email: "a@example.com")), .saveAccount(account("u2", email: "b@example.com")),
                .insertRefreshToken(token("t1a", uid: "u1")), .insertRefreshToken(token("t1b", uid: "u1")),
                .insertRefreshToken(token("t2", uid: "u2")), .insertOOBCode(oob("c1", uid: "u1")), .insertOOBCode(oob("c2", uid: "u2")),
                .insertOOBCode(oob("c-none", uid: nil)), .insertPhoneCode(phoneCode("s1")),
            ]))
        #expect(try await store.refreshToken(hash: "t1a") == token("t1a", uid: "u1"))
        try await store.apply(AuthChangeSet(mutations: [.deleteRefreshTokens(uid: "u2")]))
        #expect(try await store.refreshToken(hash: "t2") == nil)
        #expect(try await store.refreshToken(hash: "t1a") != nil)
        try await store.apply(AuthChangeSet(mutations: [.deleteAccount(uid: "u1")]))
        #expect(try await store.account(uid: "u1") == nil)
        #expect(try await store.account(email: "a@example.com") == nil)
        #expect(try await store.refreshToken(hash: "t1a") == nil)
        #expect(try await store.refreshToken(hash: "t1b") == nil)
        #expect(try await store.oobCodes().map(\.code).sorted() == ["c-none", "c2"])
        #expect(try await store.phoneCodes().map(\.sessionInfo) == ["s1"])
        #expect(try await store.account(uid: "u2") != nil)
        // Deleting a missing account changes nothing.
        try await store.apply(AuthChangeSet(mutations: [.deleteAccount(uid: "missing")]))
        #expect(try await store.accounts(after: nil, limit: 10).map(\.uid) == ["u2"])
    }

    static func deleteAllKeepsConfiguration(_ store: any AuthStore) async throws {
        let sa = ServiceAccountRecord(clientEmail: "sa@x", clientID: "1", keyID: "k", publicKeyPEM: "pem", createdAt: 1)
        let config = try ProviderConfig(
            kind: .oidc, providerID: "oidc.corp", resource: .object([("clientId", .string("c")), ("issuer", .string("https://issuer.example.com"))]))
        let settings = AuthProjectSettings(emailEnumerationProtection: true)
        try await store.apply(
            AuthChangeSet(mutations: [
                .saveAccount(account("u1", email: "a@example.com")), .insertRefreshToken(token("t1", uid: "u1")),
                .insertOOBCode(oob("c1", uid: "u1")), .insertOOBCode(oob("c2", uid: nil)), .insertPhoneCode(phoneCode("s1")),
                .saveServiceAccount(sa), .saveProviderConfig(config), .saveProjectSettings(settings),
            ]))
        try await store.apply(AuthChangeSet(mutations: [.deleteAllAccounts]))
        #expect(try await store.accounts(after: nil, limit: 10).isEmpty)
        #expect(try await store.refreshToken(hash: "t1") == nil)
        #expect(try await store.oobCodes().isEmpty)
        #expect(try await store.phoneCodes().isEmpty)
        #expect(try await store.serviceAccounts() == [sa])
        #expect(try await store.providerConfigs() == [config])
        #expect(try await store.projectSettings() == settings)
    }

    static func codesAndExpiry(_ store: any AuthStore) async throws {
        try await store.apply(
            AuthChangeSet(mutations: [
                .insertOOBCode(oob("b", uid: nil, createdAt: 2, expiresAt: 200)), .insertOOBCode(oob("a", uid: nil, createdAt: 2, expiresAt: 100)),
                .insertOOBCode(oob("z", uid: nil, createdAt: 1, expiresAt: 300)),
                .insertPhoneCode(phoneCode("q", createdAt: 5, expiresAt: 100)), .insertPhoneCode(phoneCode("p", createdAt: 5, expiresAt: 200)),
                .insertPhoneCode(phoneCode("r", createdAt: 4, expiresAt: 300)),
            ]))
        #expect(try await store.oobCodes().map(\.code) == ["z", "a", "b"])
        #expect(try await store.oobCode("a") == oob("a", uid: nil, createdAt: 2, expiresAt: 100))
        #expect(try await store.phoneCodes().map(\.sessionInfo) == ["r", "p", "q"])
        #expect(try await store.phoneCode(sessionInfo: "q") == phoneCode("q", createdAt: 5, expiresAt: 100))
        // Codes expiring before the instant go; one expiring at it stays.
        try await store.apply(AuthChangeSet(mutations: [.deleteOOBCodes(expiringBefore: 200), .deletePhoneCodes(expiringBefore: 200)]))
        #expect(try await store.oobCodes().map(\.code) == ["z", "b"])
        #expect(try await store.phoneCodes().map(\.sessionInfo) == ["r", "p"])
        try await store.apply(AuthChangeSet(mutations: [.deleteOOBCode("z"), .deletePhoneCode(sessionInfo: "r"), .deleteOOBCode("missing")]))
        #expect(try await store.oobCodes().map(\.code) == ["b"])
        #expect(try await store.phoneCodes().map(\.sessionInfo) == ["p"])
        #expect(try await store.oobCode("z") == nil)
    }

    static func configuration(_ store: any AuthStore) async throws {
        #expect(try await store.projectSettings() == AuthProjectSettings())
        let b = ServiceAccountRecord(clientEmail: "b@x", clientID: "2", keyID: "k2", publicKeyPEM: "pem2", createdAt: 2)
        var a = ServiceAccountRecord(clientEmail: "a@x", clientID: "1", keyID: "k1", publicKeyPEM: "pem1", createdAt: 1)
        try await store.apply(AuthChangeSet(mutations: [.saveServiceAccount(b), .saveServiceAccount(a)]))
        a.keyID = "k1-rotated"
        try await store.apply(AuthChangeSet(mutations: [.saveServiceAccount(a)]))
        #expect(try await store.serviceAccounts() == [a, b])
        #expect(try await store.serviceAccount(clientEmail: "a@x") == a)
        #expect(try await store.serviceAccount(clientEmail: "c@x") == nil)

        let saml = try ProviderConfig(
            kind: .saml, providerID: "saml.corp",
            resource: .object([
                ("idpConfig", .object([("idpEntityId", .string("idp")), ("ssoUrl", .string("https://idp.example.com/sso")),
                    ("idpCertificates", .array([.object([("x509Certificate", .string("CERT"))])]))])),
                ("spConfig", .object([("spEntityId", .string("sp")), ("callbackUri", .string("https://sp.example.com/cb"))])),
            ]))
        var oidc = try ProviderConfig(
            kind: .oidc, providerID: "oidc.corp", resource: .object([("clientId", .string("c")), ("issuer", .string("https://issuer.example.com"))]))
        try await store.apply(AuthChangeSet(mutations: [.saveProviderConfig(saml), .saveProviderConfig(oidc)]))
        #expect(try await store.providerConfigs() == [oidc, saml])
        oidc = try oidc.updated(with: .object([("displayName", .string("Corp"))]), mask: ["displayName"])
        try await store.apply(AuthChangeSet(mutations: [.saveProviderConfig(oidc)]))
        #expect(try await store.providerConfig(id: "oidc.corp") == oidc)
        try await store.apply(AuthChangeSet(mutations: [.deleteProviderConfig(id: "saml.corp")]))
        #expect(try await store.providerConfigs() == [oidc])

        for value in [true, false] {
            try await store.apply(AuthChangeSet(mutations: [.saveProjectSettings(AuthProjectSettings(emailEnumerationProtection: value))]))
            #expect(try await store.projectSettings() == AuthProjectSettings(emailEnumerationProtection: value))
        }
        try await store.apply(AuthChangeSet(mutations: [.saveProjectSettings(AuthProjectSettings())]))
        #expect(try await store.projectSettings() == AuthProjectSettings())
    }

    /// `consumers` change sets that each consume the same secret (expect it, delete it) and add
    /// a record of their own; returns how many were applied and whether every other one was
    /// refused with `lost`.
    static func race(
        _ store: any AuthStore, consumers: Int, lost: AuthStoreConflict, _ changes: @escaping @Sendable (Int) -> AuthChangeSet
    ) async throws -> (won: [Int], allOthersLost: Bool) {
        try await withThrowingTaskGroup(of: (Int, AuthStoreConflict?).self) { group in
            for i in 0..<consumers {
                group.addTask {
                    do {
                        try await store.apply(changes(i))
                        return (i, nil)
                    } catch let conflict as AuthStoreConflict {
                        return (i, conflict)
                    }
                }
            }
            var won: [Int] = []
            var allOthersLost = true
            for try await (i, conflict) in group {
                if let conflict { allOthersLost = allOthersLost && conflict == lost } else { won.append(i) }
            }
            return (won, allOthersLost)
        }
    }

    static func singleUseUnderConcurrency(_ store: any AuthStore) async throws {
        try await store.apply(
            AuthChangeSet(mutations: [.saveAccount(account("u1", email: "a@example.com")), .insertOOBCode(oob("once", uid: "u1")),
                .insertPhoneCode(phoneCode("session"))]))
        let oobRace = try await race(store, consumers: 16, lost: .changed(.oobCode("once"))) { i in
            AuthChangeSet(
                expectations: [.oobCode("once")], mutations: [.deleteOOBCode("once"), .insertRefreshToken(token("oob-\(i)", uid: "u1"))])
        }
        #expect(oobRace.won.count == 1 && oobRace.allOthersLost)
        #expect(try await store.oobCode("once") == nil)
        for i in 0..<16 { #expect((try await store.refreshToken(hash: "oob-\(i)") != nil) == oobRace.won.contains(i)) }

        let phoneRace = try await race(store, consumers: 16, lost: .changed(.phoneCode(sessionInfo: "session"))) { i in
            AuthChangeSet(
                expectations: [.phoneCode(sessionInfo: "session")],
                mutations: [.deletePhoneCode(sessionInfo: "session"), .insertRefreshToken(token("phone-\(i)", uid: "u1"))])
        }
        #expect(phoneRace.won.count == 1 && phoneRace.allOthersLost)
        #expect(try await store.phoneCode(sessionInfo: "session") == nil)
        for i in 0..<16 { #expect((try await store.refreshToken(hash: "phone-\(i)") != nil) == phoneRace.won.contains(i)) }
    }

    static func concurrentUpdates(_ store: any AuthStore) async throws {
        let original = account("u1", email: "a@example.com")
        try await save(store, original)
        let result = try await race(store, consumers: 16, lost: .changed(.account(uid: "u1", equals: original))) { i in
            var updated = original
            updated.displayName = "writer \(i)"
            return AuthChangeSet(expectations: [.account(uid: "u1", equals: original)], mutations: [.saveAccount(updated)])
        }
        #expect(result.won.count == 1 && result.allOthersLost)
        #expect(try await store.account(uid: "u1")?.displayName == result.won.first.map { "writer \($0)" })
    }

    static func concurrentEmailClaims(_ store: any AuthStore) async throws {
        let result = try await race(store, consumers: 16, lost: .emailTaken("same@example.com")) { i in
            AuthChangeSet(mutations: [.saveAccount(account("claimant\(i)", email: "same@example.com"))])
        }
        #expect(result.won.count == 1 && result.allOthersLost)
        #expect(try await store.account(email: "same@example.com")?.uid == result.won.first.map { "claimant\($0)" })
        #expect(try await store.accounts(after: nil, limit: 100).count == 1)
    }

    static func concurrentPhoneAndProviderClaims(_ store: any AuthStore) async throws {
        let phones = try await race(store, consumers: 16, lost: .phoneNumberTaken("+15555550100")) { i in
            AuthChangeSet(mutations: [.saveAccount(account("phone\(i)", phone: "+15555550100"))])
        }
        #expect(phones.won.count == 1 && phones.allOthersLost)
        #expect(try await store.account(phoneNumber: "+15555550100")?.uid == phones.won.first.map { "phone\($0)" })

        // New accounts, and existing ones linking the provider user: one account ends up with it.
        for i in 0..<8 { try await save(store, account("linker\(i)")) }
        let links = try await race(store, consumers: 16, lost: .providerTaken(providerID: "google.com", rawID: "shared")) { i in
            AuthChangeSet(mutations: [.saveAccount(account(i < 8 ? "linker\(i)" : "new\(i)", providers: [google("shared")]))])
        }
        #expect(links.won.count == 1 && links.allOthersLost)
        let holder = try #require(try await store.account(provider: "google.com", rawID: "shared"))
        #expect(holder.uid == links.won.first.map { $0 < 8 ? "linker\($0)" : "new\($0)" })
        let linked = try await store.accounts(after: nil, limit: 100).filter { !$0.providers.isEmpty }
        #expect(linked.map(\.uid) == [holder.uid])
    }

    /// Each change set expects the other's account unchanged and updates its own: applied one
    /// after the other, the second finds its expectation broken. (Snapshot isolation would let
    /// both apply: a write skew.)
    static func writeSkew(_ store: any AuthStore) async throws {
        for round in 0..<8 {
            let a = account("a\(round)"), b = account("b\(round)")
            try await save(store, a, b)
            var a2 = a, b2 = b
            a2.displayName = "updated"
            b2.displayName = "updated"
            let changes = [
                AuthChangeSet(expectations: [.account(uid: b.uid, equals: b)], mutations: [.saveAccount(a2)]),
                AuthChangeSet(expectations: [.account(uid: a.uid, equals: a)], mutations: [.saveAccount(b2)]),
            ]
            let outcomes = try await withThrowingTaskGroup(of: AuthStoreConflict?.self) { group in
                for change in changes {
                    group.addTask {
                        do {
                            try await store.apply(change)
                            return nil
                        } catch let conflict as AuthStoreConflict {
                            return conflict
                        }
                    }
                }
                return try await group.reduce(into: [AuthStoreConflict?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1, "round \(round): \(outcomes)")
            let updated = [try await store.account(uid: a.uid), try await store.account(uid: b.uid)].filter { $0?.displayName == "updated" }
            #expect(updated.count == 1, "round \(round): exactly one account was updated")
        }
    }

    /// A refresh (expects its token and the account as read, stores the account's new
    /// `lastRefreshAt`) racing a revocation (expects the account as read, deletes its tokens,
    /// moves `validSince`): whichever applies first, the other is refused, so a revoked account
    /// never gets a refreshed session.
    static func refreshRacingRevocation(_ store: any AuthStore) async throws {
        for round in 0..<8 {
            let uid = "r\(round)"
            let original = account(uid)
            try await store.apply(AuthChangeSet(mutations: [.saveAccount(original), .insertRefreshToken(token("rt\(round)", uid: uid))]))
            var refreshed = original
            refreshed.lastRefreshAt = 1_700_000_001_000
            var revoked = original
            revoked.validSince = 1_700_000_002
            let refresh = AuthChangeSet(
                expectations: [.refreshToken(hash: "rt\(round)"), .account(uid: uid, equals: original)],
                mutations: [.saveAccount(refreshed), .insertRefreshToken(token("rt\(round)-next", uid: uid))])
            let revoke = AuthChangeSet(
                expectations: [.account(uid: uid, equals: original)], mutations: [.saveAccount(revoked), .deleteRefreshTokens(uid: uid)])
            let outcomes = try await withThrowingTaskGroup(of: (String, AuthStoreConflict?).self) { group in
                for (name, change) in [("refresh", refresh), ("revoke", revoke)] {
                    group.addTask {
                        do {
                            try await store.apply(change)
                            return (name, nil)
                        } catch let conflict as AuthStoreConflict {
                            return (name, conflict)
                        }
                    }
                }
                return try await group.reduce(into: [(String, AuthStoreConflict?)]()) { $0.append($1) }
            }
            let winners = outcomes.filter { $0.1 == nil }.map(\.0)
            #expect(winners.count == 1, "round \(round): \(outcomes)")
            let stored = try await store.account(uid: uid)
            if winners == ["refresh"] {
                #expect(stored == refreshed)
                #expect(try await store.refreshToken(hash: "rt\(round)-next") != nil)
            } else {
                #expect(stored == revoked)
                #expect(try await store.refreshToken(hash: "rt\(round)-next") == nil)
                #expect(try await store.refreshToken(hash: "rt\(round)") == nil)
            }
        }
    }
}
