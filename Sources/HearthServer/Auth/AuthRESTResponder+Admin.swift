import HearthCore
import HearthAuth
import Hummingbird
import Foundation

/// Admin operations: listing, queries, imports, batch deletes, session cookies.
extension AuthRESTResponder {
    func batchGet(maxResults: String?, pageToken: String?, _ request: Request) async throws -> Response {
        try await requireAdmin(request)
        var limit = 1000
        if let maxResults {
            guard let n = Int(maxResults) else { throw HearthError.invalidArgument("Invalid value at 'max_results' (TYPE_INT32), \"\(maxResults)\"") }
            limit = n
        }
        let (accounts, next) = try await engine.listAccounts(maxResults: limit, pageToken: pageToken?.isEmpty == true ? nil : pageToken)
        var m: [(String, JSON)] = [AuthJSON.kind("DownloadAccountResponse")]
        if !accounts.isEmpty { m.append(("users", .array(accounts.map { AuthJSON.userInfo($0, includeHash: true) }))) }
        if let next { m.append(("nextPageToken", .string(next))) }
        return HTTPSupport.json(.object(m))
    }

    /// `accounts:query` (`projects/{p}/accounts:query`): by email or uid expressions, else every
    /// account ordered by uid, with `offset` and `limit`.
    func query(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        try await requireAdmin(request)
        let returnUserInfo = try body.bool("returnUserInfo") ?? true
        let limit = Int(try body.int64("limit") ?? 500), offset = Int(try body.int64("offset") ?? 0)
        guard limit >= 1, limit <= 500, offset >= 0 else { throw HearthError.invalidArgument("INVALID_LIMIT") }
        _ = try body.string("sortBy"); _ = try body.string("order")
        var uids: [String] = [], emails: [String] = [], phones: [String] = []
        for (i, e) in try body.objects("expression").enumerated() {
            let x = try AuthRequestBody.nested(e, "expression[\(i)]", allowed: ["email", "userId", "phoneNumber"])
            if let v = try x.string("email") { emails.append(v) }
            if let v = try x.string("userId") { uids.append(v) }
            if let v = try x.string("phoneNumber") { phones.append(v) }
        }
        var all: [Account] = []
        let expressions = try body.objects("expression")
        if uids.isEmpty && emails.isEmpty && expressions.isEmpty {
            var token: String? = nil
            repeat {
                let page = try await engine.listAccounts(maxResults: 1000, pageToken: token)
                all += page.accounts
                token = page.nextPageToken
            } while token != nil && all.count < offset + limit
        } else {
            all = try await engine.lookup(uids: uids, emails: emails, phoneNumbers: phones)
        }
        let selected = Array(all.dropFirst(offset).prefix(limit))
        var m: [(String, JSON)] = [("recordsCount", .string(String(selected.count)))]
        if returnUserInfo { m.append(("userInfo", .array(selected.map { AuthJSON.userInfo($0, includeHash: true) }))) }
        return HTTPSupport.json(.object(m))
    }

    /// `accounts:batchCreate`: imports with SCRYPT (Firebase's), STANDARD_SCRYPT, BCRYPT,
    /// PBKDF2_SHA256 and HMAC_SHA256 hashes. Per-user failures come back in `error`.
    func batchCreate(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        try await requireAdmin(request)
        let users = try body.objects("users")
        guard users.count <= 1000 else { throw HearthError.invalidArgument("A maximum of 1000 users can be imported at once.") }
        let algorithm = try body.string("hashAlgorithm")
        let signerKey: [UInt8]? = try body.string("signerKey").map { s throws(HearthError) in
            guard let b = Base64.decode(s) else { throw AuthErrorCode.invalidHashAlgorithm.error("signerKey must be base64.") }
            return b
        }
        let separator: [UInt8] = try body.string("saltSeparator").map { s throws(HearthError) in
            guard let b = Base64.decode(s) else { throw AuthErrorCode.invalidHashAlgorithm.error("saltSeparator must be base64.") }
            return b
        } ?? []
        let rounds = Int(try body.int64("rounds") ?? 0), memoryCost = Int(try body.int64("memoryCost") ?? 0)
        let cpuMemCost = try body.int64("cpuMemCost"), parallelization = try body.int64("parallelization"), blockSize = try body.int64("blockSize")
        _ = try body.int64("dkLen")
        let order: HashInputOrder = try body.string("passwordHashOrder") == "SALT_AND_PASSWORD" ? .saltFirst : .passwordFirst
        _ = try body.bool("allowOverwrite"); _ = try body.bool("sanityCheck")
        // Validate the algorithm once, before any user.
        switch algorithm {
        case nil, "SCRYPT", "STANDARD_SCRYPT", "BCRYPT", "PBKDF2_SHA256", "HMAC_SHA256": break
        default: throw AuthErrorCode.invalidHashAlgorithm.error("Unsupported hash algorithm \(algorithm!).")
        }
        if algorithm == "SCRYPT" {
            guard signerKey != nil, rounds >= 1, rounds <= 8, memoryCost >= 1, memoryCost <= 14 else {
                throw AuthErrorCode.invalidHashAlgorithm.error("SCRYPT needs signerKey, rounds 1…8 and memoryCost 1…14.")
            }
        }
        if algorithm == "HMAC_SHA256" && signerKey == nil { throw AuthErrorCode.invalidHashAlgorithm.error("HMAC_SHA256 needs signerKey.") }
        if algorithm == "PBKDF2_SHA256" && (rounds < 1 || rounds > 120_000) {
            throw AuthErrorCode.invalidHashAlgorithm.error("PBKDF2_SHA256 needs rounds 1…120000.")
        }
        var logN = 0
        if algorithm == "STANDARD_SCRYPT" {
            guard let n = cpuMemCost, n > 1, n & (n - 1) == 0, let r = blockSize, r >= 1, let p = parallelization, p >= 1 else {
                throw AuthErrorCode.invalidHashAlgorithm.error("STANDARD_SCRYPT needs cpuMemCost (a power of two), blockSize and parallelization.")
            }
            logN = n.trailingZeroBitCount
        }
        var accounts: [NewAccount?] = []
        var errors: [BatchItemError] = []
        for (i, u) in users.enumerated() {
            do throws(HearthError) {
                let b = try AuthRequestBody.nested(u, "users[\(i)]", allowed: Self.importUserFields)
                var hash: PasswordHash? = nil
                if let hashText = try b.string("passwordHash") {
                    guard let algorithm else { throw AuthErrorCode.invalidHashAlgorithm.error("hashAlgorithm is required with passwordHash.") }
                    guard let h = Base64.decode(hashText) else { throw AuthErrorCode.invalidPasswordHash.error("passwordHash must be base64.") }
                    let salt: [UInt8] = try b.string("salt").map { s throws(HearthError) in
                        guard let v = Base64.decode(s) else { throw AuthErrorCode.invalidPasswordHash.error("salt must be base64.") }
                        return v
                    } ?? []
                    switch algorithm {
                    case "SCRYPT":
                        hash = .firebaseScrypt(
                            FirebaseScryptParameters(signerKey: signerKey!, saltSeparator: separator, rounds: rounds, memoryCost: memoryCost),
                            salt: salt, hash: h)
                    case "STANDARD_SCRYPT":
                        hash = .scrypt(logN: logN, r: Int(blockSize!), p: Int(parallelization!), salt: salt, hash: h)
                    case "BCRYPT":
                        guard let text = String(validating: h, as: UTF8.self), BCrypt.isWellFormed(text) else {
                            throw AuthErrorCode.invalidPasswordHash.error("A BCRYPT passwordHash is the base64 of a $2a$/$2b$/$2y$ hash.")
                        }
                        hash = .bcrypt(text)
                    case "PBKDF2_SHA256":
                        hash = .pbkdf2SHA256(rounds: rounds, salt: salt, hash: h)
                    default:
                        hash = .hmacSHA256(key: signerKey!, order: order, salt: salt, hash: h)
                    }
                    // Every algorithm's parameters are bounded, so no imported hash makes a sign-in cost more than ~1 s.
                    try hash?.checkCost()
                }
                var providers: [ProviderUserInfo] = []
                for (j, p) in try b.objects("providerUserInfo").enumerated() {
                    let pb = try AuthRequestBody.nested(
                        p, "users[\(i)].providerUserInfo[\(j)]",
                        allowed: ["providerId", "rawId", "email", "displayName", "photoUrl", "federatedId", "phoneNumber", "screenName"])
                    let rawID = try pb.string("rawId"), federatedID = try pb.string("federatedId")
                    guard let pid = try pb.string("providerId"), let raw = rawID ?? federatedID else {
                        throw AuthErrorCode.invalidProviderID.error()
                    }
                    if pid == "password" || pid == "phone" { continue }
                    providers.append(ProviderUserInfo(
                        providerID: pid, rawID: raw, email: try pb.string("email"), displayName: try pb.string("displayName"),
                        photoURL: try pb.string("photoUrl")))
                }
                guard let uid = try b.string("localId") else { throw AuthErrorCode.missingLocalID.error() }
                accounts.append(NewAccount(
                    uid: uid, email: try b.string("email"), emailVerified: try b.bool("emailVerified") ?? false, passwordHash: hash,
                    displayName: try b.string("displayName"), photoURL: try b.string("photoUrl"), disabled: try b.bool("disabled") ?? false,
                    customClaims: try b.string("customAttributes"), providers: providers, createdAt: try b.int64("createdAt"),
                    lastLoginAt: try b.int64("lastLoginAt"), phoneNumber: try b.string("phoneNumber")))
            } catch {
                accounts.append(nil)
                errors.append(BatchItemError(index: i, uid: nil, message: error.message))
            }
        }
        // Import the valid ones; map the engine's indexes back to the request's.
        let valid = accounts.enumerated().compactMap { i, a in a.map { (i, $0) } }
        let engineErrors = try await engine.importAccounts(valid.map(\.1))
        for e in engineErrors { errors.append(BatchItemError(index: valid[e.index].0, uid: e.uid, message: e.message)) }
        errors.sort { $0.index < $1.index }
        var m: [(String, JSON)] = [AuthJSON.kind("UploadAccountResponse")]
        if !errors.isEmpty {
            m.append(("error", .array(errors.map { .object([("index", .number($0.index)), ("message", .string($0.message))]) })))
        }
        return HTTPSupport.json(.object(m))
    }

    static let importUserFields: Set<String> = [
        "localId", "email", "emailVerified", "passwordHash", "salt", "displayName", "photoUrl", "disabled", "customAttributes",
        "providerUserInfo", "createdAt", "lastLoginAt", "phoneNumber", "mfaInfo", "tenantId", "validSince", "passwordUpdatedAt",
        "rawPassword", "customAuth", "emailLinkSignin", "lastRefreshAt",
    ]

    func batchDelete(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        try await requireAdmin(request)
        let uids = try body.strings("localIds")
        let errors = try await engine.deleteAccounts(uids: uids, force: try body.bool("force") ?? false)
        var m: [(String, JSON)] = [AuthJSON.kind("BatchDeleteAccountsResponse")]
        if !errors.isEmpty {
            m.append(("errors", .array(errors.map { e in
                var o: [(String, JSON)] = [("index", .number(e.index))]
                if let uid = e.uid { o.append(("localId", .string(uid))) }
                o.append(("message", .string(e.message)))
                return .object(o)
            })))
        }
        return HTTPSupport.json(.object(m))
    }

    func createSessionCookie(_ body: AuthRequestBody, _ request: Request) async throws -> Response {
        try await requireAdmin(request)
        guard let idToken = try body.string("idToken"), !idToken.isEmpty else { throw AuthErrorCode.invalidIDToken.error() }
        let duration = try body.int64("validDuration") ?? 1_209_600
        let cookie = try await engine.createSessionCookie(idToken: idToken, validDuration: duration)
        return HTTPSupport.json(.object([("sessionCookie", .string(cookie))]))
    }
}
