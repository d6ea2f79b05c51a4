/// A lexical token of the rules language.
struct Token: Sendable {
    enum Kind: Sendable, Equatable {
        case identifier
        case int        // payload: magnitude (a leading `-` is a unary operator)
        case float
        case string
        case bytes
        case lparen, rparen, lbrace, rbrace, lbracket, rbracket
        case comma, semicolon, colon, dot, question
        case plus, minus, star, slash, percent
        case bang, assign, eq, ne, lt, le, gt, ge, and, or
        case eof
        case invalid
    }

    var kind: Kind
    var range: SourceRange
    /// Identifier text, decoded string contents, or the lexeme for numbers.
    var text: String = ""
    var intMagnitude: UInt64 = 0
    var floatValue: Double = 0
    var bytesValue: [UInt8] = []

    func isIdentifier(_ name: String) -> Bool { kind == .identifier && text == name }

    var display: String {
        switch kind {
        case .identifier: "'\(text)'"
        case .int, .float: "'\(text)'"
        case .string: "string literal"
        case .bytes: "bytes literal"
        case .eof: "end of file"
        case .invalid: "'\(text)'"
        default: "'\(Token.spelling(kind))'"
        }
    }

    static func spelling(_ kind: Kind) -> String {
        switch kind {
        case .lparen: "("
        case .rparen: ")"
        case .lbrace: "{"
        case .rbrace: "}"
        case .lbracket: "["
        case .rbracket: "]"
        case .comma: ","
        case .semicolon: ";"
        case .colon: ":"
        case .dot: "."
        case .question: "?"
        case .plus: "+"
        case .minus: "-"
        case .star: "*"
        case .slash: "/"
        case .percent: "%"
        case .bang: "!"
        case .assign: "="
        case .eq: "=="
        case .ne: "!="
        case .lt: "<"
        case .le: "<="
        case .gt: ">"
        case .ge: ">="
        case .and: "&&"
        case .or: "||"
        case .identifier: "identifier"
        case .int: "integer"
        case .float: "float"
        case .string: "string"
        case .bytes: "bytes"
        case .eof: "end of file"
        case .invalid: "invalid token"
        }
    }
}
