public import HearthCore
import HearthJWT
import _CryptoExtras
import Foundation

/// An admin principal proven by an OAuth2 access token from Hearth's token endpoint.
public struct ServicePrincipal: Sendable, Hashable {
    /// The service account's `client_email`.
    public var clientEmail: String
    public var scope: String?
    /// Seconds.
    public var expiresAt: Int64
}

/// What the JWT-bearer grant returns (`{"access_token","expires_in","token_type"}`).
public struct AccessTokenGrant: Sendable {
    public var accessToken: String
    public var expiresIn: Int64
}

/// A newly created service account: the stored record and the Google-style JSON key file.
public struct CreatedServiceAccount: Sendable {
    public var record: ServiceAccountRecord
    /// `{"type":"service_account","project_id",…,"private_key","client_email","token_uri",…}`.
    public var keyFile: JSON
}

extension HearthError.Reason {
    /// OAuth2's `invalid_grant` (RFC 6749 §5.2): the JWT-bearer assertion was refused.
    public static let invalidGrant = Self("invalid_grant")
}

extension AuthEngine {
    /// Access tokens live one hour, as Google's.
    public static let accessTokenLifetime: Int64 = 3600

    /// The `iss` of Hearth access tokens; never an ID-token or session-cookie issuer.
    public var accessTokenIssuer: String { "urn:hearth:oauth2:\(tokens.projectID)" }

    /// Creates a service account with a fresh RSA key, registers its public key and returns the key file.
    /// `tokenURI` is where Google's libraries exchange assertions (Hearth's `/token` on the auth port).
    public func createServiceAccount(tokenURI: String, name: String? = nil) async throws -> CreatedServiceAccount {
        let key: _RSA.Signing.PrivateKey
        do { key = try _RSA.Signing.PrivateKey(keySize: .bits2048) } catch {
            throw HearthError(.internal, "Cannot generate a service-account key.", cause: error)
        }
        let project = tokens.projectID
        let local = (name ?? "hearth-admin-" + Self.randomString(6, alphabet: "abcdefghijklmnopqrstuvwxyz0123456789")).lowercased()
        guard local.utf8.count >= 6, local.utf8.count <= 30,
            local.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else { throw HearthError.invalidArgument("A service-account name has 6 to 30 lower-case letters, digits or dashes.") }
        let email = "\(local)@\(project).iam.gserviceaccount.com"
        let clientID = "1" + Self.randomString(20, alphabet: "0123456789")
        let record = ServiceAccountRecord(
            clientEmail: email, clientID: clientID, keyID: KeyRing.keyID(key.publicKey), publicKeyPEM: key.publicKey.pemRepresentation,
            createdAt: clock.millis())
        try await commit {
            guard try await self.store.serviceAccount(clientEmail: email) == nil else {
                throw HearthError(.alreadyExists, "Service account \(email) already exists.")
            }
            return (AuthChangeSet(expectations: [.serviceAccount(clientEmail: email, exists: false)], mutations: [.saveServiceAccount(record)]), ())
        }
        let encodedEmail = email.replacingOccurrences(of: "@", with: "%40")
        let file = JSON.object([
            ("type", .string("service_account")),
            ("project_id", .string(project)),
            ("private_key_id", .string(record.keyID)),
            ("private_key", .string(key.pkcs8PEMRepresentation + "\n")),
            ("client_email", .string(email)),
            ("client_id", .string(clientID)),
            ("auth_uri", .string("https://accounts.google.com/o/oauth2/auth")),
            ("token_uri", .string(tokenURI)),
            ("auth_provider_x509_cert_url", .string("https://www.googleapis.com/oauth2/v1/certs")),
            ("client_x509_cert_url", .string("https://www.googleapis.com/robot/v1/metadata/x509/\(encodedEmail)")),
            ("universe_domain", .string("googleapis.com")),
        ])
        return CreatedServiceAccount(record: record, keyFile: file)
    }

    /// Every registered service account as a custom-token signer (for ``TokenService``).
    public func serviceAccountSigners() async throws -> [CustomTokenSigner] {
        let records = try await store.serviceAccounts()
        return records.compactMap { r in
            guard let key = try? _RSA.Signing.PublicKey(pemRepresentation: r.publicKeyPEM) else { return nil }
            return CustomTokenSigner(clientEmail: r.clientEmail, keyID: r.keyID, publicKey: key)
        }
    }

    /// The OAuth2 JWT-bearer grant (RFC 7523) as google-auth sends it: an RS256 assertion signed
    /// by a registered service account (`iss` = its email, `exp` ≤ `iat` + 1 h, `aud` a token URI).
    /// Returns an RS256 access token signed by the key ring.
    public func exchangeJWTBearer(assertion: String) async throws -> AccessTokenGrant {
        func invalid(_ why: String) -> HearthError { HearthError(.unauthenticated, why, reason: .invalidGrant) }
        guard let jwt = JWT.parse(assertion) else { throw invalid("The assertion is not a JWT.") }
        do throws(JWTError) { try jwt.checkHeader(requireKeyID: false) } catch { throw invalid("The assertion must be signed with RS256.") }
        let c = jwt.payload
        guard let iss = c["iss"]?.stringValue else { throw invalid("The assertion has no issuer.") }
        guard let record = try await store.serviceAccount(clientEmail: iss),
            let key = try? _RSA.Signing.PublicKey(pemRepresentation: record.publicKeyPEM)
        else { throw invalid("Invalid JWT Signature.") }
        do throws(JWTError) {
            // The record's key, and only under its kid when the header names one.
            try jwt.verifySignature(requireKeyID: false) { kid in kid == nil || kid == record.keyID ? [key] : [] }
        } catch {
            throw invalid("Invalid JWT Signature.")
        }
        guard let aud = c["aud"]?.stringValue, aud.hasSuffix("/token") else { throw invalid("Invalid JWT: the audience must be a token URI.") }
        guard c["iat"]?.int64Value != nil, c["exp"]?.int64Value != nil else { throw invalid("Invalid JWT: iat and exp are required.") }
        let now = clock.seconds
        do throws(JWTError) {
            _ = try JWTTimes(claims: c, now: now, rules: JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: 300, maxLifetime: 3600))
        } catch {
            throw invalid("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        var claims: [(String, JSON)] = [
            ("iss", .string(accessTokenIssuer)), ("aud", .string(tokens.projectID)), ("sub", .string(record.clientEmail)),
            ("iat", .int(now)), ("exp", .int(now + Self.accessTokenLifetime)),
        ]
        if let scope = c["scope"]?.stringValue { claims.append(("scope", .string(scope))) }
        let token = try signWithKeyRing(.object(claims), type: "at+jwt")
        return AccessTokenGrant(accessToken: token, expiresIn: Self.accessTokenLifetime)
    }

    /// Verifies a Hearth access token; nil when `token` is not one (or no longer valid: expired,
    /// signed by an unpublished key, or its service account was removed).
    public func verifyAccessToken(_ token: String) async throws -> ServicePrincipal? {
        guard let jwt = JWT.parse(token), jwt.type == "at+jwt",
            (try? jwt.verifySignature { kid in kid.flatMap { tokens.keyRing.publicKey(kid: $0) }.map { [$0] } ?? [] }) != nil
        else { return nil }
        let c = jwt.payload
        guard c["iss"]?.stringValue == accessTokenIssuer, c["aud"]?.stringValue == tokens.projectID,
            let sub = c["sub"]?.stringValue, let exp = (try? JWTTimes(claims: c, now: clock.seconds, rules: JWTTimeRules(expiryLeeway: 0)))?.expiresAt
        else { return nil }
        guard try await store.serviceAccount(clientEmail: sub) != nil else { return nil }
        return ServicePrincipal(clientEmail: sub, scope: c["scope"]?.stringValue, expiresAt: exp)
    }

    /// Signs claims with the key ring's active key (RS256, `kid`).
    func signWithKeyRing(_ claims: JSON, type: String = "JWT") throws(HearthError) -> String {
        try tokens.keyRing.signJWT(claims, type: type)
    }
}
