public import HearthCore

/// What App Check keeps: registered apps, their debug tokens (as SHA-256 digests, never the
/// secret itself) and the ids of consumed limited-use tokens until they expire.
public protocol AppCheckStore: Sendable {
    /// Registers an app; registering it again changes nothing.
    func addApp(_ appID: String, at time: Timestamp) async throws
    /// Removes an app and its debug tokens; false if it was not registered.
    func removeApp(_ appID: String) async throws -> Bool
    func isRegistered(_ appID: String) async throws -> Bool
    func apps() async throws -> [(appID: String, created: Timestamp)]

    func addDebugToken(appID: String, digest: [UInt8], name: String, at time: Timestamp) async throws
    /// Whether a debug token with this digest is registered for the app.
    func hasDebugToken(appID: String, digest: [UInt8]) async throws -> Bool
    func debugTokens(appID: String) async throws -> [(name: String, digestPrefix: String, created: Timestamp)]
    /// Removes the app's debug tokens with this name; how many were removed.
    func removeDebugTokens(appID: String, name: String) async throws -> Int

    /// Records a limited-use token id as consumed until `expires` (seconds since the epoch).
    /// Returns true if it had already been consumed. Forgets ids whose tokens expired before `now`.
    func consume(tokenID: String, expires: Int64, now: Int64) async throws -> Bool
}
