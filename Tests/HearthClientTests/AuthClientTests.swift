import Foundation
import Synchronization
import Testing

@testable import HearthClientAuth
import HearthClientCore

/// The Auth client against a live Hearth auth port: the calls MakeItSo and the Rails-backed app make.
@Suite(.serialized) struct AuthClientTests {
    /// A fresh app (its own name) pointed at the server, with a user store in a temporary folder.
    func makeAuth(_ ports: [String: Int], store: FileAuthUserStore? = nil) -> (Auth, FileAuthUserStore) {
        var options = HearthOptions(projectID: "demo-hearth")
        options.authPort = ports["auth"]!
        let name = "test-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: options)
        let store = store ?? FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent("hearth-auth-\(UUID().uuidString)"))
        return (Auth.auth(app: HearthApp.app(name: name)!, userStore: store), store)
    }

    func code(_ error: any Error) -> AuthErrorCode? {
        let e = error as NSError
        return e.domain == AuthErrorDomain ? AuthErrorCode(rawValue: e.code) : nil
    }

    @Test func anonymousSignInPersistsAndIsReused() async throws {
        try await LiveServer.with { ports in
            let (auth, store) = makeAuth(ports)
            let result = try await auth.signInAnonymously()
            #expect(result.user.isAnonymous)
            #expect(result.additionalUserInfo?.isNewUser == true)
            #expect(auth.currentUser?.uid == result.user.uid)
            // a second call returns the same anonymous user without a new account
            let again = try await auth.signInAnonymously()
            #expect(again.user.uid == result.user.uid)
            #expect(again.additionalUserInfo?.isNewUser == false)
            // the user is on disk, readable only by its owner
            let file = store.url(auth.storeKey).path
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            // a new launch (a new Auth over the same store) restores the user and its token works
            let restored = Auth(app: auth.app, store: store)
            #expect(restored.currentUser?.uid == result.user.uid)
            let token = try await restored.currentUser!.getIDTokenResult()
            #expect(token.claims["user_id"] as? String == result.user.uid)
            #expect(token.signInProvider == "anonymous")
        }
    }

    @Test func emailAccountsSignInAndReportFirebaseErrorCodes() async throws {
        try await LiveServer.with { ports in
            let (auth, _) = makeAuth(ports)
            let created = try await auth.createUser(withEmail: "ada@example.com", password: "correct horse")
            #expect(created.user.email == "ada@example.com")
            #expect(!created.user.isAnonymous)
            #expect(created.user.providerData.map(\.providerID) == ["password"])
            await #expect(throws: (any Error).self) { try await auth.createUser(withEmail: "ada@example.com", password: "another one") }
            do {
                _ = try await auth.createUser(withEmail: "ada@example.com", password: "another one")
            } catch {
                #expect(code(error) == .emailAlreadyInUse)
                #expect((error as NSError).userInfo[AuthErrors.userInfoNameKey] as? String == "ERROR_EMAIL_ALREADY_IN_USE")
                #expect((error as NSError).localizedDescription == "The email address is already in use by another account.")
            }
            do {
                _ = try await auth.signIn(withEmail: "ada@example.com", password: "wrong")
                Issue.record("a wrong password signed in")
            } catch {
                #expect([.wrongPassword, .invalidCredential].contains(code(error)))
            }
            do {
                _ = try await auth.createUser(withEmail: "not-an-email", password: "correct horse")
                Issue.record("a malformed email was accepted")
            } catch {
                #expect(code(error) == .invalidEmail)
            }
            try auth.signOut()
            #expect(auth.currentUser == nil)
            let signedIn = try await auth.signIn(withEmail: "ada@example.com", password: "correct horse")
            #expect(signedIn.user.uid == created.user.uid)
            try await auth.sendPasswordReset(withEmail: "ada@example.com")
        }
    }

    @Test func linkingAnAnonymousUserKeepsItsUidAndListenersSeeWhatChanged() async throws {
        try await LiveServer.with { ports in
            let (auth, _) = makeAuth(ports)
            let states = Mutex<[String?]>([])
            let tokens = Mutex(0)
            let stateHandle = auth.addStateDidChangeListener { _, user in states.withLock { $0.append(user?.uid) } }
            let tokenHandle = auth.addIDTokenDidChangeListener { _, _ in tokens.withLock { $0 += 1 } }
            let anonymous = try await auth.signInAnonymously().user
            let linked = try await anonymous.link(with: EmailAuthProvider.credential(withEmail: "grace@example.com", password: "hopper1906"))
            #expect(linked.user.uid == anonymous.uid)
            #expect(!linked.user.isAnonymous)
            #expect(linked.user.email == "grace@example.com")
            let before = try await linked.user.getIDToken()
            try await Task.sleep(for: .seconds(1.1))  // iat has second resolution
            let after = try await linked.user.getIDToken(forcingRefresh: true)
            #expect(before != after)
            try auth.signOut()
            await drain(auth)
            // registration (nil), sign-in (uid), link (no call: same uid), sign-out (nil)
            #expect(states.withLock { $0 } == [nil, anonymous.uid, nil])
            // registration, sign-in, link, forced refresh, sign-out
            #expect(tokens.withLock { $0 } >= 5)
            auth.removeStateDidChangeListener(stateHandle)
            auth.removeIDTokenDidChangeListener(tokenHandle)
        }
    }

    @Test func deletedAccountsAreSignedOutAndCannotSignIn() async throws {
        try await LiveServer.with { ports in
            let (auth, store) = makeAuth(ports)
            let user = try await auth.createUser(withEmail: "gone@example.com", password: "temporary").user
            try await user.delete()
            #expect(auth.currentUser == nil)
            #expect(try store.load(key: auth.storeKey) == nil)
            do {
                _ = try await auth.signIn(withEmail: "gone@example.com", password: "temporary")
                Issue.record("a deleted account signed in")
            } catch {
                #expect([.userNotFound, .invalidCredential].contains(code(error)))
            }
        }
    }

    @Test func aServerThatIsNotThereIsANetworkError() async throws {
        var options = HearthOptions(projectID: "demo-hearth")
        options.authPort = 1  // nothing listens on port 1
        options.requestTimeout = .seconds(3)
        let name = "test-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: options)
        let auth = Auth.auth(app: HearthApp.app(name: name)!, userStore: FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)))
        do {
            _ = try await auth.signInAnonymously()
            Issue.record("signed in without a server")
        } catch {
            #expect(code(error) == .networkError)
        }
    }

    @Test func tokenResultsDecodeTheJWTLocally() throws {
        // header.payload.signature with payload {"exp":2000000000,"iat":1999996400,"auth_time":1999996400,"user_id":"u1","firebase":{"sign_in_provider":"password"}}
        let payload = Data(#"{"exp":2000000000,"iat":1999996400,"auth_time":1999996400,"user_id":"u1","firebase":{"sign_in_provider":"password"}}"#.utf8)
            .base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let result = try AuthTokenResult(token: "e30.\(payload).sig")
        #expect(result.expirationDate == Date(timeIntervalSince1970: 2_000_000_000))
        #expect(result.signInProvider == "password")
        #expect(result.claims["user_id"] as? String == "u1")
        #expect(throws: (any Error).self) { try AuthTokenResult(token: "not a jwt") }
        // HearthJWT's parser: claims as Firebase's SDKs hand them out, one spelling per token.
        let other = Data(#"{"exp":2000000000,"iat":1999996400.5,"n":1.0,"f":2.5,"nul":null,"a":[1,"x",null],"o":{"k":true}}"#.utf8)
            .base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let decoded = try AuthTokenResult(token: "e30.\(other).sig")
        #expect(decoded.issuedAtDate == Date(timeIntervalSince1970: 1_999_996_400.5))
        #expect(decoded.claims["n"] as? Int64 == 1 && decoded.claims["f"] as? Double == 2.5 && decoded.claims["nul"] == nil)
        #expect((decoded.claims["a"] as? [any Sendable])?.count == 2)
        #expect((decoded.claims["o"] as? [String: any Sendable])?["k"] as? Bool == true)
        #expect(throws: (any Error).self) { try AuthTokenResult(token: "e30.\(other).sih") }  // "h" sets an unused bit
    }

    /// Waits until callbacks queued so far have run.
    func drain(_ auth: Auth) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in auth.callbackQueue.async { c.resume() } }
    }
}
