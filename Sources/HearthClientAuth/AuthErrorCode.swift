public import Foundation

/// The error domain of every error the Auth client raises (`AuthErrors.domain` in the Apple SDK).
public let AuthErrorDomain = "FIRAuthErrorDomain"

public enum AuthErrors {
    public static let domain = AuthErrorDomain
    /// `userInfo` key holding the error's name, e.g. `ERROR_EMAIL_ALREADY_IN_USE`.
    public static let userInfoNameKey = "FIRAuthErrorUserInfoNameKey"
}

/// Firebase Auth's error codes, with the Apple SDK's raw values: an error's `code` in
/// ``AuthErrorDomain``. `AuthErrorCode(rawValue: (error as NSError).code)` recovers the case.
public enum AuthErrorCode: Int, Sendable, CaseIterable {
    case invalidCustomToken = 17000
    case customTokenMismatch = 17002
    case invalidCredential = 17004
    case userDisabled = 17005
    case operationNotAllowed = 17006
    case emailAlreadyInUse = 17007
    case invalidEmail = 17008
    case wrongPassword = 17009
    case tooManyRequests = 17010
    case userNotFound = 17011
    case accountExistsWithDifferentCredential = 17012
    case requiresRecentLogin = 17014
    case providerAlreadyLinked = 17015
    case noSuchProvider = 17016
    case invalidUserToken = 17017
    case networkError = 17020
    case userTokenExpired = 17021
    case invalidAPIKey = 17023
    case userMismatch = 17024
    case credentialAlreadyInUse = 17025
    case weakPassword = 17026
    case expiredActionCode = 17029
    case invalidActionCode = 17030
    case missingEmail = 17034
    case missingPhoneNumber = 17041
    case invalidPhoneNumber = 17042
    case invalidProviderID = 17071
    case missingOrInvalidNonce = 17094
    case keychainError = 17995
    case internalError = 17999
    case malformedJWT = 18000

    /// `ERROR_…`, as the Apple SDK puts it under ``AuthErrors/userInfoNameKey``.
    public var errorName: String {
        switch self {
        case .invalidCustomToken: "ERROR_INVALID_CUSTOM_TOKEN"
        case .customTokenMismatch: "ERROR_CUSTOM_TOKEN_MISMATCH"
        case .invalidCredential: "ERROR_INVALID_CREDENTIAL"
        case .userDisabled: "ERROR_USER_DISABLED"
        case .operationNotAllowed: "ERROR_OPERATION_NOT_ALLOWED"
        case .emailAlreadyInUse: "ERROR_EMAIL_ALREADY_IN_USE"
        case .invalidEmail: "ERROR_INVALID_EMAIL"
        case .wrongPassword: "ERROR_WRONG_PASSWORD"
        case .tooManyRequests: "ERROR_TOO_MANY_REQUESTS"
        case .userNotFound: "ERROR_USER_NOT_FOUND"
        case .accountExistsWithDifferentCredential: "ERROR_ACCOUNT_EXISTS_WITH_DIFFERENT_CREDENTIAL"
        case .requiresRecentLogin: "ERROR_REQUIRES_RECENT_LOGIN"
        case .providerAlreadyLinked: "ERROR_PROVIDER_ALREADY_LINKED"
        case .noSuchProvider: "ERROR_NO_SUCH_PROVIDER"
        case .invalidUserToken: "ERROR_INVALID_USER_TOKEN"
        case .networkError: "ERROR_NETWORK_REQUEST_FAILED"
        case .userTokenExpired: "ERROR_USER_TOKEN_EXPIRED"
        case .invalidAPIKey: "ERROR_INVALID_API_KEY"
        case .userMismatch: "ERROR_USER_MISMATCH"
        case .credentialAlreadyInUse: "ERROR_CREDENTIAL_ALREADY_IN_USE"
        case .weakPassword: "ERROR_WEAK_PASSWORD"
        case .expiredActionCode: "ERROR_EXPIRED_ACTION_CODE"
        case .invalidActionCode: "ERROR_INVALID_ACTION_CODE"
        case .missingEmail: "ERROR_MISSING_EMAIL"
        case .missingPhoneNumber: "ERROR_MISSING_PHONE_NUMBER"
        case .invalidPhoneNumber: "ERROR_INVALID_PHONE_NUMBER"
        case .invalidProviderID: "ERROR_INVALID_PROVIDER_ID"
        case .missingOrInvalidNonce: "ERROR_MISSING_OR_INVALID_NONCE"
        case .keychainError: "ERROR_KEYCHAIN_ERROR"
        case .internalError: "ERROR_INTERNAL_ERROR"
        case .malformedJWT: "ERROR_MALFORMED_JWT"
        }
    }

    /// The Apple SDK's message for the code.
    public var message: String {
        switch self {
        case .invalidCustomToken: "The custom token format is incorrect. Please check the documentation."
        case .customTokenMismatch: "The custom token corresponds to a different audience."
        case .invalidCredential: "The supplied auth credential is malformed or has expired."
        case .userDisabled: "The user account has been disabled by an administrator."
        case .operationNotAllowed: "The given sign-in provider is disabled for this Firebase project. Enable it in the Firebase console, under the sign-in method tab of the Auth section."
        case .emailAlreadyInUse: "The email address is already in use by another account."
        case .invalidEmail: "The email address is badly formatted."
        case .wrongPassword: "The password is invalid or the user does not have a password."
        case .tooManyRequests: "We have blocked all requests from this device due to unusual activity. Try again later."
        case .userNotFound: "There is no user record corresponding to this identifier. The user may have been deleted."
        case .accountExistsWithDifferentCredential: "An account already exists with the same email address but different sign-in credentials. Sign in using a provider associated with this email address."
        case .requiresRecentLogin: "This operation is sensitive and requires recent authentication. Log in again before retrying this request."
        case .providerAlreadyLinked: "[ERROR_PROVIDER_ALREADY_LINKED] - User can only be linked to one identity for the given provider."
        case .noSuchProvider: "User was not linked to an account with the given provider."
        case .invalidUserToken: "This user's credential isn't valid for this project. This can happen if the user's token has been tampered with, or if the user doesn't belong to the project associated with the API key used in your request."
        case .networkError: "Network error (such as timeout, interrupted connection or unreachable host) has occurred."
        case .userTokenExpired: "The user's credential is no longer valid. The user must sign in again."
        case .invalidAPIKey: "An invalid API Key was supplied in the request."
        case .userMismatch: "The supplied credentials do not correspond to the previously signed in user."
        case .credentialAlreadyInUse: "This credential is already associated with a different user account."
        case .weakPassword: "The password must be 6 characters long or more."
        case .expiredActionCode: "The action code has expired."
        case .invalidActionCode: "The action code is invalid. This can happen if the code is malformed, expired, or has already been used."
        case .missingEmail: "An email address must be provided."
        case .missingPhoneNumber: "To send verification codes, provide a phone number for the recipient."
        case .invalidPhoneNumber: "The format of the phone number provided is incorrect. Please enter the phone number in a format that can be parsed into E.164 format. E.164 phone numbers are written in the format [+][country code][subscriber number including area code]."
        case .invalidProviderID: "The provider ID provided for the attempted web operation is invalid."
        case .missingOrInvalidNonce: "The request does not contain a valid nonce. This can occur if the SHA-256 hash of the provided raw nonce does not match the hashed nonce in the ID token payload."
        case .keychainError: "An error occurred when accessing the keychain. The NSLocalizedFailureReasonErrorKey field in the NSError.userInfo dictionary will contain more information about the error encountered"
        case .internalError: "An internal error has occurred, print and inspect the error details for more information."
        case .malformedJWT: "Failed to parse JWT. Check the underlying error for more info."
        }
    }

    /// The server's error message (`EMAIL_EXISTS`, `INVALID_PASSWORD : …`) as the Apple SDK maps it.
    static func fromServer(_ message: String) -> AuthErrorCode {
        let name = message.split(separator: ":", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? message
        switch name {
        case "EMAIL_EXISTS": return .emailAlreadyInUse
        case "INVALID_EMAIL": return .invalidEmail
        case "INVALID_PASSWORD": return .wrongPassword
        case "INVALID_LOGIN_CREDENTIALS", "INVALID_IDP_RESPONSE": return .invalidCredential
        case "EMAIL_NOT_FOUND", "USER_NOT_FOUND": return .userNotFound
        case "USER_DISABLED": return .userDisabled
        case "WEAK_PASSWORD": return .weakPassword
        case "TOO_MANY_ATTEMPTS_TRY_LATER": return .tooManyRequests
        case "OPERATION_NOT_ALLOWED", "PASSWORD_LOGIN_DISABLED", "ADMIN_ONLY_OPERATION": return .operationNotAllowed
        case "INVALID_CUSTOM_TOKEN": return .invalidCustomToken
        case "CREDENTIAL_MISMATCH": return .customTokenMismatch
        case "TOKEN_EXPIRED": return .userTokenExpired
        case "INVALID_ID_TOKEN", "INVALID_REFRESH_TOKEN", "MISSING_REFRESH_TOKEN", "INVALID_GRANT_TYPE": return .invalidUserToken
        case "CREDENTIAL_TOO_OLD_LOGIN_AGAIN": return .requiresRecentLogin
        case "FEDERATED_USER_ID_ALREADY_LINKED": return .credentialAlreadyInUse
        case "PROVIDER_ALREADY_LINKED": return .providerAlreadyLinked
        case "NO_SUCH_PROVIDER": return .noSuchProvider
        case "MISSING_OR_INVALID_NONCE": return .missingOrInvalidNonce
        case "EXPIRED_OOB_CODE": return .expiredActionCode
        case "INVALID_OOB_CODE": return .invalidActionCode
        case "MISSING_EMAIL": return .missingEmail
        case "INVALID_PHONE_NUMBER": return .invalidPhoneNumber
        case "INVALID_PROVIDER_ID": return .invalidProviderID
        case "USER_MISMATCH": return .userMismatch
        case "API_KEY_INVALID", "INVALID_API_KEY": return .invalidAPIKey
        default:
            if name.hasPrefix("API key not valid") { return .invalidAPIKey }
            return .internalError
        }
    }

    /// An `NSError` in ``AuthErrorDomain`` with this code, its message and name.
    public func error(serverMessage: String? = nil, underlying: (any Error)? = nil) -> NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message, AuthErrors.userInfoNameKey: errorName]
        if let serverMessage { info[NSLocalizedFailureReasonErrorKey] = serverMessage }
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return NSError(domain: AuthErrorDomain, code: rawValue, userInfo: info)
    }
}
