/// Why App Check refused: a typed reason beside a message safe to show. Each transport maps
/// the reason to its own error (Google JSON on the exchange endpoints, `{"detail"}` on the
/// file API) in one place.
public struct AppCheckError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// The app id is not registered (`hearth admin app-check apps add`).
        case unknownApp
        /// An app id that is not of the form `1:<number>:<ios|android|web>:<hex>`.
        case invalidAppID
        /// The debug token is not registered for the app.
        case debugTokenRejected
        /// The custom token is malformed, not signed by a registered service account, expired,
        /// for another audience or for another app.
        case customTokenRejected
        /// The App Check token is malformed, forged, expired, or for another project or issuer.
        case invalidToken
        /// A request body or argument that is malformed.
        case invalidArgument
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason): \(message)" }
}
