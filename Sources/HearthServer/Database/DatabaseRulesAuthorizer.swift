import HearthCore
import HearthDatabase
import HearthRules

/// The Realtime Database's security step, judged by the JSON rules language (HearthRules'
/// `DatabaseRuleset`): the engine hands views of the tree before and after a write; this
/// evaluates `.read`, `.write` and `.validate` on them. The admin credential bypasses rules
/// (`auth_variable_override` makes it an ordinary user, as Firebase does).
struct DatabaseRulesAuthorizer: DatabaseAuthorizer {
    let emulator: Bool

    /// A compiled ruleset as the engine keeps it per namespace.
    struct Program: DatabaseRulesProgram {
        let ruleset: DatabaseRuleset
        let isDefault: Bool
        let indexes: Set<DatabaseIndexSpec>
        var document: JSON { ruleset.strictJSON }

        init(ruleset: DatabaseRuleset, isDefault: Bool) {
            self.ruleset = ruleset
            self.isDefault = isDefault
            var indexes = Set<DatabaseIndexSpec>()
            for (location, entries) in ruleset.indexDeclarations() {
                for entry in entries {
                    if let spec = DatabaseIndexSpec(location: location, indexOn: entry) { indexes.insert(spec) }
                }
            }
            self.indexes = indexes
        }
    }

    /// The engine's tree view as the rules' data source (both are `node(at:)` in export format).
    struct Data: DatabaseRulesData {
        let view: any DatabaseTreeView
        func node(at path: [String]) async throws -> JSON? { try await view.node(at: path) }
    }

    func compile(_ text: String) throws(DatabaseError) -> any DatabaseRulesProgram {
        do {
            return Program(ruleset: try DatabaseRuleset.parse(text, fileName: "database.rules.json"), isDefault: false)
        } catch {
            throw DatabaseError(.invalidRules, error.rendered)
        }
    }

    func defaultRules() -> any DatabaseRulesProgram {
        Program(ruleset: DatabaseRuleset.noRulesLoaded(emulator: emulator), isDefault: true)
    }

    static func rulesAuth(_ context: DatabaseAuthContext) -> DatabaseRulesAuth? {
        context.auth.flatMap { DatabaseRulesAuth(authVariable: $0) }
    }

    static func rulesQuery(_ query: DatabaseQuery?) -> DatabaseRulesQuery? {
        guard let query else { return nil }
        let order: DatabaseRulesQuery.Order
        switch query.order {
        case .key: order = .key
        case .value: order = .value
        case .priority: order = .priority
        case .child(let path): order = .child(path.keys.joined(separator: "/"))
        }
        func bound(_ b: DatabaseQuery.Bound?) -> JSON? {
            guard let b else { return nil }
            return b.map(\.json) ?? .null
        }
        return DatabaseRulesQuery(
            orderBy: order, startAt: bound(query.startAt ?? query.startAfter), endAt: bound(query.endAt ?? query.endBefore),
            equalTo: bound(query.equalTo), limitToFirst: query.limitToFirst, limitToLast: query.limitToLast)
    }

    func ruleset(_ rules: any DatabaseRulesProgram) -> DatabaseRuleset {
        (rules as? Program)?.ruleset ?? DatabaseRuleset.noRulesLoaded(emulator: false)
    }

    func authorizeRead(_ request: DatabaseReadRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
        if request.auth.isAdmin { return DatabaseAccessDecision(allowed: true, reason: "admin") }
        let decision = try await ruleset(rules).read(
            path: request.path.keys, auth: Self.rulesAuth(request.auth), root: Data(view: request.data),
            query: Self.rulesQuery(request.query), now: request.now)
        return DatabaseAccessDecision(allowed: decision.isAllowed, reason: decision.reason)
    }

    func authorizeWrite(_ request: DatabaseWriteRequest, rules: any DatabaseRulesProgram) async throws -> DatabaseAccessDecision {
        if request.auth.isAdmin { return DatabaseAccessDecision(allowed: true, reason: "admin") }
        let ruleset = ruleset(rules)
        let auth = Self.rulesAuth(request.auth)
        var reasons: [String] = []
        // A multi-path update is judged path by path against the tree after the whole update.
        for path in request.changedPaths {
            let decision = try await ruleset.write(
                path: path.keys, auth: auth, root: Data(view: request.before), newRoot: Data(view: request.after), now: request.now)
            guard decision.isAllowed else { return DatabaseAccessDecision(allowed: false, reason: decision.reason) }
            reasons.append(decision.reason)
        }
        return DatabaseAccessDecision(allowed: true, reason: reasons.joined(separator: "; "))
    }
}
