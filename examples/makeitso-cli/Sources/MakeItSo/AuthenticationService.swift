import Foundation
import HearthClient

/// Signs the user in anonymously and tells whoever listens who is signed in, as MakeItSo's
/// authentication service does with `addStateDidChangeListener`.
final class AuthenticationService: Sendable {
    let auth: Auth

    init(auth: Auth = Auth.auth()) {
        self.auth = auth
        // For the life of the app, as MakeItSo's service keeps its handle.
        auth.addStateDidChangeListener { _, user in
            print("auth: \(user.map { "signed in as \($0.uid) (anonymous: \($0.isAnonymous))" } ?? "signed out")")
        }
    }

    func signIn() async throws -> String {
        if let user = auth.currentUser { return user.uid }
        return try await auth.signInAnonymously().user.uid
    }
}
