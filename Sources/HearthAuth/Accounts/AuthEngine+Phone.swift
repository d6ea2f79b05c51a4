public import HearthCore
import Foundation

extension AuthEngine {
    /// How long a code sent by `accounts:sendVerificationCode` may be used (Firebase: minutes).
    static let phoneCodeLifetimeMillis: Int64 = 10 * 60 * 1000
    /// Wrong codes allowed for one session before it is spent.
    static let phoneCodeAttempts = 5
    /// Codes one number may be sent per attempt window (Firebase rate-limits SMS per number too).
    static let phoneCodesPerNumber = 10

    /// A phone number in E.164 as Firebase takes it: `+`, a country code not starting with 0,
    /// at most 15 digits in all. INVALID_PHONE_NUMBER otherwise.
    public static func checkPhoneNumber(_ number: String) throws(HearthError) -> String {
        let digits = number.utf8.dropFirst()
        guard number.utf8.first == UInt8(ascii: "+"), digits.count >= 2, digits.count <= 15, digits.first != UInt8(ascii: "0"),
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw AuthErrorCode.invalidPhoneNumber.error("Invalid format.") }
        return number
    }

    /// The account with this phone number, if any (admin lookups).
    public func account(phoneNumber: String) async throws -> Account? {
        let number = try Self.checkPhoneNumber(phoneNumber)
        return try await store.account(phoneNumber: number)
    }

    /// `accounts:sendVerificationCode`: stores a six-digit code for `phoneNumber` and returns it
    /// with its `sessionInfo` (delivery — outbox, emulator listing — is the caller's). At most
    /// ``phoneCodesPerNumber`` per number in the attempt window (TOO_MANY_ATTEMPTS_TRY_LATER).
    public func createPhoneCode(phoneNumber: String) async throws -> PhoneVerificationCode {
        guard !phoneNumber.isEmpty else { throw AuthErrorCode.missingPhoneNumber.error() }
        let number = try Self.checkPhoneNumber(phoneNumber)
        let now = clock.millis()
        let sendKey = "phone-send:" + number
        guard try await !accountFailures.isBlocked(sendKey, now: now, limit: Self.phoneCodesPerNumber) else {
            throw AuthErrorCode.tooManyAttempts.error()
        }
        try await accountFailures.record(sendKey, now: now)
        var rng = SystemRandomNumberGenerator()
        let code = PhoneVerificationCode(
            sessionInfo: Self.randomString(64, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            phoneNumber: number, code: String(format: "%06d", Int.random(in: 0..<1_000_000, using: &rng)), createdAt: now,
            expiresAt: now + Self.phoneCodeLifetimeMillis)
        try await store.apply(AuthChangeSet(mutations: [.deletePhoneCodes(expiringBefore: now), .insertPhoneCode(code)]))
        return code
    }

    /// Emulator: `GET /emulator/v1/projects/{p}/verificationCodes`.
    public func phoneCodes() async throws -> [PhoneVerificationCode] { try await store.phoneCodes() }

    /// `accounts:signInWithPhoneNumber` with `sessionInfo` and `code`: signs in the account with
    /// this number, creating it on first use; with `idToken`, adds the number to that account
    /// (PHONE_NUMBER_EXISTS when another account has it). The session is spent on success, and
    /// after ``phoneCodeAttempts`` wrong codes.
    public func signInWithPhoneNumber(sessionInfo: String, code: String, linkTo idToken: String? = nil) async throws -> Session {
        guard !sessionInfo.isEmpty else { throw AuthErrorCode.missingSessionInfo.error() }
        guard !code.isEmpty else { throw AuthErrorCode.missingCode.error() }
        var linkUID: String? = nil
        if let idToken { linkUID = try await account(idToken: idToken).uid }
        let now = clock.millis()
        let attemptKey = "phone-session:" + sessionInfo
        guard try await !accountFailures.isBlocked(attemptKey, now: now, limit: Self.phoneCodeAttempts) else {
            throw AuthErrorCode.invalidSessionInfo.error()
        }
        let target = linkUID
        // The session is consumed by the change set that signs in (it expects the session and
        // deletes it): of concurrent sign-ins with one session, exactly one wins; the others'
        // next plan finds no session (INVALID_SESSION_INFO).
        let outcome: Result<PlannedSession, HearthError> = try await commit {
            guard let stored = try await self.store.phoneCode(sessionInfo: sessionInfo) else {
                return (AuthChangeSet(), .failure(AuthErrorCode.invalidSessionInfo.error()))
            }
            let consume = AuthChangeSet(expectations: [.phoneCode(sessionInfo: sessionInfo)], mutations: [.deletePhoneCode(sessionInfo: sessionInfo)])
            guard stored.expiresAt > now else { return (consume, .failure(AuthErrorCode.sessionExpired.error())) }
            guard PasswordHash.constantTimeEqual(Array(stored.code.utf8), Array(code.utf8)) else {
                return (AuthChangeSet(), .failure(AuthErrorCode.invalidCode.error()))
            }
            let owner = try await self.store.account(phoneNumber: stored.phoneNumber)
            if let target {
                guard var account = try await self.store.account(uid: target) else { throw AuthErrorCode.userNotFound.error() }
                if let owner, owner.uid != target { throw AuthErrorCode.phoneNumberExists.error() }
                guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
                let read = account
                account.phoneNumber = stored.phoneNumber
                account.lastLoginAt = now
                let (changes, planned) = self.planSession(
                    account, provider: "phone", isNewUser: false, expecting: consume.expectations + [.account(uid: target, equals: read)],
                    also: consume.mutations)
                return (changes, .success(planned))
            }
            if var account = owner {
                guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
                account.lastLoginAt = now
                let (changes, planned) = self.planSession(
                    account, provider: "phone", isNewUser: false, expecting: consume.expectations + [.account(uid: account.uid, equals: owner)],
                    also: consume.mutations)
                return (changes, .success(planned))
            }
            let account = Account(uid: Self.newUID(), createdAt: now, lastLoginAt: now, validSince: now / 1000, phoneNumber: stored.phoneNumber)
            let (changes, planned) = self.planSession(
                account, provider: "phone", isNewUser: true, expecting: consume.expectations + [.account(uid: account.uid, equals: nil)],
                also: consume.mutations)
            return (changes, .success(planned))
        }
        switch outcome {
        case .success(let planned):
            try await accountFailures.reset(attemptKey)
            return try finish(planned)
        case .failure(let error):
            if error.authErrorCode == .invalidCode { try await accountFailures.record(attemptKey, now: now) }
            throw error
        }
    }
}
