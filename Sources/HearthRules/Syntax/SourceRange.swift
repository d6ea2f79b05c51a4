/// A position in a rules file: byte offset plus 1-based line and column (columns count
/// Unicode scalars, so a caret lines up under the character in a terminal).
public struct SourcePosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var offset: Int
    public var line: Int
    public var column: Int

    public init(offset: Int, line: Int, column: Int) {
        self.offset = offset
        self.line = line
        self.column = column
    }

    public static func < (a: SourcePosition, b: SourcePosition) -> Bool { a.offset < b.offset }
    public var description: String { "\(line):\(column)" }
}

/// A half-open range of source text, `start..<end`.
public struct SourceRange: Sendable, Hashable, CustomStringConvertible {
    public var start: SourcePosition
    public var end: SourcePosition

    public init(start: SourcePosition, end: SourcePosition) {
        self.start = start
        self.end = end
    }

    /// A range covering both.
    public func to(_ other: SourceRange) -> SourceRange {
        SourceRange(start: min(start, other.start), end: max(end, other.end))
    }

    public var description: String { start.description }
}

/// The text of a rules file, with what diagnostics need to quote it.
public struct RulesSource: Sendable {
    public let name: String
    public let text: String
    let bytes: [UInt8]
    /// Byte offsets where each line starts.
    let lineStarts: [Int]

    public init(name: String, text: String) {
        self.name = name
        self.text = text
        bytes = Array(text.utf8)
        var starts = [0]
        for (i, b) in bytes.enumerated() where b == 10 { starts.append(i + 1) }
        lineStarts = starts
    }

    /// The text of a 1-based line, without its line terminator.
    public func line(_ number: Int) -> String {
        guard number >= 1, number <= lineStarts.count else { return "" }
        let start = lineStarts[number - 1]
        var end = number < lineStarts.count ? lineStarts[number] - 1 : bytes.count
        if end > start, bytes[end - 1] == 13 { end -= 1 }
        return String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
    }

    /// The source text a range covers.
    public func text(of range: SourceRange) -> String {
        let s = max(0, min(range.start.offset, bytes.count))
        let e = max(s, min(range.end.offset, bytes.count))
        return String(decoding: bytes[s..<e], as: UTF8.self)
    }

    /// `file:line:col`.
    public func location(_ range: SourceRange) -> String { "\(name):\(range.start.line):\(range.start.column)" }

    /// The source line of `range` and a caret line under it (`^~~~`).
    public func excerpt(_ range: SourceRange) -> String {
        let lineText = line(range.start.line)
        var caret = ""
        var col = 1
        for scalar in lineText.unicodeScalars {
            guard col < range.start.column else { break }
            caret.append(scalar == "\t" ? "\t" : " ")
            col += 1
        }
        caret.append("^")
        // Underline the rest of the range on this line.
        let width: Int
        if range.end.line == range.start.line {
            width = range.end.column - range.start.column - 1
        } else {
            width = lineText.unicodeScalars.count - range.start.column
        }
        if width > 0 { caret.append(String(repeating: "~", count: min(width, 200))) }
        return lineText + "\n" + caret
    }
}
