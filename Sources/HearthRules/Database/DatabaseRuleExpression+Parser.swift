/// Lexer and Pratt parser for rule expressions. The input is the decoded text of one JSON
/// string of the rules file, with the file position of every scalar, so tokens and
/// diagnostics carry file ranges. The parser never traps: it reports the first problem of
/// an expression as a diagnostic.
struct DatabaseRuleExpressionParser {
    /// What a rule may refer to: the wildcard captures above it and whether it is a `.read`.
    struct Context {
        var captures: Set<String>
        var kind: DatabaseRuleKind
    }

    struct Failure: Error {
        var diagnostic: Diagnostic
    }

    enum TokenKind: Equatable {
        case identifier, number, string, regex
        case lparen, rparen, lbracket, rbracket, dot, comma, question, colon
        case bang, plus, minus, star, slash, percent
        case equal, notEqual, strictEqual, strictNotEqual, less, lessOrEqual, greater, greaterOrEqual
        case and, or
        case end
    }

    struct Token {
        var kind: TokenKind
        var text: String
        var range: SourceRange
        var number: Double = 0
        var regexFlags: String = ""
    }

    static let maxNesting = 100
    static let maxLength = 16 * 1024
    /// Bounds the depth of an expression tree (left-leaning chains like `a + a + …` do not
    /// count as nesting), so the checks and the evaluator recurse a bounded amount.
    static let maxTokens = 4096

    private let scalars: [Unicode.Scalar]
    private let positions: [SourcePosition]
    private let context: Context
    private var tokens: [Token] = []
    private var cursor = 0

    /// Parses `text`, whose scalar `i` sits at `positions[i]` in the file (`positions` has one
    /// more entry: the closing quote).
    static func parse(_ text: String, positions: [SourcePosition], context: Context) throws(Failure) -> DatabaseRuleExpression {
        var parser = DatabaseRuleExpressionParser(scalars: Array(text.unicodeScalars), positions: positions, context: context)
        guard parser.scalars.count <= maxLength else {
            throw Failure(diagnostic: Diagnostic(.error, "the rule is longer than \(maxLength) characters", at: parser.range(0, 0)))
        }
        try parser.tokenize()
        if parser.tokens.count > maxTokens {
            throw Failure(diagnostic: Diagnostic(.error, "the rule has more than \(maxTokens) tokens", at: parser.tokens[maxTokens].range))
        }
        if parser.tokens.first?.kind == .end {
            throw Failure(diagnostic: Diagnostic(.error, "empty rule expression", at: parser.tokens[0].range))
        }
        let expression = try parser.expression(minimumPower: 0, nesting: 0)
        let next = parser.current
        if next.kind != .end { throw parser.error("unexpected \(describe(next))", at: next.range) }
        return expression
    }

    private init(scalars: [Unicode.Scalar], positions: [SourcePosition], context: Context) {
        self.scalars = scalars
        // A defensive copy that always has an entry for every scalar and one past the end.
        var p = positions
        let fallback = positions.last ?? SourcePosition(offset: 0, line: 1, column: 1)
        while p.count < scalars.count + 1 { p.append(fallback) }
        self.positions = p
        self.context = context
    }

    private func range(_ start: Int, _ end: Int) -> SourceRange {
        SourceRange(start: positions[min(start, positions.count - 1)], end: positions[min(end, positions.count - 1)])
    }

    private func error(_ message: String, at range: SourceRange) -> Failure {
        Failure(diagnostic: Diagnostic(.error, message, at: range))
    }

    private static func describe(_ token: Token) -> String {
        switch token.kind {
        case .end: "end of expression"
        case .string: "string literal"
        case .regex: "regex literal"
        default: "'\(token.text)'"
        }
    }

    // MARK: Lexer

    private mutating func tokenize() throws(Failure) {
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            let start = i
            if c == " " || c == "\t" || c == "\n" || c == "\r" {
                i += 1
                continue
            }
            if c.properties.isAlphabetic || c == "_" || c == "$" {
                var name = ""
                while let d = scalarAt(i), d.properties.isAlphabetic || d.properties.numericType != nil || d == "_" || d == "$" {
                    name.unicodeScalars.append(d)
                    i += 1
                }
                tokens.append(Token(kind: .identifier, text: name, range: range(start, i)))
                continue
            }
            if ("0"..."9").contains(c) || (c == "." && scalarAt(i + 1).map { ("0"..."9").contains($0) } == true) {
                var text = ""
                while let d = scalarAt(i), ("0"..."9").contains(d) || d == "." {
                    text.unicodeScalars.append(d)
                    i += 1
                }
                if let e = scalarAt(i), e == "e" || e == "E" {
                    text.unicodeScalars.append(e)
                    i += 1
                    if let sign = scalarAt(i), sign == "+" || sign == "-" {
                        text.unicodeScalars.append(sign)
                        i += 1
                    }
                    while let d = scalarAt(i), ("0"..."9").contains(d) {
                        text.unicodeScalars.append(d)
                        i += 1
                    }
                }
                if let d = scalarAt(i), d.properties.isAlphabetic || d == "_" || d == "$" {
                    throw error("malformed number", at: range(start, i + 1))
                }
                guard let value = Double(text) else { throw error("malformed number '\(text)'", at: range(start, i)) }
                tokens.append(Token(kind: .number, text: text, range: range(start, i), number: value))
                continue
            }
            if c == "'" || c == "\"" {
                i += 1
                var text = ""
                while true {
                    guard let d = scalarAt(i) else { throw error("unterminated string literal", at: range(start, start + 1)) }
                    if d == c { break }
                    if d == "\\" {
                        guard let e = scalarAt(i + 1) else { throw error("unterminated string literal", at: range(start, start + 1)) }
                        switch e {
                        case "n": text.unicodeScalars.append("\n")
                        case "t": text.unicodeScalars.append("\t")
                        case "r": text.unicodeScalars.append("\r")
                        case "\\", "'", "\"", "/": text.unicodeScalars.append(e)
                        default: throw error("invalid escape '\\\(Character(e))' in a string literal", at: range(i, i + 2))
                        }
                        i += 2
                        continue
                    }
                    text.unicodeScalars.append(d)
                    i += 1
                }
                i += 1
                tokens.append(Token(kind: .string, text: text, range: range(start, i)))
                continue
            }
            if c == "/" && regexAllowed {
                i += 1
                var pattern = ""
                var inClass = false
                while true {
                    guard let d = scalarAt(i), d != "\n" else { throw error("unterminated regex literal", at: range(start, start + 1)) }
                    if d == "/" && !inClass { break }
                    if d == "[" { inClass = true }
                    if d == "]" { inClass = false }
                    pattern.unicodeScalars.append(d)
                    if d == "\\", let e = scalarAt(i + 1) {
                        pattern.unicodeScalars.append(e)
                        i += 2
                        continue
                    }
                    i += 1
                }
                i += 1
                var flags = ""
                while let f = scalarAt(i), f.properties.isAlphabetic {
                    flags.unicodeScalars.append(f)
                    i += 1
                }
                if pattern.isEmpty { throw error("empty regex literal", at: range(start, i)) }
                if let problem = Self.anchorProblem(Array(pattern.unicodeScalars)) { throw error(problem, at: range(start, i)) }
                if !(flags.isEmpty || flags == "i") {
                    throw error("unsupported regex flags '\(flags)' (only 'i' is allowed)", at: range(start, i))
                }
                tokens.append(Token(kind: .regex, text: pattern, range: range(start, i), regexFlags: flags))
                continue
            }
            let next = scalarAt(i + 1)
            let next2 = scalarAt(i + 2)
            let kind: TokenKind
            var length = 1
            switch c {
            case "(": kind = .lparen
            case ")": kind = .rparen
            case "[": kind = .lbracket
            case "]": kind = .rbracket
            case ".": kind = .dot
            case ",": kind = .comma
            case "?": kind = .question
            case ":": kind = .colon
            case "+": kind = .plus
            case "-": kind = .minus
            case "*" where next == "*": throw error("'**' is not supported", at: range(i, i + 2))
            case "*": kind = .star
            case "/": kind = .slash
            case "%": kind = .percent
            case "!" where next == "=" && next2 == "=":
                kind = .strictNotEqual
                length = 3
            case "!" where next == "=":
                kind = .notEqual
                length = 2
            case "!": kind = .bang
            case "=" where next == "=" && next2 == "=":
                kind = .strictEqual
                length = 3
            case "=" where next == "=":
                kind = .equal
                length = 2
            case "=": throw error("assignment is not allowed in rules (did you mean '=='?)", at: range(i, i + 1))
            case "<" where next == "=":
                kind = .lessOrEqual
                length = 2
            case "<": kind = .less
            case ">" where next == "=":
                kind = .greaterOrEqual
                length = 2
            case ">": kind = .greater
            case "&" where next == "&":
                kind = .and
                length = 2
            case "|" where next == "|":
                kind = .or
                length = 2
            case ";": throw error("';' is not allowed in rules: a rule is a single expression", at: range(i, i + 1))
            default:
                let shown = c.value < 0x20 ? "control character" : "'\(Character(c))'"
                throw error("unexpected character \(shown)", at: range(i, i + 1))
            }
            var text = ""
            for k in i..<(i + length) { text.unicodeScalars.append(scalars[k]) }
            tokens.append(Token(kind: kind, text: text, range: range(i, i + length)))
            i += length
        }
        tokens.append(Token(kind: .end, text: "", range: range(scalars.count, scalars.count)))
    }

    /// Firebase: `^` and `$` anchor only as the first and last character of the pattern.
    private static func anchorProblem(_ pattern: [Unicode.Scalar]) -> String? {
        var inClass = false
        var k = 0
        while k < pattern.count {
            let c = pattern[k]
            if c == "\\" {
                k += 2
                continue
            }
            if inClass {
                if c == "]" { inClass = false }
            } else if c == "[" {
                inClass = true
                // `[^…]` and `[]…]` start a class, not an anchor or its end.
                if k + 1 < pattern.count, pattern[k + 1] == "^" { k += 1 }
                if k + 1 < pattern.count, pattern[k + 1] == "]" { k += 1 }
            } else if c == "^", k != 0 {
                return "'^' anchors only as the first character of a regex"
            } else if c == "$", k != pattern.count - 1 {
                return "'$' anchors only as the last character of a regex"
            }
            k += 1
        }
        return nil
    }

    private func scalarAt(_ k: Int) -> Unicode.Scalar? { k < scalars.count ? scalars[k] : nil }

    /// A `/` starts a regex literal where a value may start (not after a value).
    private var regexAllowed: Bool {
        guard let last = tokens.last else { return true }
        switch last.kind {
        case .identifier, .number, .string, .regex, .rparen, .rbracket: return false
        default: return true
        }
    }

    // MARK: Parser

    private var current: Token { tokens[min(cursor, tokens.count - 1)] }

    private mutating func take() -> Token {
        let token = current
        if cursor < tokens.count - 1 { cursor += 1 }
        return token
    }

    private mutating func expect(_ kind: TokenKind, _ what: String) throws(Failure) -> Token {
        let token = current
        guard token.kind == kind else { throw error("expected \(what), found \(Self.describe(token))", at: token.range) }
        return take()
    }

    private static func infixPower(_ kind: TokenKind) -> Int? {
        switch kind {
        case .question: 1
        case .or: 2
        case .and: 3
        case .equal, .notEqual, .strictEqual, .strictNotEqual: 4
        case .less, .lessOrEqual, .greater, .greaterOrEqual: 5
        case .plus, .minus: 6
        case .star, .slash, .percent: 7
        default: nil
        }
    }

    private static func binaryOperator(_ kind: TokenKind) -> DatabaseRuleExpression.BinaryOperator? {
        switch kind {
        case .equal: .equal
        case .notEqual: .notEqual
        case .strictEqual: .strictEqual
        case .strictNotEqual: .strictNotEqual
        case .less: .less
        case .lessOrEqual: .lessOrEqual
        case .greater: .greater
        case .greaterOrEqual: .greaterOrEqual
        case .plus: .add
        case .minus: .subtract
        case .star: .multiply
        case .slash: .divide
        case .percent: .remainder
        default: nil
        }
    }

    private mutating func expression(minimumPower: Int, nesting: Int) throws(Failure) -> DatabaseRuleExpression {
        if nesting > Self.maxNesting || (nesting >= StackGuard.deep && !StackGuard.hasRoom()) {
            throw error("the expression nests too deeply", at: current.range)
        }
        var left = try prefix(nesting: nesting)
        while let power = Self.infixPower(current.kind), power > minimumPower {
            let op = take()
            if op.kind == .question {
                let whenTrue = try expression(minimumPower: 0, nesting: nesting + 1)
                _ = try expect(.colon, "':' in a conditional expression")
                // Right-associative: `a ? b : c ? d : e`.
                let whenFalse = try expression(minimumPower: power - 1, nesting: nesting + 1)
                left = DatabaseRuleExpression(kind: .conditional(left, whenTrue, whenFalse), range: left.range.to(whenFalse.range))
                continue
            }
            let right = try expression(minimumPower: power, nesting: nesting + 1)
            let range = left.range.to(right.range)
            switch op.kind {
            case .and: left = DatabaseRuleExpression(kind: .and(left, right), range: range)
            case .or: left = DatabaseRuleExpression(kind: .or(left, right), range: range)
            default: left = DatabaseRuleExpression(kind: .binary(Self.binaryOperator(op.kind)!, left, right), range: range)
            }
        }
        return left
    }

    private mutating func prefix(nesting: Int) throws(Failure) -> DatabaseRuleExpression {
        let token = take()
        var node: DatabaseRuleExpression
        switch token.kind {
        case .bang:
            let operand = try expression(minimumPower: 7, nesting: nesting + 1)
            return DatabaseRuleExpression(kind: .not(operand), range: token.range.to(operand.range))
        case .minus:
            let operand = try expression(minimumPower: 7, nesting: nesting + 1)
            return DatabaseRuleExpression(kind: .negate(operand), range: token.range.to(operand.range))
        case .number:
            node = DatabaseRuleExpression(kind: .number(token.number), range: token.range)
        case .string:
            node = DatabaseRuleExpression(kind: .string(token.text), range: token.range)
        case .regex:
            // A regex literal is only a value as the one argument of `matches(…)`.
            let asArgument = cursor >= 4 && tokens[cursor - 2].kind == .lparen && tokens[cursor - 3].text == "matches"
                && tokens[cursor - 4].kind == .dot && current.kind == .rparen
            guard asArgument else { throw error("a regex literal is only allowed as the argument of matches()", at: token.range) }
            do throws(RulesRegex.SyntaxError) {
                let regex = try RulesRegex.cached(token.regexFlags == "i" ? "(?i)" + token.text : token.text)
                node = DatabaseRuleExpression(kind: .regex(regex), range: token.range)
            } catch {
                throw self.error("invalid regex: \(error.message)", at: token.range)
            }
        case .lparen:
            node = try expression(minimumPower: 0, nesting: nesting + 1)
            let close = try expect(.rparen, "')'")
            node.range = token.range.to(close.range)
        case .lbracket:
            var items: [DatabaseRuleExpression] = []
            if current.kind != .rbracket {
                while true {
                    items.append(try expression(minimumPower: 0, nesting: nesting + 1))
                    if current.kind == .comma {
                        _ = take()
                        continue
                    }
                    break
                }
            }
            let close = try expect(.rbracket, "']' or ','")
            node = DatabaseRuleExpression(kind: .array(items), range: token.range.to(close.range))
        case .identifier:
            node = DatabaseRuleExpression(kind: try identifier(token), range: token.range)
        default:
            throw error("unexpected \(Self.describe(token)), expected an expression", at: token.range)
        }
        return try postfix(node, nesting: nesting)
    }

    private func identifier(_ token: Token) throws(Failure) -> DatabaseRuleExpression.Kind {
        switch token.text {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        case "null": return .null
        case "auth": return .variable(.auth)
        case "root": return .variable(.root)
        case "data": return .variable(.data)
        case "now": return .variable(.now)
        case "newData":
            guard context.kind != .read else { throw error("newData is not available in .read rules", at: token.range) }
            return .variable(.newData)
        case "query":
            guard context.kind == .read else { throw error("query is only available in .read rules", at: token.range) }
            return .variable(.query)
        default:
            if token.text.hasPrefix("$") {
                guard context.captures.contains(token.text) else {
                    throw error("unknown variable '\(token.text)': no \(token.text) wildcard above this rule", at: token.range)
                }
                return .variable(.capture(token.text))
            }
            throw error("unknown variable '\(token.text)'", at: token.range)
        }
    }

    private mutating func postfix(_ base: DatabaseRuleExpression, nesting: Int) throws(Failure) -> DatabaseRuleExpression {
        var node = base
        var depth = nesting
        while true {
            depth += 1
            if depth > Self.maxNesting { throw error("the expression nests too deeply", at: current.range) }
            switch current.kind {
            case .dot:
                _ = take()
                let name = try expect(.identifier, "a property or method name after '.'")
                if current.kind == .lparen {
                    _ = take()
                    var arguments: [DatabaseRuleExpression] = []
                    if current.kind != .rparen {
                        while true {
                            arguments.append(try expression(minimumPower: 0, nesting: depth + 1))
                            if current.kind == .comma {
                                _ = take()
                                continue
                            }
                            break
                        }
                    }
                    let close = try expect(.rparen, "')' or ','")
                    node = DatabaseRuleExpression(
                        kind: .call(receiver: node, method: name.text, arguments: arguments), range: node.range.to(close.range))
                } else {
                    node = DatabaseRuleExpression(kind: .member(node, name: name.text), range: node.range.to(name.range))
                }
            case .lbracket:
                _ = take()
                let index = try expression(minimumPower: 0, nesting: depth + 1)
                let close = try expect(.rbracket, "']'")
                node = DatabaseRuleExpression(kind: .index(node, index), range: node.range.to(close.range))
            case .lparen:
                // `x["exists"]()` calls a method named by a string literal (Firebase accepts it).
                guard case .index(let receiver, let name) = node.kind, case .string(let method) = name.kind else {
                    throw error("only methods can be called (receiver.method(...))", at: current.range)
                }
                _ = take()
                var arguments: [DatabaseRuleExpression] = []
                if current.kind != .rparen {
                    while true {
                        arguments.append(try expression(minimumPower: 0, nesting: depth + 1))
                        if current.kind == .comma {
                            _ = take()
                            continue
                        }
                        break
                    }
                }
                let close = try expect(.rparen, "')' or ','")
                node = DatabaseRuleExpression(kind: .call(receiver: receiver, method: method, arguments: arguments),
                                              range: node.range.to(close.range))
            default:
                return node
            }
        }
    }
}
