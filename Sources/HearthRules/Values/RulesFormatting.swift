/// Text forms of values: Java's `Double.toString` (what `string(1.5)` returns in Google's
/// implementation: `2.0`, `1.0E21`, `1.0E-4`) and a readable form for reasons and `debug()`.
enum RulesFormatting {
    static func javaDouble(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        if d == 0 { return d.sign == .minus ? "-0.0" : "0.0" }
        // Shortest round-tripping digits and decimal exponent, from Swift's formatter.
        let (digits, exponent) = shortestDigits(abs(d))
        let sign = d < 0 ? "-" : ""
        let a = abs(d)
        if a >= 1e-3 && a < 1e7 {
            // Plain notation with at least one fractional digit.
            let pointPos = exponent + 1  // digits before the point
            var intPart: String
            var fracPart: String
            if pointPos <= 0 {
                intPart = "0"
                fracPart = String(repeating: "0", count: -pointPos) + digits
            } else if pointPos >= digits.count {
                intPart = digits + String(repeating: "0", count: pointPos - digits.count)
                fracPart = "0"
            } else {
                intPart = String(digits.prefix(pointPos))
                fracPart = String(digits.dropFirst(pointPos))
            }
            if fracPart.isEmpty { fracPart = "0" }
            if intPart.isEmpty { intPart = "0" }
            return sign + intPart + "." + fracPart
        }
        let first = digits.prefix(1)
        var rest = String(digits.dropFirst())
        if rest.isEmpty { rest = "0" }
        return sign + first + "." + rest + "E" + String(exponent)
    }

    /// Significant digits (no leading/trailing zeros) and the exponent of the first digit.
    static func shortestDigits(_ d: Double) -> (String, Int) {
        let text = "\(d)"  // e.g. "1234.5", "1e-05", "1.2345e+20"
        var mantissa = Substring(text)
        var exp = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exp = Int(text[text.index(after: e)...]) ?? 0
        }
        var intDigits = mantissa
        var fracDigits: Substring = ""
        if let dot = mantissa.firstIndex(of: ".") {
            intDigits = mantissa[..<dot]
            fracDigits = mantissa[mantissa.index(after: dot)...]
        }
        var all = String(intDigits) + String(fracDigits)
        var firstExp = exp + intDigits.count - 1
        while all.hasPrefix("0") && all.count > 1 {
            all.removeFirst()
            firstExp -= 1
        }
        while all.hasSuffix("0") && all.count > 1 { all.removeLast() }
        return (all, firstExp)
    }

    static func quoted(_ s: String) -> String {
        var out = "'"
        for c in s.unicodeScalars {
            switch c {
            case "'": out += "\\'"
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "'"
    }

    static func debugString(_ v: RulesValue) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .float(let d): return javaDouble(d)
        case .string(let s): return quoted(s)
        case .bytes(let b): return "b'" + b.map { "\\x" + hex2($0) }.joined() + "'"
        case .list(let l): return "[" + l.map(debugString).joined(separator: ", ") + "]"
        case .map(let m):
            let keys = m.keys.sorted(by: RulesOrdering.utf16Less)
            return "{" + keys.map { quoted($0) + ": " + debugString(m[$0]!) }.joined(separator: ", ") + "}"
        case .set(let s): return "set(" + s.elements.map(debugString).joined(separator: ", ") + ")"
        case .path(let p): return p.description
        case .timestamp(let t): return "timestamp(\(t.rfc3339))"
        case .duration(let d): return "duration(\(d))"
        case .latlng(let a, let o): return "latlng(\(javaDouble(a)), \(javaDouble(o)))"
        case .mapDiff(let d):
            return "map_diff(added: \(d.added), removed: \(d.removed), changed: \(d.changed))"
        }
    }

    static func hex2(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String(digits[Int(b >> 4)]) + String(digits[Int(b & 15)])
    }
}
