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

/// Reads inside one consistent snapshot.
public protocol AuthStoreReader {
    func account(uid: String) throws -> Account?
    /// By normalised (lower-case) email.
    func account(email: String) throws -> Account?
    /// Accounts ordered by uid, strictly after `uid` when given.
    func accounts(after uid: String?, limit: Int) throws -> [Account]
    func refreshToken(hash: String) throws -> RefreshTokenRecord?
    func oobCode(_ code: String) throws -> OOBCode?
    func oobCodes() throws -> [OOBCode]
    /// The account linked to identity provider `provider` with the provider's user id `rawID`.
    func account(provider: String, rawID: String) throws -> Account?
    func serviceAccount(clientEmail: String) throws -> ServiceAccountRecord?
    func serviceAccounts() throws -> [ServiceAccountRecord]
    /// By E.164 phone number.
    func account(phoneNumber: String) throws -> Account?
    func phoneCode(sessionInfo: String) throws -> PhoneVerificationCode?
    /// Oldest first.
    func phoneCodes() throws -> [PhoneVerificationCode]
    func providerConfig(id: String) throws -> ProviderConfig?
    /// Ordered by provider id.
    func providerConfigs() throws -> [ProviderConfig]
    func projectSettings() throws -> AuthProjectSettings
}

/// Writes inside one transaction; the engine checks invariants (unique email) before writing.
public protocol AuthStoreWriter: AuthStoreReader {
    /// Inserts or replaces the account with this uid.
    func save(_ account: Account) throws
    /// Deletes the account with its refresh tokens and codes.
    func deleteAccount(uid: String) throws
    func deleteAllAccounts() throws
    func insertRefreshToken(_ record: RefreshTokenRecord) throws
    func deleteRefreshTokens(uid: String) throws
    func insertOOBCode(_ code: OOBCode) throws
    func deleteOOBCode(_ code: String) throws
    func deleteOOBCodes(expiringBefore millis: Int64) throws
    func saveServiceAccount(_ record: ServiceAccountRecord) throws
    func insertPhoneCode(_ code: PhoneVerificationCode) throws
    func deletePhoneCode(sessionInfo: String) throws
    func deletePhoneCodes(expiringBefore millis: Int64) throws
    /// Inserts or replaces the config with this provider id.
    func saveProviderConfig(_ config: ProviderConfig) throws
    func deleteProviderConfig(id: String) throws
    func saveProjectSettings(_ settings: AuthProjectSettings) throws
}

/// The persistence the auth engine owns. Implementations: `InMemoryAuthStore` (here) and
/// `GRDBAuthStore` (HearthSQLite); both pass the same suite (HearthAuthTests' `AuthEngineTests`).
public protocol AuthStore: Sendable {
    func read<T: Sendable>(_ body: @escaping @Sendable (any AuthStoreReader) throws -> T) async throws -> T
    func write<T: Sendable>(_ body: @escaping @Sendable (any AuthStoreWriter) throws -> T) async throws -> T
}
