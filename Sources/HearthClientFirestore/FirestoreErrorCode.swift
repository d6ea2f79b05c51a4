public import Foundation

public let FirestoreErrorDomain = "FIRFirestoreErrorDomain"

/// Firestore's error codes (the gRPC status codes), as the Apple SDK's `FirestoreErrorCode`.
public enum FirestoreErrorCode: Int, Sendable, CaseIterable {
    case ok = 0, cancelled = 1, unknown = 2, invalidArgument = 3, deadlineExceeded = 4, notFound = 5, alreadyExists = 6,
        permissionDenied = 7, resourceExhausted = 8, failedPrecondition = 9, aborted = 10, outOfRange = 11,
        unimplemented = 12, `internal` = 13, unavailable = 14, dataLoss = 15, unauthenticated = 16

    public func error(_ message: String) -> NSError {
        NSError(domain: FirestoreErrorDomain, code: rawValue, userInfo: [NSLocalizedDescriptionKey: message])
    }
}
