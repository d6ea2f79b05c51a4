public import HearthCore
public import HearthRules

/// One request to try against a ruleset in a test: what is done, where, by whom, with what.
///
/// Paths are written as in the client SDKs: a document (`/users/alice`), a collection for
/// `list` (`/users`), or a Storage object name (`users/alice/cat.png`); a leading `/` is
/// optional.
public struct RulesTestRequest: Sendable, CustomStringConvertible {
    /// The rules methods plus two shorthands: `read` is a `get`; `write` is a `create` when the
    /// document (or object) does not exist, an `update` when it does, a `delete` without data.
    public enum Method: String, Sendable, CaseIterable {
        case get, list, create, update, delete, read, write
    }

    public var method: Method
    public var path: String
    /// `request.auth`; nil for a signed-out client.
    public var auth: RulesAuth?
    /// Firestore writes: the complete document as it would be after the write
    /// (`request.resource.data`; for an update, the stored document merged with the change).
    public var data: [String: Value]?
    /// Firestore `list`: the query's filters, order, limit.
    public var query: RulesQuery?
    /// Firestore `list` over a collection group named this, under `path` (often `/`).
    public var collectionGroup: String?
    /// Storage: the uploaded object (`request.resource`: size, contentType, metadata).
    public var object: RulesStorageObject?
    /// Storage: the stored object (`resource`); nil when it does not exist.
    public var existingObject: RulesStorageObject?
    /// `request.time`; the test bed's time when nil.
    public var time: Timestamp?

    public init(_ method: Method, _ path: String, auth: RulesAuth? = nil, data: [String: Value]? = nil,
                query: RulesQuery? = nil, collectionGroup: String? = nil, object: RulesStorageObject? = nil,
                existingObject: RulesStorageObject? = nil, time: Timestamp? = nil) {
        self.method = method
        self.path = path
        self.auth = auth
        self.data = data
        self.query = query
        self.collectionGroup = collectionGroup
        self.object = object
        self.existingObject = existingObject
        self.time = time
    }

    /// `get /users/alice as alice`.
    public var description: String {
        let who = auth.map { "as \($0.uid)" } ?? "signed out"
        let group = collectionGroup.map { " (collection group \($0))" } ?? ""
        return "\(method.rawValue) /\(Self.trimmed(path))\(group) \(who)"
    }

    static func trimmed(_ path: String) -> String {
        var p = Substring(path)
        while p.hasPrefix("/") { p = p.dropFirst() }
        while p.hasSuffix("/") && p.count > 0 { p = p.dropLast() }
        return String(p)
    }

    /// The claims of an emulator-style ID token for `uid` (what `@firebase/rules-unit-testing`'s
    /// `authenticatedContext` sends), with `claims` added or replacing them.
    public static func auth(_ uid: String, claims: [String: Value] = [:]) -> RulesAuth {
        var token: [String: Value] = [
            "sub": .string(uid), "user_id": .string(uid),
            "firebase": .map(["sign_in_provider": .string("custom"), "identities": .map([:])]),
        ]
        for (k, v) in claims { token[k] = v }
        return RulesAuth(uid: uid, token: token)
    }
}
