/// An expression node. Nodes are immutable and numbered densely (``id``) in source order of
/// creation, so coverage and traces can use arrays indexed by id.
public final class Expr: Sendable {
    public let id: Int
    public let range: SourceRange
    public let kind: Kind
    /// Height of the tree under this node (a leaf is 1); the parser bounds it.
    let height: Int

    public enum UnaryOperator: String, Sendable { case not = "!", negate = "-" }

    public enum BinaryOperator: String, Sendable {
        case or = "||", and = "&&"
        case equal = "==", notEqual = "!="
        case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case `in` = "in"
        case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%"
    }

    public enum PathSegment: Sendable {
        case literal(String)
        case interpolation(Expr)
    }

    public enum Kind: Sendable {
        case null
        case bool(Bool)
        case int(Int64)
        case float(Double)
        case string(String)
        case bytes([UInt8])
        case list([Expr])
        case map([(key: Expr, value: Expr)])
        case path([PathSegment])
        case identifier(String)
        case member(Expr, name: String)
        case index(Expr, Expr)
        case slice(Expr, Expr?, Expr?)
        case call(Expr, [Expr])
        case unary(UnaryOperator, Expr)
        case binary(BinaryOperator, Expr, Expr)
        case ternary(Expr, Expr, Expr)
        case isType(Expr, String)
        /// Stands in for an expression that failed to parse.
        case error
    }

    init(id: Int, range: SourceRange, kind: Kind) {
        self.id = id
        self.range = range
        self.kind = kind
        var h = 0
        switch kind {
        case .list(let items): for e in items { h = max(h, e.height) }
        case .map(let entries): for (k, v) in entries { h = max(h, k.height, v.height) }
        case .path(let segs):
            for case .interpolation(let e) in segs { h = max(h, e.height) }
        case .member(let e, _), .unary(_, let e), .isType(let e, _): h = e.height
        case .index(let a, let b), .binary(_, let a, let b): h = max(a.height, b.height)
        case .slice(let a, let b, let c): h = max(a.height, b?.height ?? 0, c?.height ?? 0)
        case .call(let f, let args):
            h = f.height
            for a in args { h = max(h, a.height) }
        case .ternary(let a, let b, let c): h = max(a.height, b.height, c.height)
        default: break
        }
        height = h + 1
    }

    /// Direct sub-expressions, in evaluation order.
    public var children: [Expr] {
        switch kind {
        case .list(let items): items
        case .map(let entries): entries.flatMap { [$0.key, $0.value] }
        case .path(let segs): segs.compactMap { if case .interpolation(let e) = $0 { e } else { nil } }
        case .member(let e, _), .unary(_, let e), .isType(let e, _): [e]
        case .index(let a, let b), .binary(_, let a, let b): [a, b]
        case .slice(let a, let b, let c): [a] + [b, c].compactMap { $0 }
        case .call(let f, let args): [f] + args
        case .ternary(let a, let b, let c): [a, b, c]
        default: []
        }
    }
}

/// `read`, `write` and the five granular methods.
public enum RulesMethod: String, Sendable, Hashable, CaseIterable {
    case get, list, create, update, delete
}

/// A method name as written in an `allow` statement.
public enum AllowMethod: String, Sendable, Hashable {
    case read, write, get, list, create, update, delete

    /// The request methods this name covers: read = get + list, write = create + update + delete.
    public var covers: [RulesMethod] {
        switch self {
        case .read: [.get, .list]
        case .write: [.create, .update, .delete]
        case .get: [.get]
        case .list: [.list]
        case .create: [.create]
        case .update: [.update]
        case .delete: [.delete]
        }
    }
}

/// `allow read, write: if cond;`
public struct AllowStatement: Sendable {
    public let methods: [AllowMethod]
    public let condition: Expr?
    public let range: SourceRange
    /// Range of `allow m1, m2` (what reasons quote).
    public let headRange: SourceRange
    /// `allow m1, m2`, the condition's text and `file:line:col`, prepared at compile time so
    /// that decisions do not slice the source.
    public let headText: String
    let conditionText: String
    let location: String
    let allowReason: String

    init(methods: [AllowMethod], condition: Expr?, range: SourceRange, headRange: SourceRange, source: RulesSource) {
        self.methods = methods
        self.condition = condition
        self.range = range
        self.headRange = headRange
        headText = source.text(of: headRange)
        conditionText = condition.map { source.text(of: $0.range) } ?? ""
        location = source.location(range)
        allowReason = condition == nil ? "Allowed by `\(headText)` at \(location) (no condition)."
            : "Allowed by `\(headText): if \(conditionText)` at \(location)."
    }

    public func covers(_ m: RulesMethod) -> Bool { methods.contains { $0.covers.contains(m) } }
}

/// `function name(a, b) { let x = …; return …; }`
public final class FunctionDeclaration: Sendable {
    public struct Binding: Sendable {
        public let name: String
        public let value: Expr
        public let range: SourceRange
    }

    public let name: String
    public let parameters: [String]
    public let bindings: [Binding]
    public let body: Expr
    public let range: SourceRange
    public let nameRange: SourceRange

    init(name: String, parameters: [String], bindings: [Binding], body: Expr, range: SourceRange, nameRange: SourceRange) {
        self.name = name
        self.parameters = parameters
        self.bindings = bindings
        self.body = body
        self.range = range
        self.nameRange = nameRange
    }
}

/// One segment of a `match` path.
public enum MatchSegment: Sendable, Hashable, CustomStringConvertible {
    case literal(String)
    /// `{name}`: one segment, bound as a string.
    case single(String)
    /// `{name=**}`: several segments, bound as a path.
    case recursive(String)

    public var description: String {
        switch self {
        case .literal(let s): s
        case .single(let n): "{\(n)}"
        case .recursive(let n): "{\(n)=**}"
        }
    }
}

/// A lexical scope of declarations: the file's top level, the service, or a match block.
public final class RulesBlock: Sendable {
    public enum Kind: Sendable { case file, service, match }

    public let kind: Kind
    public let pattern: [MatchSegment]
    public let range: SourceRange
    public let functions: [String: FunctionDeclaration]
    public let allows: [AllowStatement]
    public let matches: [RulesBlock]

    init(kind: Kind, pattern: [MatchSegment], range: SourceRange, functions: [String: FunctionDeclaration],
         allows: [AllowStatement], matches: [RulesBlock]) {
        self.kind = kind
        self.pattern = pattern
        self.range = range
        self.functions = functions
        self.allows = allows
        self.matches = matches
    }

    public var patternText: String { pattern.map { "/" + $0.description }.joined() }
}

/// Which Firebase product a ruleset protects.
public enum RulesService: String, Sendable, Hashable {
    case firestore = "cloud.firestore"
    case storage = "firebase.storage"
}
