/// The `Content-Range` request header of a resumable upload chunk (GCS JSON API):
/// `bytes first-last/total`, `bytes first-last/*` (more to come), `bytes */total` (finish or
/// query) and `bytes */*` (query). Numbers are checked, never overflow, and must be consistent
/// (`first <= last < total`).
public struct HTTPContentRange: Equatable, Sendable {
    /// The bytes this chunk carries; nil for `*`.
    public var bytes: ClosedRange<Int64>?
    /// The object's full size; nil for `*` (not known yet).
    public var total: Int64?

    public init(bytes: ClosedRange<Int64>?, total: Int64?) {
        self.bytes = bytes
        self.total = total
    }

    /// Nil when the header is malformed or inconsistent.
    public static func parse(_ header: String) -> HTTPContentRange? {
        let text = header[...].trimmingASCIIWhitespace()
        guard text.count > 6, text.prefix(6).lowercased() == "bytes " else { return nil }
        let parts = text.dropFirst(6).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        var result = HTTPContentRange(bytes: nil, total: nil)
        if parts[1] != "*" {
            guard let total = WireInteger.count(parts[1]) else { return nil }
            result.total = total
        }
        if parts[0] != "*" {
            let ends = parts[0].split(separator: "-", omittingEmptySubsequences: false)
            guard ends.count == 2, let first = WireInteger.count(ends[0]), let last = WireInteger.count(ends[1]), first <= last
            else { return nil }
            if let total = result.total, last >= total { return nil }
            result.bytes = first...last
        }
        return result
    }
}
