public import HearthCore

/// Who is asking, as security rules see it.
public struct DatabaseAuthContext: Sendable {
    /// The admin credential without an `auth_variable_override`: rules do not apply.
    public var isAdmin: Bool
    /// The rules' `auth` variable (`uid`, `provider`, `token`), nil when unauthenticated.
    public var auth: JSON?

    public init(isAdmin: Bool, auth: JSON?) {
        self.isAdmin = isAdmin
        self.auth = auth
    }

    public static let admin = DatabaseAuthContext(isAdmin: true, auth: nil)
    public static let unauthenticated = DatabaseAuthContext(isAdmin: false, auth: nil)
}

/// A read-only view of a namespace's tree for rules: the node at a path in Firebase's
/// export format (`.priority`/`.value` where a priority is set), nil when missing.
public protocol DatabaseTreeView: Sendable {
    func node(at path: [String]) async throws -> JSON?
}

public struct DatabaseReadRequest: Sendable {
    public var namespace: String
    public var path: DatabasePath
    public var query: DatabaseQuery?
    public var auth: DatabaseAuthContext
    /// The tree as it is.
    public var data: any DatabaseTreeView
    /// Server time, milliseconds since the epoch (`now`).
    public var now: Int64
}

public struct DatabaseWriteRequest: Sendable {
    public var namespace: String
    /// Where the write is addressed (a `PATCH`'s base).
    public var path: DatabasePath
    /// The locations the write replaces (one for a set, one per entry of an update).
    public var changedPaths: [DatabasePath]
    public var auth: DatabaseAuthContext
    /// The tree before the write and as the write would leave it.
    public var before: any DatabaseTreeView
    public var after: any DatabaseTreeView
    public var now: Int64
}

/// An authorizer's answer, with the reason (shown in emulator mode, logged otherwise).
public struct DatabaseAccessDecision: Sendable {
    public var allowed: Bool
    public var reason: String

    public init(allowed: Bool, reason: String) {
        self.allowed = allowed
        self.reason = reason
    }
}

/// Rules an authorizer compiled from a namespace's rules text; the engine keeps them per
/// namespace and hands them back with every request.
public protocol DatabaseRulesProgram: Sendable {
    /// The rules as `GET /.settings/rules.json` returns them (`{"rules": {…}}`).
    var document: JSON { get }
    /// The indexes the rules' `.indexOn` declare (stores keep and use them).
    var indexes: Set<DatabaseIndexSpec> { get }
}

extension DatabaseRulesProgram {
    public var indexes: Set<DatabaseIndexSpec> { [] }
}

/// The security step of every read and write: the engine asks it with views of the tree
/// before (and after) the write, inside the write path, before anything is stored.
public protocol DatabaseAuthorizer: Sendable {
    /// Parses and checks rules text (`PUT /.settings/rules.json`, the rules file).
    func compile(_ text: String) throws(DatabaseError) -> any DatabaseRulesProgram
    /// The rules in force when none were set.
    func defaultRules() -> any DatabaseRulesProgram
    func authorizeRead(_ request: DatabaseReadRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision
    func authorizeWrite(_ request: DatabaseWriteRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision
}

/// Rules kept as their JSON document, unevaluated.
public struct StoredDatabaseRules: DatabaseRulesProgram {
    public var document: JSON
    /// Whether these are the built-in defaults (no rules were set).
    public var isDefault: Bool

    /// The `.indexOn` entries of the document (`$name` keys are wildcards).
    public var indexes: Set<DatabaseIndexSpec> {
        var out = Set<DatabaseIndexSpec>()
        func walk(_ node: JSON, _ location: [String?]) {
            guard let members = node.objectValue else { return }
            for (key, value) in members {
                if key == ".indexOn" {
                    let entries = value.arrayValue?.compactMap(\.stringValue) ?? value.stringValue.map { [$0] } ?? []
                    for entry in entries {
                        if let spec = DatabaseIndexSpec(location: location, indexOn: entry) { out.insert(spec) }
                    }
                } else if !key.hasPrefix(".") {
                    walk(value, location + [key.hasPrefix("$") ? nil : key])
                }
            }
        }
        walk(document["rules"] ?? .null, [])
        return out
    }

    /// Checks that `text` is a JSON object with a `rules` object.
    public init(text: String) throws(DatabaseError) {
        let json: JSON
        do { json = try JSON.parse(text) } catch {
            throw DatabaseError(.invalidRules, "Parse error: \(error.message)")
        }
        guard json["rules"]?.objectValue != nil else {
            throw DatabaseError(.invalidRules, "Error: the rules must be a JSON object with a \"rules\" object.")
        }
        document = json
        isDefault = false
    }

    public init(default open: Bool) {
        document = .object([("rules", .object([(".read", .bool(open)), (".write", .bool(open))]))])
        isDefault = true
    }
}

/// The authorizer until a rules evaluator is connected: the admin may do everything;
/// without rules the emulator allows everything and production nothing (Firebase's locked
/// defaults); once rules are set, everyone but the admin is refused (fail closed), because
/// nothing here evaluates them. A rules engine replaces this with an adapter that
/// evaluates ``StoredDatabaseRules/document``.
public struct DefaultDatabaseAuthorizer: DatabaseAuthorizer {
    public var emulator: Bool

    public init(emulator: Bool) { self.emulator = emulator }

    public func compile(_ text: String) throws(DatabaseError) -> any DatabaseRulesProgram {
        try StoredDatabaseRules(text: text)
    }

    public func defaultRules() -> any DatabaseRulesProgram { StoredDatabaseRules(default: emulator) }

    func decide(_ auth: DatabaseAuthContext, _ rules: any DatabaseRulesProgram) -> DatabaseAccessDecision {
        if auth.isAdmin { return DatabaseAccessDecision(allowed: true, reason: "admin") }
        if let stored = rules as? StoredDatabaseRules, stored.isDefault {
            return DatabaseAccessDecision(allowed: emulator, reason: emulator ? "no rules loaded (emulator default)" : "no rules loaded")
        }
        return DatabaseAccessDecision(allowed: false, reason: "rules are loaded but no rules evaluator is connected")
    }

    public func authorizeRead(_ request: DatabaseReadRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
        decide(request.auth, rules)
    }

    public func authorizeWrite(_ request: DatabaseWriteRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
        decide(request.auth, rules)
    }
}
