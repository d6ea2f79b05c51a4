/// Numbers read from untrusted text (headers, query parameters, tokens): decimal digits only,
/// never trapping. Swift's `Int64(_:)` accepts a sign and rejects values past `Int64.max`; the
/// parsers here say which of those they want, so that arithmetic on the result cannot overflow
/// (each caller states the range it can handle).
public enum WireInteger {
    /// Decimal digits only (no sign, no spaces), saturating at `Int64.max`: a very long number is
    /// "huge", not malformed, which is what HTTP ranges and similar limits mean by it.
    /// Nil for an empty string or any non-digit.
    public static func saturating<S: StringProtocol>(_ text: S) -> Int64? {
        var value: Int64 = 0
        var any = false
        for byte in text.utf8 {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            any = true
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.addingReportingOverflow(Int64(byte - 0x30))
            value = (o1 || o2) ? .max : next
        }
        return any ? value : nil
    }

    /// Decimal digits with an optional leading `-` (or `+` when `allowPlus`), inside `range`.
    /// Nil when malformed, overflowing or outside the range.
    public static func parse<S: StringProtocol>(_ text: S, in range: ClosedRange<Int64>, allowPlus: Bool = false) -> Int64? {
        var bytes = text.utf8[...]
        var negative = false
        if let first = bytes.first, first == 0x2D || (allowPlus && first == 0x2B) {
            negative = first == 0x2D
            bytes = bytes.dropFirst()
        }
        guard !bytes.isEmpty else { return nil }
        var magnitude: UInt64 = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
            guard !o1, !o2 else { return nil }
            magnitude = next
        }
        let value: Int64
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            value = magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)
        } else {
            guard magnitude <= UInt64(Int64.max) else { return nil }
            value = Int64(magnitude)
        }
        return range.contains(value) ? value : nil
    }

    /// A non-negative count (`Content-Length`, offsets, sizes): digits only, at most `Int64.max`.
    public static func count<S: StringProtocol>(_ text: S) -> Int64? {
        guard let first = text.utf8.first, first >= 0x30, first <= 0x39 else { return nil }  // no sign, not even "-0"
        return parse(text, in: 0...Int64.max)
    }
}
