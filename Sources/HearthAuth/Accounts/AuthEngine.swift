public import HearthCore
import Crypto
import Foundation
import Synchronization

/// Firebase Authentication's behaviour over any ``AuthStore``: accounts, passwords, sessions,
/// out-of-band codes. Knows nothing of HTTP; every failure is a `HearthError` whose message is
/// Firebase's error string (see ``AuthErrorCode``).
public final class AuthEngine: Sendable {
    public struct Configuration: Sendable {
        public var passwordHashing: ScryptParameters
        public var minPasswordLength: Int
        /// Collapse EMAIL_NOT_FOUND / INVALID_PASSWORD into INVALID_LOGIN_CREDENTIALS.
        public var emailEnumerationProtection: Bool
        public var allowAnonymousSignUp: Bool
        /// Failed password sign-ins per account before TOO_MANY_ATTEMPTS_TRY_LATER.
        public var accountFailureLimit: Int
        /// Password sign-in attempts per client address.
        public var addressAttemptLimit: Int
        public var attemptWindowSeconds: Int64
        public var oobCodeLifetimeSeconds: Int64
        /// How recent a client's sign-in must be to change email or password or delete the account.
        public var recentLoginSeconds: Int64

        public init(
            passwordHashing: ScryptParameters = .strong, minPasswordLength: Int = 6, emailEnumerationProtection: Bool = false,
            allowAnonymousSignUp: Bool = true, accountFailureLimit: Int = 10, addressAttemptLimit: Int = 100,
            attemptWindowSeconds: Int64 = 300, oobCodeLifetimeSeconds: Int64 = 3600, recentLoginSeconds: Int64 = 300
        ) {
            self.passwordHashing = passwordHashing
            self.minPasswordLength = minPasswordLength
            self.emailEnumerationProtection = emailEnumerationProtection
            self.allowAnonymousSignUp = allowAnonymousSignUp
            self.accountFailureLimit = accountFailureLimit
            self.addressAttemptLimit = addressAttemptLimit
            self.attemptWindowSeconds = attemptWindowSeconds
            self.oobCodeLifetimeSeconds = oobCodeLifetimeSeconds
            self.recentLoginSeconds = recentLoginSeconds
        }
    }

    /// What a successful sign-in returns (the fields of Firebase's sign-in responses).
    public struct Session: Sendable {
        public var account: Account
        public var idToken: String
        public var refreshToken: String
        /// Seconds (`expiresIn`).
        public var expiresIn: Int64
        public var isNewUser: Bool
    }

    public let store: any AuthStore
    public let tokens: TokenService
    public let configuration: Configuration
    public let clock: AuthClock
    /// Accounts deleted through this engine, once each deletion committed.
    public let accountDeletions = AccountDeletionFeed()
    let enumerationProtection: Mutex<Bool>
    let accountFailures: AttemptLimiter
    let addressAttempts: AttemptLimiter

    /// `attempts` counts sign-in attempts for servers sharing a database (nil: in this process).
    public init(store: any AuthStore, tokens: TokenService, configuration: Configuration = .init(), attempts: (any SignInAttemptStore)? = nil) {
        self.store = store
        self.tokens = tokens
        self.configuration = configuration
        self.clock = tokens.clock
        self.enumerationProtection = Mutex(configuration.emailEnumerationProtection)
        let window = configuration.attemptWindowSeconds * 1000
        accountFailures = AttemptLimiter(.init(attempts: configuration.accountFailureLimit, windowMillis: window), name: "account", store: attempts)
        addressAttempts = AttemptLimiter(.init(attempts: configuration.addressAttemptLimit, windowMillis: window), name: "address", store: attempts)
    }

    /// Whether email enumeration protection is on now (the emulator's config endpoint changes it).
    public var emailEnumerationProtection: Bool { enumerationProtection.withLock { $0 } }

    public func setEmailEnumerationProtection(_ on: Bool) { enumerationProtection.withLock { $0 = on } }

    /// Turns email enumeration protection on or off and keeps the choice in the store, so it
    /// outlives a restart and goes into exports (`auth_export/config.json`).
    public func saveEmailEnumerationProtection(_ on: Bool) async throws {
        try await commit {
            let current = try await self.store.projectSettings()
            var settings = current
            settings.emailEnumerationProtection = on
            return (AuthChangeSet(expectations: [.projectSettings(equals: current)], mutations: [.saveProjectSettings(settings)]), ())
        }
        setEmailEnumerationProtection(on)
    }

    /// Applies the project settings the store keeps over the configuration's (at open).
    public func applyStoredSettings() async throws {
        let settings = try await store.projectSettings()
        if let on = settings.emailEnumerationProtection { setEmailEnumerationProtection(on) }
    }

    // MARK: Validation

    /// Lower-cased and checked the way the Auth emulator does (`local@domain`, no spaces).
    public static func normalizeEmail(_ email: String) throws(HearthError) -> String {
        let e = email.lowercased()
        let parts = e.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, e.utf8.count <= 256,
            !e.contains(where: { $0.isWhitespace })
        else { throw AuthErrorCode.invalidEmail.error() }
        return e
    }

    func checkPassword(_ password: String?) throws(HearthError) -> String {
        guard let password, !password.isEmpty else { throw AuthErrorCode.missingPassword.error() }
        guard password.count >= configuration.minPasswordLength else {
            throw AuthErrorCode.weakPassword.error("Password should be at least \(configuration.minPasswordLength) characters")
        }
        return password
    }

    static func checkUID(_ uid: String) throws(HearthError) {
        guard !uid.isEmpty, uid.utf8.count <= 128 else { throw AuthErrorCode.invalidLocalID.error() }
    }

    static func randomString(_ count: Int, alphabet: String = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") -> String {
        var rng = SystemRandomNumberGenerator()
        let chars = Array(alphabet)
        return String((0..<count).map { _ in chars[Int.random(in: 0..<chars.count, using: &rng)] })
    }

    /// A new uid as Firebase makes them (28 alphanumerics).
    public static func newUID() -> String { randomString(28) }

    // MARK: Plan → apply

    /// How many times a change set is planned again after a conflict before the request fails.
    /// Each conflict means another change set touching the same records committed in between.
    static let maxPlanAttempts = 16

    /// Plans a change set from fresh reads (`plan`), has the store apply it, and plans again
    /// when the store reports a conflict (what the plan rested on changed in between): the
    /// next plan reads the new state, where Firebase's own error (EMAIL_EXISTS,
    /// INVALID_OOB_CODE, …) comes out if there is one. An empty change set applies nothing.
    func commit<T>(_ plan: () async throws -> (AuthChangeSet, T)) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            let (changes, result) = try await plan()
            if changes.isEmpty { return result }
            do {
                try await store.apply(changes)
                return result
            } catch let conflict as AuthStoreConflict {
                guard attempt < Self.maxPlanAttempts else { throw Self.unresolved(conflict) }
            }
        }
    }

    /// The answer for a conflict that planning again did not resolve.
    static func unresolved(_ conflict: AuthStoreConflict) -> HearthError {
        switch conflict {
        case .emailTaken: AuthErrorCode.emailExists.error()
        case .phoneNumberTaken: AuthErrorCode.phoneNumberExists.error()
        case .providerTaken: AuthErrorCode.federatedUserIDAlreadyLinked.error()
        case .changed: HearthError(.aborted, "The account changed too often while this request was handled; try again.", cause: conflict)
        }
    }

    // MARK: Sessions

    /// A session whose records are planned (the account's `lastRefreshAt`, the refresh
    /// token's hash); its ID token is minted once they are stored (``finish(_:)``).
    struct PlannedSession: Sendable {
        var account: Account
        var provider: String
        var extraClaims: JSON?
        var isNewUser: Bool
        var refreshToken: String
        var authTime: Int64
    }

    /// Plans a session for `account` as it should be stored: records the issue as its
    /// `lastRefreshAt` (Firebase sets it whenever tokens are issued: sign-up, every kind of
    /// sign-in, refresh), saves it and stores a fresh refresh token's hash — after the
    /// `also` mutations, under `expecting`.
    func planSession(
        _ issuedTo: Account, provider: String, extraClaims: JSON? = nil, isNewUser: Bool, expecting: [AuthExpectation],
        also: [AuthMutation] = []
    ) -> (AuthChangeSet, PlannedSession) {
        var account = issuedTo
        account.lastRefreshAt = clock.millis()
        let now = clock.seconds
        let refresh = Self.randomString(64, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let record = RefreshTokenRecord(
            tokenHash: Self.hashRefreshToken(refresh), uid: account.uid, signInProvider: provider, authTime: now,
            extraClaims: extraClaims?.serialized(), createdAt: now)
        let changes = AuthChangeSet(expectations: expecting, mutations: also + [.saveAccount(account), .insertRefreshToken(record)])
        return (
            changes,
            PlannedSession(
                account: account, provider: provider, extraClaims: extraClaims, isNewUser: isNewUser, refreshToken: refresh, authTime: now)
        )
    }

    /// Mints the ID token of a session whose records are stored. Signing (an RSA private-key
    /// operation) happens outside any store transaction.
    func finish(_ planned: PlannedSession) throws -> Session {
        let id = try tokens.mintIDToken(
            for: planned.account, signInProvider: planned.provider, authTime: planned.authTime, extraClaims: planned.extraClaims)
        return Session(
            account: planned.account, idToken: id, refreshToken: planned.refreshToken, expiresIn: TokenService.idTokenLifetime,
            isNewUser: planned.isNewUser)
    }

    static func hashRefreshToken(_ token: String) -> String { sha256Hex(token) }

    /// Lower-case hex SHA-256 of the text's UTF-8 (refresh-token storage, Apple's nonce).
    static func sha256Hex(_ text: String) -> String {
        SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// `accounts:signUp`: email + password, or neither for an anonymous user.
    /// `clientAddress` feeds the per-address attempt limit (sign-ups counted apart from sign-ins);
    /// an address already registered counts against that address's sign-ups as a failure.
    public func signUp(
        email: String?, password: String?, displayName: String? = nil, photoURL: String? = nil, clientAddress: String? = nil
    ) async throws -> Session {
        if let clientAddress {
            let now = clock.millis()
            guard try await !addressAttempts.isBlocked("signUp " + clientAddress, now: now) else { throw AuthErrorCode.tooManyAttempts.error() }
            try await addressAttempts.record("signUp " + clientAddress, now: now)
        }
        if email == nil && password == nil {
            guard configuration.allowAnonymousSignUp else { throw AuthErrorCode.adminOnlyOperation.error() }
            let now = clock.millis()
            let planned = try await commit {
                let account = Account(
                    uid: Self.newUID(), displayName: displayName, photoURL: photoURL, createdAt: now, lastLoginAt: now, validSince: now / 1000)
                return self.planSession(account, provider: "anonymous", isNewUser: true, expecting: [.account(uid: account.uid, equals: nil)])
            }
            return try finish(planned)
        }
        guard let email, !email.isEmpty else { throw AuthErrorCode.missingEmail.error() }
        let normalized = try Self.normalizeEmail(email)
        let now = clock.millis()
        let signUpKey = "signUp email:" + normalized
        if clientAddress != nil, try await accountFailures.isBlocked(signUpKey, now: now) { throw AuthErrorCode.tooManyAttempts.error() }
        let hash = try configuration.passwordHashing.hash(try checkPassword(password))
        let account = Account(
            uid: Self.newUID(), email: normalized, passwordHash: hash, passwordUpdatedAt: now, displayName: displayName,
            photoURL: photoURL, createdAt: now, lastLoginAt: now, validSince: now / 1000)
        // A concurrent sign-up of the same email makes the store refuse the save (emailTaken):
        // the next plan sees that account.
        let planned: PlannedSession? = try await commit {
            guard try await self.store.account(email: normalized) == nil else { return (AuthChangeSet(), nil) }
            let (changes, session) = self.planSession(
                account, provider: "password", isNewUser: true, expecting: [.account(uid: account.uid, equals: nil)])
            return (changes, session)
        }
        guard let planned else {
            if clientAddress != nil { try await accountFailures.record(signUpKey, now: now) }
            throw AuthErrorCode.emailExists.error()
        }
        return try finish(planned)
    }

    /// `accounts:signInWithPassword`. `clientAddress` feeds the per-address attempt limit.
    public func signInWithPassword(email: String, password: String, clientAddress: String? = nil) async throws -> Session {
        let normalized = try Self.normalizeEmail(email)
        guard !password.isEmpty else { throw AuthErrorCode.missingPassword.error() }
        let now = clock.millis()
        let accountKey = "email:" + normalized
        if let clientAddress {
            guard try await !addressAttempts.isBlocked(clientAddress, now: now) else { throw AuthErrorCode.tooManyAttempts.error() }
            try await addressAttempts.record(clientAddress, now: now)
        }
        guard try await !accountFailures.isBlocked(accountKey, now: now) else { throw AuthErrorCode.tooManyAttempts.error() }
        let protect = emailEnumerationProtection
        guard let account = try await store.account(email: normalized), let hash = account.passwordHash else {
            try await accountFailures.record(accountKey, now: now)
            throw (protect ? AuthErrorCode.invalidLoginCredentials : .emailNotFound).error()
        }
        guard try hash.verify(password) else {
            try await accountFailures.record(accountKey, now: now)
            throw (protect ? AuthErrorCode.invalidLoginCredentials : .invalidPassword).error()
        }
        guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
        try await accountFailures.reset(accountKey)
        // Imported or outdated hashes are replaced by the native scheme now that the password is known.
        let upgraded = hash.isNative(configuration.passwordHashing) ? nil : try configuration.passwordHashing.hash(password)
        let planned = try await commit {
            guard var current = try await self.store.account(uid: account.uid), current.passwordHash == hash else {
                throw AuthErrorCode.invalidPassword.error()
            }
            guard !current.disabled else { throw AuthErrorCode.userDisabled.error() }
            let read = current
            if let upgraded { current.passwordHash = upgraded }
            current.lastLoginAt = now
            return self.planSession(current, provider: "password", isNewUser: false, expecting: [.account(uid: read.uid, equals: read)])
        }
        return try finish(planned)
    }

    /// `accounts:signInWithCustomToken`: creates the user on first use.
    public func signInWithCustomToken(_ token: String) async throws -> Session {
        let verified = try tokens.verifyCustomToken(token)
        let now = clock.millis()
        let planned = try await commit {
            let existing = try await self.store.account(uid: verified.uid)
            var account: Account
            if let existing {
                account = existing
                guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
            } else {
                account = Account(uid: verified.uid, createdAt: now, validSince: now / 1000)
            }
            account.lastLoginAt = now
            return self.planSession(
                account, provider: "custom", extraClaims: verified.claims, isNewUser: existing == nil,
                expecting: [.account(uid: verified.uid, equals: existing)])
        }
        return try finish(planned)
    }

    /// `securetoken v1/token` with `grant_type=refresh_token`: a new ID token; the refresh token stays valid.
    public func refresh(_ refreshToken: String) async throws -> Session {
        guard !refreshToken.isEmpty else { throw AuthErrorCode.missingRefreshToken.error() }
        let hash = Self.hashRefreshToken(refreshToken)
        let now = clock.millis()
        let (account, record) = try await commit {
            guard let record = try await self.store.refreshToken(hash: hash) else { throw AuthErrorCode.invalidRefreshToken.error() }
            guard var account = try await self.store.account(uid: record.uid) else { throw AuthErrorCode.userNotFound.error() }
            guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
            guard record.createdAt >= account.validSince else { throw AuthErrorCode.tokenExpired.error() }
            let read = account
            account.lastRefreshAt = now
            // A revocation (or deletion, or disabling) committed after these reads fails the
            // expectations: the next plan sees it.
            let changes = AuthChangeSet(
                expectations: [.refreshToken(hash: hash), .account(uid: read.uid, equals: read)], mutations: [.saveAccount(account)])
            return (changes, (account, record))
        }
        // Signing (an RSA private-key operation) happens outside the store's transaction, so
        // refreshes sign on every core instead of one at a time under the writer's lock. A
        // revocation committed after the apply above is ordered after this refresh.
        let extra = try record.extraClaims.map { try JSON.parse($0) }
        let id = try tokens.mintIDToken(for: account, signInProvider: record.signInProvider, authTime: record.authTime, extraClaims: extra)
        return Session(account: account, idToken: id, refreshToken: refreshToken, expiresIn: TokenService.idTokenLifetime, isNewUser: false)
    }

    /// Verifies an ID token; with `checkRevoked`, also that the account exists, is enabled and
    /// has not revoked tokens issued before the token (`iat < validSince`).
    public func verifyIDToken(_ token: String, checkRevoked: Bool = false) async throws -> VerifiedIDToken {
        let v = try tokens.verifyIDToken(token)
        if checkRevoked { _ = try await account(for: v) }
        return v
    }

    /// The account a verified token names, checked for deletion, disabling and revocation.
    func account(for v: VerifiedIDToken) async throws -> Account {
        guard let account = try await store.account(uid: v.uid) else { throw AuthErrorCode.userNotFound.error() }
        guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
        guard v.issuedAt >= account.validSince else { throw AuthErrorCode.tokenExpired.error() }
        return account
    }

    /// The account behind a client's ID token (`accounts:lookup {idToken}` and the other client calls).
    public func account(idToken: String) async throws -> Account {
        try await account(for: tokens.verifyIDToken(idToken))
    }

    /// Revokes every refresh token and ID token issued before now (`validSince` = now).
    public func revokeTokens(uid: String) async throws {
        let now = clock.seconds
        try await commit {
            guard var a = try await self.store.account(uid: uid) else { throw AuthErrorCode.userNotFound.error() }
            let read = a
            a.validSince = now
            return (
                AuthChangeSet(expectations: [.account(uid: uid, equals: read)], mutations: [.saveAccount(a), .deleteRefreshTokens(uid: uid)]), ()
            )
        }
    }
}
