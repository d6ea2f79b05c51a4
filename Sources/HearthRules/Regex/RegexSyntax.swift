/// The syntax tree of a regular expression (an RE2 subset).
indirect enum RegexNode {
    case empty
    case literal(UInt32, fold: Bool)
    case set(CharSet)
    case concat([RegexNode])
    case alternate([RegexNode])
    case `repeat`(RegexNode, min: Int, max: Int?, greedy: Bool)
    case capture(RegexNode, index: Int)
    case assertion(RegexAssertion)
}

enum RegexAssertion {
    case beginText, endText, beginLine, endLine, wordBoundary, notWordBoundary
}

/// A set of code points: ranges plus Unicode general categories, optionally negated and
/// case-folded.
struct CharSet {
    var ranges: [ClosedRange<UInt32>] = []
    var categories: [(Set<Unicode.GeneralCategory>, Bool)] = []  // (categories, negated)
    var negated = false
    var fold = false

    static func of(_ ranges: [ClosedRange<UInt32>], negated: Bool = false) -> CharSet {
        CharSet(ranges: ranges, negated: negated)
    }

    static let digit = CharSet.of([48...57])
    static let word = CharSet.of([48...57, 65...90, 95...95, 97...122])
    static let space = CharSet.of([9...10, 12...13, 32...32])
    static let anyButNewline = CharSet.of([10...10], negated: true)
    static let any = CharSet.of([0...0x10FFFF])

    func rawContains(_ c: UInt32) -> Bool {
        for r in ranges where r.contains(c) { return true }
        if !categories.isEmpty, let s = Unicode.Scalar(c) {
            let gc = s.properties.generalCategory
            for (cats, neg) in categories where cats.contains(gc) != neg { return true }
        }
        return false
    }

    func contains(_ c: UInt32) -> Bool {
        var hit = rawContains(c)
        if !hit && fold {
            for f in RegexFold.variants(c) where rawContains(f) {
                hit = true
                break
            }
        }
        return hit != negated
    }

    /// Adds everything in `other` (which must not be negated or folded differently).
    mutating func add(_ other: CharSet) {
        if other.negated {
            // Complement of other's ranges (categories of a negated set become negated categories).
            var lo: UInt32 = 0
            for r in other.ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                if r.lowerBound > lo { ranges.append(lo...(r.lowerBound - 1)) }
                lo = max(lo, r.upperBound &+ 1)
            }
            if lo <= 0x10FFFF { ranges.append(lo...0x10FFFF) }
            for (c, n) in other.categories { categories.append((c, !n)) }
        } else {
            ranges += other.ranges
            categories += other.categories
        }
    }
}

enum RegexFold {
    /// Other-case forms of a code point (simple case mappings only).
    static func variants(_ c: UInt32) -> [UInt32] {
        if c < 128 {
            if c >= 65 && c <= 90 { return [c + 32] }
            if c >= 97 && c <= 122 { return [c - 32] }
            return []
        }
        guard let s = Unicode.Scalar(c) else { return [] }
        var out: [UInt32] = []
        for m in [s.properties.lowercaseMapping, s.properties.uppercaseMapping, s.properties.titlecaseMapping] {
            let scalars = m.unicodeScalars
            if scalars.count == 1, let f = scalars.first, f.value != c, !out.contains(f.value) { out.append(f.value) }
        }
        return out
    }

    static func fold(_ c: UInt32) -> UInt32 {
        if c < 128 { return (c >= 65 && c <= 90) ? c + 32 : c }
        guard let s = Unicode.Scalar(c) else { return c }
        let m = s.properties.lowercaseMapping.unicodeScalars
        return m.count == 1 ? m.first!.value : c
    }
}

/// Parses RE2 syntax: literals, `.`, classes (`[a-z]`, `[^…]`, `[[:alpha:]]`, `\d\w\s`,
/// `\pL`, `\p{Lu}`), groups (capturing, `(?:…)`, `(?P<name>…)`), flags `(?imsU)` and
/// `(?i:…)`, alternation, greedy and lazy repetition (`* + ? {n} {n,} {n,m}`), anchors
/// (`^ $ \A \z \b \B`), `\Q…\E`. Backreferences and look-around are not RE2 and are rejected.
struct RegexParser {
    struct Flags {
        var caseInsensitive = false
        var multiLine = false
        var dotAll = false
        var ungreedy = false
    }

    static let maxRepeat = 1000
    static let maxNesting = 100

    let chars: [UInt32]
    var pos = 0
    var captureCount = 0
    var names: [String: Int] = [:]
    var depth = 0

    init(_ pattern: String) { chars = pattern.unicodeScalars.map(\.value) }

    func err(_ m: String) -> RulesRegex.SyntaxError { RulesRegex.SyntaxError(message: m) }

    var atEnd: Bool { pos >= chars.count }
    func peek(_ k: Int = 0) -> UInt32? { pos + k < chars.count ? chars[pos + k] : nil }
    func isChar(_ c: Character, _ k: Int = 0) -> Bool { peek(k) == c.unicodeScalars.first!.value }

    mutating func parse() throws(RulesRegex.SyntaxError) -> RegexNode {
        var flags = Flags()
        let node = try parseAlternation(&flags)
        if !atEnd { throw err("unexpected ')'") }
        return node
    }

    mutating func parseAlternation(_ flags: inout Flags) throws(RulesRegex.SyntaxError) -> RegexNode {
        depth += 1
        defer { depth -= 1 }
        if depth > Self.maxNesting || (depth >= StackGuard.deep && !StackGuard.hasRoom()) { throw err("expression nests too deeply") }
        var branches: [RegexNode] = [try parseConcat(&flags)]
        while isChar("|") {
            pos += 1
            branches.append(try parseConcat(&flags))
        }
        return branches.count == 1 ? branches[0] : .alternate(branches)
    }

    mutating func parseConcat(_ flags: inout Flags) throws(RulesRegex.SyntaxError) -> RegexNode {
        var items: [RegexNode] = []
        while let c = peek(), c != 0x7C /* | */, c != 0x29 /* ) */ {
            guard let atom = try parseAtom(&flags) else { continue }
            items.append(try parseRepeats(atom, flags))
        }
        return items.count == 1 ? items[0] : (items.isEmpty ? .empty : .concat(items))
    }

    mutating func parseRepeats(_ atom: RegexNode, _ flags: Flags) throws(RulesRegex.SyntaxError) -> RegexNode {
        var node = atom
        var repeated = false
        while let c = peek() {
            var min = 0, max: Int? = nil
            let start = pos
            switch c {
            case 0x2A: min = 0; max = nil; pos += 1  // *
            case 0x2B: min = 1; max = nil; pos += 1  // +
            case 0x3F: min = 0; max = 1; pos += 1    // ?
            case 0x7B:                               // {
                guard let (lo, hi) = parseBraces() else { return node }
                min = lo
                max = hi
            default: return node
            }
            if repeated { throw err("bad repetition operator: \(String(decoding: chars[start..<pos].map { UInt8(truncatingIfNeeded: $0) }, as: UTF8.self))") }
            if case .empty = node { throw err("missing argument to repetition operator") }
            if case .assertion = node { throw err("missing argument to repetition operator") }
            if min > Self.maxRepeat || (max ?? 0) > Self.maxRepeat { throw err("bad repetition operator: count above \(Self.maxRepeat)") }
            if let max, max < min { throw err("bad repetition operator: {\(min),\(max)}") }
            var greedy = true
            if isChar("?") {
                pos += 1
                greedy = false
            }
            if flags.ungreedy { greedy.toggle() }
            node = .repeat(node, min: min, max: max, greedy: greedy)
            repeated = true
        }
        return node
    }

    /// `{n}`, `{n,}`, `{n,m}`; nil (and position unchanged) when not a valid repeat, in which
    /// case `{` is a literal, as in RE2.
    mutating func parseBraces() -> (Int, Int?)? {
        let save = pos
        pos += 1
        func number() -> Int? {
            var v = 0
            var any = false
            while let c = peek(), c >= 48, c <= 57 {
                v = Swift.min(v * 10 + Int(c - 48), 100_000)
                any = true
                pos += 1
            }
            return any ? v : nil
        }
        guard let lo = number() else { pos = save; return nil }
        var hi: Int? = lo
        if isChar(",") {
            pos += 1
            hi = number()
        }
        guard isChar("}") else { pos = save; return nil }
        pos += 1
        return (lo, hi)
    }

    mutating func parseAtom(_ flags: inout Flags) throws(RulesRegex.SyntaxError) -> RegexNode? {
        let c = chars[pos]
        switch c {
        case 0x28:  // (
            return try parseGroup(&flags)
        case 0x5B:  // [
            var set = try parseClass(flags)
            set.fold = flags.caseInsensitive
            return .set(set)
        case 0x2E:  // .
            pos += 1
            return .set(flags.dotAll ? .any : .anyButNewline)
        case 0x5E:  // ^
            pos += 1
            return .assertion(flags.multiLine ? .beginLine : .beginText)
        case 0x24:  // $
            pos += 1
            return .assertion(flags.multiLine ? .endLine : .endText)
        case 0x5C:  // \
            return try parseEscape(flags)
        case 0x2A, 0x2B, 0x3F:
            throw err("missing argument to repetition operator")
        default:
            pos += 1
            return .literal(c, fold: flags.caseInsensitive)
        }
    }

    mutating func parseGroup(_ flags: inout Flags) throws(RulesRegex.SyntaxError) -> RegexNode? {
        pos += 1  // (
        var captureIndex: Int? = nil
        var inner = flags
        if isChar("?") {
            pos += 1
            if isChar("P") && isChar("<", 1) || isChar("<") && !isChar("=", 1) && !isChar("!", 1) {
                pos += isChar("P") ? 2 : 1
                var name = ""
                while let c = peek(), c != 0x3E {
                    guard let s = Unicode.Scalar(c), s == "_" || s.properties.isAlphabetic || (c >= 48 && c <= 57) else {
                        throw err("invalid capture group name")
                    }
                    name.unicodeScalars.append(s)
                    pos += 1
                }
                guard isChar(">"), !name.isEmpty else { throw err("invalid named capture") }
                pos += 1
                if names[name] != nil { throw err("duplicate capture group name '\(name)'") }
                captureCount += 1
                captureIndex = captureCount
                names[name] = captureCount
            } else if isChar("=") || isChar("!") || isChar("<") {
                throw err("look-around assertions are not supported by RE2")
            } else {
                // Flags: (?i) (?-i) (?i:...) (?:...)
                var negate = false
                var sawFlag = false
                while let c = peek() {
                    switch c {
                    case 0x69: inner.caseInsensitive = !negate; sawFlag = true  // i
                    case 0x6D: inner.multiLine = !negate; sawFlag = true        // m
                    case 0x73: inner.dotAll = !negate; sawFlag = true           // s
                    case 0x55: inner.ungreedy = !negate; sawFlag = true         // U
                    case 0x2D:                                                  // -
                        if negate { throw err("invalid flag syntax") }
                        negate = true
                        sawFlag = false
                    case 0x29:                                                  // ) : flags for the rest of this group
                        if negate && !sawFlag { throw err("invalid flag syntax") }
                        pos += 1
                        flags = inner
                        return nil
                    case 0x3A:                                                  // :
                        if negate && !sawFlag { throw err("invalid flag syntax") }
                        pos += 1
                        let node = try parseAlternation(&inner)
                        guard isChar(")") else { throw err("missing closing )") }
                        pos += 1
                        return node
                    default:
                        throw err("invalid or unsupported flag in group")
                    }
                    pos += 1
                }
                throw err("missing closing )")
            }
        } else {
            captureCount += 1
            captureIndex = captureCount
        }
        let node = try parseAlternation(&inner)
        guard isChar(")") else { throw err("missing closing )") }
        pos += 1
        if let captureIndex { return .capture(node, index: captureIndex) }
        return node
    }

    mutating func parseEscape(_ flags: Flags) throws(RulesRegex.SyntaxError) -> RegexNode {
        pos += 1
        guard let c = peek() else { throw err("trailing backslash at end of expression") }
        switch c {
        case 0x41: pos += 1; return .assertion(.beginText)        // \A
        case 0x7A: pos += 1; return .assertion(.endText)          // \z
        case 0x62: pos += 1; return .assertion(.wordBoundary)     // \b
        case 0x42: pos += 1; return .assertion(.notWordBoundary)  // \B
        case 0x51:                                                 // \Q...\E
            pos += 1
            var items: [RegexNode] = []
            while let d = peek() {
                if d == 0x5C, peek(1) == 0x45 { pos += 2; break }
                items.append(.literal(d, fold: flags.caseInsensitive))
                pos += 1
            }
            return items.count == 1 ? items[0] : .concat(items)
        default:
            pos -= 1
            let item = try parseClassEscape()
            switch item {
            case .char(let v): return .literal(v, fold: flags.caseInsensitive)
            case .set(var s):
                s.fold = flags.caseInsensitive
                return .set(s)
            }
        }
    }

    enum ClassItem {
        case char(UInt32)
        case set(CharSet)
    }

    /// An escape (current char is the backslash) that stands for a char or a class.
    mutating func parseClassEscape() throws(RulesRegex.SyntaxError) -> ClassItem {
        pos += 1
        guard let c = peek() else { throw err("trailing backslash at end of expression") }
        pos += 1
        switch c {
        case 0x64: return .set(.digit)                                    // \d
        case 0x44: var s = CharSet.digit; s.negated = true; return .set(s)
        case 0x77: return .set(.word)                                     // \w
        case 0x57: var s = CharSet.word; s.negated = true; return .set(s)
        case 0x73: return .set(.space)                                    // \s
        case 0x53: var s = CharSet.space; s.negated = true; return .set(s)
        case 0x6E: return .char(10)
        case 0x74: return .char(9)
        case 0x72: return .char(13)
        case 0x66: return .char(12)
        case 0x76: return .char(11)
        case 0x61: return .char(7)
        case 0x70, 0x50:                                                  // \pL \p{Lu} \PL
            var name = ""
            if isChar("{") {
                pos += 1
                while let d = peek(), d != 0x7D {
                    name.unicodeScalars.append(Unicode.Scalar(d) ?? " ")
                    pos += 1
                }
                guard isChar("}") else { throw err("invalid character class range") }
                pos += 1
            } else if let d = peek(), let s = Unicode.Scalar(d) {
                name = String(s)
                pos += 1
            }
            var negated = c == 0x50
            if name.hasPrefix("^") {
                negated.toggle()
                name.removeFirst()
            }
            guard let cats = Self.categories(name) else { throw err("invalid or unsupported Unicode class \\p{\(name)}") }
            var s = CharSet()
            if name == "Any" { s.ranges = [0...0x10FFFF] } else { s.categories = [(cats, false)] }
            s.negated = negated
            return .set(s)
        case 0x78:                                                        // \xHH or \x{H…}
            var v: UInt32 = 0
            if isChar("{") {
                pos += 1
                var n = 0
                while let d = peek(), let h = hexValue(UInt8(truncatingIfNeeded: d)), d < 128 {
                    v = v * 16 + UInt32(h)
                    n += 1
                    pos += 1
                    if v > 0x10FFFF { throw err("invalid escape sequence") }
                }
                guard n > 0, isChar("}") else { throw err("invalid escape sequence") }
                pos += 1
            } else {
                for _ in 0..<2 {
                    guard let d = peek(), d < 128, let h = hexValue(UInt8(d)) else { throw err("invalid escape sequence") }
                    v = v * 16 + UInt32(h)
                    pos += 1
                }
            }
            return .char(v)
        case 0x30...0x37:                                                 // octal \0, \012
            if c != 0x30 { throw err("backreferences are not supported by RE2") }
            var v: UInt32 = 0
            var n = 0
            while n < 2, let d = peek(), d >= 0x30, d <= 0x37 {
                v = v * 8 + (d - 0x30)
                pos += 1
                n += 1
            }
            return .char(v)
        default:
            // Punctuation escapes itself; letters and digits are reserved.
            if c < 128, let s = Unicode.Scalar(c), !(s.properties.isAlphabetic || (c >= 48 && c <= 57)) {
                return .char(c)
            }
            throw err("invalid escape sequence \\\(Unicode.Scalar(c).map(String.init) ?? "?")")
        }
    }

    static func categories(_ name: String) -> Set<Unicode.GeneralCategory>? {
        typealias G = Unicode.GeneralCategory
        let letters: [G] = [.uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter]
        let marks: [G] = [.nonspacingMark, .spacingMark, .enclosingMark]
        let numbers: [G] = [.decimalNumber, .letterNumber, .otherNumber]
        let punct: [G] = [.connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
                          .initialPunctuation, .finalPunctuation, .otherPunctuation]
        let symbols: [G] = [.mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol]
        let seps: [G] = [.spaceSeparator, .lineSeparator, .paragraphSeparator]
        let other: [G] = [.control, .format, .surrogate, .privateUse, .unassigned]
        let table: [String: [G]] = [
            "L": letters, "Lu": [.uppercaseLetter], "Ll": [.lowercaseLetter], "Lt": [.titlecaseLetter],
            "Lm": [.modifierLetter], "Lo": [.otherLetter], "M": marks, "Mn": [.nonspacingMark], "Mc": [.spacingMark],
            "Me": [.enclosingMark], "N": numbers, "Nd": [.decimalNumber], "Nl": [.letterNumber], "No": [.otherNumber],
            "P": punct, "Pc": [.connectorPunctuation], "Pd": [.dashPunctuation], "Ps": [.openPunctuation],
            "Pe": [.closePunctuation], "Pi": [.initialPunctuation], "Pf": [.finalPunctuation], "Po": [.otherPunctuation],
            "S": symbols, "Sm": [.mathSymbol], "Sc": [.currencySymbol], "Sk": [.modifierSymbol], "So": [.otherSymbol],
            "Z": seps, "Zs": [.spaceSeparator], "Zl": [.lineSeparator], "Zp": [.paragraphSeparator],
            "C": other, "Cc": [.control], "Cf": [.format], "Cs": [.surrogate], "Co": [.privateUse], "Cn": [.unassigned],
            "Any": [],
        ]
        return table[name].map(Set.init)
    }

    /// `[...]` (current char is `[`).
    mutating func parseClass(_ flags: Flags) throws(RulesRegex.SyntaxError) -> CharSet {
        pos += 1
        var set = CharSet()
        if isChar("^") {
            set.negated = true
            pos += 1
        }
        var first = true
        while true {
            guard let c = peek() else { throw err("missing closing ]") }
            if c == 0x5D && !first { pos += 1; break }  // ]
            first = false
            // POSIX class [:alpha:]
            if c == 0x5B, isChar(":", 1) {
                let save = pos
                pos += 2
                var negate = false
                if isChar("^") {
                    negate = true
                    pos += 1
                }
                var name = ""
                while let d = peek(), d != 0x3A, d < 128 {
                    name.unicodeScalars.append(Unicode.Scalar(UInt8(d)))
                    pos += 1
                }
                if isChar(":"), isChar("]", 1), let ranges = Self.posix(name) {
                    pos += 2
                    set.add(CharSet(ranges: ranges, negated: negate))
                    continue
                }
                pos = save
            }
            let lo: UInt32
            if c == 0x5C {
                switch try parseClassEscape() {
                case .char(let v): lo = v
                case .set(let s):
                    set.add(s)
                    continue
                }
            } else {
                lo = c
                pos += 1
            }
            if isChar("-"), let next = peek(1), next != 0x5D {
                pos += 1
                let hi: UInt32
                if next == 0x5C {
                    guard case .char(let v) = try parseClassEscape() else { throw err("invalid character class range") }
                    hi = v
                } else {
                    hi = next
                    pos += 1
                }
                guard lo <= hi else { throw err("invalid character class range") }
                set.ranges.append(lo...hi)
            } else {
                set.ranges.append(lo...lo)
            }
        }
        return set
    }

    static func posix(_ name: String) -> [ClosedRange<UInt32>]? {
        switch name {
        case "alnum": [48...57, 65...90, 97...122]
        case "alpha": [65...90, 97...122]
        case "ascii": [0...127]
        case "blank": [9...9, 32...32]
        case "cntrl": [0...31, 127...127]
        case "digit": [48...57]
        case "graph": [33...126]
        case "lower": [97...122]
        case "print": [32...126]
        case "punct": [33...47, 58...64, 91...96, 123...126]
        case "space": [9...13, 32...32]
        case "upper": [65...90]
        case "word": [48...57, 65...90, 95...95, 97...122]
        case "xdigit": [48...57, 65...70, 97...102]
        default: nil
        }
    }
}
