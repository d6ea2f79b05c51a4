import HearthCore
import HearthAuth
import Hummingbird
import Foundation

/// Client operations: sign-up, sign-in, lookup, update, delete, out-of-band codes.
extension AuthRESTResponder {
    func signUp(_ body: AuthRequestBody, _ request: Request, privileged: Bool) async throws -> Response {
        let email = try body.string("email"), password = try body.string("password")
        let displayName = try body.string("displayName"), photoURL = try body.string("photoUrl")
        let localId = try body.string("localId"), emailVerified = try body.bool("emailVerified"), disabled = try body.bool("disabled")
        if body["mfaInfo"] != nil { throw AuthErrorCode.operationNotAllowed.error("Multi-factor enrolment is not supported.") }
        let phoneNumber = try body.string("phoneNumber")
        if privileged || localId != nil || emailVerified != nil || disabled != nil || phoneNumber != nil {
            try await requireAdmin(request)
            let account = try await engine.createAccount(NewAccount(
                uid: localId, email: email, emailVerified: emailVerified ?? false, password: password, displayName: displayName,
                photoURL: photoURL, disabled: disabled ?? false, phoneNumber: phoneNumber))
            var m: [(String, JSON)] = [AuthJSON.kind("SignupNewUserResponse"), ("localId", .string(account.uid))]
            if let e = account.email { m.append(("email", .string(e))) }
            if let p = account.phoneNumber { m.append(("phoneNumber", .string(p))) }
            if let d = account.displayName { m.append(("displayName", .string(d))) }
            return HTTPSupport.json(.object(m))
        }
        let session: AuthEngine.Session
        if let idToken = try body.string("idToken") {
            guard let email, !email.isEmpty else { throw AuthErrorCode.missingEmail.error() }
            guard let password, !password.isEmpty else { throw AuthErrorCode.missingPassword.error() }
            session = try await engine.linkEmailPassword(idToken: idToken, email: email, password: password)
        } else {
            session = try await engine.signUp(
                email: email, password: password, displayName: displayName, photoURL: photoURL,
                clientAddress: authenticator.emulator ? nil : Self.clientAddress(request))
        }
        var m: [(String, JSON)] = [AuthJSON.kind("SignupNewUserResponse"), ("localId", .string(session.account.uid))]
        if let e = session.account.email { m.append(("email", .string(e))) }
        if let d = session.account.displayName { m.append(("displayName", .string(d))) }
        return HTTPSupport.json(.object(m + AuthJSON.tokens(session)))
    }

    func signInWithPassword(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        guard let email = try body.string("email"), !email.isEmpty else { throw AuthErrorCode.invalidEmail.error() }
        guard let password = try body.string("password"), !password.isEmpty else { throw AuthErrorCode.missingPassword.error() }
        let s = try await engine.signInWithPassword(email: email, password: password, clientAddress: authenticator.emulator ? nil : Self.clientAddress(request))
        var m: [(String, JSON)] = [
            AuthJSON.kind("VerifyPasswordResponse"), ("registered", .bool(true)), ("localId", .string(s.account.uid)),
            ("email", .string(s.account.email ?? email)), ("displayName", .string(s.account.displayName ?? "")),
        ]
        if let p = s.account.photoURL { m.append(("profilePicture", .string(p))) }
        return HTTPSupport.json(.object(m + AuthJSON.tokens(s)))
    }

    func signInWithCustomToken(_ body: AuthRequestBody) async throws -> Response {
        guard let token = try body.string("token"), !token.isEmpty else { throw AuthErrorCode.invalidCustomToken.error("MISSING_CUSTOM_TOKEN") }
        let s = try await engine.signInWithCustomToken(token)
        return HTTPSupport.json(.object([AuthJSON.kind("VerifyCustomTokenResponse")] + AuthJSON.tokens(s) + [("isNewUser", .bool(s.isNewUser))]))
    }

    func signInWithEmailLink(_ body: AuthRequestBody) async throws -> Response {
        guard let email = try body.string("email"), !email.isEmpty else { throw AuthErrorCode.missingEmail.error() }
        guard let code = try body.string("oobCode"), !code.isEmpty else { throw AuthErrorCode.missingOOBCode.error() }
        let s = try await engine.signInWithEmailLink(email: email, oobCode: code)
        let m: [(String, JSON)] = [
            AuthJSON.kind("EmailLinkSigninResponse"), ("localId", .string(s.account.uid)), ("email", .string(s.account.email ?? email)),
        ]
        return HTTPSupport.json(.object(m + AuthJSON.tokens(s) + [("isNewUser", .bool(s.isNewUser))]))
    }

    func lookup(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        let accounts: [Account]
        let admin: Bool
        if let idToken = try body.string("idToken") {
            accounts = [try await engine.account(idToken: idToken)]
            admin = false
        } else {
            try await requireAdmin(request)
            admin = true
            let uids = try body.strings("localId"), emails = try body.strings("email")
            var federated: [(String, String)] = []
            for (i, f) in try body.objects("federatedUserId").enumerated() {
                let fb = try AuthRequestBody.nested(f, "federatedUserId[\(i)]", allowed: ["providerId", "rawId"])
                guard let p = try fb.string("providerId"), let r = try fb.string("rawId") else { throw AuthErrorCode.invalidProviderID.error() }
                federated.append((p, r))
            }
            var found = try await engine.lookup(uids: uids, emails: emails, phoneNumbers: try body.strings("phoneNumber"))
            for (p, r) in federated {
                if let a = try await engine.account(provider: p, rawID: r), !found.contains(where: { $0.uid == a.uid }) { found.append(a) }
            }
            accounts = found
        }
        var m: [(String, JSON)] = [AuthJSON.kind("GetAccountInfoResponse")]
        if !accounts.isEmpty { m.append(("users", .array(accounts.map { AuthJSON.userInfo($0, includeHash: admin) }))) }
        return HTTPSupport.json(.object(m))
    }

    func update(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        if let code = try body.string("oobCode") {
            let a = try await engine.applyVerifyEmail(oobCode: code)
            var m: [(String, JSON)] = [AuthJSON.kind("SetAccountInfoResponse"), ("localId", .string(a.uid))]
            if let e = a.email { m.append(("email", .string(e))) }
            m.append(("emailVerified", .bool(a.emailVerified)))
            return HTTPSupport.json(.object(m))
        }
        var u = AccountUpdate(
            email: try body.string("email"), password: try body.string("password"), displayName: try body.string("displayName"),
            photoURL: try body.string("photoUrl"), customClaims: try body.string("customAttributes"), disabled: try body.bool("disableUser"),
            emailVerified: try body.bool("emailVerified"), validSince: try body.int64("validSince"), phoneNumber: try body.string("phoneNumber"))
        for (i, name) in try body.strings("deleteAttribute").enumerated() {
            guard let attr = AccountUpdate.Attribute(rawValue: name) else {
                throw HearthError.invalidArgument("Invalid value at 'deleteAttribute[\(i)]' (TYPE_ENUM), \"\(name)\"")
            }
            u.deleteAttributes.insert(attr)
        }
        u.deleteProviders = Set(try body.strings("deleteProvider"))
        let result: (Account, AuthEngine.Session?)
        if let idToken = try body.string("idToken") {
            result = try await engine.updateAccount(idToken: idToken, u)
        } else {
            guard let uid = try body.string("localId") else { throw AuthErrorCode.missingLocalID.error() }
            try await requireAdmin(request)
            result = (try await engine.updateAccount(uid: uid, u), nil)
        }
        let (account, session) = result
        var m: [(String, JSON)] = [AuthJSON.kind("SetAccountInfoResponse"), ("localId", .string(account.uid))]
        if let e = account.email { m.append(("email", .string(e))) }
        m.append(("emailVerified", .bool(account.emailVerified)))
        if let d = account.displayName { m.append(("displayName", .string(d))) }
        if let p = account.photoURL { m.append(("photoUrl", .string(p))) }
        if let p = account.phoneNumber { m.append(("phoneNumber", .string(p))) }
        m.append(("providerUserInfo", .array(account.providerUserInfo.map(AuthJSON.providerInfo))))
        if let session { m += AuthJSON.tokens(session) }
        return HTTPSupport.json(.object(m))
    }

    func delete(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        if let idToken = try body.string("idToken") {
            try await engine.deleteAccount(idToken: idToken)
        } else {
            guard let uid = try body.string("localId") else { throw AuthErrorCode.missingLocalID.error() }
            try await requireAdmin(request)
            try await engine.deleteAccount(uid: uid)
        }
        return HTTPSupport.json(.object([AuthJSON.kind("DeleteAccountResponse")]))
    }

    func sendOobCode(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        guard let typeName = try body.string("requestType") else { throw AuthErrorCode.missingRequestType.error() }
        guard let type = OOBRequestType(rawValue: typeName) else { throw AuthErrorCode.invalidRequestType.error() }
        let returnLink = try body.bool("returnOobLink") ?? false
        let admin = await isAdmin(request)
        if returnLink && !admin { throw AuthErrorCode.insufficientPermission.error("returnOobLink needs an admin credential.") }
        var email = try body.string("email")
        let clientToken = try body.string("idToken")
        if type == .verifyEmail, let idToken = clientToken {
            email = try await engine.account(idToken: idToken).email
        }
        guard let email, !email.isEmpty else { throw AuthErrorCode.missingEmail.error() }
        if type == .verifyEmail && !admin && clientToken == nil { throw AuthErrorCode.invalidIDToken.error() }
        let continueURL = try body.string("continueUrl")
        if type == .emailSignIn && continueURL == nil && !returnLink { throw AuthErrorCode.missingContinueURI.error() }
        _ = try body.bool("canHandleCodeInApp")
        if let domain = try body.string("linkDomain"), !domain.isEmpty, !linkDomains.contains(domain.lowercased()) {
            throw AuthErrorCode.invalidHostingLinkDomain.error()
        }
        let code = try await engine.createOOBCode(type, email: email, continueURL: continueURL)
        let link = Self.actionLink(code, origin: Self.origin(request), emulator: authenticator.emulator)
        if !returnLink { outbox?.deliver(code, link: link, emulator: authenticator.emulator) }
        var m: [(String, JSON)] = [AuthJSON.kind("GetOobConfirmationCodeResponse"), ("email", .string(code.email))]
        if returnLink { m += [("oobCode", .string(code.code)), ("oobLink", .string(link))] }
        return HTTPSupport.json(.object(m))
    }

    /// The action link sent in emails (the emulator's `/emulator/action` form in emulator mode).
    static func actionLink(_ code: OOBCode, origin: String, emulator: Bool) -> String {
        func q(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }
        var link = "\(origin)/\(emulator ? "emulator/action" : "__/auth/action")?mode=\(code.requestType.mode)&lang=en&oobCode=\(q(code.code))&apiKey=fake-api-key"
        if let c = code.continueURL { link += "&continueUrl=\(q(c))" }
        return link
    }

    func resetPassword(_ body: AuthRequestBody) async throws -> Response {
        guard let code = try body.string("oobCode"), !code.isEmpty else { throw AuthErrorCode.missingOOBCode.error() }
        if try body.string("oldPassword") != nil { throw AuthErrorCode.operationNotAllowed.error("Resetting with oldPassword is not supported.") }
        let result: (String, OOBRequestType)
        if let newPassword = try body.string("newPassword") {
            result = (try await engine.resetPassword(oobCode: code, newPassword: newPassword).email ?? "", .passwordReset)
        } else {
            let c = try await engine.inspectOOBCode(code)
            result = (c.email, c.requestType)
        }
        let (email, type) = result
        return HTTPSupport.json(.object([AuthJSON.kind("ResetPasswordResponse"), ("email", .string(email)), ("requestType", .string(type.rawValue))]))
    }

    /// `accounts:createAuthUri`: whether an email is registered and how it can sign in.
    func createAuthUri(_ body: AuthRequestBody) async throws -> Response {
        guard let identifier = try body.string("identifier"), !identifier.isEmpty else { throw AuthErrorCode.missingIdentifier.error() }
        let email: String
        do { email = try AuthEngine.normalizeEmail(identifier) } catch { throw AuthErrorCode.invalidIdentifier.error() }
        var m: [(String, JSON)] = [AuthJSON.kind("CreateAuthUriResponse")]
        let account = try await engine.account(email: email)
        if engine.emailEnumerationProtection {
            m.append(("sessionId", .string(AuthEngine.newUID())))
            return HTTPSupport.json(.object(m))
        }
        m.append(("registered", .bool(account != nil)))
        if let account {
            var providers: [String] = []
            var methods: [String] = []
            if account.passwordHash != nil { providers.append("password"); methods.append("password") }
            if account.email != nil && account.passwordHash == nil && account.providers.isEmpty { methods.append("emailLink") }
            for p in account.providers where !providers.contains(p.providerID) { providers.append(p.providerID); methods.append(p.providerID) }
            m.append(("allProviders", .array(providers.map(JSON.string))))
            m.append(("signinMethods", .array(methods.map(JSON.string))))
        }
        m.append(("sessionId", .string(AuthEngine.newUID())))
        return HTTPSupport.json(.object(m))
    }

    func projectConfig() -> Response {
        HTTPSupport.json(.object([
            ("projectId", .string(projectID)), ("authorizedDomains", .array([.string("localhost"), .string("127.0.0.1")])),
        ]))
    }
}

/// Phone sign-in: `accounts:sendVerificationCode` → `accounts:signInWithPhoneNumber`.
extension AuthRESTResponder {
    /// Stores a code and hands it to the outbox (Hearth sends no SMS; in emulator mode the code is
    /// also listed at `/emulator/v1/projects/{p}/verificationCodes`). Answers `{sessionInfo}`.
    func sendVerificationCode(_ body: AuthRequestBody) async throws -> Response {
        guard let number = try body.string("phoneNumber"), !number.isEmpty else { throw AuthErrorCode.missingPhoneNumber.error() }
        for field in ["iosReceipt", "iosSecret", "recaptchaToken", "playIntegrityToken", "safetyNetToken"] { _ = try body.string(field) }
        let code = try await engine.createPhoneCode(phoneNumber: number)
        outbox?.deliver(code, emulator: authenticator.emulator)
        return HTTPSupport.json(.object([AuthJSON.kind("SendVerificationCodeResponse"), ("sessionInfo", .string(code.sessionInfo))]))
    }

    func signInWithPhoneNumber(_ body: AuthRequestBody) async throws -> Response {
        if try body.string("temporaryProof") != nil || body.string("verificationProof") != nil {
            throw AuthErrorCode.operationNotAllowed.error("Sign-in with a temporaryProof or verificationProof is not supported.")
        }
        _ = try body.string("phoneNumber")
        let s = try await engine.signInWithPhoneNumber(
            sessionInfo: try body.string("sessionInfo") ?? "", code: try body.string("code") ?? "", linkTo: try body.string("idToken"))
        var m: [(String, JSON)] = [AuthJSON.kind("VerifyPhoneNumberResponse"), ("localId", .string(s.account.uid))]
        if let p = s.account.phoneNumber { m.append(("phoneNumber", .string(p))) }
        return HTTPSupport.json(.object(m + AuthJSON.tokens(s) + [("isNewUser", .bool(s.isNewUser))]))
    }
}
