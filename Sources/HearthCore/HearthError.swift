/// The canonical error codes shared by every Hearth engine (the gRPC status codes,
/// as Firestore's own error enum uses them). Transports render them in their own format.
public enum ErrorCode: Int, Sendable, CaseIterable {
    case ok = 0
    case cancelled = 1
    case unknown = 2
    case invalidArgument = 3
    case deadlineExceeded = 4
    case notFound = 5
    case alreadyExists = 6
    case permissionDenied = 7
    case resourceExhausted = 8
    case failedPrecondition = 9
    case aborted = 10
    case outOfRange = 11
    case unimplemented = 12
    case `internal` = 13
    case unavailable = 14
    case dataLoss = 15
    case unauthenticated = 16

    /// The status name Google's REST error bodies carry (`"status": "INVALID_ARGUMENT"`).
    public var statusName: String {
        switch self {
        case .ok: "OK"
        case .cancelled: "CANCELLED"
        case .unknown: "UNKNOWN"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .deadlineExceeded: "DEADLINE_EXCEEDED"
        case .notFound: "NOT_FOUND"
        case .alreadyExists: "ALREADY_EXISTS"
        case .permissionDenied: "PERMISSION_DENIED"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .failedPrecondition: "FAILED_PRECONDITION"
        case .aborted: "ABORTED"
        case .outOfRange: "OUT_OF_RANGE"
        case .unimplemented: "UNIMPLEMENTED"
        case .internal: "INTERNAL"
        case .unavailable: "UNAVAILABLE"
        case .dataLoss: "DATA_LOSS"
        case .unauthenticated: "UNAUTHENTICATED"
        }
    }

    /// The HTTP status Google's JSON APIs use for each canonical code.
    public var httpStatus: Int {
        switch self {
        case .ok: 200
        case .cancelled: 499
        case .unknown, .internal, .dataLoss: 500
        case .invalidArgument, .failedPrecondition, .outOfRange: 400
        case .deadlineExceeded: 504
        case .notFound: 404
        case .alreadyExists, .aborted: 409
        case .permissionDenied: 403
        case .resourceExhausted: 429
        case .unimplemented: 501
        case .unavailable: 503
        case .unauthenticated: 401
        }
    }
}

/// An error as a value: a canonical code, a message that is safe to show to clients, an
/// optional typed reason, and an optional underlying cause that is logged but never sent.
public struct HearthError: Error, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    /// The protocol's own name for this error beside the canonical code (Firebase Auth's
    /// `EMAIL_EXISTS`, S3's `PreconditionFailed`, OAuth2's `invalid_grant`, …), so a transport
    /// renders it without parsing it back out of `message`. Nil when the code says it all.
    public var reason: Reason?
    public var cause: (any Error & Sendable)?

    public init(_ code: ErrorCode, _ message: String, reason: Reason? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.reason = reason
        self.cause = cause
    }

    /// A typed error reason; each module declares its own as static members
    /// (`extension HearthError.Reason { static let … }`).
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
    }

    public var description: String { "\(code.statusName): \(message)" }

    public static func invalidArgument(_ message: String) -> HearthError { HearthError(.invalidArgument, message) }
    public static func notFound(_ message: String) -> HearthError { HearthError(.notFound, message) }
    public static func failedPrecondition(_ message: String) -> HearthError { HearthError(.failedPrecondition, message) }
}
