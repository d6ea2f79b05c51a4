public import HearthCore

/// `.read`, `.write` or `.validate`.
enum DatabaseRuleKind: String, Sendable {
    case read = ".read"
    case write = ".write"
    case validate = ".validate"
}

/// One rule of the tree: a constant (`true`, `"false"`) or a parsed expression.
struct DatabaseRule: Sendable {
    enum Body: Sendable {
        case constant(Bool)
        case expression(DatabaseRuleExpression)
    }

    var kind: DatabaseRuleKind
    var body: Body
    /// The rule's value in the file (the JSON string or boolean).
    var range: SourceRange
    /// The expression as written (decoded from the JSON string).
    var text: String
}

/// One node of the rules tree: its rules, its named children and at most one `$wildcard`.
final class DatabaseRuleNode: Sendable {
    /// The node's place in the rules tree, `/users/$uid`.
    let path: String
    let read: DatabaseRule?
    let write: DatabaseRule?
    let validate: DatabaseRule?
    let indexOn: [String]
    let children: [String: DatabaseRuleNode]
    let wildcard: (name: String, node: DatabaseRuleNode)?

    init(path: String, read: DatabaseRule?, write: DatabaseRule?, validate: DatabaseRule?, indexOn: [String],
         children: [String: DatabaseRuleNode], wildcard: (name: String, node: DatabaseRuleNode)?) {
        self.path = path
        self.read = read
        self.write = write
        self.validate = validate
        self.indexOn = indexOn
        self.children = children
        self.wildcard = wildcard
    }

    /// The rules for child `key`: the named child wins over the wildcard (Firebase: `$other`
    /// matches every key not named by a sibling). The capture it binds, if any.
    func child(_ key: String) -> (node: DatabaseRuleNode, capture: (String, String)?)? {
        if let named = children[key] { return (named, nil) }
        if let wildcard { return (wildcard.node, (wildcard.name, key)) }
        return nil
    }
}

/// A compiled `database.rules.json`: the Realtime Database's JSON rules language.
///
/// - `.read`/`.write` cascade down: walking from the root to the requested path, the first
///   rule that is true grants the operation, and rules below cannot take it back.
/// - `.validate` does not cascade: after a `.write` granted a write, every `.validate` on the
///   way to the written path and in the new data below it must be true, except where the new
///   data is null (deletes are not validated).
/// - A rule that fails with an error counts as false; a step budget bounds each request.
public final class DatabaseRuleset: Sendable {
    public let source: RulesSource
    /// The rules file as strict JSON (comments removed, members in file order): what
    /// `GET /.settings/rules.json?format=strict` returns.
    public let strictJSON: JSON
    let root: DatabaseRuleNode
    let limits: DatabaseRulesLimits

    private init(source: RulesSource, strictJSON: JSON, root: DatabaseRuleNode, limits: DatabaseRulesLimits) {
        self.source = source
        self.strictJSON = strictJSON
        self.root = root
        self.limits = limits
    }

    /// Compiles the text of a rules file (JSON with `//` and `/* */` comments, as Firebase
    /// allows). Every expression is parsed too; errors render `file:line:col` with a caret.
    public static func parse(_ text: String, fileName: String = "database.rules.json",
                             limits: DatabaseRulesLimits = DatabaseRulesLimits()) throws(RulesCompileError) -> DatabaseRuleset {
        let source = RulesSource(name: fileName, text: text)
        let document: DatabaseRulesJSON
        do throws(DatabaseRulesJSONReader.Failure) {
            document = try DatabaseRulesJSONReader.read(text)
        } catch {
            throw RulesCompileError(source: source, diagnostics: [error.diagnostic])
        }
        var compiler = DatabaseRulesCompiler(source: source)
        let root = compiler.compileDocument(document)
        if let root, compiler.diagnostics.isEmpty {
            return DatabaseRuleset(source: source, strictJSON: document.plain, root: root, limits: limits)
        }
        throw RulesCompileError(source: source, diagnostics: compiler.diagnostics)
    }

    /// Everyone may read and write: what the emulator does while no rules are loaded.
    public static let allowAll = try! parse("{\"rules\": {\".read\": true, \".write\": true}}\n", fileName: "<no rules loaded>")
    /// Nobody but the admin may read or write: Firebase's locked-mode default.
    public static let denyAll = try! parse("{\"rules\": {\".read\": false, \".write\": false}}\n", fileName: "<no rules loaded>")

    /// The ruleset in force while no rules are loaded: open in emulator mode (clients are
    /// allowed, as the Firebase emulator does), locked otherwise.
    public static func noRulesLoaded(emulator: Bool) -> DatabaseRuleset { emulator ? allowAll : denyAll }

    /// `file:line:col` of a range of this ruleset.
    public func location(_ range: SourceRange) -> String { source.location(range) }

    /// `/a/b` for a path (`/` for the root).
    static func display(_ path: [String]) -> String { "/" + path.joined(separator: "/") }

    // MARK: Indexes

    /// The `.indexOn` of the rules node for `path` (named children first, else the
    /// wildcard); empty when none.
    public func indexOn(path: [String]) -> [String] {
        var node = root
        for key in path {
            guard let next = node.child(key) else { return [] }
            node = next.node
        }
        return node.indexOn
    }

    /// Every `.indexOn` of the rules tree: the rules location (nil for a `$wildcard` key) and
    /// the entries it lists, in file order.
    public func indexDeclarations() -> [(location: [String?], indexOn: [String])] {
        var out: [(location: [String?], indexOn: [String])] = []
        func walk(_ node: DatabaseRuleNode, _ location: [String?]) {
            if !node.indexOn.isEmpty { out.append((location, node.indexOn)) }
            for (key, child) in node.children.sorted(by: { $0.key < $1.key }) { walk(child, location + [key]) }
            if let wildcard = node.wildcard { walk(wildcard.node, location + [nil]) }
        }
        walk(root, [])
        return out
    }

    // MARK: Reads

    /// Whether a client may read `path` (with `query`, for query rules). `now` is the server
    /// time in milliseconds since the epoch. Throws only what `root` throws.
    public func read(path: [String], auth: DatabaseRulesAuth?, root data: any DatabaseRulesData,
                     query: DatabaseRulesQuery? = nil, now: Int64) async throws -> DatabaseRulesDecision {
        let evaluation = DatabaseRulesEvaluation(ruleset: self, auth: auth, now: now, query: query, before: data, after: nil)
        let granted: (DatabaseRule, String)?
        do {
            granted = try await cascade(.read, path: path, evaluation)
        } catch DatabaseRulesFailure.budgetExceeded(let range) {
            return budgetDenial("read of \(Self.display(path))", range, evaluation)
        }
        return cascadeDecision(.read, "read of \(Self.display(path))", granted, evaluation)
    }

    // MARK: Writes

    /// Whether a client may write `path`, turning the database `root` into `newRoot` (the
    /// whole tree after the write; for a multi-path update, after the whole update, with this
    /// called once per updated path). Throws only what the data sources throw.
    public func write(path: [String], auth: DatabaseRulesAuth?, root data: any DatabaseRulesData,
                      newRoot: any DatabaseRulesData, now: Int64) async throws -> DatabaseRulesDecision {
        let evaluation = DatabaseRulesEvaluation(ruleset: self, auth: auth, now: now, query: nil, before: data, after: newRoot)
        let what = "write to \(Self.display(path))"
        do {
            let granted = try await cascade(.write, path: path, evaluation)
            guard let granted else { return cascadeDecision(.write, what, nil, evaluation) }
            if let failed = try await validate(path: path, evaluation) {
                return validationDenial(what, failed, evaluation)
            }
            return cascadeDecision(.write, what, granted, evaluation)
        } catch DatabaseRulesFailure.budgetExceeded(let range) {
            return budgetDenial(what, range, evaluation)
        }
    }

    /// Walks from the root to `path`; the first `.read`/`.write` that is true grants.
    private func cascade(_ kind: DatabaseRuleKind, path: [String], _ evaluation: DatabaseRulesEvaluation) async throws
        -> (DatabaseRule, String)?
    {
        var node: DatabaseRuleNode? = root
        var captures: [String: String] = [:]
        for depth in 0...path.count {
            guard let current = node else { return nil }
            if let rule = kind == .read ? current.read : current.write {
                let rulePath = rulePathText(current, kind)
                let result = try await evaluation.evaluate(rule, rulePath: rulePath, location: Array(path[..<depth]), captures: captures)
                if result == .allowed { return (rule, rulePath) }
            }
            guard depth < path.count, let next = current.child(path[depth]) else { return nil }
            if let capture = next.capture { captures[capture.0] = capture.1 }
            node = next.node
        }
        return nil
    }

    /// Runs every `.validate` that applies to the write: on the way from the root to `path`
    /// (ancestors see the merged data), and on every non-null node of the new data at and
    /// below `path`. Returns the first that did not pass.
    private func validate(path: [String], _ evaluation: DatabaseRulesEvaluation) async throws
        -> (DatabaseRule, String, [String], DatabaseRulesDecision.Attempt.Result)?
    {
        var node = root
        var captures: [String: String] = [:]
        for depth in 0..<path.count {
            let location = Array(path[..<depth])
            if let rule = node.validate, DatabaseRulesSnapshotValue.exists(try await evaluation.node(.after, location)) {
                let rulePath = rulePathText(node, .validate)
                let result = try await evaluation.evaluate(rule, rulePath: rulePath, location: location, captures: captures)
                if result != .allowed { return (rule, rulePath, location, result) }
            }
            guard let next = node.child(path[depth]) else { return nil }
            if let capture = next.capture { captures[capture.0] = capture.1 }
            node = next.node
        }
        guard let written = try await evaluation.node(.after, path) else { return nil }
        return try await validateSubtree(node, written, location: path, captures: captures, evaluation)
    }

    private func validateSubtree(_ node: DatabaseRuleNode, _ value: JSON, location: [String], captures: [String: String],
                                 _ evaluation: DatabaseRulesEvaluation) async throws
        -> (DatabaseRule, String, [String], DatabaseRulesDecision.Attempt.Result)?
    {
        guard DatabaseRulesSnapshotValue.exists(value) else { return nil }
        evaluation.steps += 1
        if evaluation.steps > limits.maxSteps { throw DatabaseRulesFailure.budgetExceeded(node.validate?.range ?? emptyRange) }
        if let rule = node.validate {
            let rulePath = rulePathText(node, .validate)
            let result = try await evaluation.evaluate(rule, rulePath: rulePath, location: location, captures: captures)
            if result != .allowed { return (rule, rulePath, location, result) }
        }
        guard !node.children.isEmpty || node.wildcard != nil else { return nil }
        for key in DatabaseRulesSnapshotValue.childKeys(value) {
            guard let next = node.child(key), let childValue = DatabaseRulesSnapshotValue.child(of: value, key) else { continue }
            var inner = captures
            if let capture = next.capture { inner[capture.0] = capture.1 }
            if let failed = try await validateSubtree(next.node, childValue, location: location + [key], captures: inner, evaluation) {
                return failed
            }
        }
        return nil
    }

    private var emptyRange: SourceRange {
        SourceRange(start: SourcePosition(offset: 0, line: 1, column: 1), end: SourcePosition(offset: 0, line: 1, column: 1))
    }

    private func rulePathText(_ node: DatabaseRuleNode, _ kind: DatabaseRuleKind) -> String {
        (node.path == "/" ? "/" : node.path + "/") + kind.rawValue
    }

    // MARK: Decisions

    private func cascadeDecision(_ kind: DatabaseRuleKind, _ what: String, _ granted: (DatabaseRule, String)?,
                                 _ evaluation: DatabaseRulesEvaluation) -> DatabaseRulesDecision {
        if let granted {
            let (rule, rulePath) = granted
            var reason = "\(what) allowed by \(rulePath) at \(location(rule.range))"
            let validations = evaluation.attempts.filter { $0.kind == DatabaseRuleKind.validate.rawValue }.count
            if validations > 0 { reason += " (\(validations) .validate rule\(validations == 1 ? "" : "s") passed)" }
            return DatabaseRulesDecision(outcome: .allow, rule: rule.range, location: location(rule.range), reason: reason,
                                         attempts: evaluation.attempts, steps: evaluation.steps)
        }
        let tried = evaluation.attempts.filter { $0.kind == kind.rawValue }
        var reason: String
        if tried.isEmpty {
            reason = "\(what) denied: no \(kind.rawValue) rule applies at or above this path"
        } else {
            reason = "\(what) denied: no \(kind.rawValue) rule granted it"
            for attempt in tried { reason += "; " + explain(attempt) }
        }
        let last = tried.last?.rule
        return DatabaseRulesDecision(outcome: .deny, rule: last, location: last.map(location), reason: reason,
                                     attempts: evaluation.attempts, steps: evaluation.steps)
    }

    private func validationDenial(_ what: String, _ failed: (DatabaseRule, String, [String], DatabaseRulesDecision.Attempt.Result),
                                  _ evaluation: DatabaseRulesEvaluation) -> DatabaseRulesDecision {
        let (rule, rulePath, dataPath, result) = failed
        let attempt = DatabaseRulesDecision.Attempt(kind: rule.kind.rawValue, rulePath: rulePath, dataPath: Self.display(dataPath),
                                                    rule: rule.range, result: result)
        let reason = "\(what) denied: validation failed; " + explain(attempt)
        return DatabaseRulesDecision(outcome: .validationFailed, rule: rule.range, location: location(rule.range), reason: reason,
                                     attempts: evaluation.attempts, steps: evaluation.steps)
    }

    private func budgetDenial(_ what: String, _ range: SourceRange, _ evaluation: DatabaseRulesEvaluation) -> DatabaseRulesDecision {
        DatabaseRulesDecision(
            outcome: .deny, rule: range, location: location(range),
            reason: "\(what) denied: the rules took more than \(limits.maxSteps) evaluation steps (at \(location(range)))",
            attempts: evaluation.attempts, steps: evaluation.steps)
    }

    private func explain(_ attempt: DatabaseRulesDecision.Attempt) -> String {
        let head = "\(attempt.rulePath) at \(location(attempt.rule)) for \(attempt.dataPath)"
        switch attempt.result {
        case .allowed: return "\(head) was true"
        case .denied(let at, let expression):
            return at == attempt.rule ? "\(head) was false" : "\(head) was false: `\(expression)` (\(location(at))) was false"
        case .error(let message, let at): return "\(head) failed: \(message) (\(location(at)))"
        case .notBoolean(let type): return "\(head) gave a \(type), not a boolean"
        }
    }
}
