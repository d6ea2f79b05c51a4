import HearthCore
import Hummingbird
import NIOCore

/// A JSON request body of one Identity Toolkit operation, read with Google's checks: the body
/// must be a JSON object of known fields, each of the expected type — otherwise a 400 with
/// Google's wording (`Invalid JSON payload received. Unknown name "x": Cannot find field.`).
struct AuthRequestBody {
    let members: [(String, JSON)]

    init(_ json: JSON, allowed: Set<String>) throws(HearthError) {
        guard let members = json.objectValue else {
            throw HearthError.invalidArgument("Invalid JSON payload received. Expected an object.")
        }
        for (k, _) in members where !allowed.contains(k) && !Self.common.contains(k) {
            throw HearthError.invalidArgument("Invalid JSON payload received. Unknown name \"\(k)\": Cannot find field.")
        }
        self.members = members
        _ = try bool("returnSecureToken")
        _ = try string("tenantId")
        _ = try string("clientType")
    }

    /// Fields every client request may carry.
    static let common: Set<String> = [
        "tenantId", "clientType", "captchaResponse", "captchaChallenge", "recaptchaVersion", "targetProjectId",
        "delegatedProjectNumber", "returnSecureToken", "instanceId",
    ]

    static func read(_ request: inout Request, allowed: Set<String>, limit: Int) async throws -> AuthRequestBody {
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(limit: limit)
        } catch {
            throw HearthError(.invalidArgument, error.googleMessage)
        }
        let bytes = buffer.readableBytesView
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }) { return try AuthRequestBody(.object([]), allowed: allowed) }
        // The parser's errors carry Google's "Invalid JSON payload received." prefix once.
        return try AuthRequestBody(try JSON.parse(bytes), allowed: allowed)
    }

    subscript(_ key: String) -> JSON? {
        guard let v = members.last(where: { $0.0 == key })?.1, !v.isNull else { return nil }
        return v
    }

    static func wrongType(_ key: String, _ type: String, _ v: JSON) -> HearthError {
        HearthError.invalidArgument("Invalid value at '\(key)' (\(type)), \(v.serialized())")
    }

    func string(_ key: String) throws(HearthError) -> String? {
        guard let v = self[key] else { return nil }
        guard let s = v.stringValue else { throw Self.wrongType(key, "TYPE_STRING", v) }
        return s
    }

    func bool(_ key: String) throws(HearthError) -> Bool? {
        guard let v = self[key] else { return nil }
        guard let b = v.boolValue else { throw Self.wrongType(key, "TYPE_BOOL", v) }
        return b
    }

    /// An int64 as a JSON number or, as proto3 JSON allows, a decimal string.
    func int64(_ key: String) throws(HearthError) -> Int64? {
        guard let v = self[key] else { return nil }
        switch v {
        case .number(let n): if let i = Int64(n) { return i }
        case .string(let s): if let i = Int64(s) { return i }
        default: break
        }
        throw Self.wrongType(key, "TYPE_INT64", v)
    }

    /// A repeated string field (a single string is accepted as a one-element list, as Google does).
    func strings(_ key: String) throws(HearthError) -> [String] {
        guard let v = self[key] else { return [] }
        if let s = v.stringValue { return [s] }
        guard let a = v.arrayValue else { throw Self.wrongType(key, "TYPE_STRING", v) }
        var out: [String] = []
        for (i, e) in a.enumerated() {
            guard let s = e.stringValue else { throw Self.wrongType("\(key)[\(i)]", "TYPE_STRING", e) }
            out.append(s)
        }
        return out
    }

    func objects(_ key: String) throws(HearthError) -> [JSON] {
        guard let v = self[key] else { return [] }
        guard let a = v.arrayValue else { throw Self.wrongType(key, "TYPE_MESSAGE", v) }
        for (i, e) in a.enumerated() where e.objectValue == nil { throw Self.wrongType("\(key)[\(i)]", "TYPE_MESSAGE", e) }
        return a
    }

    /// A nested message read with the same checks.
    static func nested(_ json: JSON, _ name: String, allowed: Set<String>) throws(HearthError) -> AuthRequestBody {
        guard let members = json.objectValue else { throw wrongType(name, "TYPE_MESSAGE", json) }
        for (k, _) in members where !allowed.contains(k) {
            throw HearthError.invalidArgument("Invalid JSON payload received. Unknown name \"\(k)\" at '\(name)': Cannot find field.")
        }
        return try AuthRequestBody(json, allowed: allowed)
    }
}

extension AuthRESTResponder {
    /// The request fields each operation knows (the Identity Toolkit schema's names).
    static let operationFields: [String: Set<String>] = [
        "signUp": [
            "email", "password", "displayName", "photoUrl", "idToken", "localId", "emailVerified", "phoneNumber", "disabled",
            "mfaInfo",
        ],
        "create": ["email", "password", "displayName", "photoUrl", "localId", "emailVerified", "phoneNumber", "disabled", "mfaInfo", "idToken"],
        "signInWithPassword": ["email", "password", "pendingIdToken", "idToken", "delegatedProjectNumber"],
        "signInWithCustomToken": ["token", "delegatedProjectNumber"],
        "signInWithEmailLink": ["email", "oobCode", "idToken"],
        "signInWithIdp": [
            "requestUri", "postBody", "returnIdpCredential", "idToken", "pendingToken", "sessionId", "autoCreate",
            "pendingIdToken", "returnRefreshToken",
        ],
        "lookup": ["idToken", "localId", "email", "phoneNumber", "federatedUserId", "initialEmail"],
        "update": [
            "idToken", "localId", "oobCode", "email", "password", "displayName", "photoUrl", "deleteAttribute", "deleteProvider",
            "customAttributes", "disableUser", "emailVerified", "validSince", "phoneNumber", "linkProviderUserInfo", "createdAt",
            "lastLoginAt", "mfa", "upgradeToFederatedLogin", "provider", "captchaChallenge",
        ],
        "delete": ["idToken", "localId"],
        "sendOobCode": [
            "requestType", "email", "idToken", "newEmail", "continueUrl", "canHandleCodeInApp", "iOSBundleId", "iOSAppStoreId",
            "androidPackageName", "androidInstallApp", "androidMinimumVersion", "dynamicLinkDomain", "linkDomain", "returnOobLink",
            "userIp", "challenge",
        ],
        "resetPassword": ["oobCode", "newPassword", "email", "oldPassword"],
        "createAuthUri": [
            "identifier", "continueUri", "providerId", "authFlowType", "context", "openidRealm", "otaApp", "oauthScope",
            "appId", "sessionId", "customParameter", "hostedDomain",
        ],
        "batchGet": ["maxResults", "nextPageToken"],
        "query": ["returnUserInfo", "limit", "offset", "expression", "sortBy", "order"],
        "batchCreate": [
            "users", "hashAlgorithm", "signerKey", "saltSeparator", "rounds", "memoryCost", "dkLen", "cpuMemCost",
            "parallelization", "blockSize", "passwordHashOrder", "allowOverwrite", "sanityCheck",
        ],
        "batchDelete": ["localIds", "force"],
        "sendVerificationCode": [
            "phoneNumber", "iosReceipt", "iosSecret", "recaptchaToken", "autoRetrievalInfo", "playIntegrityToken", "safetyNetToken",
            "recaptchaVersion",
        ],
        "signInWithPhoneNumber": ["sessionInfo", "code", "idToken", "phoneNumber", "temporaryProof", "verificationProof", "operation"],
        "createSessionCookie": ["idToken", "validDuration"],
        "projectConfig": [],
    ]
}
