/// A JSON value that keeps object key order and number lexemes, with a strict parser and
/// a compact serializer. Every Hearth transport reads and writes JSON through this type.
public indirect enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, kept as its lexeme so int64 and double precision are the reader's choice.
    case number(String)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    public static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    public static func number(_ i: Int) -> JSON { .number(String(i)) }

    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        for (k, v) in members where k == key { return v }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var objectValue: [(String, JSON)]? { if case .object(let o) = self { return o }; return nil }
    public var arrayValue: [JSON]? { if case .array(let a) = self { return a }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var isNull: Bool { if case .null = self { return true }; return false }

    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    // MARK: Parsing

    public static func parse(_ text: String) throws(HearthError) -> JSON {
        try parse(Array(text.utf8))
    }

    public static func parse<C: Collection>(_ bytes: C) throws(HearthError) -> JSON where C.Element == UInt8 {
        var p = Parser(bytes: Array(bytes))
        p.skipWhitespace()
        let v = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.i == p.bytes.count else { throw p.error("Unexpected content after JSON value") }
        return v
    }

    struct Parser {
        let bytes: [UInt8]
        var i = 0
        init(bytes: [UInt8]) { self.bytes = bytes }

        func error(_ what: String) -> HearthError {
            .invalidArgument("Invalid JSON payload received. \(what) at byte \(i).")
        }

        mutating func skipWhitespace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        mutating func value(depth: Int) throws(HearthError) -> JSON {
            guard depth < 512 else { throw error("Nesting too deep") }
            guard i < bytes.count else { throw error("Unexpected end of input") }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                var members: [(String, JSON)] = []
                skipWhitespace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                while true {
                    skipWhitespace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("Expected a string key") }
                    let key = try string()
                    skipWhitespace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("Expected ':'") }
                    i += 1
                    skipWhitespace()
                    members.append((key, try value(depth: depth + 1)))
                    skipWhitespace()
                    guard i < bytes.count else { throw error("Unexpected end of input") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                    throw error("Expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                i += 1
                var elements: [JSON] = []
                skipWhitespace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
                while true {
                    skipWhitespace()
                    elements.append(try value(depth: depth + 1))
                    skipWhitespace()
                    guard i < bytes.count else { throw error("Unexpected end of input") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
                    throw error("Expected ',' or ']'")
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: String) throws(HearthError) {
            let w = Array(word.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else { throw error("Invalid literal") }
            i += w.count
        }

        mutating func number() throws(HearthError) -> String {
            let start = i
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            func digits(_ p: inout Parser) -> Int {
                let s = p.i
                while p.i < p.bytes.count, p.bytes[p.i] >= 48, p.bytes[p.i] <= 57 { p.i += 1 }
                return p.i - s
            }
            let intDigits = digits(&self)
            guard intDigits > 0 else { throw error("Unexpected character") }
            if intDigits > 1 && bytes[i - intDigits] == 48 { throw error("Leading zeros are not allowed") }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digits(&self) > 0 else { throw error("Invalid number") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { throw error("Invalid number") }
            }
            return String(decoding: bytes[start..<i], as: UTF8.self)
        }

        mutating func hex4() throws(HearthError) -> UInt32 {
            guard i + 4 <= bytes.count else { throw error("Invalid \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt32
                switch c {
                case 48...57: d = UInt32(c - 48)
                case 65...70: d = UInt32(c - 55)
                case 97...102: d = UInt32(c - 87)
                default: throw error("Invalid \\u escape")
                }
                v = v * 16 + d
                i += 1
            }
            return v
        }

        mutating func string() throws(HearthError) -> String {
            i += 1
            let start = i
            // Fast path: no escapes.
            while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != UInt8(ascii: "\\"), bytes[i] >= 0x20 { i += 1 }
            guard i < bytes.count else { throw error("Unterminated string") }
            if bytes[i] == UInt8(ascii: "\"") {
                defer { i += 1 }
                return try validated(bytes[start..<i])
            }
            var out = Array(bytes[start..<i])
            while true {
                guard i < bytes.count else { throw error("Unterminated string") }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; return try validated(out[...]) }
                guard c >= 0x20 else { throw error("Control character in string") }
                if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
                i += 1
                guard i < bytes.count else { throw error("Unterminated string") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        guard i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                            throw error("Unpaired surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw error("Unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar < 0xE000 {
                        throw error("Unpaired surrogate")
                    }
                    out.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
                default: throw error("Invalid escape")
                }
            }
        }

        func validated(_ slice: ArraySlice<UInt8>) throws(HearthError) -> String {
            guard let s = String(validating: slice, as: UTF8.self) else { throw error("Invalid UTF-8 in string") }
            return s
        }
    }

    // MARK: Serialising

    public func serialized() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public func serializedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): JSON.writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (n, e) in a.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                e.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (n, (k, v)) in o.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(k, to: &out)
                out.append(UInt8(ascii: ":"))
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 0xF)])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
