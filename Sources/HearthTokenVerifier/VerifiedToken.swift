public import HearthCore

/// An ID token whose signature, issuer, audience, times and subject were checked.
public struct VerifiedToken: Sendable, Equatable {
    /// The user id (`sub`).
    public var uid: String
    /// Every claim of the payload, as sent.
    public var claims: JSON
    public var email: String?
    public var emailVerified: Bool
    /// `firebase.sign_in_provider`: `password`, `anonymous`, `custom`, `google.com`, …
    public var signInProvider: String?
    /// When the user signed in (`auth_time`, seconds since the epoch; `iat` if absent).
    public var authTime: Int64
    public var issuedAt: Int64
    public var expiresAt: Int64
    /// The key that signed it.
    public var keyID: String

    /// A claim by name (custom claims included).
    public subscript(claim name: String) -> JSON? { claims[name] }
}
