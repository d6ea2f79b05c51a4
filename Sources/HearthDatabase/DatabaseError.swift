/// An error of the Realtime Database engine: a typed reason (which transports map to their
/// statuses in one place) and the text Firebase answers with, safe to show to clients.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// The path names an invalid key, or is too deep.
        case invalidPath
        /// The written data breaks a key rule, a limit or the value rules.
        case invalidData
        /// A query parameter is malformed or the combination is not allowed.
        case invalidQuery
        /// Security rules (or the default) deny the request.
        case permissionDenied
        /// The credential is not valid.
        case unauthenticated
        /// The write is larger than the request's `writeSizeLimit` allows.
        case writeTooBig
        /// `if-match` named an ETag that is not the current one.
        case etagMismatch
        /// The rules text could not be parsed.
        case invalidRules
        /// The store failed or a precondition kept failing.
        case unavailable
    }

    public var reason: Reason
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ reason: Reason, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.reason = reason
        self.message = message
        self.cause = cause
    }

    public var description: String { "\(reason): \(message)" }

    public static let permissionDenied = DatabaseError(.permissionDenied, "Permission denied")
    public static let writeTooBig = DatabaseError(
        .writeTooBig, "Data to write exceeds the maximum size that can be modified with a single request.")

    package static func invalidData(_ detail: String) -> DatabaseError { DatabaseError(.invalidData, "Invalid data; \(detail)") }
    package static func invalidPath(_ detail: String) -> DatabaseError { DatabaseError(.invalidPath, "Invalid path: \(detail)") }
    package static func invalidQuery(_ message: String) -> DatabaseError { DatabaseError(.invalidQuery, message) }
}
