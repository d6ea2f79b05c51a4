/// A runtime scope: the wildcards a match bound, a function's parameters, or one `let`.
/// Scopes chain lexically (a function's body sees the scope it was declared in).
final class Scope {
    enum Binding {
        case value(EvalValue)
        /// A `let` not yet evaluated: its expression and the scope it is evaluated in.
        case pending(Expr, Scope)
        case evaluating
        case failed(EvalError)
    }

    let parent: Scope?
    var names: [String]
    var bindings: [Binding]
    let functions: [String: FunctionDeclaration]

    init(parent: Scope?, names: [String] = [], bindings: [Binding] = [], functions: [String: FunctionDeclaration] = [:]) {
        self.parent = parent
        self.names = names
        self.bindings = bindings
        self.functions = functions
    }

    /// The innermost scope binding `name`, with the binding's index.
    func lookup(_ name: String) -> (Scope, Int)? {
        var s: Scope? = self
        while let scope = s {
            if let i = scope.names.lastIndex(of: name) { return (scope, i) }
            s = scope.parent
        }
        return nil
    }

    /// The innermost declaration of function `name`, with the scope it was declared in.
    func function(_ name: String) -> (FunctionDeclaration, Scope)? {
        var s: Scope? = self
        while let scope = s {
            if let f = scope.functions[name] { return (f, scope) }
            s = scope.parent
        }
        return nil
    }
}

/// An error value. `fatal` errors (budgets exhausted) are not absorbed by `&&`/`||`: they
/// end the whole evaluation with a denial.
struct EvalError: Error {
    var message: String
    var range: SourceRange
    var fatal = false
}

/// What an expression evaluates to: a value, or (only while deciding a `list` request) a
/// symbolic stand-in for data of documents the query may return.
enum EvalValue {
    case value(RulesValue)
    case symbolic(Symbolic)
}

/// Symbolic values for "rules are not filters".
enum Symbolic {
    /// `resource`: any document the query can return.
    case resource
    /// `resource.data` at a field path (empty: the data map itself).
    case data([String])
    /// Something unknown (the document id of an unconstrained query); any use errors.
    case unknown(String)

    var describe: String {
        switch self {
        case .resource: "resource"
        case .data(let p): p.isEmpty ? "resource.data" : "resource.data." + p.joined(separator: ".")
        case .unknown(let what): what
        }
    }
}
