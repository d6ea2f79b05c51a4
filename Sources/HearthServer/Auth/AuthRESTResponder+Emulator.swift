import HearthCore
import HearthAuth
import HearthJWT
import Hummingbird
import Foundation

/// The Auth emulator's control endpoints (emulator mode only) and `signInWithIdp`.
extension AuthRESTResponder {
    func emulator(_ segments: [String], _ request: inout Request) async throws -> Response {
        guard authenticator.emulator, segments.count == 4, segments[0] == "v1", segments[1] == "projects" else {
            throw HearthError(.notFound, "Not Found")
        }
        try checkProject(segments[2])
        switch (request.method, segments[3]) {
        case (.delete, "accounts"):
            try await engine.deleteAllAccounts()
            logger.info("cleared auth accounts")
            return HTTPSupport.json(.object([]))
        case (.get, "oobCodes"):
            let origin = Self.origin(request)
            let codes = try await engine.oobCodes()
            return HTTPSupport.json(.object([("oobCodes", .array(codes.map { c in
                .object([
                    ("email", .string(c.email)), ("oobCode", .string(c.code)),
                    ("oobLink", .string(Self.actionLink(c, origin: origin, emulator: true))), ("requestType", .string(c.requestType.rawValue)),
                ])
            }))]))
        case (.get, "verificationCodes"):
            let codes = try await engine.phoneCodes()
            return HTTPSupport.json(.object([("verificationCodes", .array(codes.map { c in
                .object([("phoneNumber", .string(c.phoneNumber)), ("sessionInfo", .string(c.sessionInfo)), ("code", .string(c.code))])
            }))]))
        case (.get, "config"):
            return emulatorConfig()
        case (.patch, "config"):
            let body = try await AuthRequestBody.read(&request, allowed: ["signIn", "emailPrivacyConfig", "usageMode"], limit: maxBody)
            if let signIn = body["signIn"] {
                let s = try AuthRequestBody.nested(signIn, "signIn", allowed: ["allowDuplicateEmails"])
                if try s.bool("allowDuplicateEmails") == true {
                    throw HearthError.invalidArgument("allowDuplicateEmails is not supported: Hearth keeps one account per email.")
                }
            }
            if let privacy = body["emailPrivacyConfig"] {
                let p = try AuthRequestBody.nested(privacy, "emailPrivacyConfig", allowed: ["enableImprovedEmailPrivacy"])
                if let on = try p.bool("enableImprovedEmailPrivacy") { try await engine.saveEmailEnumerationProtection(on) }
            }
            return emulatorConfig()
        default:
            throw HearthError(.notFound, "Not Found")
        }
    }

    func emulatorConfig() -> Response {
        HTTPSupport.json(.object([
            ("signIn", .object([("allowDuplicateEmails", .bool(false))])),
            ("emailPrivacyConfig", .object([("enableImprovedEmailPrivacy", .bool(engine.emailEnumerationProtection))])),
        ]))
    }

    /// `accounts:signInWithIdp`: `postBody` carries `id_token=…&providerId=…`. The token must
    /// verify against a configured provider (issuer, client ids, keys). In emulator mode the
    /// emulator's fake tokens are accepted too: an unsigned JWT or plain JSON with a `sub`.
    func signInWithIdp(_ body: AuthRequestBody) async throws -> Response {
        guard let requestUri = try body.string("requestUri"), !requestUri.isEmpty else {
            throw HearthError.invalidArgument("MISSING_REQUEST_URI")
        }
        guard let postBody = try body.string("postBody"), !postBody.isEmpty else {
            throw AuthErrorCode.invalidIDPResponse.error("MISSING_POST_BODY")
        }
        let params = Dictionary(try HTTPSupport.queryParameters(postBody), uniquingKeysWith: { a, _ in a })
        guard let providerID = params["providerId"], !providerID.isEmpty else { throw AuthErrorCode.invalidProviderID.error("Provider Id is not supported.") }
        guard let idToken = params["id_token"], !idToken.isEmpty else {
            throw AuthErrorCode.invalidIDPResponse.error("Only OpenID Connect id_token credentials are supported.")
        }
        let identity: ProviderIdentity
        if let provider = providers.first(where: { $0.providerID == providerID }) {
            identity = try provider.verify(idToken, now: engine.clock.seconds)
        } else if providerID.hasPrefix("oidc.") || providerID.hasPrefix("saml."),
            let config = try await engine.oidcProviderConfig(id: providerID)
        {
            identity = try await verify(idToken, with: config)
        } else if authenticator.emulator {
            identity = try Self.fakeIdentity(idToken, providerID: providerID)
        } else {
            throw AuthErrorCode.invalidProviderID.error("Provider \(providerID) is not configured.")
        }
        // Replay protection: the token's nonce must match the raw nonce the client sent.
        try identity.checkNonce(params["nonce"])
        let (session, needConfirmation) = try await engine.signIn(with: identity, linkTo: try body.string("idToken"))
        var m: [(String, JSON)] = [
            AuthJSON.kind("VerifyAssertionResponse"), ("federatedId", .string(identity.rawID)), ("providerId", .string(providerID)),
        ]
        if let e = identity.email { m.append(("email", .string(e))); m.append(("emailVerified", .bool(identity.emailVerified))) }
        if let d = identity.displayName { m.append(("displayName", .string(d))); m.append(("fullName", .string(d))) }
        if let p = identity.photoURL { m.append(("photoUrl", .string(p))) }
        m.append(("rawUserInfo", .string(identity.claims.serialized())))
        if try body.bool("returnIdpCredential") == true { m.append(("oauthIdToken", .string(idToken))) }
        if let session {
            m.append(("localId", .string(session.account.uid)))
            m += AuthJSON.tokens(session)
            m.append(("isNewUser", .bool(session.isNewUser)))
        } else {
            m.append(("needConfirmation", .bool(needConfirmation)))
        }
        return HTTPSupport.json(.object(m))
    }

    /// An ID token for a provider configured through the Admin API (`oauthIdpConfigs`): it must
    /// be enabled; the token is checked against its issuer and client id, and signed by the keys
    /// `--auth-config` lists for that issuer, else (production mode) the keys the issuer's
    /// discovery document names. In emulator mode, without configured keys, the emulator's fake
    /// tokens are accepted if issuer and audience match. SAML assertions are not supported.
    func verify(_ idToken: String, with config: ProviderConfig) async throws(HearthError) -> ProviderIdentity {
        guard let (issuer, clientID) = config.oidc else {
            throw AuthErrorCode.invalidIDPResponse.error(
                "SAML sign-in is not supported by Hearth: inboundSamlConfigs are stored for the Admin API only.")
        }
        guard config.enabled else { throw AuthErrorCode.operationNotAllowed.error("The identity provider configuration is disabled.") }
        let now = engine.clock.seconds
        if let keyed = providers.first(where: { $0.issuer == issuer }) {
            let provider = IdentityProvider(providerID: config.providerID, issuer: issuer, audiences: [clientID], keys: keyed.keys)
            return try provider.verify(idToken, now: now)
        }
        guard authenticator.emulator else {
            let provider = try await discovery.provider(
                providerID: config.providerID, issuer: issuer, clientID: clientID, keyID: JWT.parse(idToken)?.keyID)
            return try provider.verify(idToken, now: now)
        }
        let identity = try Self.fakeIdentity(idToken, providerID: config.providerID)
        let claims = identity.claims
        let audiences = claims["aud"]?.stringValue.map { [$0] } ?? (claims["aud"]?.arrayValue ?? []).compactMap(\.stringValue)
        guard claims["iss"]?.stringValue == issuer else { throw AuthErrorCode.invalidIDPResponse.error("The id_token has the wrong issuer.") }
        guard audiences.contains(clientID) else { throw AuthErrorCode.invalidIDPResponse.error("The id_token has the wrong audience.") }
        if case .number(let text)? = claims["exp"], let exp = Int64(text), exp + 60 <= now {
            throw AuthErrorCode.invalidIDPResponse.error("The id_token has expired.")
        }
        return identity
    }

    /// The emulator's fake IdP tokens: plain JSON claims, or an unsigned JWT.
    static func fakeIdentity(_ token: String, providerID: String) throws(HearthError) -> ProviderIdentity {
        let claims: JSON
        if let json = try? JSON.parse(token), json.objectValue != nil {
            claims = json
        } else if let jwt = JWT.parse(token) {
            claims = jwt.payload
        } else {
            throw AuthErrorCode.invalidIDPResponse.error("Unparsable id_token.")
        }
        return try IdentityProvider.identity(providerID: providerID, claims: claims)
    }
}
