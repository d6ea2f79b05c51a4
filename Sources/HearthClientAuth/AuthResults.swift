public import Foundation

/// What a sign-in returns.
public struct AuthDataResult: Sendable {
    public let user: User
    public let additionalUserInfo: AdditionalUserInfo?
    public let credential: AuthCredential?
}

public struct AdditionalUserInfo: Sendable {
    public let providerID: String
    public let isNewUser: Bool
    public let username: String?
    public let profile: [String: any Sendable]?
}

/// An ID token and what it says, decoded locally (as the Apple SDK does: no request).
public struct AuthTokenResult: Sendable {
    public let token: String
    public let expirationDate: Date
    public let authDate: Date
    public let issuedAtDate: Date
    public let signInProvider: String
    public let signInSecondFactor: String?
    public let claims: [String: any Sendable]

    init(token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URL(String(parts[1])),
              let object = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any]
        else { throw AuthErrorCode.malformedJWT.error() }
        func date(_ key: String) -> Date { Date(timeIntervalSince1970: (object[key] as? NSNumber)?.doubleValue ?? 0) }
        self.token = token
        expirationDate = date("exp")
        authDate = date("auth_time")
        issuedAtDate = date("iat")
        let firebase = object["firebase"] as? [String: Any]
        signInProvider = firebase?["sign_in_provider"] as? String ?? ""
        signInSecondFactor = firebase?["sign_in_second_factor"] as? String
        claims = object.compactMapValues { Self.sendable($0) }
    }

    static func base64URL(_ text: String) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }

    static func sendable(_ value: Any) -> (any Sendable)? {
        switch value {
        case let v as String: v
        case let v as NSNumber: v.doubleValue.rounded() == v.doubleValue && !(v is Bool) ? v.int64Value as any Sendable : v.doubleValue
        case let v as Bool: v
        case let v as [Any]: v.compactMap(sendable)
        case let v as [String: Any]: v.compactMapValues(sendable)
        default: nil
        }
    }
}

/// One identity linked to a user (`providerData`).
public struct UserInfo: Sendable, Codable, Equatable {
    public let providerID: String
    public let uid: String
    public let email: String?
    public let displayName: String?
    public let photoURL: URL?
    public let phoneNumber: String?
}
