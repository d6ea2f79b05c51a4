import HearthCore
import PostgresNIO
import _ConnectionPoolModule

/// Why a PostgreSQL call failed, as a typed reason beside the canonical code the stores throw
/// (``HearthError/cause`` carries it). Messages name the endpoint, never the password.
public struct PostgresBackendError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// No connection could be opened or leased in time (down, refusing, unreachable).
        case unavailable
        /// The connection broke while a request was in flight: the outcome is unknown, and it
        /// is never reported as success.
        case connectionLost
        /// The database holds a schema version this binary does not know.
        case schemaTooNew(found: Int, supported: Int)
        /// A transaction kept failing with serialization failures or deadlocks.
        case contention
        /// Any other error the server reported (its SQLSTATE).
        case server(sqlState: String)
    }

    public var reason: Reason
    /// `host:port` or the socket path.
    public var endpoint: String
    /// What went wrong underneath, in words (the driver's cause, the server's message).
    public var detail: String

    public init(_ reason: Reason, endpoint: String, detail: String) {
        self.reason = reason
        self.endpoint = endpoint
        self.detail = detail
    }

    public var description: String { "\(reason) at \(endpoint): \(detail)" }

    /// SQLSTATEs after which the whole transaction may simply run again.
    static let retryableStates: Set<String> = ["40001", "40P01"]

    /// Whether `error` is a serialization failure or a deadlock (the transaction was rolled back).
    static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        return retryableStates.contains(state)
    }

    /// `error` as the stores throw it: a ``HearthError`` with the canonical code (UNAVAILABLE for
    /// a database that cannot be reached or a connection that broke, ABORTED for contention,
    /// INTERNAL otherwise) and a ``PostgresBackendError`` as its cause.
    static func hearthError(_ error: any Error, endpoint: String) -> any Error {
        switch error {
        case let error as HearthError: return error
        case is CancellationError: return error
        case let error as PostgresBackendError: return error.asHearthError
        case is ConnectionClosed:
            return PostgresBackendError(.connectionLost, endpoint: endpoint, detail: "the connection closed").asHearthError
        case is ClosedBeforeUse:
            return PostgresBackendError(.unavailable, endpoint: endpoint, detail: "every connection lent was closed").asHearthError
        case let error as ConnectionPoolError:
            return PostgresBackendError(.unavailable, endpoint: endpoint, detail: "no connection (\(error))").asHearthError
        case let error as PSQLError: return from(error, endpoint: endpoint).asHearthError
        default:
            return PostgresBackendError(.server(sqlState: ""), endpoint: endpoint, detail: "\(error)").asHearthError
        }
    }

    static func from(_ error: PSQLError, endpoint: String) -> PostgresBackendError {
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "server error"
            if retryableStates.contains(state) { return PostgresBackendError(.contention, endpoint: endpoint, detail: message) }
            // Class 08 (connection exception), 53300 (too many connections), 57P01-57P03 (shut down, crashed, starting).
            if state.hasPrefix("08") || state == "53300" || state.hasPrefix("57P") {
                return PostgresBackendError(.unavailable, endpoint: endpoint, detail: "\(message) (SQLSTATE \(state))")
            }
            return PostgresBackendError(.server(sqlState: state), endpoint: endpoint, detail: "\(message) (SQLSTATE \(state))")
        case .connectionError, .poolClosed:
            return PostgresBackendError(.unavailable, endpoint: endpoint, detail: underlyingText(error))
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .queryCancelled:
            return PostgresBackendError(.connectionLost, endpoint: endpoint, detail: underlyingText(error))
        default:
            return PostgresBackendError(.server(sqlState: ""), endpoint: endpoint, detail: underlyingText(error))
        }
    }

    /// The driver's cause in words (PSQLError's own description hides everything on purpose).
    static func underlyingText(_ error: PSQLError) -> String {
        if let message = error.serverInfo?[.message] { return message }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    var asHearthError: HearthError {
        switch reason {
        case .unavailable:
            HearthError(.unavailable, "The database at \(endpoint) is unavailable: \(detail).", cause: self)
        case .connectionLost:
            HearthError(.unavailable, "The connection to the database at \(endpoint) was lost; the request may not have been applied.", cause: self)
        case .schemaTooNew(let found, let supported):
            HearthError(
                .failedPrecondition,
                "The database at \(endpoint) has schema version \(found), newer than this binary supports (\(supported)); upgrade Hearth.",
                cause: self)
        case .contention:
            HearthError(.aborted, "Too much contention on the database; retry the request.", cause: self)
        case .server(sqlState: "22021"):
            // PostgreSQL's text holds no NUL character (U+0000), which SQLite and the protocols
            // allow: a value of the request's cannot be stored, so the request is at fault, not the
            // database (nothing was applied: the transaction rolled back).
            HearthError(.invalidArgument, "Text values cannot contain the NUL character (U+0000).", cause: self)
        case .server:
            HearthError(.internal, "The database failed a request.", cause: self)
        }
    }
}
