import HearthCore
import HearthJWT

extension AuthEngine {
    /// Session cookies last 5 minutes to 14 days (Firebase's bounds).
    public static let sessionCookieDurations: ClosedRange<Int64> = 300...1_209_600

    /// The `iss` of session cookies: `https://session.firebase.google.com/{project}`.
    public var sessionCookieIssuer: String { "https://session.firebase.google.com/\(tokens.projectID)" }

    /// `projects/{p}:createSessionCookie`: a JWT with the ID token's claims, Firebase's session
    /// issuer and its own `iat`/`exp`, signed by the key ring (RS256, `kid`). The ID token must be
    /// valid and not revoked.
    public func createSessionCookie(idToken: String, validDuration: Int64) async throws -> String {
        guard Self.sessionCookieDurations.contains(validDuration) else { throw AuthErrorCode.invalidSessionCookieDuration.error() }
        let v = try await verifyIDToken(idToken, checkRevoked: true)
        let now = clock.seconds
        var members = (v.claims.objectValue ?? []).filter { !["iss", "iat", "exp"].contains($0.0) }
        members.insert(("iss", .string(sessionCookieIssuer)), at: 0)
        members.append(("iat", .int(now)))
        members.append(("exp", .int(now + validDuration)))
        return try signWithKeyRing(.object(members))
    }

    /// Verifies a session cookie (and with `checkRevoked`, the account as for ID tokens).
    public func verifySessionCookie(_ cookie: String, checkRevoked: Bool = false) async throws -> VerifiedIDToken {
        let v = try tokens.verifyIDToken(cookie, issuer: sessionCookieIssuer)
        if checkRevoked { _ = try await account(for: v) }
        return v
    }
}
