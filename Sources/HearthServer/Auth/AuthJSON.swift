import HearthCore
import HearthAuth
import Foundation

/// Accounts and sessions in Identity Toolkit's JSON shapes.
enum AuthJSON {
    /// A `UserInfo` as `accounts:lookup` and `accounts:batchGet` return it: times in ms as strings,
    /// `passwordUpdatedAt` a number, `validSince` seconds as a string, `lastRefreshAt` RFC 3339.
    /// Hash and salt only for admins (firebase-admin's `list_users` exposes them).
    static func userInfo(_ a: Account, includeHash: Bool) -> JSON {
        var m: [(String, JSON)] = [("localId", .string(a.uid))]
        if let e = a.email { m.append(("email", .string(e))) }
        m.append(("emailVerified", .bool(a.emailVerified)))
        if let p = a.phoneNumber { m.append(("phoneNumber", .string(p))) }
        if let d = a.displayName { m.append(("displayName", .string(d))) }
        if let p = a.photoURL { m.append(("photoUrl", .string(p))) }
        if includeHash, let h = a.passwordHash {
            m.append(("passwordHash", .string(Base64.urlEncode(h.hash))))
            m.append(("salt", .string(Base64.urlEncode(h.salt))))
        }
        if let t = a.passwordUpdatedAt { m.append(("passwordUpdatedAt", .number(String(t)))) }
        m.append(("providerUserInfo", .array(a.providerUserInfo.map(providerInfo))))
        m.append(("validSince", .string(String(a.validSince))))
        if a.disabled { m.append(("disabled", .bool(true))) }
        if let t = a.lastLoginAt { m.append(("lastLoginAt", .string(String(t)))) }
        m.append(("createdAt", .string(String(a.createdAt))))
        if let t = a.lastRefreshAt { m.append(("lastRefreshAt", .string(rfc3339(t)))) }
        if let c = a.customClaims { m.append(("customAttributes", .string(c))) }
        if a.email != nil && a.passwordHash == nil && a.providers.isEmpty { m.append(("emailLinkSignin", .bool(true))) }
        return .object(m)
    }

    static func providerInfo(_ p: ProviderUserInfo) -> JSON {
        var m: [(String, JSON)] = [("providerId", .string(p.providerID)), ("rawId", .string(p.rawID)), ("federatedId", .string(p.rawID))]
        if let e = p.email { m.append(("email", .string(e))) }
        if let d = p.displayName { m.append(("displayName", .string(d))) }
        if let u = p.photoURL { m.append(("photoUrl", .string(u))) }
        if let n = p.phoneNumber { m.append(("phoneNumber", .string(n))) }
        return .object(m)
    }

    /// Milliseconds since the epoch as `2024-05-01T12:00:00.123Z`.
    static func rfc3339(_ millis: Int64) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }

    /// `idToken`, `refreshToken`, `expiresIn` (a string, as Google sends it).
    static func tokens(_ s: AuthEngine.Session) -> [(String, JSON)] {
        [("idToken", .string(s.idToken)), ("refreshToken", .string(s.refreshToken)), ("expiresIn", .string(String(s.expiresIn)))]
    }

    static func kind(_ name: String) -> (String, JSON) { ("kind", .string("identitytoolkit#\(name)")) }
}
