public import Foundation
import HearthCore
import HearthJWT

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
        // HearthJWT's parser (the server's): the claims are read without checking the
        // signature, as Firebase's SDKs do; the server checks it on every request.
        guard let jwt = JWT.parse(token), let object = jwt.payload.objectValue else { throw AuthErrorCode.malformedJWT.error() }
        let payload = jwt.payload
        func date(_ key: String) -> Date { Date(timeIntervalSince1970: payload[key].flatMap(Self.seconds) ?? 0) }
        self.token = token
        expirationDate = date("exp")
        authDate = date("auth_time")
        issuedAtDate = date("iat")
        let firebase = payload["firebase"]
        signInProvider = firebase?["sign_in_provider"]?.stringValue ?? ""
        signInSecondFactor = firebase?["sign_in_second_factor"]?.stringValue
        var claims: [String: any Sendable] = [:]
        for (name, value) in object { if let v = Self.claimValue(value) { claims[name] = v } }
        self.claims = claims
    }

    /// A NumericDate claim as seconds (fractions kept).
    static func seconds(_ value: JSON) -> Double? {
        guard case .number(let text) = value else { return nil }
        return Double(text)
    }

    /// A claim as the plain Swift value Firebase's SDKs hand out: integral numbers as `Int64`,
    /// others as `Double`; `null` members are left out.
    static func claimValue(_ value: JSON) -> (any Sendable)? {
        switch value {
        case .null:
            return nil
        case .bool(let b):
            return b
        case .string(let s):
            return s
        case .number(let text):
            if let i = Int64(text) { return i }
            guard let d = Double(text) else { return nil }
            if d.rounded() == d, abs(d) < 9.2e18 { return Int64(d) }
            return d
        case .array(let items):
            return items.compactMap(claimValue)
        case .object(let members):
            var out: [String: any Sendable] = [:]
            for (name, member) in members { if let v = claimValue(member) { out[name] = v } }
            return out
        }
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
