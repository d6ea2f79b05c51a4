/// Turns rules source into tokens on demand. The parser drives it: path literals
/// (`/users/$(uid)`) and match paths are scanned in raw mode through ``scanPathWord()`` and
/// friends, because `/` starts a path where an operand is expected and divides elsewhere.
struct Lexer {
    let bytes: [UInt8]
    private(set) var position: SourcePosition
    var diagnostics: [Diagnostic] = []

    init(bytes: [UInt8]) {
        self.bytes = bytes
        position = SourcePosition(offset: 0, line: 1, column: 1)
    }

    // MARK: Raw access

    func peekByte(_ ahead: Int = 0) -> UInt8? {
        let i = position.offset + ahead
        return i < bytes.count ? bytes[i] : nil
    }

    mutating func reset(to p: SourcePosition) { position = p }

    mutating func advanceByte() {
        guard position.offset < bytes.count else { return }
        let b = bytes[position.offset]
        position.offset += 1
        if b == 10 {
            position.line += 1
            position.column = 1
        } else if b & 0xC0 != 0x80 {
            position.column += 1
        }
    }

    private mutating func error(_ message: String, _ range: SourceRange) {
        if diagnostics.count < 100 { diagnostics.append(Diagnostic(.error, message, at: range)) }
    }

    // MARK: Tokens

    mutating func skipTrivia() {
        while let b = peekByte() {
            if b == 32 || b == 9 || b == 10 || b == 13 || b == 12 {
                advanceByte()
            } else if b == 47, peekByte(1) == 47 {
                while let c = peekByte(), c != 10 { advanceByte() }
            } else if b == 47, peekByte(1) == 42 {
                let start = position
                advanceByte(); advanceByte()
                var closed = false
                while let c = peekByte() {
                    if c == 42, peekByte(1) == 47 { advanceByte(); advanceByte(); closed = true; break }
                    advanceByte()
                }
                if !closed { error("Unterminated block comment.", SourceRange(start: start, end: position)) }
            } else {
                break
            }
        }
    }

    mutating func next() -> Token {
        skipTrivia()
        let start = position
        guard let b = peekByte() else { return Token(kind: .eof, range: SourceRange(start: start, end: start)) }
        func single(_ k: Token.Kind) -> Token {
            advanceByte()
            return Token(kind: k, range: SourceRange(start: start, end: position))
        }
        func double(_ second: UInt8, _ two: Token.Kind, _ one: Token.Kind?) -> Token {
            advanceByte()
            if peekByte() == second {
                advanceByte()
                return Token(kind: two, range: SourceRange(start: start, end: position))
            }
            if let one { return Token(kind: one, range: SourceRange(start: start, end: position)) }
            let t = Token(kind: .invalid, range: SourceRange(start: start, end: position), text: String(UnicodeScalar(b)))
            error("Unexpected '\(t.text)'.", t.range)
            return t
        }
        switch b {
        case UInt8(ascii: "("): return single(.lparen)
        case UInt8(ascii: ")"): return single(.rparen)
        case UInt8(ascii: "{"): return single(.lbrace)
        case UInt8(ascii: "}"): return single(.rbrace)
        case UInt8(ascii: "["): return single(.lbracket)
        case UInt8(ascii: "]"): return single(.rbracket)
        case UInt8(ascii: ","): return single(.comma)
        case UInt8(ascii: ";"): return single(.semicolon)
        case UInt8(ascii: ":"): return single(.colon)
        case UInt8(ascii: "?"): return single(.question)
        case UInt8(ascii: "+"): return single(.plus)
        case UInt8(ascii: "-"): return single(.minus)
        case UInt8(ascii: "*"): return single(.star)
        case UInt8(ascii: "/"): return single(.slash)
        case UInt8(ascii: "%"): return single(.percent)
        case UInt8(ascii: "."):
            if let d = peekByte(1), isDigit(d) { return number() }
            return single(.dot)
        case UInt8(ascii: "!"): return double(UInt8(ascii: "="), .ne, .bang)
        case UInt8(ascii: "="): return double(UInt8(ascii: "="), .eq, .assign)
        case UInt8(ascii: "<"): return double(UInt8(ascii: "="), .le, .lt)
        case UInt8(ascii: ">"): return double(UInt8(ascii: "="), .ge, .gt)
        case UInt8(ascii: "&"): return double(UInt8(ascii: "&"), .and, nil)
        case UInt8(ascii: "|"): return double(UInt8(ascii: "|"), .or, nil)
        case UInt8(ascii: "'"), UInt8(ascii: "\""): return quoted(start: start, isBytes: false)
        case UInt8(ascii: "b"), UInt8(ascii: "B"):
            if let q = peekByte(1), q == UInt8(ascii: "'") || q == UInt8(ascii: "\"") {
                advanceByte()
                return quoted(start: start, isBytes: true)
            }
            return identifier()
        default:
            if isDigit(b) { return number() }
            if isIdentStart(b) { return identifier() }
            // One whole (possibly multi-byte) character.
            advanceByte()
            while let c = peekByte(), c & 0xC0 == 0x80 { advanceByte() }
            let range = SourceRange(start: start, end: position)
            let text = String(decoding: bytes[start.offset..<position.offset], as: UTF8.self)
            error("Unexpected '\(text)'.", range)
            return Token(kind: .invalid, range: range, text: text)
        }
    }

    private mutating func identifier() -> Token {
        let start = position
        while let c = peekByte(), isIdentPart(c) { advanceByte() }
        let text = String(decoding: bytes[start.offset..<position.offset], as: UTF8.self)
        return Token(kind: .identifier, range: SourceRange(start: start, end: position), text: text)
    }

    private mutating func number() -> Token {
        let start = position
        var isFloat = false
        while let c = peekByte(), isDigit(c) { advanceByte() }
        if peekByte() == UInt8(ascii: "."), let d = peekByte(1), isDigit(d) {
            isFloat = true
            advanceByte()
            while let c = peekByte(), isDigit(c) { advanceByte() }
        }
        let range = SourceRange(start: start, end: position)
        let text = String(decoding: bytes[start.offset..<position.offset], as: UTF8.self)
        if isFloat {
            return Token(kind: .float, range: range, text: text, floatValue: Double(text) ?? .nan)
        }
        var v: UInt64 = 0
        var overflow = false
        for c in text.utf8 {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(c - 48))
            overflow = overflow || o1 || o2
            v = s
        }
        if overflow || v > UInt64(Int64.max) + 1 { error("Integer literal \(text) is out of range.", range) }
        return Token(kind: .int, range: range, text: text, intMagnitude: overflow ? 0 : v)
    }

    /// A single- or double-quoted string (or, after `b`, bytes) literal with escapes.
    private mutating func quoted(start: SourcePosition, isBytes: Bool) -> Token {
        let quote = peekByte()!
        advanceByte()
        var out: [UInt8] = []
        var terminated = false
        while let c = peekByte() {
            if c == quote { advanceByte(); terminated = true; break }
            if c == 10 { break }
            if c != UInt8(ascii: "\\") {
                out.append(c)
                advanceByte()
                continue
            }
            let escStart = position
            advanceByte()
            guard let e = peekByte(), e != 10 else { break }
            advanceByte()
            func escRange() -> SourceRange { SourceRange(start: escStart, end: position) }
            switch e {
            case UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\""):
                out.append(e)
            case UInt8(ascii: "n"): out.append(10)
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "r"): out.append(13)
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "u") where isBytes:
                error("Invalid bytes literal: \\u escapes are not allowed in bytes; use \\xHH.", escRange())
            case UInt8(ascii: "x"), UInt8(ascii: "u"):
                let count = e == UInt8(ascii: "u") ? 4 : 2
                var v: UInt32 = 0
                var ok = true
                for _ in 0..<count {
                    guard let h = peekByte(), let d = hexValue(h) else { ok = false; break }
                    v = v &* 16 &+ UInt32(d)
                    advanceByte()
                }
                if !ok {
                    error("Invalid escape sequence: expected \(count) hex digits.", escRange())
                } else if isBytes && count == 2 {
                    out.append(UInt8(v))
                } else if let scalar = Unicode.Scalar(v) {
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                } else {
                    error("Invalid escape sequence: \\\(UnicodeScalar(e))\(String(v, radix: 16)) is not a Unicode scalar value.", escRange())
                }
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var v = UInt32(e - 48)
                var ok = true
                for _ in 0..<2 {
                    guard let o = peekByte(), o >= 48, o <= 55 else { ok = false; break }
                    v = v * 8 + UInt32(o - 48)
                    advanceByte()
                }
                if !ok || v > 255 {
                    error("Invalid octal escape sequence: expected three octal digits (\\000 to \\377).", escRange())
                } else if isBytes {
                    out.append(UInt8(v))
                } else {
                    out.append(contentsOf: Array(String(Character(Unicode.Scalar(UInt8(v)))).utf8))
                }
            default:
                error("Illegal escape sequence '\\\(String(decoding: [e], as: UTF8.self))'. Write '\\\\' for a backslash.", escRange())
            }
        }
        let range = SourceRange(start: start, end: position)
        if !terminated { error("Unterminated \(isBytes ? "bytes" : "string") literal.", range) }
        if isBytes { return Token(kind: .bytes, range: range, bytesValue: out) }
        return Token(kind: .string, range: range, text: String(decoding: out, as: UTF8.self))
    }

    // MARK: Raw scanning for paths

    /// Scans the characters of a bare path segment (`users`, `alice.data`, `my-id`).
    mutating func scanPathWord() -> String {
        let start = position.offset
        while let c = peekByte(), isPathChar(c) { advanceByte() }
        return String(decoding: bytes[start..<position.offset], as: UTF8.self)
    }

    /// Scans `(…)` as literal text, parentheses included (`(default)`). Returns nil if unclosed.
    mutating func scanParenthesisedSegment() -> String? {
        let start = position.offset
        advanceByte()
        while let c = peekByte(), c != UInt8(ascii: ")") {
            if c == 10 || c == 32 || c == UInt8(ascii: "/") { return nil }
            advanceByte()
        }
        guard peekByte() == UInt8(ascii: ")") else { return nil }
        advanceByte()
        return String(decoding: bytes[start..<position.offset], as: UTF8.self)
    }

    mutating func scanIdentifierRaw() -> String {
        let start = position.offset
        if let c = peekByte(), isIdentStart(c) {
            while let c = peekByte(), isIdentPart(c) { advanceByte() }
        }
        return String(decoding: bytes[start..<position.offset], as: UTF8.self)
    }
}

@inline(__always) func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
@inline(__always) func isIdentStart(_ c: UInt8) -> Bool { (c | 0x20) >= 97 && (c | 0x20) <= 122 || c == 95 }
@inline(__always) func isIdentPart(_ c: UInt8) -> Bool { isIdentStart(c) || isDigit(c) }
@inline(__always) func isPathChar(_ c: UInt8) -> Bool {
    isIdentPart(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: "~")
        || c == UInt8(ascii: "%") || c == UInt8(ascii: "@") || c >= 0x80
}
@inline(__always) func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 48...57: c - 48
    case 65...70: c - 55
    case 97...102: c - 87
    default: nil
    }
}
