public import HearthCore

/// A linked identity provider on an account (`providerUserInfo`).
public struct ProviderUserInfo: Sendable, Hashable {
    public var providerID: String
    public var rawID: String
    public var email: String?
    public var displayName: String?
    public var photoURL: String?
    /// The `phone` provider's number (E.164).
    public var phoneNumber: String?

    public init(
        providerID: String, rawID: String, email: String? = nil, displayName: String? = nil, photoURL: String? = nil, phoneNumber: String? = nil
    ) {
        self.providerID = providerID
        self.rawID = rawID
        self.email = email
        self.displayName = displayName
        self.photoURL = photoURL
        self.phoneNumber = phoneNumber
    }
}

/// One user. Times are milliseconds since the epoch except `validSince` (seconds), as Firebase keeps them.
public struct Account: Sendable, Hashable {
    public var uid: String
    /// Lower-cased; unique among accounts.
    public var email: String?
    public var emailVerified: Bool
    /// E.164 (`+15555550100`); unique among accounts. Listed as the `phone` provider.
    public var phoneNumber: String?
    public var passwordHash: PasswordHash?
    public var passwordUpdatedAt: Int64?
    public var displayName: String?
    public var photoURL: String?
    public var disabled: Bool
    /// Custom claims as a JSON object text (`customAttributes`), ≤ 1,000 bytes.
    public var customClaims: String?
    /// Identity providers other than `password` (e.g. `google.com`, `custom` is not listed).
    public var providers: [ProviderUserInfo]
    public var createdAt: Int64
    public var lastLoginAt: Int64?
    public var lastRefreshAt: Int64?
    /// Tokens issued before this time (seconds) are revoked.
    public var validSince: Int64

    public init(
        uid: String, email: String? = nil, emailVerified: Bool = false, passwordHash: PasswordHash? = nil,
        passwordUpdatedAt: Int64? = nil, displayName: String? = nil, photoURL: String? = nil, disabled: Bool = false,
        customClaims: String? = nil, providers: [ProviderUserInfo] = [], createdAt: Int64, lastLoginAt: Int64? = nil,
        lastRefreshAt: Int64? = nil, validSince: Int64, phoneNumber: String? = nil
    ) {
        self.uid = uid
        self.email = email
        self.emailVerified = emailVerified
        self.phoneNumber = phoneNumber
        self.passwordHash = passwordHash
        self.passwordUpdatedAt = passwordUpdatedAt
        self.displayName = displayName
        self.photoURL = photoURL
        self.disabled = disabled
        self.customClaims = customClaims
        self.providers = providers
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.lastRefreshAt = lastRefreshAt
        self.validSince = validSince
    }

    /// No email, no phone number, no password, no linked provider.
    public var isAnonymous: Bool { email == nil && phoneNumber == nil && passwordHash == nil && providers.isEmpty }

    /// `firebase.identities` for ID tokens: `{"email":[…], "<provider>":[rawId…]}`.
    public var identities: JSON {
        var members: [(String, JSON)] = []
        if let email { members.append(("email", .array([.string(email)]))) }
        if let phoneNumber { members.append(("phone", .array([.string(phoneNumber)]))) }
        for p in providers where !members.contains(where: { $0.0 == p.providerID }) {
            members.append((p.providerID, .array(providers.filter { $0.providerID == p.providerID }.map { .string($0.rawID) })))
        }
        return .object(members)
    }

    /// The providers Firebase lists in `providerUserInfo` (including `password` when a password
    /// is set and `phone` when a phone number is).
    public var providerUserInfo: [ProviderUserInfo] {
        var out: [ProviderUserInfo] = []
        if let email, passwordHash != nil {
            out.append(ProviderUserInfo(providerID: "password", rawID: email, email: email, displayName: displayName, photoURL: photoURL))
        }
        if let phoneNumber { out.append(ProviderUserInfo(providerID: "phone", rawID: phoneNumber, phoneNumber: phoneNumber)) }
        return out + providers
    }
}
