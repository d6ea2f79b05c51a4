import Foundation

public let StorageErrorDomain = "FIRStorageErrorDomain"

/// Cloud Storage for Firebase's client error codes, with the Apple SDK's raw values: an error's
/// `code` in ``StorageErrorDomain``.
public enum StorageErrorCode: Int, Sendable, CaseIterable {
    case unknown = -13000
    case objectNotFound = -13010
    case bucketNotFound = -13011
    case projectNotFound = -13012
    case quotaExceeded = -13013
    case unauthenticated = -13020
    case unauthorized = -13021
    case retryLimitExceeded = -13030
    case nonMatchingChecksum = -13031
    case downloadSizeExceeded = -13032
    case cancelled = -13040
    case invalidArgument = -13050

    func error(_ message: String, serverMessage: String? = nil, underlying: (any Error)? = nil) -> NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let serverMessage { info["ResponseBody"] = serverMessage }
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return NSError(domain: StorageErrorDomain, code: rawValue, userInfo: info)
    }

    /// The error for an HTTP answer about `ref`, as the Apple SDK words it.
    static func from(status: Int, body: String, bucket: String, path: String) -> NSError {
        switch status {
        case 401: unauthenticated.error("User is not authenticated, please authenticate using Firebase Authentication and try again.", serverMessage: body)
        case 403: unauthorized.error("User does not have permission to access gs://\(bucket)/\(path).", serverMessage: body)
        case 404: objectNotFound.error("Object \(path) does not exist.", serverMessage: body)
        case 409: unknown.error("An unknown error occurred, please check the server response.", serverMessage: body)
        case 412: nonMatchingChecksum.error("Uploaded/downloaded object \(path) has checksum which does not match server. Please retry the upload/download.", serverMessage: body)
        case 429: quotaExceeded.error("Quota for bucket \(bucket) exceeded, please view quota on www.firebase.google.com/storage.", serverMessage: body)
        case 400: invalidArgument.error("The request was rejected: \(body)", serverMessage: body)
        default: unknown.error("An unknown error occurred, please check the server response.", serverMessage: body)
        }
    }
}
