public import HearthCore
public import _CryptoExtras
import HearthJWT
import Foundation

/// An OpenID Connect identity provider whose ID tokens `accounts:signInWithIdp` accepts:
/// its issuer, the client ids (audiences) it issues tokens for, and its public keys — from
/// configuration, since a provider's key URL may be unreachable from the server.
/// Sign in with Apple is `providerId: "apple.com"`, issuer `https://appleid.apple.com`.
public struct IdentityProvider: Sendable {
    public var providerID: String
    public var issuer: String
    public var audiences: [String]
    /// RSA keys by `kid` (from the provider's JWKS).
    public var keys: [String: _RSA.Signing.PublicKey]

    public init(providerID: String, issuer: String, audiences: [String], keys: [String: _RSA.Signing.PublicKey]) {
        self.providerID = providerID
        self.issuer = issuer
        self.audiences = audiences
        self.keys = keys
    }

    /// From configuration JSON: `{"providerId","issuer","clientIds":[…],"jwks":{"keys":[…]}}`
    /// (`clientId` and `jwksFile`, relative to `baseDirectory`, are accepted too).
    public init(json: JSON, baseDirectory: String? = nil) throws(HearthError) {
        guard let id = json["providerId"]?.stringValue, !id.isEmpty else { throw .invalidArgument("An identity provider needs a providerId.") }
        guard let iss = json["issuer"]?.stringValue, !iss.isEmpty else { throw .invalidArgument("Identity provider \(id) needs an issuer.") }
        var auds = (json["clientIds"]?.arrayValue ?? []).compactMap(\.stringValue)
        if let one = json["clientId"]?.stringValue { auds.append(one) }
        guard !auds.isEmpty else { throw .invalidArgument("Identity provider \(id) needs clientIds (the audiences of its ID tokens).") }
        var jwks = json["jwks"]
        if jwks == nil, let file = json["jwksFile"]?.stringValue {
            let path = file.hasPrefix("/") || baseDirectory == nil ? file : baseDirectory! + "/" + file
            guard let data = FileManager.default.contents(atPath: path) else { throw .invalidArgument("Cannot read \(path).") }
            jwks = try JSON.parse(Array(data))
        }
        guard let jwks, jwks["keys"]?.arrayValue != nil else { throw .invalidArgument("Identity provider \(id) needs jwks with keys.") }
        let keys = Self.rsaKeys(jwks: jwks)
        guard !keys.isEmpty else { throw .invalidArgument("Identity provider \(id) has no usable RSA key.") }
        self.init(providerID: id, issuer: iss, audiences: auds, keys: keys)
    }

    /// The RSA signing keys of a JWKS document (`{"keys":[{"kty":"RSA","kid","n","e"}]}`) by
    /// `kid`; other keys (and keys marked for another `use` or `alg`) are skipped. HearthJWT's reader.
    public static func rsaKeys(jwks: JSON) -> [String: _RSA.Signing.PublicKey] {
        RSAKeySet.keys(jwks: jwks)
    }
}

/// What a provider says about its user (from a verified ID token, or the emulator's fake one).
public struct ProviderIdentity: Sendable {
    public var providerID: String
    /// The provider's user id (`sub`), Firebase's `rawId`.
    public var rawID: String
    public var email: String?
    public var emailVerified: Bool
    public var displayName: String?
    public var photoURL: String?
    /// The token's claims (`rawUserInfo`).
    public var claims: JSON

    public init(providerID: String, rawID: String, email: String?, emailVerified: Bool, displayName: String?, photoURL: String?, claims: JSON) {
        self.providerID = providerID
        self.rawID = rawID
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.photoURL = photoURL
        self.claims = claims
    }
}

extension IdentityProvider {
    /// Verifies an ID token of this provider: RS256 by one of its keys, its issuer, one of its
    /// audiences, not expired; `sub` becomes the raw id. INVALID_IDP_RESPONSE otherwise.
    public func verify(_ token: String, now: Int64, clockSkew: Int64 = 60) throws(HearthError) -> ProviderIdentity {
        let bad = AuthErrorCode.invalidIDPResponse
        guard let jwt = JWT.parse(token) else { throw bad.error("The id_token is not a JWT.") }
        do throws(JWTError) {
            try jwt.verifySignature { kid in kid.flatMap { keys[$0] }.map { [$0] } ?? [] }
        } catch {
            if case .invalidSignature = error { throw bad.error("The id_token has an invalid signature.") }
            throw bad.error("The id_token is not signed by a configured key of \(providerID).")
        }
        let c = jwt.payload
        guard c["iss"]?.stringValue == issuer else { throw bad.error("The id_token has the wrong issuer.") }
        let auds = c["aud"]?.stringValue.map { [$0] } ?? (c["aud"]?.arrayValue ?? []).compactMap(\.stringValue)
        guard auds.contains(where: { audiences.contains($0) }) else { throw bad.error("The id_token has the wrong audience.") }
        do throws(JWTError) {
            _ = try JWTTimes(claims: c, now: now, rules: JWTTimeRules(expiryLeeway: clockSkew))
        } catch {
            throw bad.error("The id_token has expired.")
        }
        return try Self.identity(providerID: providerID, claims: c)
    }

    /// The identity in a set of OIDC claims (`sub` required).
    public static func identity(providerID: String, claims c: JSON) throws(HearthError) -> ProviderIdentity {
        guard let sub = c["sub"]?.stringValue, !sub.isEmpty else { throw AuthErrorCode.invalidIDPResponse.error("The id_token has no sub.") }
        let verified: Bool =
            switch c["email_verified"] {
            case .bool(let b)?: b
            case .string(let s)?: s == "true"
            default: false
            }
        return ProviderIdentity(
            providerID: providerID, rawID: sub, email: c["email"]?.stringValue, emailVerified: verified,
            displayName: c["name"]?.stringValue ?? c["screen_name"]?.stringValue, photoURL: c["picture"]?.stringValue, claims: c)
    }
}

extension ProviderIdentity {
    /// Firebase's nonce rule for `signInWithIdp` (replay protection): when the request carries a
    /// raw `nonce`, the token's `nonce` claim must equal it — for Sign in with Apple the claim is
    /// the lower-case hex SHA-256 of the raw nonce, for other providers the nonce as given — and a
    /// token that carries a nonce is refused when the request sent none. MISSING_OR_INVALID_NONCE.
    public func checkNonce(_ rawNonce: String?) throws(HearthError) {
        let error = AuthErrorCode.missingOrInvalidNonce
        let claim = claims["nonce"]
        if let claim, claim.stringValue == nil { throw error.error("The nonce in the ID token is not a string.") }
        let tokenNonce = claim?.stringValue
        guard let rawNonce, !rawNonce.isEmpty else {
            guard tokenNonce == nil else { throw error.error("Nonce is missing in the request.") }
            return
        }
        guard let tokenNonce else { throw error.error("The ID token has no nonce, but the request carries one.") }
        let expected = providerID == "apple.com" ? AuthEngine.sha256Hex(rawNonce) : rawNonce
        guard PasswordHash.constantTimeEqual(Array(expected.utf8), Array(tokenNonce.utf8)) else {
            throw error.error(
                providerID == "apple.com"
                    ? "The nonce in ID Token does not match the SHA256 hash of the raw nonce in the request."
                    : "The nonce in ID Token does not match the nonce in the request.")
        }
    }
}
