import HearthCore

extension AuthEngine {
    /// `accounts:sendOobCode`: stores a code (delivery — SMTP, outbox, emulator listing — is the caller's).
    /// PASSWORD_RESET and VERIFY_EMAIL need an existing account (EMAIL_NOT_FOUND); EMAIL_SIGNIN does not.
    public func createOOBCode(_ type: OOBRequestType, email: String, continueURL: String? = nil) async throws -> OOBCode {
        let normalized = try Self.normalizeEmail(email)
        let now = clock.millis()
        let code = OOBCode(
            code: Self.randomString(48, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            requestType: type, email: normalized, uid: nil, continueURL: continueURL, createdAt: now,
            expiresAt: now + configuration.oobCodeLifetimeSeconds * 1000)
        return try await store.write { w in
            var c = code
            let account = try w.account(email: normalized)
            if type != .emailSignIn && account == nil { throw AuthErrorCode.emailNotFound.error() }
            c.uid = account?.uid
            try w.deleteOOBCodes(expiringBefore: now)
            try w.insertOOBCode(c)
            return c
        }
    }

    /// Emulator: `GET /emulator/v1/projects/{p}/oobCodes`.
    public func oobCodes() async throws -> [OOBCode] { try await store.read { r in try r.oobCodes() } }

    /// Looks a code up without using it (`accounts:resetPassword` with only `oobCode`).
    public func inspectOOBCode(_ code: String, expecting type: OOBRequestType? = nil) async throws -> OOBCode {
        let now = clock.millis()
        guard let c = try await store.read({ r in try r.oobCode(code) }), type == nil || c.requestType == type else {
            throw AuthErrorCode.invalidOOBCode.error()
        }
        guard c.expiresAt > now else { throw AuthErrorCode.expiredOOBCode.error() }
        return c
    }

    /// Consumes a code of `type` inside a write; INVALID_OOB_CODE / EXPIRED_OOB_CODE otherwise.
    func consume(_ code: String, _ type: OOBRequestType, now: Int64, _ w: any AuthStoreWriter) throws -> OOBCode {
        guard !code.isEmpty else { throw AuthErrorCode.missingOOBCode.error() }
        guard let c = try w.oobCode(code), c.requestType == type else { throw AuthErrorCode.invalidOOBCode.error() }
        try w.deleteOOBCode(code)
        guard c.expiresAt > now else { throw AuthErrorCode.expiredOOBCode.error() }
        return c
    }

    /// `accounts:resetPassword`: sets the password, marks the email verified, revokes older tokens.
    public func resetPassword(oobCode: String, newPassword: String) async throws -> Account {
        let hash = try configuration.passwordHashing.hash(try checkPassword(newPassword))
        let now = clock.millis()
        return try await store.write { w in
            let c = try self.consume(oobCode, .passwordReset, now: now, w)
            guard var a = try w.account(email: c.email) else { throw AuthErrorCode.emailNotFound.error() }
            guard !a.disabled else { throw AuthErrorCode.userDisabled.error() }
            a.passwordHash = hash
            a.passwordUpdatedAt = now
            a.emailVerified = true
            a.validSince = now / 1000
            try w.deleteRefreshTokens(uid: a.uid)
            try w.save(a)
            return a
        }
    }

    /// `accounts:update {oobCode}` for VERIFY_EMAIL: marks the email verified.
    public func applyVerifyEmail(oobCode: String) async throws -> Account {
        let now = clock.millis()
        return try await store.write { w in
            let c = try self.consume(oobCode, .verifyEmail, now: now, w)
            guard var a = try w.account(email: c.email) else { throw AuthErrorCode.userNotFound.error() }
            a.emailVerified = true
            try w.save(a)
            return a
        }
    }

    /// `accounts:signInWithEmailLink`: signs in (creating the account if needed) and verifies the email.
    public func signInWithEmailLink(email: String, oobCode: String) async throws -> Session {
        let normalized = try Self.normalizeEmail(email)
        let now = clock.millis()
        return try await store.write { w in
            let c = try self.consume(oobCode, .emailSignIn, now: now, w)
            guard c.email == normalized else { throw AuthErrorCode.invalidEmail.error("The email does not match the link.") }
            var isNew = false
            var a: Account
            if let existing = try w.account(email: normalized) {
                a = existing
                guard !a.disabled else { throw AuthErrorCode.userDisabled.error() }
            } else {
                isNew = true
                a = Account(uid: Self.newUID(), email: normalized, createdAt: now, validSince: now / 1000)
            }
            a.emailVerified = true
            a.lastLoginAt = now
            try w.save(a)
            return try self.startSession(a, provider: "emailLink", isNewUser: isNew, in: w)
        }
    }
}
