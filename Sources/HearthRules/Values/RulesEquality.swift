/// Equality and ordering of rules values, as Google's implementation behaves (measured
/// against the emulator): numbers compare across int and float at the top level of `==`,
/// but not inside lists and maps; values of different types are unequal, not an error.
enum RulesEquality {
    static func equal(_ a: RulesValue, _ b: RulesValue, topLevel: Bool, ieee: Bool) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.float(let x), .float(let y)): return ieee ? x == y : (x == y || (x.isNaN && y.isNaN))
        case (.int(let x), .float(let y)), (.float(let y), .int(let x)):
            return topLevel && RulesOrdering.compare(int: x, double: y) == 0
        case (.string(let x), .string(let y)): return x == y
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.list(let x), .list(let y)):
            guard x.count == y.count else { return false }
            for i in x.indices where !equal(x[i], y[i], topLevel: false, ieee: ieee) { return false }
            return true
        case (.map(let x), .map(let y)):
            guard x.count == y.count else { return false }
            for (k, v) in x {
                guard let w = y[k], equal(v, w, topLevel: false, ieee: ieee) else { return false }
            }
            return true
        case (.set(let x), .set(let y)): return x == y
        case (.path(let x), .path(let y)): return x == y
        case (.timestamp(let x), .timestamp(let y)): return x == y
        case (.duration(let x), .duration(let y)): return x == y
        case (.latlng(let a1, let o1), .latlng(let a2, let o2)): return a1 == a2 && o1 == o2
        case (.mapDiff(let x), .mapDiff(let y)): return x == y
        default: return false
        }
    }

    static func hash(_ v: RulesValue, into h: inout Hasher, topLevel: Bool) {
        switch v {
        case .null: h.combine(0)
        case .bool(let b): h.combine(1); h.combine(b)
        case .int(let i):
            h.combine(topLevel ? 2 : 20)
            h.combine(i)
        case .float(let d):
            if topLevel, d.rounded(.towardZero) == d, d >= -9.223372036854775808e18, d < 9.223372036854775808e18 {
                h.combine(2)
                h.combine(Int64(d))
            } else {
                h.combine(3)
                h.combine(d.isNaN ? Double.nan.bitPattern : (d == 0 ? 0 : d.bitPattern))
            }
        case .string(let s): h.combine(4); h.combine(s)
        case .bytes(let b): h.combine(5); h.combine(b)
        case .list(let l):
            h.combine(6)
            h.combine(l.count)
            for e in l { hash(e, into: &h, topLevel: false) }
        case .map(let m):
            h.combine(7)
            h.combine(m.count)
        case .set(let s): h.combine(8); h.combine(s.count)
        case .path(let p): h.combine(9); h.combine(p)
        case .timestamp(let t): h.combine(10); h.combine(t)
        case .duration(let d): h.combine(11); h.combine(d)
        case .latlng(let a, let o): h.combine(12); h.combine(a); h.combine(o)
        case .mapDiff: h.combine(13)
        }
    }
}

enum RulesOrdering {
    /// Java's `String.compareTo`: UTF-16 code units.
    static func utf16Compare(_ a: String, _ b: String) -> Int {
        var ia = a.utf16.makeIterator(), ib = b.utf16.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?): if x != y { return x < y ? -1 : 1 }
            }
        }
    }

    static func utf16Less(_ a: String, _ b: String) -> Bool { utf16Compare(a, b) < 0 }

    /// Exact comparison of an int64 with a double; nil-free: NaN compares as unordered (2).
    static func compare(int i: Int64, double d: Double) -> Int {
        if d.isNaN { return 2 }
        if d >= 9.223372036854775808e18 { return -1 }
        if d < -9.223372036854775808e18 { return 1 }
        let t = d.rounded(.down)
        let ti = Int64(t)
        if i != ti { return i < ti ? -1 : 1 }
        return d > t ? -1 : 0
    }

    /// `<`-family comparison: -1, 0, 1; 2 for unordered (NaN); nil when the types do not compare.
    static func compare(_ a: RulesValue, _ b: RulesValue) -> Int? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.float(let x), .float(let y)):
            if x.isNaN || y.isNaN { return 2 }
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.int(let x), .float(let y)): return compare(int: x, double: y)
        case (.float(let x), .int(let y)):
            let c = compare(int: y, double: x)
            return c == 2 ? 2 : -c
        case (.string(let x), .string(let y)): return utf16Compare(x, y)
        case (.bytes(let x), .bytes(let y)):
            for i in 0..<min(x.count, y.count) where x[i] != y[i] { return x[i] < y[i] ? -1 : 1 }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case (.timestamp(let x), .timestamp(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.duration(let x), .duration(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        default: return nil
        }
    }
}
