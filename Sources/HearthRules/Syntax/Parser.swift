/// What the parser produces: the declarations of one rules file plus its diagnostics.
struct ParsedFile {
    var version: String?
    var versionRange: SourceRange?
    var root: RulesBlock
    var service: RulesService?
    var serviceBlock: RulesBlock?
    var expressions: [Expr]
    var diagnostics: [Diagnostic]
}

/// A recursive-descent parser for declarations with a Pratt parser for expressions.
///
/// It never traps: every unexpected token becomes a diagnostic with a source range, the
/// parser resynchronises at the next `;` or `}`, and nesting is bounded (deeper input is
/// reported, not followed), so no input can exhaust the stack.
struct Parser {
    static let maxNesting = 128
    static let maxHeight = 512
    static let maxMatchDepth = 10
    static let maxDiagnostics = 100

    var lexer: Lexer
    let source: RulesSource
    var tok: Token
    var prevEnd: SourcePosition
    var diagnostics: [Diagnostic] = []
    var expressions: [Expr] = []
    var nesting = 0
    var reportedTooDeep = false

    init(source: RulesSource) {
        self.source = source
        lexer = Lexer(bytes: source.bytes)
        prevEnd = lexer.position
        tok = Token(kind: .eof, range: SourceRange(start: prevEnd, end: prevEnd))
        tok = lexer.next()
    }

    // MARK: Plumbing

    mutating func advance() {
        prevEnd = tok.range.end
        tok = lexer.next()
    }

    mutating func error(_ message: String, _ range: SourceRange) {
        guard diagnostics.count < Self.maxDiagnostics else { return }
        // One diagnostic per position is enough; cascades add noise.
        if let last = diagnostics.last, last.range.start == range.start { return }
        diagnostics.append(Diagnostic(.error, message, at: range))
    }

    mutating func error(_ message: String) { error(message, tok.range) }

    func range(from start: SourcePosition) -> SourceRange {
        SourceRange(start: start, end: max(start, prevEnd))
    }

    @discardableResult
    mutating func expect(_ kind: Token.Kind, _ what: String) -> Bool {
        if tok.kind == kind {
            advance()
            return true
        }
        error("Expected '\(Token.spelling(kind))' \(what) but found \(tok.display).")
        return false
    }

    mutating func make(_ kind: Expr.Kind, _ range: SourceRange) -> Expr {
        var e = Expr(id: expressions.count, range: range, kind: kind)
        if e.height > Self.maxHeight {
            if !reportedTooDeep {
                reportedTooDeep = true
                error("Expression is too complex (nested more than \(Self.maxHeight) levels deep).", range)
            }
            e = Expr(id: expressions.count, range: range, kind: .error)
        }
        expressions.append(e)
        return e
    }

    /// Skips to just after the next `;`, or to (not past) the next `}` of this level.
    mutating func synchronize() {
        var depth = 0
        let startOffset = tok.range.start.offset
        while tok.kind != .eof {
            switch tok.kind {
            case .lbrace, .lparen, .lbracket:
                depth += 1
            case .rbrace, .rparen, .rbracket:
                if depth == 0 {
                    if tok.kind == .rbrace { return }
                } else {
                    depth -= 1
                    if depth == 0 && tok.kind == .rbrace {
                        advance()
                        return
                    }
                }
            case .semicolon where depth == 0:
                advance()
                return
            case .identifier where depth == 0 && tok.range.start.offset != startOffset:
                if ["match", "allow", "function", "service"].contains(tok.text) { return }
            default: break
            }
            advance()
        }
    }

    // MARK: File structure

    mutating func parseFile() -> ParsedFile {
        let fileStart = tok.range.start
        var version: String?
        var versionRange: SourceRange?
        if tok.isIdentifier("rules_version") {
            let start = tok.range.start
            advance()
            expect(.assign, "after 'rules_version'")
            if tok.kind == .string {
                version = tok.text
                advance()
            } else {
                error("Expected a version string such as '2' but found \(tok.display).")
            }
            versionRange = range(from: start)
            if tok.kind == .semicolon { advance() }
            if let v = version, v != "1", v != "2" {
                error("Unsupported rules_version '\(v)'; expected '1' or '2'.", versionRange!)
            }
        }
        var functions: [String: FunctionDeclaration] = [:]
        var serviceBlock: RulesBlock?
        var service: RulesService?
        while tok.kind != .eof {
            if tok.isIdentifier("function") {
                if let f = parseFunction(version: version) { declare(f, in: &functions) }
            } else if tok.isIdentifier("service") {
                let (s, block) = parseService(version: version)
                if serviceBlock != nil {
                    error("A rules file has exactly one 'service' block.", block.range)
                } else {
                    serviceBlock = block
                    service = s
                }
            } else if tok.isIdentifier("rules_version") {
                error("'rules_version' must be the first statement of the file.")
                synchronize()
            } else if tok.kind == .semicolon {
                advance()
            } else {
                error("Expected 'service' or 'function' but found \(tok.display).")
                let before = tok.range.start.offset
                synchronize()
                if tok.range.start.offset == before { advance() }
            }
        }
        if serviceBlock == nil {
            error("Missing 'service' block (service cloud.firestore { … } or service firebase.storage { … }).",
                  SourceRange(start: fileStart, end: fileStart))
        }
        let root = RulesBlock(kind: .file, pattern: [], range: range(from: fileStart), functions: functions,
                              allows: [], matches: serviceBlock.map { [$0] } ?? [])
        return ParsedFile(version: version, versionRange: versionRange, root: root, service: service,
                          serviceBlock: serviceBlock, expressions: expressions,
                          diagnostics: lexer.diagnostics + diagnostics)
    }

    mutating func declare(_ f: FunctionDeclaration, in functions: inout [String: FunctionDeclaration]) {
        if let existing = functions[f.name] {
            error("Function '\(f.name)' is already declared in this scope (at \(existing.nameRange.start)).", f.nameRange)
        } else {
            functions[f.name] = f
        }
    }

    mutating func parseService(version: String?) -> (RulesService?, RulesBlock) {
        let start = tok.range.start
        advance()
        var name = ""
        let nameStart = tok.range.start
        while tok.kind == .identifier {
            name += tok.text
            advance()
            if tok.kind == .dot {
                name += "."
                advance()
            } else {
                break
            }
        }
        let service = RulesService(rawValue: name)
        if service == nil {
            error("Unknown service '\(name)'; expected 'cloud.firestore' or 'firebase.storage'.", range(from: nameStart))
        }
        var functions: [String: FunctionDeclaration] = [:]
        var allows: [AllowStatement] = []
        var matches: [RulesBlock] = []
        if expect(.lbrace, "to open the service block") {
            parseBody(kind: .service, depth: 0, version: version, functions: &functions, allows: &allows, matches: &matches)
        }
        return (service, RulesBlock(kind: .service, pattern: [], range: range(from: start), functions: functions,
                                    allows: allows, matches: matches))
    }

    /// Parses statements up to and including the closing `}`.
    mutating func parseBody(kind: RulesBlock.Kind, depth: Int, version: String?,
                            functions: inout [String: FunctionDeclaration], allows: inout [AllowStatement],
                            matches: inout [RulesBlock]) {
        while tok.kind != .rbrace && tok.kind != .eof {
            let before = tok.range.start.offset
            if tok.isIdentifier("match") {
                if let m = parseMatch(depth: depth + 1, version: version) { matches.append(m) }
            } else if tok.isIdentifier("function") {
                if let f = parseFunction(version: version) { declare(f, in: &functions) }
            } else if tok.isIdentifier("allow") {
                let a = parseAllow()
                if kind == .service {
                    error("'allow' statements must be inside a 'match' block.", a?.headRange ?? tok.range)
                } else if let a {
                    allows.append(a)
                }
            } else if tok.kind == .semicolon {
                advance()
            } else {
                error("Expected 'match', 'allow' or 'function' but found \(tok.display).")
                synchronize()
            }
            if tok.range.start.offset == before && tok.kind != .rbrace && tok.kind != .eof { advance() }
        }
        expect(.rbrace, "to close the block")
    }

    mutating func parseMatch(depth: Int, version: String?) -> RulesBlock? {
        let start = tok.range.start
        advance()
        var pattern: [MatchSegment] = []
        if tok.kind == .slash {
            pattern = parseMatchPath()
        } else {
            error("Expected a path starting with '/' after 'match' but found \(tok.display).")
        }
        if depth == Self.maxMatchDepth + 1 {
            error("'match' blocks are nested more than \(Self.maxMatchDepth) levels deep.", range(from: start))
        }
        var functions: [String: FunctionDeclaration] = [:]
        var allows: [AllowStatement] = []
        var matches: [RulesBlock] = []
        guard expect(.lbrace, "to open the match block") else {
            synchronize()
            return nil
        }
        if depth > 4 * Self.maxMatchDepth {
            // Far past the limit (already reported): skip the block without recursing.
            var level = 1
            while tok.kind != .eof && level > 0 {
                if tok.kind == .lbrace { level += 1 }
                if tok.kind == .rbrace { level -= 1 }
                advance()
            }
            return nil
        }
        parseBody(kind: .match, depth: depth, version: version, functions: &functions, allows: &allows, matches: &matches)
        return RulesBlock(kind: .match, pattern: pattern, range: range(from: start), functions: functions,
                          allows: allows, matches: matches)
    }

    /// `/databases/{database}/documents`, `/{path=**}` (current token is the first `/`).
    mutating func parseMatchPath() -> [MatchSegment] {
        var segments: [MatchSegment] = []
        lexer.reset(to: tok.range.end)
        while true {
            let segStart = lexer.position
            if lexer.peekByte() == UInt8(ascii: "{") {
                lexer.advanceByte()
                let name = lexer.scanIdentifierRaw()
                var recursive = false
                if lexer.peekByte() == UInt8(ascii: "="), lexer.peekByte(1) == UInt8(ascii: "*"), lexer.peekByte(2) == UInt8(ascii: "*") {
                    lexer.advanceByte(); lexer.advanceByte(); lexer.advanceByte()
                    recursive = true
                }
                let closed = lexer.peekByte() == UInt8(ascii: "}")
                if closed { lexer.advanceByte() }
                let r = SourceRange(start: segStart, end: lexer.position)
                if name.isEmpty || !closed {
                    error("Expected '{name}' or '{name=**}' in match path.", r)
                    break
                }
                segments.append(recursive ? .recursive(name) : .single(name))
            } else if lexer.peekByte() == UInt8(ascii: "(") {
                guard let s = lexer.scanParenthesisedSegment() else {
                    error("Unclosed '(' in match path.", SourceRange(start: segStart, end: lexer.position))
                    break
                }
                segments.append(.literal(s))
            } else {
                let word = lexer.scanPathWord()
                if word.isEmpty {
                    error("Expected a path segment after '/'.", SourceRange(start: segStart, end: segStart))
                    break
                }
                segments.append(.literal(word))
            }
            if lexer.peekByte() == UInt8(ascii: "/"), lexer.peekByte(1) != UInt8(ascii: "/"), lexer.peekByte(1) != UInt8(ascii: "*") {
                lexer.advanceByte()
            } else {
                break
            }
        }
        prevEnd = lexer.position
        tok = lexer.next()
        return segments
    }

    mutating func parseAllow() -> AllowStatement? {
        let start = tok.range.start
        advance()
        var methods: [AllowMethod] = []
        while true {
            if tok.kind == .identifier, let m = AllowMethod(rawValue: tok.text) {
                methods.append(m)
                advance()
            } else if tok.kind == .identifier {
                // Google's compiler accepts unknown method names; they grant nothing.
                if diagnostics.count < Self.maxDiagnostics {
                    diagnostics.append(Diagnostic(.warning, "Unknown method '\(tok.text)'; expected read, write, get, list, "
                                                  + "create, update or delete. It grants nothing.", at: tok.range))
                }
                advance()
            } else {
                error("Expected a method (read, write, get, list, create, update or delete) but found \(tok.display).")
                if tok.kind == .identifier { advance() } else { break }
            }
            if tok.kind == .comma { advance() } else { break }
        }
        let head = range(from: start)
        var condition: Expr?
        if tok.kind == .colon {
            advance()
            if tok.isIdentifier("if") {
                advance()
            } else {
                error("Missing 'if' before conditional expression.")
            }
            condition = parseExpression()
        } else if tok.kind == .identifier && tok.text == "if" {
            error("Expected ':' before 'if'.")
            advance()
            condition = parseExpression()
        } else if tok.kind != .semicolon && tok.kind != .rbrace {
            error("Expected ':' or ';' after the allowed methods but found \(tok.display).")
            synchronize()
            return nil
        }
        let full = range(from: start)
        if tok.kind == .semicolon {
            advance()
        } else if tok.kind != .rbrace {
            error("Expected ';' after the allow statement but found \(tok.display).")
            synchronize()
        }
        guard !methods.isEmpty else { return nil }
        return AllowStatement(methods: methods, condition: condition, range: full, headRange: head, source: source)
    }

    mutating func parseFunction(version: String?) -> FunctionDeclaration? {
        let start = tok.range.start
        advance()
        guard tok.kind == .identifier else {
            error("Expected a function name but found \(tok.display).")
            synchronize()
            return nil
        }
        let name = tok.text
        let nameRange = tok.range
        advance()
        var params: [String] = []
        guard expect(.lparen, "after the function name") else {
            synchronize()
            return nil
        }
        if tok.kind != .rparen {
            while true {
                if tok.kind == .identifier {
                    if params.contains(tok.text) { error("Duplicate parameter '\(tok.text)'.") }
                    params.append(tok.text)
                    advance()
                } else {
                    error("Expected a parameter name but found \(tok.display).")
                    break
                }
                if tok.kind == .comma { advance() } else { break }
            }
        }
        guard expect(.rparen, "to close the parameter list"), expect(.lbrace, "to open the function body") else {
            synchronize()
            return nil
        }
        var bindings: [FunctionDeclaration.Binding] = []
        while tok.isIdentifier("let") {
            let letStart = tok.range.start
            advance()
            var letName = ""
            if tok.kind == .identifier {
                letName = tok.text
                advance()
            } else {
                error("Expected a name after 'let' but found \(tok.display).")
            }
            expect(.assign, "after the let name")
            let value = parseExpression()
            let r = range(from: letStart)
            if tok.kind == .semicolon { advance() } else { error("Expected ';' after the let binding but found \(tok.display).") }
            if version != "2" {
                error("Let bindings are not allowed in rules_version=\"1\"; add rules_version = '2'; at the top of the file.", r)
            }
            if !letName.isEmpty {
                if bindings.contains(where: { $0.name == letName }) || params.contains(letName) {
                    error("'\(letName)' is already defined in this function.", r)
                }
                bindings.append(.init(name: letName, value: value, range: r))
            }
        }
        var body: Expr
        if tok.isIdentifier("return") {
            advance()
            body = parseExpression()
            if tok.kind == .semicolon { advance() }
        } else {
            error("Expected 'return' in the body of function '\(name)' but found \(tok.display).")
            body = make(.error, tok.range)
            synchronize()
        }
        if tok.kind == .rbrace {
            advance()
        } else {
            error("Expected '}' to close function '\(name)' but found \(tok.display).")
            synchronize()
            if tok.kind == .rbrace { advance() }
        }
        return FunctionDeclaration(name: name, parameters: params, bindings: bindings, body: body,
                                   range: range(from: start), nameRange: nameRange)
    }
}
