import HearthCore
import HearthAuth
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
        case (.get, "config"):
            return emulatorConfig()
        case (.patch, "config"):
            let body = try await AuthRequestBody.read(&request, allowed: ["signIn", "emailPrivacyConfig", "usageMode"], limit: 64 * 1024)
            if let signIn = body["signIn"] {
                let s = try AuthRequestBody.nested(signIn, "signIn", allowed: ["allowDuplicateEmails"])
                if try s.bool("allowDuplicateEmails") == true {
                    throw HearthError.invalidArgument("allowDuplicateEmails is not supported: Hearth keeps one account per email.")
                }
            }
            if let privacy = body["emailPrivacyConfig"] {
                let p = try AuthRequestBody.nested(privacy, "emailPrivacyConfig", allowed: ["enableImprovedEmailPrivacy"])
                if let on = try p.bool("enableImprovedEmailPrivacy") { engine.setEmailEnumerationProtection(on) }
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
        } else if authenticator.emulator {
            identity = try Self.fakeIdentity(idToken, providerID: providerID)
        } else {
            throw AuthErrorCode.invalidProviderID.error("Provider \(providerID) is not configured.")
        }
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
