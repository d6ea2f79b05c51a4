package import Foundation

/// The Apple SDK's error domain for the Realtime Database (`kFErrorDomain`).
public let DatabaseErrorDomain = "com.firebase"

/// Why a database operation failed, as a typed reason; ``nsError`` is the one place that turns
/// it into the Apple SDK's `NSError` (domain `com.firebase`; `permission_denied` 1,
/// `unavailable` 2, `write_canceled` 3, everything else 9999, the server's text as the description).
package enum DatabaseError: Error, Sendable, Equatable {
    /// A value the SDK cannot send (an unsupported type, an invalid key, a non-finite number).
    case invalidValue(String)
    /// The server refused: its status (`permission_denied`, `failure`, `too_big`, …) and text.
    case server(status: String, message: String?)
    /// The connection dropped while a transaction's write was in flight.
    case disconnected
    /// A transaction lost the race 25 times.
    case maxRetries
    /// A set or update at, above or below a transaction's location replaced it before the server
    /// took it (the SDKs' `set` abort).
    case overriddenBySet
    /// The server sent something the SDK cannot read; listeners end with this.
    case malformedMessage(String)

    package var status: String {
        switch self {
        case .invalidValue: "invalid_value"
        case .server(let status, _): status
        case .disconnected: "disconnected"
        case .maxRetries: "maxretry"
        case .overriddenBySet: "set"
        case .malformedMessage: "malformed_message"
        }
    }

    package var nsError: NSError {
        let description: String
        switch self {
        case .invalidValue(let message), .malformedMessage(let message): description = message
        case .server(let status, let message):
            description = message ?? ["permission_denied": "Permission Denied", "unavailable": "Service is unavailable",
                                      "write_canceled": "Write cancelled by user"][status] ?? status
        case .disconnected: description = "disconnected"
        case .maxRetries: description = "maxretry"
        case .overriddenBySet: description = "set"
        }
        let code = ["permission_denied": 1, "unavailable": 2, "write_canceled": 3][status] ?? 9999
        return NSError(domain: DatabaseErrorDomain, code: code, userInfo: [NSLocalizedDescriptionKey: description, "status": status])
    }
}
