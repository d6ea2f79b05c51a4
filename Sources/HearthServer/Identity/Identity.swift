public import HearthCore
public import HearthRules

/// Who made a request, as every Hearth service sees it: an administrator (bypasses security
/// rules), a signed-in user with the claims of their ID token, or nobody.
public struct Identity: Sendable {
    public enum Kind: Sendable, Equatable {
        /// The admin credential, a service account's access token, or `owner` in emulator mode.
        case admin
        /// A verified (or, in emulator mode, unsigned) Firebase ID token.
        case user
        /// No credentials.
        case unauthenticated
    }

    public var kind: Kind
    /// The user's uid (`sub`), for `.user`.
    public var uid: String?
    /// The ID token's claims, for `.user`.
    public var claims: JSON?
    /// `firebase.sign_in_provider`, for `.user`.
    public var signInProvider: String?
    /// What the admin is (`owner`, `admin-token`, a service account's email), for `.admin`.
    public var principal: String?

    public static let unauthenticated = Identity(kind: .unauthenticated)

    public static func admin(_ principal: String) -> Identity { Identity(kind: .admin, principal: principal) }

    public static func user(uid: String, claims: JSON) -> Identity {
        Identity(kind: .user, uid: uid, claims: claims, signInProvider: claims["firebase"]?["sign_in_provider"]?.stringValue)
    }

    public init(kind: Kind, uid: String? = nil, claims: JSON? = nil, signInProvider: String? = nil, principal: String? = nil) {
        self.kind = kind
        self.uid = uid
        self.claims = claims
        self.signInProvider = signInProvider
        self.principal = principal
    }

    public var isAdmin: Bool { kind == .admin }

    /// `request.auth` for security rules: nil when unauthenticated.
    public var rulesAuth: RulesAuth? {
        guard kind == .user, let uid else { return nil }
        var token: [String: Value] = [:]
        for (k, v) in claims?.objectValue ?? [] { token[k] = Self.value(v) }
        return RulesAuth(uid: uid, token: token)
    }

    /// Claims as rules values: integers stay integers, other numbers are floats.
    static func value(_ json: JSON) -> Value {
        switch json {
        case .null: return .null
        case .bool(let b): return .boolean(b)
        case .number(let n):
            if let i = Int64(n) { return .integer(i) }
            return .double(Double(n) ?? .nan)
        case .string(let s): return .string(s)
        case .array(let a): return .array(a.map(value))
        case .object(let o):
            var m: [String: Value] = [:]
            for (k, v) in o { m[k] = value(v) }
            return .map(m)
        }
    }
}
