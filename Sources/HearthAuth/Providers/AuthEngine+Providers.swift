import HearthCore

extension AuthEngine {
    /// `accounts:signInWithIdp` once the provider's token is verified: signs in the account linked
    /// to (provider, rawId); else links it to the account of `linkTo` (an ID token); else creates
    /// an account — unless another account already uses the email (then `needConfirmation`,
    /// as Firebase answers when one account per email is enforced).
    public func signIn(with identity: ProviderIdentity, linkTo idToken: String? = nil) async throws -> (session: Session?, needConfirmation: Bool) {
        let email = try identity.email.map { e throws(HearthError) in try Self.normalizeEmail(e) }
        var linked: String? = nil
        if let idToken { linked = try await account(idToken: idToken).uid }
        let linkUID = linked
        let now = clock.millis()
        let info = ProviderUserInfo(
            providerID: identity.providerID, rawID: identity.rawID, email: email, displayName: identity.displayName, photoURL: identity.photoURL)
        return try await store.write { w in
            if var linked = try w.account(provider: identity.providerID, rawID: identity.rawID) {
                if let linkUID, linkUID != linked.uid { throw AuthErrorCode.federatedUserIDAlreadyLinked.error() }
                guard !linked.disabled else { throw AuthErrorCode.userDisabled.error() }
                linked.lastLoginAt = now
                try w.save(linked)
                return (try self.startSession(linked, provider: identity.providerID, isNewUser: false, in: w), false)
            }
            if let linkUID {
                guard var a = try w.account(uid: linkUID) else { throw AuthErrorCode.userNotFound.error() }
                a.providers.append(info)
                if a.email == nil, let email, try w.account(email: email) == nil {
                    a.email = email
                    a.emailVerified = identity.emailVerified
                }
                a.lastLoginAt = now
                try w.save(a)
                return (try self.startSession(a, provider: identity.providerID, isNewUser: false, in: w), false)
            }
            if let email, let existing = try w.account(email: email) {
                // A verified email from the provider may take over an unverified password account; otherwise ask.
                guard identity.emailVerified && !existing.emailVerified && existing.providers.isEmpty else { return (nil, true) }
                var a = existing
                a.providers.append(info)
                a.passwordHash = nil
                a.passwordUpdatedAt = nil
                a.emailVerified = true
                a.validSince = now / 1000
                a.lastLoginAt = now
                try w.deleteRefreshTokens(uid: a.uid)
                try w.save(a)
                return (try self.startSession(a, provider: identity.providerID, isNewUser: false, in: w), false)
            }
            let a = Account(
                uid: Self.newUID(), email: email, emailVerified: email != nil && identity.emailVerified, displayName: identity.displayName,
                photoURL: identity.photoURL, providers: [info], createdAt: now, lastLoginAt: now, validSince: now / 1000)
            try w.save(a)
            return (try self.startSession(a, provider: identity.providerID, isNewUser: true, in: w), false)
        }
    }
}
