public import Foundation
import Synchronization

/// A signed-in user: profile, linked providers and tokens. Tokens refresh themselves five
/// minutes before they expire (``getIDToken(forcingRefresh:)``).
public final class User: Sendable {
    /// What is kept between launches.
    struct Record: Codable, Equatable {
        var uid: String
        var email: String?
        var emailVerified: Bool
        var displayName: String?
        var photoURL: URL?
        var phoneNumber: String?
        var isAnonymous: Bool
        var providerData: [UserInfo]
        var idToken: String
        var refreshToken: String
        /// When `idToken` expires (seconds since 1970).
        var expiresAt: Double
    }

    let record: Mutex<Record>
    unowned let auth: Auth

    init(record: Record, auth: Auth) {
        self.record = Mutex(record)
        self.auth = auth
    }

    public var uid: String { record.withLock { $0.uid } }
    public var email: String? { record.withLock { $0.email } }
    public var isEmailVerified: Bool { record.withLock { $0.emailVerified } }
    public var displayName: String? { record.withLock { $0.displayName } }
    public var photoURL: URL? { record.withLock { $0.photoURL } }
    public var phoneNumber: String? { record.withLock { $0.phoneNumber } }
    public var isAnonymous: Bool { record.withLock { $0.isAnonymous } }
    public var providerData: [UserInfo] { record.withLock { $0.providerData } }
    public var refreshToken: String? { record.withLock { $0.refreshToken } }
    public var providerID: String { "Firebase" }

    // MARK: Tokens

    /// The ID token: the cached one while it has more than five minutes left, else a fresh one.
    public func getIDToken(forcingRefresh: Bool = false) async throws -> String {
        try await auth.token(for: self, forcingRefresh: forcingRefresh)
    }

    public func getIDToken(completion: (@Sendable (String?, (any Error)?) -> Void)?) {
        getIDTokenForcingRefresh(false, completion: completion)
    }

    public func getIDTokenForcingRefresh(_ forceRefresh: Bool, completion: (@Sendable (String?, (any Error)?) -> Void)?) {
        auth.callback(completion) { try await self.getIDToken(forcingRefresh: forceRefresh) }
    }

    public func getIDTokenResult(forcingRefresh: Bool = false) async throws -> AuthTokenResult {
        try AuthTokenResult(token: try await getIDToken(forcingRefresh: forcingRefresh))
    }

    // MARK: Account changes

    /// Links another credential to this user (an anonymous user keeps its uid).
    @discardableResult
    public func link(with credential: AuthCredential) async throws -> AuthDataResult {
        try await auth.link(self, with: credential)
    }

    /// Refetches the profile (`accounts:lookup`).
    public func reload() async throws {
        let token = try await getIDToken()
        let lookup = try await auth.api.accounts("lookup", ["idToken": token])
        guard let info = (lookup["users"] as? [[String: Any]])?.first else { throw AuthErrorCode.userNotFound.error() }
        record.withLock { Auth.apply(lookup: info, to: &$0) }
        try auth.persist(self)
    }

    public func updatePassword(to password: String) async throws {
        try await update(["password": password])
    }

    /// Sets the email directly, as the Apple SDK's deprecated `updateEmail(to:)` does.
    public func updateEmail(to email: String) async throws {
        try await update(["email": email])
    }

    public func sendEmailVerification() async throws {
        let token = try await getIDToken()
        _ = try await auth.api.accounts("sendOobCode", ["requestType": "VERIFY_EMAIL", "idToken": token])
    }

    /// Deletes the account on the server and signs it out here.
    public func delete() async throws {
        let token = try await getIDToken()
        _ = try await auth.api.accounts("delete", ["idToken": token])
        auth.signOutLocally(ifCurrent: self)
    }

    /// Profile changes (`displayName`, `photoURL`), committed together.
    public func createProfileChangeRequest() -> UserProfileChangeRequest { UserProfileChangeRequest(user: self) }

    func update(_ fields: [String: Any]) async throws {
        let token = try await getIDToken()
        var body = fields
        body["idToken"] = token
        body["returnSecureToken"] = true
        let answer = try await auth.api.accounts("update", body)
        record.withLock { r in
            if let email = answer["email"] as? String { r.email = email }
            if fields["displayName"] != nil { r.displayName = answer["displayName"] as? String }
            if fields["photoUrl"] != nil { r.photoURL = (answer["photoUrl"] as? String).flatMap(URL.init(string:)) }
            if let id = answer["idToken"] as? String, let refresh = answer["refreshToken"] as? String {
                r.idToken = id
                r.refreshToken = refresh
                r.expiresAt = Date().timeIntervalSince1970 + (Double(answer["expiresIn"] as? String ?? "") ?? 3600)
            }
            if fields["password"] != nil || fields["email"] != nil { r.isAnonymous = false }
        }
        try auth.persist(self)
        auth.tokenChanged(self)
    }
}

/// `user.createProfileChangeRequest()`.
public final class UserProfileChangeRequest: @unchecked Sendable {
    let user: User
    public var displayName: String?
    public var photoURL: URL?
    init(user: User) { self.user = user }

    public func commitChanges() async throws {
        var fields: [String: Any] = [:]
        if let displayName { fields["displayName"] = displayName }
        if let photoURL { fields["photoUrl"] = photoURL.absoluteString }
        try await user.update(fields)
    }
}
