public import Foundation
public import HearthClientCore
import Synchronization

/// Firebase Auth's client: sign-in, the current user, listeners. Same names, labels and
/// error codes as the Apple SDK; requests go to Hearth's auth port (Identity Toolkit v1).
public final class Auth: Sendable {
    public let app: HearthApp
    let api: IdentityToolkit
    let store: any AuthUserStore
    let storeKey: String
    /// Where listeners and completion handlers run: the main queue on Apple platforms, a serial
    /// queue of the SDK's own on Linux (where nothing drains the main queue in a command-line tool).
    public let callbackQueue: DispatchQueue

    struct State {
        var user: User?
        var stateListeners: [ObjectIdentifier: @Sendable (Auth, User?) -> Void] = [:]
        var tokenListeners: [ObjectIdentifier: @Sendable (Auth, User?) -> Void] = [:]
        var refreshTask: Task<Void, Never>?
        /// Coalesces concurrent refreshes of one user's token.
        var inflight: Task<String, any Error>?
    }

    let state = Mutex(State())

    /// The default app's Auth.
    public static func auth() -> Auth { auth(app: HearthApp.requireDefault(for: "Auth")) }

    /// The app's Auth, created on first use with `userStore` (default: Keychain on Apple
    /// platforms, a 0600 file under ``FileAuthUserStore/defaultDirectory()`` elsewhere).
    public static func auth(app: HearthApp, userStore: (any AuthUserStore)? = nil) -> Auth {
        app.component(Auth.self) { Auth(app: app, store: userStore ?? defaultStore(app)) }
    }

    static func defaultStore(_ app: HearthApp) -> any AuthUserStore {
        #if canImport(Security)
        KeychainAuthUserStore(service: "firebase_auth_\(app.options.googleAppID)")
        #else
        FileAuthUserStore(directory: FileAuthUserStore.defaultDirectory())
        #endif
    }

    init(app: HearthApp, store: any AuthUserStore) {
        self.app = app
        api = IdentityToolkit(options: app.options)
        self.store = store
        storeKey = "firebase_auth_1_\(app.name)_\(app.options.projectID)_firebase_user"
        #if canImport(Darwin)
        callbackQueue = .main
        #else
        callbackQueue = DispatchQueue(label: "hearth.client.auth.callbacks")
        #endif
        if let data = try? store.load(key: storeKey), let record = try? JSONDecoder().decode(User.Record.self, from: data) {
            let user = User(record: record, auth: self)
            state.withLock { $0.user = user }
            scheduleRefresh(user)
        }
    }

    public var currentUser: User? { state.withLock { $0.user } }

    // MARK: Listeners

    /// Called once soon after registration, then whenever the signed-in uid changes.
    @discardableResult
    public func addStateDidChangeListener(_ listener: @escaping @Sendable (Auth, User?) -> Void) -> any NSObjectProtocol {
        addListener(\.stateListeners, listener)
    }

    public func removeStateDidChangeListener(_ handle: any NSObjectProtocol) {
        removeListener(\.stateListeners, handle)
    }

    /// Called once soon after registration, then on sign-in, sign-out and every new ID token.
    @discardableResult
    public func addIDTokenDidChangeListener(_ listener: @escaping @Sendable (Auth, User?) -> Void) -> any NSObjectProtocol {
        addListener(\.tokenListeners, listener)
    }

    public func removeIDTokenDidChangeListener(_ handle: any NSObjectProtocol) {
        removeListener(\.tokenListeners, handle)
    }

    typealias Listeners = WritableKeyPath<State, [ObjectIdentifier: @Sendable (Auth, User?) -> Void]>

    /// Registers `listener` in one of the two lists and calls it once with the current user.
    func addListener(_ list: Listeners, _ listener: @escaping @Sendable (Auth, User?) -> Void) -> any NSObjectProtocol {
        let handle = ListenerHandle()
        let user = state.withLock { s in
            s[keyPath: list][ObjectIdentifier(handle)] = listener
            return s.user
        }
        callbackQueue.async { listener(self, user) }
        return handle
    }

    func removeListener(_ list: Listeners, _ handle: any NSObjectProtocol) {
        guard let handle = handle as? ListenerHandle else { return }
        _ = state.withLock { $0[keyPath: list].removeValue(forKey: ObjectIdentifier(handle)) }
    }

    /// `AsyncSequence` of the signed-in user: the current one first, then each uid change.
    public var authStateChanges: AsyncStream<User?> {
        AsyncStream { continuation in
            let handle = addStateDidChangeListener { _, user in continuation.yield(user) } as! ListenerHandle
            continuation.onTermination = { [weak self] _ in self?.removeStateDidChangeListener(handle) }
        }
    }

    /// `AsyncSequence` of the user at every ID-token change.
    public var idTokenChanges: AsyncStream<User?> {
        AsyncStream { continuation in
            let handle = addIDTokenDidChangeListener { _, user in continuation.yield(user) } as! ListenerHandle
            continuation.onTermination = { [weak self] _ in self?.removeIDTokenDidChangeListener(handle) }
        }
    }

    // MARK: Sign-in

    /// Signs in a new anonymous user — or returns the anonymous user already signed in.
    @discardableResult
    public func signInAnonymously() async throws -> AuthDataResult {
        if let user = currentUser, user.isAnonymous {
            return AuthDataResult(user: user, additionalUserInfo: AdditionalUserInfo(providerID: "", isNewUser: false, username: nil, profile: nil), credential: nil)
        }
        let answer = try await api.accounts("signUp", ["returnSecureToken": true])
        return try await signedIn(answer, provider: "", isNewUser: true)
    }

    @discardableResult
    public func createUser(withEmail email: String, password: String) async throws -> AuthDataResult {
        let answer = try await api.accounts("signUp", ["email": email, "password": password, "returnSecureToken": true])
        return try await signedIn(answer, provider: EmailAuthProvider.id, isNewUser: true)
    }

    @discardableResult
    public func signIn(withEmail email: String, password: String) async throws -> AuthDataResult {
        let answer = try await api.accounts("signInWithPassword", ["email": email, "password": password, "returnSecureToken": true])
        return try await signedIn(answer, provider: EmailAuthProvider.id, isNewUser: false)
    }

    @discardableResult
    public func signIn(withCustomToken token: String) async throws -> AuthDataResult {
        let answer = try await api.accounts("signInWithCustomToken", ["token": token, "returnSecureToken": true])
        return try await signedIn(answer, provider: "custom", isNewUser: (answer["isNewUser"] as? Bool) ?? false)
    }

    @discardableResult
    public func signIn(with credential: AuthCredential) async throws -> AuthDataResult {
        switch credential {
        case let email as EmailAuthCredential:
            if let link = email.link {
                let code = URLComponents(string: link)?.queryItems?.first { $0.name == "oobCode" }?.value ?? ""
                let answer = try await api.accounts("signInWithEmailLink", ["email": email.email, "oobCode": code, "returnSecureToken": true])
                return try await signedIn(answer, provider: "emailLink", isNewUser: (answer["isNewUser"] as? Bool) ?? false)
            }
            return try await signIn(withEmail: email.email, password: email.password ?? "")
        case let oauth as OAuthCredential:
            let answer = try await api.accounts("signInWithIdp", idpBody(oauth))
            return try await signedIn(answer, provider: oauth.provider, isNewUser: (answer["isNewUser"] as? Bool) ?? false, credential: oauth)
        default:
            throw AuthErrorCode.invalidCredential.error()
        }
    }

    public func sendPasswordReset(withEmail email: String) async throws {
        _ = try await api.accounts("sendOobCode", ["requestType": "PASSWORD_RESET", "email": email])
    }

    public func confirmPasswordReset(withCode code: String, newPassword: String) async throws {
        _ = try await api.accounts("resetPassword", ["oobCode": code, "newPassword": newPassword])
    }

    /// Signs out here (no request), as the Apple SDK does.
    public func signOut() throws {
        let (previous, refresh) = state.withLock { s in
            defer { s.user = nil; s.refreshTask = nil; s.inflight = nil }
            return (s.user, s.refreshTask)
        }
        refresh?.cancel()
        try store.remove(key: storeKey)
        if previous != nil { notify(nil, uidChanged: true) }
    }

    /// Completion-handler forms of the calls above.
    public func signInAnonymously(completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?) {
        callback(completion) { try await self.signInAnonymously() }
    }

    public func createUser(withEmail email: String, password: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?) {
        callback(completion) { try await self.createUser(withEmail: email, password: password) }
    }

    public func signIn(withEmail email: String, password: String, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?) {
        callback(completion) { try await self.signIn(withEmail: email, password: password) }
    }

    public func signIn(with credential: AuthCredential, completion: (@Sendable (AuthDataResult?, (any Error)?) -> Void)?) {
        callback(completion) { try await self.signIn(with: credential) }
    }

    public func sendPasswordReset(withEmail email: String, completion: (@Sendable ((any Error)?) -> Void)?) {
        Task {
            do {
                try await sendPasswordReset(withEmail: email)
                callbackQueue.async { completion?(nil) }
            } catch {
                callbackQueue.async { completion?(error) }
            }
        }
    }

    // MARK: Internals

    func callback<T: Sendable>(_ completion: (@Sendable (T?, (any Error)?) -> Void)?, _ work: @escaping @Sendable () async throws -> T) {
        Task {
            do {
                let value = try await work()
                callbackQueue.async { completion?(value, nil) }
            } catch {
                callbackQueue.async { completion?(nil, error) }
            }
        }
    }

    func idpBody(_ credential: OAuthCredential) -> [String: Any] {
        ["postBody": credential.postBody, "requestUri": "http://localhost", "returnSecureToken": true, "returnIdpCredential": true]
    }

    func link(_ user: User, with credential: AuthCredential) async throws -> AuthDataResult {
        let token = try await user.getIDToken()
        let answer: [String: Any]
        switch credential {
        case let email as EmailAuthCredential:
            guard let password = email.password else { throw AuthErrorCode.invalidCredential.error() }
            answer = try await api.accounts("signUp", ["idToken": token, "email": email.email, "password": password, "returnSecureToken": true])
        case let oauth as OAuthCredential:
            var body = idpBody(oauth)
            body["idToken"] = token
            answer = try await api.accounts("signInWithIdp", body)
        default:
            throw AuthErrorCode.invalidCredential.error()
        }
        guard (answer["localId"] as? String) == user.uid else { throw AuthErrorCode.userMismatch.error() }
        return try await signedIn(answer, provider: credential.provider, isNewUser: false, credential: credential as? OAuthCredential)
    }

    /// Takes a sign-in answer (tokens), looks the account up, makes it the current user.
    func signedIn(_ answer: [String: Any], provider: String, isNewUser: Bool, credential: AuthCredential? = nil) async throws -> AuthDataResult {
        guard let idToken = answer["idToken"] as? String, let refreshToken = answer["refreshToken"] as? String,
              let uid = answer["localId"] as? String
        else { throw AuthErrorCode.internalError.error(serverMessage: "the sign-in answer has no tokens") }
        let expiresIn = Double(answer["expiresIn"] as? String ?? "") ?? 3600
        var record = User.Record(
            uid: uid, email: answer["email"] as? String, emailVerified: false, displayName: answer["displayName"] as? String,
            photoURL: nil, phoneNumber: nil, isAnonymous: provider.isEmpty, providerData: [], idToken: idToken,
            refreshToken: refreshToken, expiresAt: Date().timeIntervalSince1970 + expiresIn)
        let lookup = try await api.accounts("lookup", ["idToken": idToken])
        if let info = (lookup["users"] as? [[String: Any]])?.first { Self.apply(lookup: info, to: &record) }
        let (user, uidChanged) = state.withLock { s -> (User, Bool) in
            if let current = s.user, current.uid == uid {
                current.record.withLock { $0 = record }
                return (current, false)
            }
            let user = User(record: record, auth: self)
            s.user = user
            return (user, true)
        }
        try persist(user)
        scheduleRefresh(user)
        notify(user, uidChanged: uidChanged)
        let info = AdditionalUserInfo(
            providerID: provider, isNewUser: isNewUser, username: answer["screenName"] as? String,
            profile: (answer["rawUserInfo"] as? String).flatMap { raw in
                (try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any])?.compactMapValues(AuthTokenResult.sendable)
            })
        return AuthDataResult(user: user, additionalUserInfo: info, credential: credential)
    }

    static func apply(lookup info: [String: Any], to record: inout User.Record) {
        record.email = info["email"] as? String
        record.emailVerified = info["emailVerified"] as? Bool ?? false
        record.displayName = info["displayName"] as? String
        record.photoURL = (info["photoUrl"] as? String).flatMap(URL.init(string:))
        record.phoneNumber = info["phoneNumber"] as? String
        let providers = (info["providerUserInfo"] as? [[String: Any]] ?? []).map { p in
            UserInfo(
                providerID: p["providerId"] as? String ?? "", uid: p["rawId"] as? String ?? p["federatedId"] as? String ?? "",
                email: p["email"] as? String, displayName: p["displayName"] as? String,
                photoURL: (p["photoUrl"] as? String).flatMap(URL.init(string:)), phoneNumber: p["phoneNumber"] as? String)
        }
        record.providerData = providers
        record.isAnonymous = providers.isEmpty && record.email == nil && record.phoneNumber == nil
    }

    func persist(_ user: User) throws {
        guard currentUser === user else { return }
        let data = try JSONEncoder().encode(user.record.withLock { $0 })
        try store.save(data, key: storeKey)
    }

    /// The user's ID token, refreshed when it has five minutes or less left (or when forced).
    /// Concurrent callers share one refresh.
    func token(for user: User, forcingRefresh: Bool) async throws -> String {
        let (token, expiresAt, refreshToken) = user.record.withLock { ($0.idToken, $0.expiresAt, $0.refreshToken) }
        if !forcingRefresh, expiresAt - Date().timeIntervalSince1970 > 300 { return token }
        let task: Task<String, any Error> = state.withLock { s in
            if let inflight = s.inflight, s.user === user { return inflight }
            let task = Task<String, any Error> {
                let answer = try await self.api.refresh(refreshToken)
                guard let id = answer["id_token"] as? String, let refresh = answer["refresh_token"] as? String else {
                    throw AuthErrorCode.internalError.error(serverMessage: "the token answer has no id_token")
                }
                let expiresIn = Double(answer["expires_in"] as? String ?? "") ?? 3600
                user.record.withLock { r in
                    r.idToken = id
                    r.refreshToken = refresh
                    r.expiresAt = Date().timeIntervalSince1970 + expiresIn
                }
                return id
            }
            if s.user === user { s.inflight = task }
            return task
        }
        defer { state.withLock { s in if s.inflight == task { s.inflight = nil } } }
        do {
            let id = try await task.value
            try persist(user)
            scheduleRefresh(user)
            tokenChanged(user)
            return id
        } catch let error as NSError where error.domain == AuthErrorDomain
            && [AuthErrorCode.userTokenExpired.rawValue, AuthErrorCode.invalidUserToken.rawValue, AuthErrorCode.userDisabled.rawValue,
                AuthErrorCode.userNotFound.rawValue].contains(error.code) {
            // The server no longer honours this session (revoked, disabled, deleted): sign out, as the Apple SDK does.
            signOutLocally(ifCurrent: user)
            throw error
        }
    }

    /// Refreshes the current user's token five minutes before it expires, while signed in.
    func scheduleRefresh(_ user: User) {
        let expiresAt = user.record.withLock { $0.expiresAt }
        let delay = max(0, expiresAt - 300 - Date().timeIntervalSince1970)
        let task = Task { [weak self] in
            try? await Task.sleep(for: .seconds(delay))
            guard !Task.isCancelled, let self, self.currentUser === user else { return }
            _ = try? await self.token(for: user, forcingRefresh: true)
        }
        let old = state.withLock { s -> Task<Void, Never>? in
            guard s.user === user else { return task }
            defer { s.refreshTask = task }
            return s.refreshTask
        }
        old?.cancel()
    }

    func signOutLocally(ifCurrent user: User) {
        let wasCurrent = state.withLock { s -> Bool in
            guard s.user === user else { return false }
            s.refreshTask?.cancel()
            s.user = nil
            s.refreshTask = nil
            return true
        }
        guard wasCurrent else { return }
        try? store.remove(key: storeKey)
        notify(nil, uidChanged: true)
    }

    func tokenChanged(_ user: User) {
        guard currentUser === user else { return }
        notify(user, uidChanged: false)
    }

    func notify(_ user: User?, uidChanged: Bool) {
        let (states, tokens) = state.withLock { (Array($0.stateListeners.values), Array($0.tokenListeners.values)) }
        callbackQueue.async {
            if uidChanged { for l in states { l(self, user) } }
            for l in tokens { l(self, user) }
        }
    }
}

/// The handle `addStateDidChangeListener` returns.
final class ListenerHandle: NSObject, @unchecked Sendable {}
