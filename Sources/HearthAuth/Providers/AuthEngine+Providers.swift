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
        // Two first sign-ins of one provider user race to create its account: the store refuses
        // the second link (providerTaken), whose next plan signs in the account the first made.
        let (planned, needConfirmation): (PlannedSession?, Bool) = try await commit {
            if var linked = try await self.store.account(provider: identity.providerID, rawID: identity.rawID) {
                if let linkUID, linkUID != linked.uid { throw AuthErrorCode.federatedUserIDAlreadyLinked.error() }
                guard !linked.disabled else { throw AuthErrorCode.userDisabled.error() }
                let read = linked
                linked.lastLoginAt = now
                let (changes, planned) = self.planSession(
                    linked, provider: identity.providerID, isNewUser: false, expecting: [.account(uid: read.uid, equals: read)])
                return (changes, (planned, false))
            }
            if let linkUID {
                guard var a = try await self.store.account(uid: linkUID) else { throw AuthErrorCode.userNotFound.error() }
                let read = a
                a.providers.append(info)
                if a.email == nil, let email, try await self.store.account(email: email) == nil {
                    a.email = email
                    a.emailVerified = identity.emailVerified
                }
                a.lastLoginAt = now
                let (changes, planned) = self.planSession(
                    a, provider: identity.providerID, isNewUser: false, expecting: [.account(uid: read.uid, equals: read)])
                return (changes, (planned, false))
            }
            if let email, let existing = try await self.store.account(email: email) {
                // A verified email from the provider may take over an unverified password account; otherwise ask.
                guard identity.emailVerified && !existing.emailVerified && existing.providers.isEmpty else {
                    // No writes, but an answer from two reads: the store confirms both still hold.
                    let checked = AuthChangeSet(expectations: [
                        .providerLink(providerID: identity.providerID, rawID: identity.rawID, uid: nil),
                        .account(uid: existing.uid, equals: existing),
                    ])
                    return (checked, (nil, true))
                }
                var a = existing
                a.providers.append(info)
                a.passwordHash = nil
                a.passwordUpdatedAt = nil
                a.emailVerified = true
                a.validSince = now / 1000
                a.lastLoginAt = now
                let (changes, planned) = self.planSession(
                    a, provider: identity.providerID, isNewUser: false, expecting: [.account(uid: existing.uid, equals: existing)],
                    also: [.deleteRefreshTokens(uid: a.uid)])
                return (changes, (planned, false))
            }
            let a = Account(
                uid: Self.newUID(), email: email, emailVerified: email != nil && identity.emailVerified, displayName: identity.displayName,
                photoURL: identity.photoURL, providers: [info], createdAt: now, lastLoginAt: now, validSince: now / 1000)
            let (changes, planned) = self.planSession(
                a, provider: identity.providerID, isNewUser: true, expecting: [.account(uid: a.uid, equals: nil)])
            return (changes, (planned, false))
        }
        return (try planned.map { try finish($0) }, needConfirmation)
    }
}
