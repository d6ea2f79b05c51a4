/// Expressions: a Pratt parser. Binding powers, lowest first, follow Google's emulator
/// (measured, see the test fixtures): `?:` < `||` < `&&` < `in` < `is` < `==` `!=` <
/// `<` `<=` `>` `>=` < `+` `-` < `*` `/` `%` < unary `!` `-` < member, index, call.
/// (The Firebase docs table places `in` and `is` above `==`; the emulator does not.)
extension Parser {
    static let typeNames: Set<String> = [
        "bool", "bytes", "constraint", "duration", "float", "int", "latlng", "list", "vector", "set",
        "number", "map", "string", "timestamp", "path", "map_diff",
    ]

    static func precedence(of tok: Token) -> Int? {
        switch tok.kind {
        case .question: 1
        case .or: 2
        case .and: 3
        case .identifier where tok.text == "in": 4
        case .identifier where tok.text == "is": 5
        case .eq, .ne: 6
        case .lt, .le, .gt, .ge: 7
        case .plus, .minus: 8
        case .star, .slash, .percent: 9
        default: nil
        }
    }

    mutating func parseExpression() -> Expr { parseExpression(minPrecedence: 1) }

    mutating func parseExpression(minPrecedence: Int) -> Expr {
        nesting += 1
        defer { nesting -= 1 }
        if nesting > Self.maxNesting || (nesting >= StackGuard.deep && !StackGuard.hasRoom()) {
            if !reportedTooDeep {
                reportedTooDeep = true
                error("Expression is nested too deeply (more than \(Self.maxNesting) levels).")
            }
            let r = tok.range
            skipNestedExpression()
            return make(.error, r)
        }
        var left = parseUnary()
        while let p = Self.precedence(of: tok), p >= minPrecedence {
            let opTok = tok
            advance()
            switch opTok.kind {
            case .question:
                let then = parseExpression(minPrecedence: 1)
                expect(.colon, "in the conditional expression")
                let otherwise = parseExpression(minPrecedence: 1)
                left = make(.ternary(left, then, otherwise), left.range.to(otherwise.range))
            case .identifier where opTok.text == "is":
                if tok.kind == .identifier {
                    let name = tok.text
                    if !Self.typeNames.contains(name) {
                        error("Unknown type '\(name)' after 'is'. Expected one of \(Self.typeNames.sorted().joined(separator: ", ")).")
                    }
                    advance()
                    left = make(.isType(left, name), range(from: left.range.start))
                } else {
                    error("Expected a type name after 'is' but found \(tok.display).")
                    left = make(.error, left.range.to(opTok.range))
                }
            default:
                let op: Expr.BinaryOperator = switch opTok.kind {
                case .or: .or
                case .and: .and
                case .eq: .equal
                case .ne: .notEqual
                case .lt: .less
                case .le: .lessOrEqual
                case .gt: .greater
                case .ge: .greaterOrEqual
                case .plus: .add
                case .minus: .subtract
                case .star: .multiply
                case .slash: .divide
                case .percent: .remainder
                default: .in
                }
                let right = parseExpression(minPrecedence: p + 1)
                left = make(.binary(op, left, right), left.range.to(right.range))
            }
        }
        return left
    }

    /// After a nesting overflow: consumes a balanced run of tokens so parsing can continue.
    mutating func skipNestedExpression() {
        var depth = 0
        while tok.kind != .eof {
            switch tok.kind {
            case .lparen, .lbracket, .lbrace: depth += 1
            case .rparen, .rbracket, .rbrace:
                if depth == 0 { return }
                depth -= 1
            case .semicolon: if depth == 0 { return }
            default: break
            }
            advance()
        }
    }

    mutating func parseUnary() -> Expr {
        let start = tok.range.start
        if tok.kind == .bang || tok.kind == .minus {
            let isNot = tok.kind == .bang
            advance()
            // Fold `-literal` so that -9223372036854775808 is representable.
            if !isNot, tok.kind == .int || tok.kind == .float {
                let lit = tok
                advance()
                let r = range(from: start)
                let negated: Expr
                if lit.kind == .int {
                    let v: Int64 = lit.intMagnitude == UInt64(Int64.max) + 1 ? .min : -Int64(truncatingIfNeeded: lit.intMagnitude)
                    negated = make(.int(v), r)
                } else {
                    negated = make(.float(-lit.floatValue), r)
                }
                return parsePostfix(negated)
            }
            nesting += 1
            defer { nesting -= 1 }
            if nesting > Self.maxNesting || (nesting >= StackGuard.deep && !StackGuard.hasRoom()) {
                if !reportedTooDeep {
                    reportedTooDeep = true
                    error("Expression is nested too deeply (more than \(Self.maxNesting) levels).")
                }
                while tok.kind == .bang || tok.kind == .minus { advance() }
                return make(.error, range(from: start))
            }
            let operand = parseUnary()
            return make(.unary(isNot ? .not : .negate, operand), range(from: start))
        }
        return parsePostfix(parsePrimary())
    }

    mutating func parsePostfix(_ base: Expr) -> Expr {
        var e = base
        while true {
            switch tok.kind {
            case .dot:
                advance()
                guard tok.kind == .identifier else {
                    error("Expected a field or method name after '.' but found \(tok.display).")
                    return make(.error, range(from: e.range.start))
                }
                let name = tok.text
                advance()
                e = make(.member(e, name: name), range(from: e.range.start))
            case .lbracket:
                advance()
                var first: Expr?
                if tok.kind != .colon { first = parseExpression() }
                if tok.kind == .colon {
                    advance()
                    var second: Expr?
                    if tok.kind != .rbracket { second = parseExpression() }
                    expect(.rbracket, "to close the range")
                    let start = first ?? make(.int(0), e.range)
                    e = make(.slice(e, start, second), range(from: e.range.start))
                } else {
                    expect(.rbracket, "to close the index")
                    e = make(.index(e, first ?? make(.error, tok.range)), range(from: e.range.start))
                }
            case .lparen:
                advance()
                let args = parseArguments(closing: .rparen, what: "argument list")
                e = make(.call(e, args), range(from: e.range.start))
            default:
                return e
            }
        }
    }

    mutating func parseArguments(closing: Token.Kind, what: String) -> [Expr] {
        var items: [Expr] = []
        while tok.kind != closing && tok.kind != .eof {
            let before = tok.range.start.offset
            items.append(parseExpression())
            if tok.kind == .comma {
                advance()
            } else if tok.kind != closing {
                error("Expected ',' or '\(Token.spelling(closing))' in the \(what) but found \(tok.display).")
                if tok.range.start.offset == before || tok.kind == .semicolon || tok.kind == .rbrace { break }
            }
        }
        expect(closing, "to close the \(what)")
        return items
    }

    mutating func parsePrimary() -> Expr {
        let t = tok
        switch t.kind {
        case .int:
            advance()
            if t.intMagnitude > UInt64(Int64.max) {
                error("Integer literal \(t.text) is out of range.", t.range)
                return make(.error, t.range)
            }
            return make(.int(Int64(t.intMagnitude)), t.range)
        case .float:
            advance()
            return make(.float(t.floatValue), t.range)
        case .string:
            advance()
            return make(.string(t.text), t.range)
        case .bytes:
            advance()
            return make(.bytes(t.bytesValue), t.range)
        case .identifier:
            switch t.text {
            case "true": advance(); return make(.bool(true), t.range)
            case "false": advance(); return make(.bool(false), t.range)
            case "null": advance(); return make(.null, t.range)
            case "in", "is", "if", "allow", "match", "function", "return", "let", "service":
                error("Unexpected '\(t.text)'; expected an expression.")
                return make(.error, t.range)
            default:
                advance()
                return make(.identifier(t.text), t.range)
            }
        case .lparen:
            advance()
            let inner = parseExpression()
            expect(.rparen, "to close the parenthesis")
            return inner
        case .lbracket:
            advance()
            let items = parseArguments(closing: .rbracket, what: "list")
            return make(.list(items), range(from: t.range.start))
        case .lbrace:
            advance()
            var entries: [(key: Expr, value: Expr)] = []
            while tok.kind != .rbrace && tok.kind != .eof {
                let before = tok.range.start.offset
                let key = parseExpression()
                expect(.colon, "between a map key and its value")
                let value = parseExpression()
                entries.append((key, value))
                if tok.kind == .comma {
                    advance()
                } else if tok.kind != .rbrace {
                    error("Expected ',' or '}' in the map but found \(tok.display).")
                    if tok.range.start.offset == before || tok.kind == .semicolon { break }
                }
            }
            expect(.rbrace, "to close the map")
            return make(.map(entries), range(from: t.range.start))
        case .slash:
            return parsePathLiteral()
        default:
            error("Expected an expression but found \(t.display).")
            // Consume the stray token unless it can end a construct around us.
            switch t.kind {
            case .semicolon, .rbrace, .rparen, .rbracket, .eof, .colon, .comma: break
            default: advance()
            }
            return make(.error, t.range)
        }
    }

    /// `/databases/$(database)/documents/users/$(request.auth.uid)` (current token: the first `/`).
    mutating func parsePathLiteral() -> Expr {
        let start = tok.range.start
        var segments: [Expr.PathSegment] = []
        lexer.reset(to: tok.range.end)
        var failed = false
        loop: while true {
            let segStart = lexer.position
            if lexer.peekByte() == UInt8(ascii: "$"), lexer.peekByte(1) == UInt8(ascii: "(") {
                lexer.advanceByte(); lexer.advanceByte()
                prevEnd = lexer.position
                tok = lexer.next()
                let inner = parseExpression()
                guard tok.kind == .rparen else {
                    error("Expected ')' to close '$(' in the path but found \(tok.display).")
                    segments.append(.interpolation(inner))
                    failed = true
                    break loop
                }
                lexer.reset(to: tok.range.end)
                segments.append(.interpolation(inner))
            } else if lexer.peekByte() == UInt8(ascii: "(") {
                guard let s = lexer.scanParenthesisedSegment() else {
                    error("Unclosed '(' in path.", SourceRange(start: segStart, end: lexer.position))
                    break loop
                }
                segments.append(.literal(s))
            } else {
                let word = lexer.scanPathWord()
                if word.isEmpty {
                    error("Expected a path segment after '/'.", SourceRange(start: segStart, end: segStart))
                    break loop
                }
                segments.append(.literal(word))
            }
            if lexer.peekByte() == UInt8(ascii: "/"), lexer.peekByte(1) != UInt8(ascii: "/"), lexer.peekByte(1) != UInt8(ascii: "*") {
                lexer.advanceByte()
            } else {
                break
            }
        }
        if !failed {
            prevEnd = lexer.position
            tok = lexer.next()
        }
        return make(.path(segments), range(from: start))
    }
}
