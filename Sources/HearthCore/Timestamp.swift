/// A point in time with nanosecond resolution, as Firestore's `google.protobuf.Timestamp`.
/// Stored values are truncated to microseconds, as Firestore stores them.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var seconds: Int64
    public var nanos: Int32

    /// Firestore's valid range: 0001-01-01T00:00:00Z ..< 10000-01-01T00:00:00Z.
    public static let minSeconds: Int64 = -62_135_596_800
    public static let maxSeconds: Int64 = 253_402_300_799

    public init(seconds: Int64, nanos: Int32) {
        self.seconds = seconds
        self.nanos = nanos
    }

    public init(microseconds: Int64) {
        var s = microseconds / 1_000_000
        var us = microseconds % 1_000_000
        if us < 0 { us += 1_000_000; s -= 1 }
        self.init(seconds: s, nanos: Int32(us * 1000))
    }

    public var microseconds: Int64 { seconds * 1_000_000 + Int64(nanos / 1000) }

    public var truncatedToMicroseconds: Timestamp { Timestamp(seconds: seconds, nanos: nanos - nanos % 1000) }

    public var isValid: Bool {
        seconds >= Self.minSeconds && seconds <= Self.maxSeconds && nanos >= 0 && nanos < 1_000_000_000
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        a.seconds != b.seconds ? a.seconds < b.seconds : a.nanos < b.nanos
    }

    public var description: String { rfc3339 }

    // MARK: RFC 3339

    /// Formats as proto3 JSON does: `Z`, and 0, 3, 6 or 9 fractional digits.
    public var rfc3339: String {
        let days = floorDiv(seconds, 86_400)
        let secOfDay = seconds - days * 86_400
        let (y, m, d) = Self.civil(fromDays: days)
        var out = pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T"
        out += pad(secOfDay / 3600, 2) + ":" + pad(secOfDay / 60 % 60, 2) + ":" + pad(secOfDay % 60, 2)
        if nanos != 0 {
            if nanos % 1_000_000 == 0 {
                out += "." + pad(Int64(nanos / 1_000_000), 3)
            } else if nanos % 1000 == 0 {
                out += "." + pad(Int64(nanos / 1000), 6)
            } else {
                out += "." + pad(Int64(nanos), 9)
            }
        }
        return out + "Z"
    }

    /// Parses RFC 3339 (`2024-01-02T03:04:05.123456Z`, or with a `±hh:mm` offset).
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                let c = b[i]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), b[4] == 45, let mo = num(5, 2), b[7] == 45, let d = num(8, 2),
              b[10] == 84 || b[10] == 116, let h = num(11, 2), b[13] == 58, let mi = num(14, 2), b[16] == 58,
              let s = num(17, 2)
        else { return nil }
        guard (1...12).contains(mo), d >= 1, d <= Self.daysIn(month: mo, year: y), h < 24, mi < 60, s < 60 else { return nil }
        var i = 19
        var nanos: Int64 = 0
        if i < b.count && b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 9 { nanos = nanos * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0, digits <= 9 else { return nil }
            for _ in digits..<9 { nanos *= 10 }
        }
        guard i < b.count else { return nil }
        var offset: Int64 = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            guard let oh = num(i + 1, 2), b.count > i + 3, b[i + 3] == 58, let om = num(i + 4, 2), oh < 24, om < 60 else { return nil }
            offset = (oh * 3600 + om * 60) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Self.days(fromCivil: y, mo, d)
        self.init(seconds: days * 86_400 + h * 3600 + mi * 60 + s - offset, nanos: Int32(nanos))
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 { CivilCalendar.daysIn(month: month, year: year) }

    static func days(fromCivil y: Int64, _ m: Int64, _ d: Int64) -> Int64 { CivilCalendar.days(year: y, month: m, day: d) }

    static func civil(fromDays z: Int64) -> (Int64, Int64, Int64) {
        let c = CivilCalendar.civil(days: z)
        return (c.year, c.month, c.day)
    }
}

@inline(__always) func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { CivilCalendar.floorDiv(a, b) }

@inline(__always) func pad(_ v: Int64, _ width: Int) -> String {
    let s = String(v)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}
