/// The `Range` request header for one range of bytes (RFC 9110 §14): `bytes=a-b`, `bytes=a-`
/// and `bytes=-n`, judged against the representation's size. Numbers may be of any length: an
/// end past the object is clamped to its last byte and a huge suffix means the whole object, as
/// HTTP says, and nothing here can overflow.
public enum HTTPByteRange: Equatable, Sendable {
    /// No usable range (absent, another unit, several ranges, malformed): send the whole object, 200.
    case whole
    /// These bytes, 206 with `Content-Range: bytes first-last/size`.
    case partial(Range<Int64>)
    /// A range that starts past the end (or a zero-length suffix): 416.
    case unsatisfiable

    public static func parse(_ header: String, size: Int64) -> HTTPByteRange {
        precondition(size >= 0)
        let text = header[...].trimmingASCIIWhitespace()
        guard text.count > 6, text.prefix(6).lowercased() == "bytes=" else { return .whole }
        let spec = text.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingASCIIWhitespace(), last = spec[spec.index(after: dash)...].trimmingASCIIWhitespace()
        if first.isEmpty {
            // Suffix range: the last n bytes.
            guard let n = WireInteger.saturating(last) else { return .whole }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .partial((size - min(n, size))..<size)
        }
        guard let start = WireInteger.saturating(first) else { return .whole }
        let end: Int64
        if last.isEmpty {
            end = Int64.max
        } else {
            guard let e = WireInteger.saturating(last) else { return .whole }
            guard e >= start else { return .whole }  // RFC 9110: an invalid range is ignored
            end = e
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start..<(min(end, size - 1) + 1))  // size - 1 + 1 cannot overflow
    }

    /// `Content-Range` of a 206 answer: `bytes first-last/size`.
    public static func contentRange(_ range: Range<Int64>, size: Int64) -> String {
        "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
    }
}

extension Substring {
    /// Drops spaces and tabs (HTTP's optional whitespace) at both ends.
    package func trimmingASCIIWhitespace() -> Substring {
        var start = startIndex, end = endIndex
        while start < end, self[start] == " " || self[start] == "\t" { start = index(after: start) }
        while end > start, self[index(before: end)] == " " || self[index(before: end)] == "\t" { end = index(before: end) }
        return self[start..<end]
    }
}
