import HearthCore

/// What `accounts:update` may change. Nil leaves a field as it is.
public struct AccountUpdate: Sendable {
    public enum Attribute: String, Sendable { case displayName = "DISPLAY_NAME", photoURL = "PHOTO_URL", email = "EMAIL", password = "PASSWORD" }

    public var email: String?
    public var password: String?
    public var displayName: String?
    public var photoURL: String?
    public var deleteAttributes: Set<Attribute>
    /// Deleting the `phone` provider removes the phone number.
    public var deleteProviders: Set<String>
    /// E.164; admin only.
    public var phoneNumber: String?
    // Admin only:
    public var customClaims: String?
    public var disabled: Bool?
    public var emailVerified: Bool?
    public var validSince: Int64?

    public init(
        email: String? = nil, password: String? = nil, displayName: String? = nil, photoURL: String? = nil,
        deleteAttributes: Set<Attribute> = [], deleteProviders: Set<String> = [], customClaims: String? = nil,
        disabled: Bool? = nil, emailVerified: Bool? = nil, validSince: Int64? = nil, phoneNumber: String? = nil
    ) {
        self.phoneNumber = phoneNumber
        self.email = email
        self.password = password
        self.displayName = displayName
        self.photoURL = photoURL
        self.deleteAttributes = deleteAttributes
        self.deleteProviders = deleteProviders
        self.customClaims = customClaims
        self.disabled = disabled
        self.emailVerified = emailVerified
        self.validSince = validSince
    }

    var isAdminOnly: Bool { customClaims != nil || disabled != nil || emailVerified != nil || validSince != nil || phoneNumber != nil }
    var isSensitive: Bool { email != nil || password != nil }
}

/// One account for `accounts:batchCreate` (import) or admin create.
public struct NewAccount: Sendable {
    public var uid: String?
    public var email: String?
    public var emailVerified: Bool
    /// E.164; unique among accounts.
    public var phoneNumber: String?
    /// A clear-text password (admin create) — hashed with Hearth's scheme.
    public var password: String?
    /// An imported hash (batchCreate).
    public var passwordHash: PasswordHash?
    public var displayName: String?
    public var photoURL: String?
    public var disabled: Bool
    public var customClaims: String?
    public var providers: [ProviderUserInfo]
    public var createdAt: Int64?
    public var lastLoginAt: Int64?

    public init(
        uid: String? = nil, email: String? = nil, emailVerified: Bool = false, password: String? = nil,
        passwordHash: PasswordHash? = nil, displayName: String? = nil, photoURL: String? = nil, disabled: Bool = false,
        customClaims: String? = nil, providers: [ProviderUserInfo] = [], createdAt: Int64? = nil, lastLoginAt: Int64? = nil,
        phoneNumber: String? = nil
    ) {
        self.phoneNumber = phoneNumber
        self.uid = uid
        self.email = email
        self.emailVerified = emailVerified
        self.password = password
        self.passwordHash = passwordHash
        self.displayName = displayName
        self.photoURL = photoURL
        self.disabled = disabled
        self.customClaims = customClaims
        self.providers = providers
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
    }
}

/// A per-item failure of a batch call (`{index, localId?, message}`).
public struct BatchItemError: Sendable, Hashable {
    public var index: Int
    public var uid: String?
    public var message: String

    public init(index: Int, uid: String?, message: String) {
        self.index = index
        self.uid = uid
        self.message = message
    }
}

extension AuthEngine {
    /// Validates a `customAttributes` JSON text; returns it normalised (nil for `{}` or empty).
    static func normalizeClaims(_ text: String) throws(HearthError) -> String? {
        if text.isEmpty { return nil }
        guard let json = try? JSON.parse(text), json.objectValue != nil else { throw AuthErrorCode.invalidClaims.error() }
        try TokenService.checkCustomClaims(json)
        return json.objectValue!.isEmpty ? nil : json.serialized()
    }

    // MARK: Lookup

    public func account(uid: String) async throws -> Account? { try await store.account(uid: uid) }

    public func account(email: String) async throws -> Account? {
        try await store.account(email: try Self.normalizeEmail(email))
    }

    /// The account linked to an identity provider's user (`federatedUserId` lookups).
    public func account(provider: String, rawID: String) async throws -> Account? {
        try await store.account(provider: provider, rawID: rawID)
    }

    /// `accounts:lookup` for admins: every account matching any uid, email or phone number, each
    /// once, in request order.
    public func lookup(uids: [String] = [], emails: [String] = [], phoneNumbers: [String] = []) async throws -> [Account] {
        let normalized = try emails.map { e throws(HearthError) in try Self.normalizeEmail(e) }
        let numbers = try phoneNumbers.map { n throws(HearthError) in try Self.checkPhoneNumber(n) }
        var found: [Account] = []
        for uid in uids { if let a = try await store.account(uid: uid) { found.append(a) } }
        for email in normalized { if let a = try await store.account(email: email) { found.append(a) } }
        for number in numbers { if let a = try await store.account(phoneNumber: number) { found.append(a) } }
        var out: [Account] = []
        for a in found where !out.contains(where: { $0.uid == a.uid }) { out.append(a) }
        return out
    }

    /// `accounts:batchGet`: accounts ordered by uid, `maxResults` ≤ 1,000, with an opaque next-page token.
    public func listAccounts(maxResults: Int = 1000, pageToken: String? = nil) async throws -> (accounts: [Account], nextPageToken: String?) {
        guard maxResults >= 1, maxResults <= 1000 else { throw AuthErrorCode.invalidPageSelection.error() }
        var after: String? = nil
        if let pageToken, !pageToken.isEmpty {
            guard let bytes = Base64.urlDecode(pageToken), let uid = String(bytes: bytes, encoding: .utf8) else {
                throw AuthErrorCode.invalidPageSelection.error()
            }
            after = uid
        }
        let page = try await store.accounts(after: after, limit: maxResults + 1)
        let accounts = Array(page.prefix(maxResults))
        let next = page.count > maxResults ? accounts.last.map { Base64.urlEncode(Array($0.uid.utf8)) } : nil
        return (accounts, next)
    }

    // MARK: Create

    func makeAccount(_ n: NewAccount, now: Int64) throws(HearthError) -> Account {
        let uid = n.uid ?? Self.newUID()
        try Self.checkUID(uid)
        var hash = n.passwordHash
        if let pw = n.password { hash = try configuration.passwordHashing.hash(try checkPassword(pw)) }
        return Account(
            uid: uid, email: try n.email.map { e throws(HearthError) in try Self.normalizeEmail(e) }, emailVerified: n.emailVerified,
            passwordHash: hash, passwordUpdatedAt: hash == nil ? nil : now, displayName: n.displayName, photoURL: n.photoURL,
            disabled: n.disabled, customClaims: try n.customClaims.flatMap { c throws(HearthError) in try Self.normalizeClaims(c) },
            providers: n.providers, createdAt: n.createdAt ?? now, lastLoginAt: n.lastLoginAt, validSince: now / 1000,
            phoneNumber: try n.phoneNumber.map { p throws(HearthError) in try Self.checkPhoneNumber(p) })
    }

    /// Admin create (`POST projects/{p}/accounts`): DUPLICATE_LOCAL_ID / EMAIL_EXISTS on conflicts.
    public func createAccount(_ new: NewAccount) async throws -> Account {
        let account = try makeAccount(new, now: clock.millis())
        return try await commit {
            guard try await self.store.account(uid: account.uid) == nil else { throw AuthErrorCode.duplicateLocalID.error() }
            if let e = account.email, try await self.store.account(email: e) != nil { throw AuthErrorCode.emailExists.error() }
            if let p = account.phoneNumber, try await self.store.account(phoneNumber: p) != nil {
                throw AuthErrorCode.phoneNumberExists.error()
            }
            for link in account.providers {
                if try await self.store.account(provider: link.providerID, rawID: link.rawID) != nil {
                    throw AuthErrorCode.federatedUserIDAlreadyLinked.error()
                }
            }
            return (AuthChangeSet(expectations: [.account(uid: account.uid, equals: nil)], mutations: [.saveAccount(account)]), account)
        }
    }

    /// The message of a batchCreate item whose provider user is linked to another account (the emulator's).
    static let rawIDExistsMessage = "raw id exists in other account in database"

    /// `accounts:batchCreate` (≤ 1,000): accounts with an existing uid are overwritten, as Firebase's
    /// import does; an email used by another account fails that item only. Returns per-item errors.
    public func importAccounts(_ accounts: [NewAccount]) async throws -> [BatchItemError] {
        guard accounts.count <= 1000 else { throw HearthError.invalidArgument("Too many users: at most 1000 per import.") }
        let now = clock.millis()
        var errors: [BatchItemError] = []
        var valid: [(Int, Account)] = []
        for (i, n) in accounts.enumerated() {
            do throws(HearthError) {
                let a = try makeAccount(n, now: now)
                if valid.contains(where: { $0.1.uid == a.uid }) { throw AuthErrorCode.duplicateLocalID.error() }
                if let e = a.email, valid.contains(where: { $0.1.email == e }) { throw AuthErrorCode.duplicateEmail.error() }
                if let p = a.phoneNumber, valid.contains(where: { $0.1.phoneNumber == p }) { throw AuthErrorCode.phoneNumberExists.error() }
                valid.append((i, a))
            } catch {
                errors.append(BatchItemError(index: i, uid: n.uid, message: error.message))
            }
        }
        let toSave = valid
        let conflicts = try await commit {
            // Items are judged in order against the store as the earlier items leave it.
            var saved: [String: Account] = [:]
            func owner(_ stored: Account?, _ matches: (Account) -> Bool) -> String? {
                if let earlier = saved.values.first(where: matches) { return earlier.uid }
                guard let stored, saved[stored.uid] == nil else { return nil }
                return stored.uid
            }
            var conflicts: [BatchItemError] = []
            var mutations: [AuthMutation] = []
            for (i, a) in toSave {
                if let e = a.email, let other = owner(try await self.store.account(email: e), { $0.email == e }), other != a.uid {
                    conflicts.append(BatchItemError(index: i, uid: a.uid, message: AuthErrorCode.emailExists.rawValue))
                    continue
                }
                if let p = a.phoneNumber, let other = owner(try await self.store.account(phoneNumber: p), { $0.phoneNumber == p }),
                    other != a.uid
                {
                    conflicts.append(BatchItemError(index: i, uid: a.uid, message: AuthErrorCode.phoneNumberExists.rawValue))
                    continue
                }
                var linkedElsewhere = false
                for link in a.providers {
                    let stored = try await self.store.account(provider: link.providerID, rawID: link.rawID)
                    let holds = { (x: Account) in x.providers.contains { $0.providerID == link.providerID && $0.rawID == link.rawID } }
                    if let other = owner(stored, holds), other != a.uid { linkedElsewhere = true }
                }
                if linkedElsewhere {
                    conflicts.append(BatchItemError(index: i, uid: a.uid, message: Self.rawIDExistsMessage))
                    continue
                }
                saved[a.uid] = a
                mutations.append(.saveAccount(a))
            }
            return (AuthChangeSet(mutations: mutations), conflicts)
        }
        return (errors + conflicts).sorted { $0.index < $1.index }
    }

    // MARK: Update

    /// `accounts:update` by an admin (`localId`). Changing email or password, or setting
    /// `validSince`, revokes older tokens.
    public func updateAccount(uid: String, _ update: AccountUpdate) async throws -> Account {
        try await applyUpdate(uid: uid, update, expectedValidSince: nil).0
    }

    /// `accounts:update` by a signed-in client (`idToken`): no admin fields; email and password
    /// changes need a recent sign-in; an anonymous user that sets email and password is linked
    /// (same uid). Returns fresh tokens when older ones were revoked.
    public func updateAccount(idToken: String, _ update: AccountUpdate) async throws -> (Account, Session?) {
        let v = try tokens.verifyIDToken(idToken)
        let current = try await account(for: v)
        guard !update.isAdminOnly else { throw AuthErrorCode.adminOnlyOperation.error() }
        if update.isSensitive && !current.isAnonymous && v.authTime < clock.seconds - configuration.recentLoginSeconds {
            throw AuthErrorCode.credentialTooOld.error()
        }
        let provider = current.isAnonymous && update.password != nil && update.email != nil ? "password" : (v.signInProvider ?? "password")
        let (account, revoked) = try await applyUpdate(uid: v.uid, update, expectedValidSince: current.validSince)
        guard revoked else { return (account, nil) }
        let planned = try await commit {
            let current = try await self.store.account(uid: account.uid)
            return self.planSession(
                current ?? account, provider: provider, isNewUser: false, expecting: [.account(uid: account.uid, equals: current)])
        }
        return (account, try finish(planned))
    }

    /// Links an anonymous user to email and password, keeping its uid (`accounts:signUp` or `update` with `idToken`).
    public func linkEmailPassword(idToken: String, email: String, password: String) async throws -> Session {
        let (_, session) = try await updateAccount(idToken: idToken, AccountUpdate(email: email, password: password))
        return session!
    }

    func applyUpdate(uid: String, _ u: AccountUpdate, expectedValidSince: Int64?) async throws -> (Account, Bool) {
        let email = try u.email.map { e throws(HearthError) in try Self.normalizeEmail(e) }
        let hash = try u.password.map { p throws(HearthError) in try configuration.passwordHashing.hash(try checkPassword(p)) }
        let claims = try u.customClaims.map { c throws(HearthError) in try Self.normalizeClaims(c) }
        if let d = u.displayName, d.utf8.count > 256 { throw AuthErrorCode.invalidDisplayName.error() }
        if let p = u.photoURL, p.utf8.count > 2048 { throw AuthErrorCode.invalidPhotoURL.error() }
        let phone = try u.phoneNumber.map { p throws(HearthError) in try Self.checkPhoneNumber(p) }
        let now = clock.millis()
        return try await commit {
            guard var a = try await self.store.account(uid: uid) else { throw AuthErrorCode.userNotFound.error() }
            let read = a
            var revoke = false
            if let email, email != a.email {
                if try await self.store.account(email: email) != nil { throw AuthErrorCode.emailExists.error() }
                a.email = email
                a.emailVerified = false
                revoke = true
            }
            if let hash {
                a.passwordHash = hash
                a.passwordUpdatedAt = now
                revoke = true
            }
            if let d = u.displayName { a.displayName = d }
            if let p = u.photoURL { a.photoURL = p }
            for attr in u.deleteAttributes {
                switch attr {
                case .displayName: a.displayName = nil
                case .photoURL: a.photoURL = nil
                case .email: a.email = nil; a.emailVerified = false
                case .password: a.passwordHash = nil; a.passwordUpdatedAt = nil
                }
            }
            a.providers.removeAll { u.deleteProviders.contains($0.providerID) }
            if u.deleteProviders.contains("password") { a.passwordHash = nil }
            if u.deleteProviders.contains("phone") { a.phoneNumber = nil }
            if let phone, phone != a.phoneNumber {
                if try await self.store.account(phoneNumber: phone) != nil { throw AuthErrorCode.phoneNumberExists.error() }
                a.phoneNumber = phone
            }
            if let claims { a.customClaims = claims }
            if let d = u.disabled { a.disabled = d }
            if let v = u.emailVerified { a.emailVerified = v }
            if let v = u.validSince { a.validSince = v; revoke = true }
            if revoke && u.validSince == nil { a.validSince = now / 1000 }
            let mutations: [AuthMutation] = (revoke ? [.deleteRefreshTokens(uid: uid)] : []) + [.saveAccount(a)]
            return (AuthChangeSet(expectations: [.account(uid: uid, equals: read)], mutations: mutations), (a, revoke))
        }
    }

    // MARK: Delete

    /// `accounts:delete` by an admin.
    public func deleteAccount(uid: String) async throws {
        try await commit {
            guard let a = try await self.store.account(uid: uid) else { throw AuthErrorCode.userNotFound.error() }
            return (AuthChangeSet(expectations: [.account(uid: uid, equals: a)], mutations: [.deleteAccount(uid: uid)]), ())
        }
        accountDeletions.publish([uid])
    }

    /// `accounts:delete` by the signed-in user (needs a recent sign-in unless anonymous).
    public func deleteAccount(idToken: String) async throws {
        let v = try tokens.verifyIDToken(idToken)
        let a = try await account(for: v)
        if !a.isAnonymous && v.authTime < clock.seconds - configuration.recentLoginSeconds { throw AuthErrorCode.credentialTooOld.error() }
        try await deleteAccount(uid: v.uid)
    }

    /// `accounts:batchDelete` (≤ 1,000): missing uids are skipped; enabled accounts fail unless `force`.
    public func deleteAccounts(uids: [String], force: Bool) async throws -> [BatchItemError] {
        guard uids.count <= 1000 else { throw HearthError.invalidArgument("Too many localIds: at most 1000 per call.") }
        let (errors, deleted) = try await commit {
            var errors: [BatchItemError] = []
            var deleted: [String] = []
            var changes = AuthChangeSet()
            for (i, uid) in uids.enumerated() where !deleted.contains(uid) {
                guard let a = try await self.store.account(uid: uid) else { continue }
                if !force && !a.disabled {
                    errors.append(BatchItemError(index: i, uid: uid, message: "NOT_DISABLED : Disable the account before batch deletion."))
                    continue
                }
                changes.expectations.append(.account(uid: uid, equals: a))
                changes.mutations.append(.deleteAccount(uid: uid))
                deleted.append(uid)
            }
            return (changes, (errors, deleted))
        }
        accountDeletions.publish(deleted)
        return errors
    }

    /// Emulator: `DELETE /emulator/v1/projects/{p}/accounts`.
    public func deleteAllAccounts() async throws {
        try await store.apply(AuthChangeSet(mutations: [.deleteAllAccounts]))
    }
}
