public import Foundation

/// What proves a user's identity to `signIn(with:)` and `link(with:)`.
public class AuthCredential: @unchecked Sendable {
    public let provider: String
    init(provider: String) { self.provider = provider }
}

/// An email and password (or an email sign-in link).
public final class EmailAuthCredential: AuthCredential, @unchecked Sendable {
    let email: String
    let password: String?
    let link: String?
    init(email: String, password: String?, link: String?) {
        self.email = email
        self.password = password
        self.link = link
        super.init(provider: EmailAuthProvider.id)
    }
}

public enum EmailAuthProvider {
    public static let id = "password"
    public static func credential(withEmail email: String, password: String) -> AuthCredential {
        EmailAuthCredential(email: email, password: password, link: nil)
    }
    public static func credential(withEmail email: String, link: String) -> AuthCredential {
        EmailAuthCredential(email: email, password: nil, link: link)
    }
}

/// Identity providers by id, as the Apple SDK names them.
public struct AuthProviderID: RawRepresentable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let apple = AuthProviderID(rawValue: "apple.com")
    public static let email = AuthProviderID(rawValue: "password")
    public static let google = AuthProviderID(rawValue: "google.com")
    public static let facebook = AuthProviderID(rawValue: "facebook.com")
    public static let gitHub = AuthProviderID(rawValue: "github.com")
    public static let gameCenter = AuthProviderID(rawValue: "gc.apple.com")
    public static let phone = AuthProviderID(rawValue: "phone")
    public static func custom(_ id: String) -> AuthProviderID { AuthProviderID(rawValue: id) }
}

/// An OIDC/OAuth provider's ID token (Sign in with Apple, Google, an OIDC provider configured in Hearth).
public final class OAuthCredential: AuthCredential, @unchecked Sendable {
    public let idToken: String?
    public let accessToken: String?
    /// The raw nonce whose SHA-256 the provider's ID token carries (Apple), or the nonce itself (OIDC).
    let rawNonce: String?
    let fullName: PersonNameComponents?
    init(providerID: String, idToken: String?, rawNonce: String?, accessToken: String?, fullName: PersonNameComponents? = nil) {
        self.idToken = idToken
        self.accessToken = accessToken
        self.rawNonce = rawNonce
        self.fullName = fullName
        super.init(provider: providerID)
    }

    /// The `postBody` of `accounts:signInWithIdp`.
    var postBody: String {
        var items = [URLQueryItem(name: "providerId", value: provider)]
        if let idToken { items.append(URLQueryItem(name: "id_token", value: idToken)) }
        if let accessToken { items.append(URLQueryItem(name: "access_token", value: accessToken)) }
        if let rawNonce { items.append(URLQueryItem(name: "nonce", value: rawNonce)) }
        var c = URLComponents()
        c.queryItems = items
        return c.percentEncodedQuery ?? ""
    }
}

public enum OAuthProvider {
    public static func credential(providerID: AuthProviderID, idToken: String, rawNonce: String, accessToken: String? = nil) -> OAuthCredential {
        OAuthCredential(providerID: providerID.rawValue, idToken: idToken, rawNonce: rawNonce, accessToken: accessToken)
    }

    public static func credential(providerID: AuthProviderID, idToken: String, accessToken: String? = nil) -> OAuthCredential {
        OAuthCredential(providerID: providerID.rawValue, idToken: idToken, rawNonce: nil, accessToken: accessToken)
    }

    public static func credential(providerID: AuthProviderID, accessToken: String) -> OAuthCredential {
        OAuthCredential(providerID: providerID.rawValue, idToken: nil, rawNonce: nil, accessToken: accessToken)
    }

    /// The spelling apps written before SDK 12 use.
    public static func credential(withProviderID providerID: String, idToken: String, rawNonce: String?) -> OAuthCredential {
        OAuthCredential(providerID: providerID, idToken: idToken, rawNonce: rawNonce, accessToken: nil)
    }

    public static func credential(withProviderID providerID: String, idToken: String, accessToken: String?) -> OAuthCredential {
        OAuthCredential(providerID: providerID, idToken: idToken, rawNonce: nil, accessToken: accessToken)
    }

    /// Sign in with Apple, with the name Apple gives only on the first authorization.
    public static func appleCredential(withIDToken idToken: String, rawNonce: String?, fullName: PersonNameComponents?) -> OAuthCredential {
        OAuthCredential(providerID: AuthProviderID.apple.rawValue, idToken: idToken, rawNonce: rawNonce, accessToken: nil, fullName: fullName)
    }
}
