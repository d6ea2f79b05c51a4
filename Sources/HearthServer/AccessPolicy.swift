public import HearthCore
import Foundation

/// Who may do what, until security rules and Hearth Auth take over: the admin credential
/// (a static token, and `owner` in emulator mode) may do everything; other callers may do
/// everything in emulator mode (no rules loaded, as the emulator) and nothing in production.
public struct AccessPolicy: Sendable {
    public var emulator: Bool
    /// The production admin token (`--admin-token` / `HEARTH_ADMIN_TOKEN`); nil disables it.
    public var adminToken: String?

    public init(emulator: Bool, adminToken: String?) {
        self.emulator = emulator
        self.adminToken = adminToken
    }

    public enum Caller: Sendable, Equatable { case admin, client }

    /// Classifies a request by its `Authorization` header.
    public func caller(authorization: String?) -> Caller {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { return .client }
        let token = authorization.dropFirst(7).trimmingCharacters(in: .whitespaces)
        if emulator && token == "owner" { return .admin }
        if let adminToken, !adminToken.isEmpty, token == adminToken { return .admin }
        return .client
    }

    /// Throws PERMISSION_DENIED unless the caller may access documents.
    public func authorizeDocuments(_ caller: Caller) throws(HearthError) {
        if caller == .admin || emulator { return }
        throw HearthError(.permissionDenied, "Missing or insufficient permissions.")
    }
}

