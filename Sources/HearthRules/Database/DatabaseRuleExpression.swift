/// A parsed Realtime Database rule expression (the JavaScript-like language inside the
/// strings of `database.rules.json`). Every node carries its range in the rules file.
struct DatabaseRuleExpression: Sendable {
    indirect enum Kind: Sendable {
        case null
        case boolean(Bool)
        case number(Double)
        case string(String)
        /// A regex literal `/…/` or `/…/i`, compiled when the rules are parsed.
        case regex(RulesRegex)
        case array([DatabaseRuleExpression])
        case variable(Variable)
        case member(DatabaseRuleExpression, name: String)
        case index(DatabaseRuleExpression, DatabaseRuleExpression)
        /// `receiver.method(arguments)`: every call in this language is a method call.
        case call(receiver: DatabaseRuleExpression, method: String, arguments: [DatabaseRuleExpression])
        case not(DatabaseRuleExpression)
        case negate(DatabaseRuleExpression)
        case binary(BinaryOperator, DatabaseRuleExpression, DatabaseRuleExpression)
        case and(DatabaseRuleExpression, DatabaseRuleExpression)
        case or(DatabaseRuleExpression, DatabaseRuleExpression)
        case conditional(DatabaseRuleExpression, DatabaseRuleExpression, DatabaseRuleExpression)
    }

    enum Variable: Sendable, Equatable {
        case auth, root, data, newData, now, query
        /// A `$name` captured by a wildcard key above the rule (the name includes the `$`).
        case capture(String)
    }

    enum BinaryOperator: String, Sendable {
        case equal = "==", notEqual = "!=", strictEqual = "===", strictNotEqual = "!=="
        case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%"
    }

    var kind: Kind
    var range: SourceRange
}
