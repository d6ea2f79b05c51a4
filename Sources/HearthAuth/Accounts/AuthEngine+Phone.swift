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
        return try await store.read { r in try r.account(phoneNumber: number) }
    }

    /// `accounts:sendVerificationCode`: stores a six-digit code for `phoneNumber` and returns it
    /// with its `sessionInfo` (delivery — outbox, emulator listing — is the caller's). At most
    /// ``phoneCodesPerNumber`` per number in the attempt window (TOO_MANY_ATTEMPTS_TRY_LATER).
    public func createPhoneCode(phoneNumber: String) async throws -> PhoneVerificationCode {
        guard !phoneNumber.isEmpty else { throw AuthErrorCode.missingPhoneNumber.error() }
        let number = try Self.checkPhoneNumber(phoneNumber)
        let now = clock.millis()
        let sendKey = "phone-send:" + number
        guard !accountFailures.isBlocked(sendKey, now: now, limit: Self.phoneCodesPerNumber) else {
            throw AuthErrorCode.tooManyAttempts.error()
        }
        accountFailures.record(sendKey, now: now)
        var rng = SystemRandomNumberGenerator()
        let code = PhoneVerificationCode(
            sessionInfo: Self.randomString(64, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            phoneNumber: number, code: String(format: "%06d", Int.random(in: 0..<1_000_000, using: &rng)), createdAt: now,
            expiresAt: now + Self.phoneCodeLifetimeMillis)
        return try await store.write { w in
            try w.deletePhoneCodes(expiringBefore: now)
            try w.insertPhoneCode(code)
            return code
        }
    }

    /// Emulator: `GET /emulator/v1/projects/{p}/verificationCodes`.
    public func phoneCodes() async throws -> [PhoneVerificationCode] { try await store.read { r in try r.phoneCodes() } }

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
        guard !accountFailures.isBlocked(attemptKey, now: now, limit: Self.phoneCodeAttempts) else {
            throw AuthErrorCode.invalidSessionInfo.error()
        }
        let target = linkUID
        let outcome: Result<Session, HearthError> = try await store.write { w in
            guard let stored = try w.phoneCode(sessionInfo: sessionInfo) else { return .failure(AuthErrorCode.invalidSessionInfo.error()) }
            guard stored.expiresAt > now else {
                try w.deletePhoneCode(sessionInfo: sessionInfo)
                return .failure(AuthErrorCode.sessionExpired.error())
            }
            guard PasswordHash.constantTimeEqual(Array(stored.code.utf8), Array(code.utf8)) else {
                return .failure(AuthErrorCode.invalidCode.error())
            }
            try w.deletePhoneCode(sessionInfo: sessionInfo)
            let owner = try w.account(phoneNumber: stored.phoneNumber)
            if let target {
                guard var account = try w.account(uid: target) else { throw AuthErrorCode.userNotFound.error() }
                if let owner, owner.uid != target { throw AuthErrorCode.phoneNumberExists.error() }
                guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
                account.phoneNumber = stored.phoneNumber
                account.lastLoginAt = now
                try w.save(account)
                return .success(try self.startSession(account, provider: "phone", isNewUser: false, in: w))
            }
            if var account = owner {
                guard !account.disabled else { throw AuthErrorCode.userDisabled.error() }
                account.lastLoginAt = now
                try w.save(account)
                return .success(try self.startSession(account, provider: "phone", isNewUser: false, in: w))
            }
            let account = Account(
                uid: Self.newUID(), createdAt: now, lastLoginAt: now, validSince: now / 1000, phoneNumber: stored.phoneNumber)
            try w.save(account)
            return .success(try self.startSession(account, provider: "phone", isNewUser: true, in: w))
        }
        switch outcome {
        case .success(let session):
            accountFailures.reset(attemptKey)
            return session
        case .failure(let error):
            if error.authErrorCode == .invalidCode { accountFailures.record(attemptKey, now: now) }
            throw error
        }
    }
}
