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
        return try await commit {
            var c = code
            let account = try await self.store.account(email: normalized)
            if type != .emailSignIn && account == nil { throw AuthErrorCode.emailNotFound.error() }
            c.uid = account?.uid
            // The code names its account (deleting the account deletes it): that account must still be there.
            let expectations: [AuthExpectation] = account.map { [.account(uid: $0.uid, equals: $0)] } ?? []
            return (AuthChangeSet(expectations: expectations, mutations: [.deleteOOBCodes(expiringBefore: now), .insertOOBCode(c)]), c)
        }
    }

    /// Emulator: `GET /emulator/v1/projects/{p}/oobCodes`.
    public func oobCodes() async throws -> [OOBCode] { try await store.oobCodes() }

    /// Looks a code up without using it (`accounts:resetPassword` with only `oobCode`).
    public func inspectOOBCode(_ code: String, expecting type: OOBRequestType? = nil) async throws -> OOBCode {
        let now = clock.millis()
        guard let c = try await store.oobCode(code), type == nil || c.requestType == type else {
            throw AuthErrorCode.invalidOOBCode.error()
        }
        guard c.expiresAt > now else { throw AuthErrorCode.expiredOOBCode.error() }
        return c
    }

    /// Plans the use of a code of `type` (INVALID_OOB_CODE / EXPIRED_OOB_CODE otherwise): the
    /// code, and what consumes it — the expectation that it is still stored and its deletion, in
    /// one change set with the action's own changes, so of concurrent users exactly one wins and
    /// the others' next plan finds no code.
    func consumable(_ code: String, _ type: OOBRequestType, now: Int64) async throws -> (OOBCode, AuthChangeSet) {
        guard !code.isEmpty else { throw AuthErrorCode.missingOOBCode.error() }
        guard let c = try await store.oobCode(code), c.requestType == type else { throw AuthErrorCode.invalidOOBCode.error() }
        guard c.expiresAt > now else { throw AuthErrorCode.expiredOOBCode.error() }
        return (c, AuthChangeSet(expectations: [.oobCode(code)], mutations: [.deleteOOBCode(code)]))
    }

    /// `accounts:resetPassword`: sets the password, marks the email verified, revokes older tokens.
    public func resetPassword(oobCode: String, newPassword: String) async throws -> Account {
        let hash = try configuration.passwordHashing.hash(try checkPassword(newPassword))
        let now = clock.millis()
        return try await commit {
            let (c, consume) = try await self.consumable(oobCode, .passwordReset, now: now)
            var changes = consume
            guard var a = try await self.store.account(email: c.email) else { throw AuthErrorCode.emailNotFound.error() }
            guard !a.disabled else { throw AuthErrorCode.userDisabled.error() }
            changes.expectations.append(.account(uid: a.uid, equals: a))
            a.passwordHash = hash
            a.passwordUpdatedAt = now
            a.emailVerified = true
            a.validSince = now / 1000
            changes.mutations += [.deleteRefreshTokens(uid: a.uid), .saveAccount(a)]
            return (changes, a)
        }
    }

    /// `accounts:update {oobCode}` for VERIFY_EMAIL: marks the email verified.
    public func applyVerifyEmail(oobCode: String) async throws -> Account {
        let now = clock.millis()
        return try await commit {
            let (c, consume) = try await self.consumable(oobCode, .verifyEmail, now: now)
            var changes = consume
            guard var a = try await self.store.account(email: c.email) else { throw AuthErrorCode.userNotFound.error() }
            changes.expectations.append(.account(uid: a.uid, equals: a))
            a.emailVerified = true
            changes.mutations.append(.saveAccount(a))
            return (changes, a)
        }
    }

    /// `accounts:signInWithEmailLink`: signs in (creating the account if needed) and verifies the email.
    public func signInWithEmailLink(email: String, oobCode: String) async throws -> Session {
        let normalized = try Self.normalizeEmail(email)
        let now = clock.millis()
        let planned = try await commit {
            let (c, consume) = try await self.consumable(oobCode, .emailSignIn, now: now)
            guard c.email == normalized else { throw AuthErrorCode.invalidEmail.error("The email does not match the link.") }
            let existing = try await self.store.account(email: normalized)
            var a: Account
            if let existing {
                a = existing
                guard !a.disabled else { throw AuthErrorCode.userDisabled.error() }
            } else {
                a = Account(uid: Self.newUID(), email: normalized, createdAt: now, validSince: now / 1000)
            }
            a.emailVerified = true
            a.lastLoginAt = now
            return self.planSession(
                a, provider: "emailLink", isNewUser: existing == nil,
                expecting: consume.expectations + [.account(uid: a.uid, equals: existing)], also: consume.mutations)
        }
        return try finish(planned)
    }
}
