/// Turns the JSON of a rules file into the rules tree, parsing every expression and
/// collecting every problem as a diagnostic (so one compile reports them all).
struct DatabaseRulesCompiler {
    let source: RulesSource
    var diagnostics: [Diagnostic] = []

    init(source: RulesSource) { self.source = source }

    private mutating func error(_ message: String, at range: SourceRange) {
        diagnostics.append(Diagnostic(.error, message, at: range))
    }

    mutating func compileDocument(_ document: DatabaseRulesJSON) -> DatabaseRuleNode? {
        guard case .object(let members) = document.kind else {
            error("the rules file must be a JSON object with a \"rules\" key, found \(document.typeName)", at: document.range)
            return nil
        }
        var rules: DatabaseRulesJSON?
        for member in members {
            if member.key == "rules" {
                if rules != nil { error("duplicate key \"rules\"", at: member.keyRange) }
                rules = member.value
            } else {
                error("unknown top-level key \"\(member.key)\" (only \"rules\" is allowed)", at: member.keyRange)
            }
        }
        guard let rules else {
            error("the rules file has no \"rules\" key", at: document.range)
            return nil
        }
        return compileNode(rules, path: [], captures: [], what: "\"rules\"")
    }

    private mutating func compileNode(_ json: DatabaseRulesJSON, path: [String], captures: [String], what: String)
        -> DatabaseRuleNode?
    {
        guard case .object(let members) = json.kind else {
            error("\(what) must be an object of rules, found \(json.typeName)", at: json.range)
            return nil
        }
        var read: DatabaseRule?
        var write: DatabaseRule?
        var validate: DatabaseRule?
        var indexOn: [String] = []
        var children: [String: DatabaseRuleNode] = [:]
        var wildcard: (name: String, node: DatabaseRuleNode)?
        var wildcardRange: SourceRange?
        var seen: Set<String> = []
        for member in members {
            let key = member.key
            guard seen.insert(key).inserted else {
                error("duplicate key \"\(key)\"", at: member.keyRange)
                continue
            }
            switch key {
            case ".read": read = compileRule(.read, member.value, captures: captures)
            case ".write": write = compileRule(.write, member.value, captures: captures)
            case ".validate": validate = compileRule(.validate, member.value, captures: captures)
            case ".indexOn": indexOn = compileIndexOn(member.value)
            default:
                if key.hasPrefix(".") {
                    error("unknown rule \"\(key)\" (expected .read, .write, .validate or .indexOn)", at: member.keyRange)
                    continue
                }
                if let problem = Self.keyProblem(key) {
                    error("invalid key \"\(key)\": \(problem)", at: member.keyRange)
                    continue
                }
                let childPath = path + [key]
                if key.hasPrefix("$") {
                    if let wildcardRange {
                        error("only one wildcard per level: \"\(key)\" and the one at \(source.location(wildcardRange))",
                              at: member.keyRange)
                        continue
                    }
                    if captures.contains(key) {
                        error("wildcard \"\(key)\" is already used above this level", at: member.keyRange)
                        continue
                    }
                    wildcardRange = member.keyRange
                    if let node = compileNode(member.value, path: childPath, captures: captures + [key], what: "\"\(key)\"") {
                        wildcard = (key, node)
                    }
                } else if let node = compileNode(member.value, path: childPath, captures: captures, what: "\"\(key)\"") {
                    children[key] = node
                }
            }
        }
        return DatabaseRuleNode(path: DatabaseRuleset.display(path), read: read, write: write, validate: validate,
                                indexOn: indexOn, children: children, wildcard: wildcard)
    }

    /// Why a key cannot name a child in the rules, or nil.
    static func keyProblem(_ key: String) -> String? {
        if key.isEmpty { return "keys cannot be empty" }
        if key.dropFirst().contains("$") { return "'$' may only start a key (a wildcard)" }
        if key == "$" { return "a wildcard needs a name" }
        if let bad = key.unicodeScalars.first(where: { ".#[]/".unicodeScalars.contains($0) || $0.value < 0x20 || $0.value == 0x7F }) {
            return bad.value < 0x20 || bad.value == 0x7F ? "keys cannot contain control characters"
                : "keys cannot contain '\(Character(bad))'"
        }
        return nil
    }

    private mutating func compileRule(_ kind: DatabaseRuleKind, _ json: DatabaseRulesJSON, captures: [String]) -> DatabaseRule? {
        switch json.kind {
        case .bool(let value):
            return DatabaseRule(kind: kind, body: .constant(value), range: json.range, text: value ? "true" : "false")
        case .string(let text, let positions):
            do throws(DatabaseRuleExpressionParser.Failure) {
                let expression = try DatabaseRuleExpressionParser.parse(
                    text, positions: positions, context: .init(captures: Set(captures), kind: kind))
                if case .boolean(let value) = expression.kind {
                    return DatabaseRule(kind: kind, body: .constant(value), range: json.range, text: text)
                }
                if let problem = DatabaseRulesChecker.check(expression, kind: kind) {
                    diagnostics.append(problem)
                    return nil
                }
                return DatabaseRule(kind: kind, body: .expression(expression), range: json.range, text: text)
            } catch {
                diagnostics.append(error.diagnostic)
                return nil
            }
        default:
            error("\(kind.rawValue) must be a boolean or a string expression, found \(json.typeName)", at: json.range)
            return nil
        }
    }

    private mutating func compileIndexOn(_ json: DatabaseRulesJSON) -> [String] {
        switch json.kind {
        case .string(let field, _):
            return [field]
        case .array(let items):
            var fields: [String] = []
            for item in items {
                if case .string(let field, _) = item.kind {
                    fields.append(field)
                } else {
                    error(".indexOn lists child keys as strings, found \(item.typeName)", at: item.range)
                }
            }
            return fields
        default:
            error(".indexOn must be a string or a list of strings, found \(json.typeName)", at: json.range)
            return []
        }
    }
}
