public import HearthCore
public import HearthAuth
import HearthJWT
import Foundation

/// The one component every Hearth service authenticates through. It reads
/// `Authorization: Bearer <credential>` (or `Firebase <ID token>`, as the Storage SDK sends
/// it) and answers with an ``Identity``:
///
/// 1. `owner` in emulator mode, the `--admin-token`, or a service account's access token →
///    admin (security rules do not apply).
/// 2. A Firebase ID token signed by Hearth's keys (issuer, audience, expiry checked) → that
///    user. In emulator mode unsigned (`alg: none`) ID tokens are accepted as the Firebase
///    emulators accept them — never in production.
/// 3. No header → unauthenticated. Anything else → 401 UNAUTHENTICATED, which the SDKs
///    answer by refreshing their token.
public struct Authenticator: Sendable {
    public var emulator: Bool
    public var adminToken: String?
    public var tokens: TokenService?
    /// Checks a service account's OAuth2 access token; returns the account's email when valid.
    public var accessTokens: (@Sendable (String) async -> String?)?
    /// App Check per service (`firestore`, `storage`, `auth`, `database`), checked by ``checkAppCheck(_:token:identity:)``.
    public var appCheckGates: [String: AppCheckGate] = [:]
    /// The web console's per-process credential for its proxy (never leaves the process).
    var consoleToken: String?

    public init(emulator: Bool, adminToken: String?, tokens: TokenService?,
                accessTokens: (@Sendable (String) async -> String?)? = nil) {
        self.emulator = emulator
        self.adminToken = adminToken
        self.tokens = tokens
        self.accessTokens = accessTokens
    }

    static let unauthenticated = HearthError(
        .unauthenticated,
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")

    /// The credential in an `Authorization` header (`Bearer x` or `Firebase x`), if any.
    public static func credential(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        let trimmed = trimmingWhitespace(authorization[...])
        guard let space = trimmed.firstIndex(of: " ") else { return nil }
        let scheme = trimmed[..<space].lowercased()
        guard scheme == "bearer" || scheme == "firebase" else { return nil }
        let token = trimmingWhitespace(trimmed[space...])
        return token.isEmpty ? nil : String(token)
    }

    /// `text` without leading and trailing `CharacterSet.whitespaces` (general category Zs and
    /// tab), in Swift: Foundation's trimming bridged through `NSString` on every request (1% of
    /// a REST create's server time).
    static func trimmingWhitespace(_ text: Substring) -> Substring {
        func isWhitespace(_ u: Unicode.Scalar) -> Bool { u == "\t" || u.properties.generalCategory == .spaceSeparator }
        let scalars = text.unicodeScalars
        var start = scalars.startIndex, end = scalars.endIndex
        while start < end, isWhitespace(scalars[start]) { start = scalars.index(after: start) }
        while end > start, isWhitespace(scalars[scalars.index(before: end)]) { end = scalars.index(before: end) }
        return Substring(scalars[start..<end])
    }

    /// Resolves the caller of a request from its `Authorization` header.
    public func identify(authorization: String?) async throws(HearthError) -> Identity {
        guard let authorization, !authorization.isEmpty else { return .unauthenticated }
        guard let token = Self.credential(authorization) else { throw Self.unauthenticated }
        if emulator && token == "owner" { return .admin("owner") }
        if let adminToken, !adminToken.isEmpty, Self.constantTimeEqual(token, adminToken) { return .admin("admin-token") }
        if let consoleToken, Self.constantTimeEqual(token, consoleToken) { return .admin("console") }
        if token.utf8.count(where: { $0 == UInt8(ascii: ".") }) == 2 {
            let jwt = JWT.parse(token)
            if jwt?.header["typ"]?.stringValue == "at+jwt" {
                // A service account's OAuth2 access token, not an ID token.
                if let accessTokens, let principal = await accessTokens(token) { return .admin(principal) }
                throw Self.unauthenticated
            }
            if emulator, let jwt, jwt.algorithm == "none" {
                // The emulators take unsigned tokens at face value (any project, any issuer).
                guard let uid = jwt.payload["sub"]?.stringValue ?? jwt.payload["user_id"]?.stringValue, !uid.isEmpty else {
                    throw Self.unauthenticated
                }
                return .user(uid: uid, claims: jwt.payload)
            }
            if let tokens {
                do {
                    let verified = try tokens.verifyIDToken(token)
                    return .user(uid: verified.uid, claims: verified.claims)
                } catch {
                    throw HearthError(.unauthenticated, Self.unauthenticated.message + " (\(error.message))")
                }
            }
        }
        if let accessTokens, let principal = await accessTokens(token) { return .admin(principal) }
        throw Self.unauthenticated
    }

    /// App Check for a request to `service` carrying `token` (`X-Firebase-AppCheck`, or the
    /// `x-firebase-appcheck` gRPC metadata): nothing when the service's mode is off or monitor,
    /// or the caller is an admin (privileged credentials pass, as on Firebase); otherwise a
    /// missing or invalid token is PERMISSION_DENIED, which each transport renders in its own way.
    public func checkAppCheck(_ service: String, token: String?, identity: Identity) async throws(HearthError) {
        switch await appCheckRefusal(service, token: token, isAdmin: identity.isAdmin) {
        case nil, .allow?: return
        case .missing?: throw HearthError(.permissionDenied, "Missing or insufficient permissions. (App Check: no token)")
        case .invalid?: throw HearthError(.permissionDenied, "Missing or insufficient permissions. (App Check: invalid token)")
        }
    }

    /// Why App Check refuses a request to `service` carrying `token`, or nil to let it through
    /// (mode off or monitor, an admin caller, or a valid token). For transports that render the
    /// refusal themselves (the auth port, the Realtime Database).
    public func appCheckRefusal(_ service: String, token: String?, isAdmin: Bool) async -> AppCheckGate.Outcome? {
        guard let gate = appCheckGates[service], gate.mode != .off, !isAdmin else { return nil }
        switch await gate.check(token) {
        case .allow: return nil
        case let refusal: return refusal
        }
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in x.indices { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}

extension Authenticator {
    /// The authenticator of a server whose identities come from `auth`: its ID tokens, and
    /// the access tokens of its service accounts as admin.
    public init(emulator: Bool, adminToken: String?, auth: AuthEngine) {
        self.init(
            emulator: emulator, adminToken: adminToken, tokens: auth.tokens,
            accessTokens: { token in (try? await auth.verifyAccessToken(token))?.clientEmail })
    }
}
