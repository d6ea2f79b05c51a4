public import HearthCore

/// Plain JSON as Firestore values, with typed escapes for what JSON lacks (the conventions
/// of the HearthRules test fixtures):
///
/// | JSON | value |
/// |---|---|
/// | `1`, `-3` | integer (`1.0`, `1e3` are floats) |
/// | `{"$float": 1}` | float |
/// | `{"$timestamp": "2024-01-01T00:00:00Z"}` | timestamp |
/// | `{"$bytes": "00ff"}` | bytes, hex |
/// | `{"$latlng": [48.85, 2.35]}` | geopoint |
/// | `{"$ref": "users/alice"}` | reference (also `/databases/(default)/documents/…` or `projects/…`) |
public enum TypedJSON {
    /// The project of references written without one.
    public static let project = "demo-hearth"

    public static func value(_ j: JSON, at: String) throws(HearthError) -> Value {
        switch j {
        case .null: return .null
        case .bool(let b): return .boolean(b)
        case .number(let n):
            if n.contains(".") || n.contains("e") || n.contains("E") {
                guard let d = Double(n) else { throw bad(at, "\(n) is not a number") }
                return .double(d)
            }
            guard let i = Int64(n) else { throw bad(at, "\(n) does not fit a 64-bit integer") }
            return .integer(i)
        case .string(let s): return .string(s)
        case .array(let a):
            var out: [Value] = []
            for (i, x) in a.enumerated() { out.append(try value(x, at: "\(at)[\(i)]")) }
            return .array(out)
        case .object(let members):
            if members.count == 1, members[0].0.hasPrefix("$") {
                let (k, v) = members[0]
                let here = at + "." + k
                switch k {
                case "$timestamp": return .timestamp(try timestamp(v, at: here))
                case "$bytes":
                    guard let s = v.stringValue, let b = hex(s) else { throw bad(here, "must be a string of hex digit pairs") }
                    return .bytes(b)
                case "$latlng":
                    guard let a = v.arrayValue, a.count == 2, case .number(let la) = a[0], case .number(let lo) = a[1],
                          let lat = Double(la), let lng = Double(lo), abs(lat) <= 90, abs(lng) <= 180 else {
                        throw bad(here, "must be [latitude, longitude]")
                    }
                    return .geoPoint(latitude: lat, longitude: lng)
                case "$ref":
                    guard let s = v.stringValue, !s.isEmpty else { throw bad(here, "must be a document path") }
                    return .reference(reference(s))
                case "$float":
                    guard case .number(let n) = v, let d = Double(n) else { throw bad(here, "must be a number") }
                    return .double(d)
                default:
                    throw bad(here, "unknown typed value (known: $timestamp, $bytes, $latlng, $ref, $float)")
                }
            }
            var m: [String: Value] = [:]
            for (k, v) in members { m[k] = try value(v, at: at + "." + k) }
            return .map(m)
        }
    }

    public static func timestamp(_ j: JSON, at: String) throws(HearthError) -> Timestamp {
        guard let s = j.stringValue, let t = Timestamp(rfc3339: s) else {
            throw bad(at, "must be an RFC 3339 time such as \"2024-01-01T00:00:00Z\"")
        }
        return t
    }

    static func reference(_ s: String) -> String {
        if s.hasPrefix("projects/") { return s }
        if s.hasPrefix("/databases/") { return "projects/\(project)" + s }
        var p = Substring(s)
        while p.hasPrefix("/") { p = p.dropFirst() }
        return "projects/\(project)/databases/(default)/documents/" + p
    }

    static func hex(_ s: String) -> [UInt8]? {
        let digits = Array(s.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        func v(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        while i < digits.count {
            guard let a = v(digits[i]), let b = v(digits[i + 1]) else { return nil }
            out.append(a << 4 | b)
            i += 2
        }
        return out
    }

    static func bad(_ at: String, _ message: String) -> HearthError { HearthError(.invalidArgument, "\(at): \(message)") }
}
