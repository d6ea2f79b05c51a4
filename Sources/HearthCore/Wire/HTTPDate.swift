/// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT` is written; it and
/// the obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`)
/// forms are read, as HTTP requires of recipients. Every field is range-checked before any
/// arithmetic, so no input can overflow; an invalid date is nil (the header is then ignored, as
/// RFC 9110 says for conditional requests).
public enum HTTPDate {
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // day 0 (1970-01-01) was a Thursday

    /// IMF-fixdate of whole seconds since the epoch (fractions dropped).
    public static func format(_ t: Timestamp) -> String {
        let days = CivilCalendar.floorDiv(t.seconds, 86_400)
        let rem = t.seconds - days * 86_400
        let (y, m, d) = CivilCalendar.civil(days: days)
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = y < 1000 ? String(repeating: "0", count: 4 - "\(y)".count) + "\(y)" : "\(y)"
        return "\(weekday), \(two(d)) \(months[Int(m - 1)]) \(year) \(two(rem / 3600)):\(two(rem / 60 % 60)):\(two(rem % 60)) GMT"
    }

    /// Seconds since the epoch, or nil when the text is not an HTTP date of years 0001–9999.
    public static func parse(_ text: String) -> Int64? {
        let parts = text[...].trimmingASCIIWhitespace().split(separator: " ", omittingEmptySubsequences: true)
        switch parts.count {
        case 6:  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard parts[0].hasSuffix(","), parts[5] == "GMT" else { return nil }
            return seconds(year: parts[3], month: parts[2], day: parts[1], time: parts[4])
        case 4:  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            guard parts[0].hasSuffix(","), parts[3] == "GMT" else { return nil }
            let dmy = parts[1].split(separator: "-", omittingEmptySubsequences: false)
            guard dmy.count == 3, dmy[2].utf8.count == 2, let yy = WireInteger.parse(dmy[2], in: 0...99) else { return nil }
            // Two-digit years: RFC 9110 says a year more than 50 years ahead is in the past century.
            let year = yy < 70 ? 2000 + yy : 1900 + yy
            return seconds(year: Substring(String(year)), month: dmy[1], day: dmy[0], time: parts[2])
        case 5:  // asctime: Sun Nov  6 08:49:37 1994
            return seconds(year: parts[4], month: parts[1], day: parts[2], time: parts[3])
        default:
            return nil
        }
    }

    private static func seconds(year: Substring, month: Substring, day: Substring, time: Substring) -> Int64? {
        guard year.utf8.count == 4, let y = WireInteger.parse(year, in: 1...9999),
            let mi = months.firstIndex(where: { $0 == month }),
            day.utf8.count <= 2, let d = WireInteger.parse(day, in: 1...31), d <= CivilCalendar.daysIn(month: Int64(mi + 1), year: y)
        else { return nil }
        let hms = time.split(separator: ":", omittingEmptySubsequences: false)
        guard hms.count == 3, hms.allSatisfy({ $0.utf8.count == 2 }),
            let h = WireInteger.parse(hms[0], in: 0...23), let m = WireInteger.parse(hms[1], in: 0...59),
            let s = WireInteger.parse(hms[2], in: 0...60)  // a leap second reads as the next second
        else { return nil }
        return CivilCalendar.days(year: y, month: Int64(mi + 1), day: d) * 86_400 + h * 3600 + m * 60 + s
    }
}
