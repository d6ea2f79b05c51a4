/// A path to a field inside a document: `a.b`, `` `odd.key`.x ``, or `__name__`.
public struct FieldPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var segments: [String]

    public init(_ segments: [String]) { self.segments = segments }

    /// Equality and hashing by UTF-8 bytes, as Firestore compares field names.
    public static func == (a: FieldPath, b: FieldPath) -> Bool {
        a.segments.count == b.segments.count && zip(a.segments, b.segments).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }

    public func hash(into hasher: inout Hasher) {
        for s in segments {
            hasher.combine(s.utf8.count)
            for b in s.utf8 { hasher.combine(b) }
        }
    }

    public static let documentName = FieldPath(["__name__"])
    public var isDocumentName: Bool { segments.count == 1 && segments[0] == "__name__" }

    /// Parses Firestore's field-path syntax: dot-separated segments, backtick-quoted where a
    /// segment is not a simple identifier, with `` \` `` and `\\` escapes inside backticks.
    public init(parsing text: String) throws(HearthError) {
        guard !text.isEmpty else { throw .invalidArgument("Invalid field path: empty field path.") }
        var segments: [String] = []
        var current = ""
        var quoted = false
        var inQuotes = false
        var chars = Array(text)[...]
        while let c = chars.popFirst() {
            if inQuotes {
                switch c {
                case "`": inQuotes = false
                case "\\":
                    guard let next = chars.popFirst() else {
                        throw .invalidArgument("Invalid field path (\(text)): trailing escape character.")
                    }
                    current.append(next)
                default: current.append(c)
                }
            } else {
                switch c {
                case "`":
                    guard current.isEmpty, !quoted else {
                        throw .invalidArgument("Invalid field path (\(text)): misplaced backtick.")
                    }
                    inQuotes = true
                    quoted = true
                case ".":
                    guard !current.isEmpty || quoted else {
                        throw .invalidArgument("Invalid field path (\(text)): empty segment.")
                    }
                    segments.append(current)
                    current = ""
                    quoted = false
                default:
                    guard !quoted else { throw .invalidArgument("Invalid field path (\(text)): text after closing backtick.") }
                    guard FieldPath.isSimpleChar(c, first: current.isEmpty) else {
                        throw .invalidArgument(
                            "Invalid field path (\(text)). Paths must not contain '~', '*', '/', '[', or ']', "
                                + "and segments that are not simple identifiers must be quoted with backticks.")
                    }
                    current.append(c)
                }
            }
        }
        guard !inQuotes else { throw .invalidArgument("Invalid field path (\(text)): unterminated backtick.") }
        guard !current.isEmpty || quoted else { throw .invalidArgument("Invalid field path (\(text)): empty segment.") }
        segments.append(current)
        self.segments = segments
    }

    static func isSimpleChar(_ c: Character, first: Bool) -> Bool {
        guard c.isASCII, let a = c.asciiValue else { return false }
        if a == 95 || (a >= 65 && a <= 90) || (a >= 97 && a <= 122) { return true }
        return !first && a >= 48 && a <= 57
    }

    static func isSimple(_ segment: String) -> Bool {
        guard !segment.isEmpty else { return false }
        var first = true
        for c in segment {
            guard isSimpleChar(c, first: first) else { return false }
            first = false
        }
        return true
    }

    /// The canonical text: simple segments bare, others in backticks.
    public var canonical: String {
        segments.map { s in
            if FieldPath.isSimple(s) { return s }
            return "`" + s.replacingAll("\\", with: "\\\\").replacingAll("`", with: "\\`") + "`"
        }.joined(separator: ".")
    }

    public var description: String { canonical }

    public func isPrefix(of other: FieldPath) -> Bool {
        segments.count <= other.segments.count && Array(other.segments.prefix(segments.count)) == segments
    }

    public func appending(_ segment: String) -> FieldPath { FieldPath(segments + [segment]) }

    public static func < (a: FieldPath, b: FieldPath) -> Bool {
        for i in 0..<min(a.segments.count, b.segments.count) {
            let c = ValueOrdering.compareUTF8(a.segments[i], b.segments[i])
            if c != 0 { return c < 0 }
        }
        return a.segments.count < b.segments.count
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
