public import HearthCore

/// A view of a whole Realtime Database tree for the rules: `root`, `data` and `newData`
/// read through it. Keys count from the root; the node comes in Firebase's export format
/// (`.priority` and `.value` members where a priority is set); nil when nothing is there.
public protocol DatabaseRulesData: Sendable {
    func node(at path: [String]) async throws -> JSON?
}

/// The `auth` variable of a request; a nil `DatabaseRulesAuth` is an unauthenticated client.
public struct DatabaseRulesAuth: Sendable {
    /// The whole `auth` object as the rules see it: `{uid, provider, token}` for a signed-in
    /// user, or whatever object an `auth_variable_override` gives.
    public var variable: JSON

    public var uid: String? { variable["uid"]?.stringValue }
    public var provider: String? { variable["provider"]?.stringValue }
    public var token: JSON { variable["token"] ?? .object([]) }

    /// A signed-in user: `auth.uid`, `auth.provider` and `auth.token` (the ID token's claims).
    public init(uid: String, provider: String, token: JSON = .object([])) {
        variable = .object([("provider", .string(provider)), ("token", token), ("uid", .string(uid))])
    }

    /// From verified ID-token claims: `uid` is `sub` (or `user_id`), `provider` is
    /// `firebase.sign_in_provider` as the Realtime Database names it (`google.com` →
    /// `google`, `password`, `anonymous`, `custom`, …).
    public init?(claims: JSON) {
        guard let uid = claims["sub"]?.stringValue ?? claims["user_id"]?.stringValue, !uid.isEmpty else { return nil }
        let signIn = claims["firebase"]?["sign_in_provider"]?.stringValue ?? "custom"
        let provider = signIn.hasSuffix(".com") ? String(signIn.dropLast(4)) : signIn
        self.init(uid: uid, provider: provider, token: claims)
    }

    /// An `auth_variable_override`: the object becomes `auth` as given (Firebase does the
    /// same); `null` is nil (unauthenticated), as in Firebase.
    public init?(authVariable: JSON) {
        guard case .object = authVariable else { return nil }
        variable = authVariable
    }
}

/// The query of a read, as `.read` rules see it through `query.*`.
public struct DatabaseRulesQuery: Sendable, Equatable {
    public enum Order: Sendable, Equatable {
        case key, value, priority
        case child(String)
    }

    public var orderBy: Order?
    /// Bounds as given by the client; nil when not given.
    public var startAt: JSON?
    public var endAt: JSON?
    public var equalTo: JSON?
    public var limitToFirst: Int?
    public var limitToLast: Int?

    public init(orderBy: Order? = nil, startAt: JSON? = nil, endAt: JSON? = nil, equalTo: JSON? = nil,
                limitToFirst: Int? = nil, limitToLast: Int? = nil) {
        self.orderBy = orderBy
        self.startAt = startAt
        self.endAt = endAt
        self.equalTo = equalTo
        self.limitToFirst = limitToFirst
        self.limitToLast = limitToLast
    }

    public var orderByKey: Bool { orderBy == .key }
    public var orderByValue: Bool { orderBy == .value }
    public var orderByPriority: Bool { orderBy == .priority }
    public var orderByChild: String? { if case .child(let path) = orderBy { return path }; return nil }
}

/// A `DatabaseRulesData` over one in-memory JSON tree (tests, tools, and callers that
/// already hold the value).
public struct DatabaseRulesTree: DatabaseRulesData {
    public var root: JSON?

    public init(_ root: JSON?) { self.root = root }

    public func node(at path: [String]) async throws -> JSON? {
        var node = root
        for key in path {
            guard let current = node else { return nil }
            node = DatabaseRulesSnapshotValue.child(of: current, key)
        }
        return node
    }
}
