import HearthCore

/// A refresh token as stored: only the SHA-256 of the opaque token is kept.
public struct RefreshTokenRecord: Sendable, Hashable {
    /// Hex SHA-256 of the token.
    public var tokenHash: String
    public var uid: String
    public var signInProvider: String
    /// Seconds; the ID tokens it mints carry this `auth_time`.
    public var authTime: Int64
    /// Developer claims from a custom token, JSON object text, carried into refreshed ID tokens.
    public var extraClaims: String?
    /// Seconds; a token created before the account's `validSince` is revoked.
    public var createdAt: Int64

    public init(tokenHash: String, uid: String, signInProvider: String, authTime: Int64, extraClaims: String?, createdAt: Int64) {
        self.tokenHash = tokenHash
        self.uid = uid
        self.signInProvider = signInProvider
        self.authTime = authTime
        self.extraClaims = extraClaims
        self.createdAt = createdAt
    }
}

/// The out-of-band actions Firebase sends codes for.
public enum OOBRequestType: String, Sendable, CaseIterable {
    case passwordReset = "PASSWORD_RESET"
    case verifyEmail = "VERIFY_EMAIL"
    case emailSignIn = "EMAIL_SIGNIN"

    /// The `mode` of the action link.
    public var mode: String {
        switch self {
        case .passwordReset: "resetPassword"
        case .verifyEmail: "verifyEmail"
        case .emailSignIn: "signIn"
        }
    }
}

/// An out-of-band code (password reset, email verification, email-link sign-in).
public struct OOBCode: Sendable, Hashable {
    public var code: String
    public var requestType: OOBRequestType
    public var email: String
    public var uid: String?
    public var continueURL: String?
    /// Milliseconds.
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(code: String, requestType: OOBRequestType, email: String, uid: String?, continueURL: String?, createdAt: Int64, expiresAt: Int64) {
        self.code = code
        self.requestType = requestType
        self.email = email
        self.uid = uid
        self.continueURL = continueURL
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A code sent by SMS for phone sign-in (`accounts:sendVerificationCode`); `sessionInfo` is what
/// the client gets back and presents with the code.
public struct PhoneVerificationCode: Sendable, Hashable {
    public var sessionInfo: String
    public var phoneNumber: String
    public var code: String
    /// Milliseconds.
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(sessionInfo: String, phoneNumber: String, code: String, createdAt: Int64, expiresAt: Int64) {
        self.sessionInfo = sessionInfo
        self.phoneNumber = phoneNumber
        self.code = code
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A registered Hearth service account: only its public key is kept (the private key is in the
/// JSON file `hearth admin service-account create` wrote).
public struct ServiceAccountRecord: Sendable, Hashable {
    public var clientEmail: String
    public var clientID: String
    /// `private_key_id`: the `kid` of assertions and custom tokens it signs.
    public var keyID: String
    /// SubjectPublicKeyInfo PEM.
    public var publicKeyPEM: String
    /// Milliseconds.
    public var createdAt: Int64

    public init(clientEmail: String, clientID: String, keyID: String, publicKeyPEM: String, createdAt: Int64) {
        self.clientEmail = clientEmail
        self.clientID = clientID
        self.keyID = keyID
        self.publicKeyPEM = publicKeyPEM
        self.createdAt = createdAt
    }
}

/// Project-wide auth settings kept with the accounts (what the Auth emulator's `config.json`
/// holds that Hearth has: `emailPrivacyConfig.enableImprovedEmailPrivacy`). Nil: never set, the
/// server's configuration decides.
public struct AuthProjectSettings: Sendable, Equatable {
    public var emailEnumerationProtection: Bool?

    public init(emailEnumerationProtection: Bool? = nil) {
        self.emailEnumerationProtection = emailEnumerationProtection
    }
}

/// A fact a change set was planned on; the store applies the change set only if every one
/// still holds inside its transaction (else ``AuthStoreConflict/changed(_:)``, nothing applied).
public enum AuthExpectation: Sendable, Equatable {
    /// The account with this uid is exactly `account` (nil: there is none). Every field counts,
    /// so a revocation, a disabling or any other update in between is seen.
    case account(uid: String, equals: Account?)
    /// The identity provider's user (`providerID`, `rawID`) is linked to the account with this
    /// uid (nil: to no account). A decision that rests on two reads — no account is linked to the
    /// provider user, another has its email — states both, so it is never made from reads taken
    /// on either side of someone else's commit.
    case providerLink(providerID: String, rawID: String, uid: String?)
    /// This refresh token (by hash) is still stored: not revoked, its account not deleted.
    case refreshToken(hash: String)
    /// This out-of-band code is still stored: not consumed by anyone else (single use).
    case oobCode(String)
    /// This phone verification session is still stored: not consumed by anyone else (single use).
    case phoneCode(sessionInfo: String)
    /// A service account with this email is registered (`true`) or not (`false`).
    case serviceAccount(clientEmail: String, exists: Bool)
    /// The provider config with this id is exactly `config` (nil: there is none).
    case providerConfig(id: String, equals: ProviderConfig?)
    /// The project settings are exactly these.
    case projectSettings(equals: AuthProjectSettings)
    /// There is no account at all (an import into an empty store).
    case noAccounts
}

/// One change of a change set, fully worked out by the engine: the store only stores it.
public enum AuthMutation: Sendable, Equatable {
    /// Inserts or replaces the account with this uid. The store refuses it with
    /// ``AuthStoreConflict/emailTaken(_:)``, ``AuthStoreConflict/phoneNumberTaken(_:)`` or
    /// ``AuthStoreConflict/providerTaken(providerID:rawID:)`` when another account (another
    /// uid) has the email, the phone number or a linked (provider, raw id) — as the store is
    /// at that point of the change set.
    case saveAccount(Account)
    /// Deletes the account with its refresh tokens and out-of-band codes (none: nothing happens).
    case deleteAccount(uid: String)
    /// Deletes every account, refresh token, out-of-band code and phone code (service accounts,
    /// provider configs and project settings stay).
    case deleteAllAccounts
    case insertRefreshToken(RefreshTokenRecord)
    case deleteRefreshTokens(uid: String)
    case insertOOBCode(OOBCode)
    case deleteOOBCode(String)
    /// Deletes the out-of-band codes whose `expiresAt` is before `millis`.
    case deleteOOBCodes(expiringBefore: Int64)
    /// Inserts or replaces the service account with this email.
    case saveServiceAccount(ServiceAccountRecord)
    case insertPhoneCode(PhoneVerificationCode)
    case deletePhoneCode(sessionInfo: String)
    /// Deletes the phone codes whose `expiresAt` is before `millis`.
    case deletePhoneCodes(expiringBefore: Int64)
    /// Inserts or replaces the config with this provider id.
    case saveProviderConfig(ProviderConfig)
    case deleteProviderConfig(id: String)
    case saveProjectSettings(AuthProjectSettings)
}

/// What the engine asks a store to apply: expectations checked first, then mutations in order,
/// all or nothing.
public struct AuthChangeSet: Sendable, Equatable {
    public var expectations: [AuthExpectation]
    public var mutations: [AuthMutation]

    public init(expectations: [AuthExpectation] = [], mutations: [AuthMutation] = []) {
        self.expectations = expectations
        self.mutations = mutations
    }

    public var isEmpty: Bool { expectations.isEmpty && mutations.isEmpty }
}

/// A store refused a change set; nothing was applied. The engine plans again from fresh reads
/// (where Firebase's own error, e.g. EMAIL_EXISTS or INVALID_OOB_CODE, then comes out).
public enum AuthStoreConflict: Error, Sendable, Equatable {
    /// An expectation no longer holds.
    case changed(AuthExpectation)
    /// Another account has this (normalised) email.
    case emailTaken(String)
    /// Another account has this phone number.
    case phoneNumberTaken(String)
    /// Another account is linked to this identity provider user.
    case providerTaken(providerID: String, rawID: String)
}

/// The persistence the auth engine owns — the seam every backend implements (`InMemoryAuthStore`
/// here, `GRDBAuthStore` in HearthSQLite, PostgreSQL next). Every operation is asynchronous and
/// holds nothing across the caller's awaits, so a backend with an asynchronous driver
/// (postgres-nio) implements it directly.
///
/// Writes follow plan → apply: the engine reads what it needs (each read sees committed data),
/// decides, and submits an ``AuthChangeSet`` whose expectations name what its decision rests on.
/// The store applies it atomically and durably inside one transaction of its own, after
/// checking every expectation there, and enforces the uniqueness of emails, phone numbers and
/// linked provider users itself; otherwise it throws an ``AuthStoreConflict`` and applies
/// nothing. Single-use secrets (out-of-band codes, phone sessions) are consumed by a change set
/// that expects them and deletes them, so of concurrent consumers exactly one wins.
/// Every implementation passes `AuthStoreConformance` (the HearthStoreConformance target).
public protocol AuthStore: Sendable {
    func account(uid: String) async throws -> Account?
    /// By normalised (lower-case) email.
    func account(email: String) async throws -> Account?
    /// By E.164 phone number.
    func account(phoneNumber: String) async throws -> Account?
    /// The account linked to identity provider `provider` with the provider's user id `rawID`.
    func account(provider: String, rawID: String) async throws -> Account?
    /// Accounts ordered by uid, strictly after `uid` when given.
    func accounts(after uid: String?, limit: Int) async throws -> [Account]
    func refreshToken(hash: String) async throws -> RefreshTokenRecord?
    func oobCode(_ code: String) async throws -> OOBCode?
    /// Oldest first (then by code).
    func oobCodes() async throws -> [OOBCode]
    func phoneCode(sessionInfo: String) async throws -> PhoneVerificationCode?
    /// Oldest first (then by session).
    func phoneCodes() async throws -> [PhoneVerificationCode]
    func serviceAccount(clientEmail: String) async throws -> ServiceAccountRecord?
    /// Ordered by email.
    func serviceAccounts() async throws -> [ServiceAccountRecord]
    func providerConfig(id: String) async throws -> ProviderConfig?
    /// Ordered by provider id.
    func providerConfigs() async throws -> [ProviderConfig]
    func projectSettings() async throws -> AuthProjectSettings

    /// Applies `changes` atomically and durably before it returns: checks every expectation,
    /// then performs the mutations in order (each sees the ones before it). Throws
    /// ``AuthStoreConflict`` — and leaves the data unchanged — when an expectation fails or a
    /// saved account would share an email, phone number or provider user with another.
    func apply(_ changes: AuthChangeSet) async throws
}
