public import HearthCore

/// Firebase Authentication's error strings, each with the canonical code Hearth carries it under.
/// The transport renders `HearthError.message` as Firebase's `error.message` (for example
/// `WEAK_PASSWORD : Password should be at least 6 characters`); clients split it at the first `:`.
public enum AuthErrorCode: String, Sendable, CaseIterable {
    case emailExists = "EMAIL_EXISTS"
    case emailNotFound = "EMAIL_NOT_FOUND"
    case invalidPassword = "INVALID_PASSWORD"
    case invalidLoginCredentials = "INVALID_LOGIN_CREDENTIALS"
    case userDisabled = "USER_DISABLED"
    case userNotFound = "USER_NOT_FOUND"
    case weakPassword = "WEAK_PASSWORD"
    case missingPassword = "MISSING_PASSWORD"
    case missingEmail = "MISSING_EMAIL"
    case invalidEmail = "INVALID_EMAIL"
    case invalidIDToken = "INVALID_ID_TOKEN"
    case tokenExpired = "TOKEN_EXPIRED"
    case credentialTooOld = "CREDENTIAL_TOO_OLD_LOGIN_AGAIN"
    case invalidRefreshToken = "INVALID_REFRESH_TOKEN"
    case missingRefreshToken = "MISSING_REFRESH_TOKEN"
    case tooManyAttempts = "TOO_MANY_ATTEMPTS_TRY_LATER"
    case invalidCustomToken = "INVALID_CUSTOM_TOKEN"
    case credentialMismatch = "CREDENTIAL_MISMATCH"
    case invalidClaims = "INVALID_CLAIMS"
    case claimsTooLarge = "CLAIMS_TOO_LARGE"
    case forbiddenClaim = "FORBIDDEN_CLAIM"
    case duplicateLocalID = "DUPLICATE_LOCAL_ID"
    case duplicateEmail = "DUPLICATE_EMAIL"
    case invalidLocalID = "INVALID_LOCAL_ID"
    case missingLocalID = "MISSING_LOCAL_ID"
    case invalidOOBCode = "INVALID_OOB_CODE"
    case expiredOOBCode = "EXPIRED_OOB_CODE"
    case missingOOBCode = "MISSING_OOB_CODE"
    case invalidPageSelection = "INVALID_PAGE_SELECTION"
    case invalidHashAlgorithm = "INVALID_HASH_ALGORITHM"
    case invalidPasswordHash = "INVALID_PASSWORD_HASH"
    case invalidDisplayName = "INVALID_DISPLAY_NAME"
    case invalidPhotoURL = "INVALID_PHOTO_URL"
    case operationNotAllowed = "OPERATION_NOT_ALLOWED"
    case adminOnlyOperation = "ADMIN_ONLY_OPERATION"
    case missingRequestType = "MISSING_REQ_TYPE"
    case invalidRequestType = "INVALID_REQ_TYPE"
    case invalidSessionCookieDuration = "INVALID_SESSION_COOKIE_DURATION"
    case configurationNotFound = "CONFIGURATION_NOT_FOUND"
    case insufficientPermission = "INSUFFICIENT_PERMISSION"
    case invalidIDPResponse = "INVALID_IDP_RESPONSE"
    case federatedUserIDAlreadyLinked = "FEDERATED_USER_ID_ALREADY_LINKED"
    case invalidProviderID = "INVALID_PROVIDER_ID"
    case missingIdentifier = "MISSING_IDENTIFIER"
    case invalidIdentifier = "INVALID_IDENTIFIER"
    case invalidGrantType = "INVALID_GRANT_TYPE"
    case missingGrantType = "MISSING_GRANT_TYPE"
    case invalidContinueURI = "INVALID_CONTINUE_URI"
    case missingContinueURI = "MISSING_CONTINUE_URI"
    case missingOrInvalidNonce = "MISSING_OR_INVALID_NONCE"
    case invalidHostingLinkDomain = "INVALID_HOSTING_LINK_DOMAIN"
    case phoneNumberExists = "PHONE_NUMBER_EXISTS"
    case invalidPhoneNumber = "INVALID_PHONE_NUMBER"
    case missingPhoneNumber = "MISSING_PHONE_NUMBER"
    case missingSessionInfo = "MISSING_SESSION_INFO"
    case invalidSessionInfo = "INVALID_SESSION_INFO"
    case missingCode = "MISSING_CODE"
    case invalidCode = "INVALID_CODE"
    case sessionExpired = "SESSION_EXPIRED"
    case invalidConfig = "INVALID_CONFIG"
    case invalidOAuthClientID = "INVALID_OAUTH_CLIENT_ID"

    /// The canonical code this error travels under inside Hearth.
    public var canonical: ErrorCode {
        switch self {
        case .emailExists, .duplicateLocalID, .duplicateEmail, .phoneNumberExists: .alreadyExists
        case .emailNotFound, .userNotFound, .configurationNotFound: .notFound
        case .invalidPassword, .invalidLoginCredentials, .invalidIDToken, .tokenExpired, .credentialTooOld, .invalidIDPResponse,
            .invalidRefreshToken, .invalidCustomToken, .credentialMismatch, .missingOrInvalidNonce, .invalidCode, .sessionExpired:
            .unauthenticated
        case .userDisabled, .adminOnlyOperation, .operationNotAllowed, .insufficientPermission: .permissionDenied
        case .tooManyAttempts: .resourceExhausted
        default: .invalidArgument
        }
    }

    /// The detail Firebase appends after ` : `, where it has a fixed one.
    public var defaultDetail: String? {
        switch self {
        case .weakPassword: "Password should be at least 6 characters"
        case .invalidHostingLinkDomain:
            "The provided hosting link domain is not configured in Firebase Hosting or is not owned by the current project. "
                + "This cannot be a default hosting domain (web.app or firebaseapp.com)."
        case .invalidPhoneNumber: "Invalid format."
        default: nil
        }
    }

    /// This error as a value: the code as its typed reason, and as the message's head with
    /// `detail` appended as Firebase's wire text has it (`CODE : detail`).
    public func error(_ detail: String? = nil) -> HearthError {
        let detail = detail ?? defaultDetail
        return HearthError(canonical, detail.map { "\(rawValue) : \($0)" } ?? rawValue, reason: reason)
    }

    /// This code as a typed error reason.
    public var reason: HearthError.Reason { HearthError.Reason(rawValue) }
}

extension HearthError {
    /// The Firebase Auth error code this error carries as its typed reason, if any.
    public var authErrorCode: AuthErrorCode? {
        reason.flatMap { AuthErrorCode(rawValue: $0.rawValue) }
    }
}
