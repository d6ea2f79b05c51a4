import HearthCore

/// The JSON of a `database.rules.json` file, read with the positions diagnostics need.
///
/// Firebase accepts `//` and `/* */` comments in this file, so HearthCore's strict `JSON`
/// parser cannot read it. Strings keep the file position of every decoded scalar, so an
/// error inside a rule expression points at the right line and column of the file even
/// when the expression contains escapes.
struct DatabaseRulesJSON: Sendable {
    enum Kind: Sendable {
        case null
        case bool(Bool)
        case number(String)
        case string(String, positions: [SourcePosition])
        case array([DatabaseRulesJSON])
        /// Members in file order, each with the range of its key.
        case object([Member])
    }

    struct Member: Sendable {
        var key: String
        var keyRange: SourceRange
        var value: DatabaseRulesJSON
    }

    var kind: Kind
    var range: SourceRange

    var typeName: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension DatabaseRulesJSON {
    /// The value as plain JSON (comments and positions gone), members in file order.
    var plain: JSON {
        switch kind {
        case .null: .null
        case .bool(let b): .bool(b)
        case .number(let text): .number(text)
        case .string(let text, _): .string(text)
        case .array(let items): .array(items.map(\.plain))
        case .object(let members): .object(members.map { ($0.key, $0.value.plain) })
        }
    }
}

/// A recursive-descent reader for JSON with comments. It never traps: every problem is a
/// diagnostic with a range.
struct DatabaseRulesJSONReader {
    static let maxNesting = 200

    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var position = SourcePosition(offset: 0, line: 1, column: 1)

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    struct Failure: Error {
        var diagnostic: Diagnostic
    }

    static func read(_ text: String) throws(Failure) -> DatabaseRulesJSON {
        var reader = DatabaseRulesJSONReader(text)
        try reader.skipTrivia()
        let value = try reader.value(depth: 0)
        try reader.skipTrivia()
        if reader.index < reader.scalars.count {
            throw reader.failure("unexpected \(reader.describeCurrent()) after the rules object", at: reader.here)
        }
        return value
    }

    private var here: SourceRange {
        var end = position
        if index < scalars.count {
            end.offset += scalars[index].utf8Length
            end.column += 1
        }
        return SourceRange(start: position, end: end)
    }

    private func failure(_ message: String, at range: SourceRange) -> Failure {
        Failure(diagnostic: Diagnostic(.error, message, at: range))
    }

    private func describeCurrent() -> String {
        guard index < scalars.count else { return "end of file" }
        let c = scalars[index]
        return c.value < 0x20 ? "control character" : "'\(Character(c))'"
    }

    private mutating func advance() {
        guard index < scalars.count else { return }
        let c = scalars[index]
        position.offset += c.utf8Length
        if c == "\n" {
            position.line += 1
            position.column = 1
        } else {
            position.column += 1
        }
        index += 1
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        index + ahead < scalars.count ? scalars[index + ahead] : nil
    }

    private mutating func skipTrivia() throws(Failure) {
        while let c = peek() {
            switch c {
            case " ", "\t", "\n", "\r", "\u{FEFF}":
                advance()
            case "/" where peek(1) == "/":
                while let d = peek(), d != "\n" { advance() }
            case "/" where peek(1) == "*":
                let start = here
                advance()
                advance()
                while true {
                    guard let d = peek() else { throw failure("unterminated comment", at: start) }
                    if d == "*", peek(1) == "/" {
                        advance()
                        advance()
                        break
                    }
                    advance()
                }
            default:
                return
            }
        }
    }

    private mutating func value(depth: Int) throws(Failure) -> DatabaseRulesJSON {
        if depth > Self.maxNesting { throw failure("the rules nest too deeply", at: here) }
        let start = position
        guard let c = peek() else { throw failure("unexpected end of file, expected a value", at: here) }
        switch c {
        case "{":
            advance()
            var members: [DatabaseRulesJSON.Member] = []
            try skipTrivia()
            if peek() == "}" {
                advance()
                return DatabaseRulesJSON(kind: .object(members), range: SourceRange(start: start, end: position))
            }
            while true {
                try skipTrivia()
                guard peek() == "\"" else {
                    throw failure("expected a quoted key, found \(describeCurrent())", at: here)
                }
                let keyStart = position
                let (key, _) = try string()
                let keyRange = SourceRange(start: keyStart, end: position)
                try skipTrivia()
                guard peek() == ":" else { throw failure("expected ':' after the key, found \(describeCurrent())", at: here) }
                advance()
                try skipTrivia()
                let member = try value(depth: depth + 1)
                members.append(DatabaseRulesJSON.Member(key: key, keyRange: keyRange, value: member))
                try skipTrivia()
                if peek() == "," {
                    advance()
                    continue
                }
                if peek() == "}" {
                    advance()
                    return DatabaseRulesJSON(kind: .object(members), range: SourceRange(start: start, end: position))
                }
                throw failure("expected ',' or '}', found \(describeCurrent())", at: here)
            }
        case "[":
            advance()
            var items: [DatabaseRulesJSON] = []
            try skipTrivia()
            if peek() == "]" {
                advance()
                return DatabaseRulesJSON(kind: .array(items), range: SourceRange(start: start, end: position))
            }
            while true {
                try skipTrivia()
                items.append(try value(depth: depth + 1))
                try skipTrivia()
                if peek() == "," {
                    advance()
                    continue
                }
                if peek() == "]" {
                    advance()
                    return DatabaseRulesJSON(kind: .array(items), range: SourceRange(start: start, end: position))
                }
                throw failure("expected ',' or ']', found \(describeCurrent())", at: here)
            }
        case "\"":
            let (text, positions) = try string()
            return DatabaseRulesJSON(kind: .string(text, positions: positions), range: SourceRange(start: start, end: position))
        case "t", "f", "n":
            var word = ""
            while let d = peek(), ("a"..."z").contains(d) {
                word.unicodeScalars.append(d)
                advance()
            }
            let range = SourceRange(start: start, end: position)
            switch word {
            case "true": return DatabaseRulesJSON(kind: .bool(true), range: range)
            case "false": return DatabaseRulesJSON(kind: .bool(false), range: range)
            case "null": return DatabaseRulesJSON(kind: .null, range: range)
            default: throw failure("unexpected '\(word)', expected a value", at: range)
            }
        case "-", "0"..."9":
            var text = ""
            while let d = peek(), d == "-" || d == "+" || d == "." || d == "e" || d == "E" || ("0"..."9").contains(d) {
                text.unicodeScalars.append(d)
                advance()
            }
            let range = SourceRange(start: start, end: position)
            guard Double(text) != nil, text.last.map({ $0.isNumber }) == true else {
                throw failure("malformed number '\(text)'", at: range)
            }
            return DatabaseRulesJSON(kind: .number(text), range: range)
        default:
            throw failure("unexpected \(describeCurrent()), expected a value", at: here)
        }
    }

    /// A string literal: its decoded text and, for each decoded scalar, where it starts in
    /// the file (plus one entry for the closing quote).
    private mutating func string() throws(Failure) -> (String, [SourcePosition]) {
        let open = here
        advance()
        var text = ""
        var positions: [SourcePosition] = []
        while true {
            guard let c = peek() else { throw failure("unterminated string", at: open) }
            let at = position
            if c == "\"" {
                positions.append(at)
                advance()
                return (text, positions)
            }
            if c.value < 0x20 { throw failure("control character in a string (write it as an escape)", at: here) }
            if c != "\\" {
                text.unicodeScalars.append(c)
                positions.append(at)
                advance()
                continue
            }
            let escapeRange = here
            advance()
            guard let e = peek() else { throw failure("unterminated string", at: open) }
            advance()
            let decoded: Unicode.Scalar
            switch e {
            case "\"": decoded = "\""
            case "\\": decoded = "\\"
            case "/": decoded = "/"
            case "b": decoded = "\u{8}"
            case "f": decoded = "\u{C}"
            case "n": decoded = "\n"
            case "r": decoded = "\r"
            case "t": decoded = "\t"
            case "u":
                var unit = try hex4(escapeRange)
                if (0xD800...0xDBFF).contains(unit), peek() == "\\", peek(1) == "u" {
                    advance()
                    advance()
                    let low = try hex4(escapeRange)
                    guard (0xDC00...0xDFFF).contains(low) else { throw failure("invalid surrogate pair", at: escapeRange) }
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(unit) else { throw failure("invalid \\u escape", at: escapeRange) }
                decoded = scalar
            default:
                throw failure("invalid escape '\\\(Character(e))'", at: escapeRange)
            }
            text.unicodeScalars.append(decoded)
            positions.append(at)
        }
    }

    private mutating func hex4(_ range: SourceRange) throws(Failure) -> UInt32 {
        var unit: UInt32 = 0
        for _ in 0..<4 {
            guard let h = peek(), h.isASCII, let digit = UInt32(String(h), radix: 16) else {
                throw failure("invalid \\u escape", at: range)
            }
            unit = unit << 4 | digit
            advance()
        }
        return unit
    }
}

extension Unicode.Scalar {
    var utf8Length: Int {
        switch value {
        case 0..<0x80: 1
        case 0x80..<0x800: 2
        case 0x800..<0x10000: 3
        default: 4
        }
    }
}
