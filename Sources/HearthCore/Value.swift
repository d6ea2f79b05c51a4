/// A Firestore value: every type a document field can hold.
///
/// Vector values are maps of the shape `{"__type__": "__vector__", "value": [doubles]}`,
/// as on the wire; ``isVector`` recognises them and ordering treats them as their own type.
public indirect enum Value: Sendable, Hashable {
    case null
    case boolean(Bool)
    case integer(Int64)
    case double(Double)
    case timestamp(Timestamp)
    case string(String)
    case bytes([UInt8])
    /// A document reference as a full resource name, `projects/p/databases/d/documents/c/id`.
    case reference(String)
    case geoPoint(latitude: Double, longitude: Double)
    case array([Value])
    case map([String: Value])

    public static let emptyMap = Value.map([:])

    /// Firestore's type order: null < boolean < number < timestamp < string < bytes
    /// < reference < geo point < array < vector < map.
    public enum TypeOrder: Int, Sendable, Comparable {
        case null = 0, boolean, number, timestamp, string, bytes, reference, geoPoint, array, vector, map
        public static func < (a: TypeOrder, b: TypeOrder) -> Bool { a.rawValue < b.rawValue }
    }

    public var typeOrder: TypeOrder {
        switch self {
        case .null: .null
        case .boolean: .boolean
        case .integer, .double: .number
        case .timestamp: .timestamp
        case .string: .string
        case .bytes: .bytes
        case .reference: .reference
        case .geoPoint: .geoPoint
        case .array: .array
        case .map: isVector ? .vector : .map
        }
    }

    /// A vector is exactly `{"__type__": "__vector__", "value": [...]}`; a map with any other
    /// key is an ordinary map.
    public var isVector: Bool {
        guard case .map(let m) = self, m.count == 2, case .string("__vector__")? = m["__type__"] else { return false }
        if case .array? = m["value"] { return true }
        return false
    }

    public var isNaN: Bool {
        if case .double(let d) = self { return d.isNaN }
        return false
    }

    public var isNumber: Bool { typeOrder == .number }

    public var mapValue: [String: Value]? {
        if case .map(let m) = self { return m }
        return nil
    }

    public var arrayValue: [Value]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// Firestore equality: numbers compare by value across integer and double (NaN equals
    /// NaN for this purpose, as Firestore's `==` on NaN does not match, see ``Value/queryEquals``).
    public static func == (a: Value, b: Value) -> Bool { ValueOrdering.compare(a, b) == 0 }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .boolean(let b): hasher.combine(b)
        case .integer(let i): hasher.combine(Double(i)); hasher.combine(false)
        case .double(let d): hasher.combine(d.isNaN ? Double.infinity : (d == 0 ? 0.0 : d)); hasher.combine(d.isNaN)
        case .timestamp(let t): hasher.combine(t)
        case .string(let s): hasher.combine(s)
        case .bytes(let b): hasher.combine(b)
        case .reference(let r): hasher.combine(r)
        case .geoPoint(let la, let lo): hasher.combine(la); hasher.combine(lo)
        case .array(let a): hasher.combine(a)
        case .map(let m): hasher.combine(m.count)
        }
    }

    /// Looks up a nested field.
    public func value(at path: FieldPath) -> Value? {
        var current = self
        for segment in path.segments {
            guard case .map(let m) = current, let next = m[segment] else { return nil }
            current = next
        }
        return current
    }
}

/// Firestore's total order over values.
public enum ValueOrdering {
    public static func compare(_ a: Value, _ b: Value) -> Int {
        let ta = a.typeOrder, tb = b.typeOrder
        if ta != tb { return ta < tb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case (.boolean(let x), .boolean(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.timestamp(let x), .timestamp(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)): return compareUTF8(x, y)
        case (.bytes(let x), .bytes(let y)): return compareBytes(x, y)
        case (.reference(let x), .reference(let y)): return compareReferences(x, y)
        case (.geoPoint(let la1, let lo1), .geoPoint(let la2, let lo2)):
            let c = compareDoubles(la1, la2)
            return c != 0 ? c : compareDoubles(lo1, lo2)
        case (.array(let x), .array(let y)): return compareArrays(x, y)
        case (.map(let x), .map(let y)):
            if ta == .vector {
                let vx = x["value"]?.arrayValue ?? [], vy = y["value"]?.arrayValue ?? []
                if vx.count != vy.count { return vx.count < vy.count ? -1 : 1 }
                return compareArrays(vx, vy)
            }
            return compareMaps(x, y)
        default: return compareNumbers(a, b)
        }
    }

    static func compareArrays(_ x: [Value], _ y: [Value]) -> Int {
        for i in 0..<min(x.count, y.count) {
            let c = compare(x[i], y[i])
            if c != 0 { return c }
        }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    static func compareMaps(_ x: [String: Value], _ y: [String: Value]) -> Int {
        let kx = sortedKeys(x), ky = sortedKeys(y)
        for i in 0..<min(kx.count, ky.count) {
            let c = compareUTF8(kx[i], ky[i])
            if c != 0 { return c }
            let v = compare(x[kx[i]]!, y[ky[i]]!)
            if v != 0 { return v }
        }
        return kx.count == ky.count ? 0 : (kx.count < ky.count ? -1 : 1)
    }

    public static func sortedKeys(_ m: [String: Value]) -> [String] {
        m.keys.sorted { compareUTF8($0, $1) < 0 }
    }

    /// Numbers: NaN first, then by mathematical value across int64 and double; -0.0 == 0.
    static func compareNumbers(_ a: Value, _ b: Value) -> Int {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.double(let x), .double(let y)): return compareDoubles(x, y)
        case (.integer(let x), .double(let y)): return -compareDoubleToInt(y, x)
        case (.double(let x), .integer(let y)): return compareDoubleToInt(x, y)
        default: return 0
        }
    }

    static func compareDoubles(_ x: Double, _ y: Double) -> Int {
        if x.isNaN { return y.isNaN ? 0 : -1 }
        if y.isNaN { return 1 }
        return x < y ? -1 : (x > y ? 1 : 0)
    }

    /// Exact comparison of a double with an int64 (no rounding of the integer).
    static func compareDoubleToInt(_ d: Double, _ i: Int64) -> Int {
        if d.isNaN { return -1 }
        if d < -9.223372036854775808e18 { return -1 }
        if d >= 9.223372036854775808e18 { return 1 }
        let t = Int64(d.rounded(.down))
        if t != i { return t < i ? -1 : 1 }
        let frac = d - d.rounded(.down)
        return frac > 0 ? 1 : 0
    }

    public static func compareUTF8(_ x: String, _ y: String) -> Int {
        var ix = x.utf8.makeIterator(), iy = y.utf8.makeIterator()
        while true {
            switch (ix.next(), iy.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let a?, let b?): if a != b { return a < b ? -1 : 1 }
            }
        }
    }

    static func compareBytes(_ x: [UInt8], _ y: [UInt8]) -> Int {
        for i in 0..<min(x.count, y.count) where x[i] != y[i] { return x[i] < y[i] ? -1 : 1 }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    /// References order by their path segments, each segment compared as a document id.
    static func compareReferences(_ x: String, _ y: String) -> Int {
        let sx = x.split(separator: "/", omittingEmptySubsequences: false)
        let sy = y.split(separator: "/", omittingEmptySubsequences: false)
        for i in 0..<min(sx.count, sy.count) {
            let c = compareSegments(String(sx[i]), String(sy[i]))
            if c != 0 { return c }
        }
        return sx.count == sy.count ? 0 : (sx.count < sy.count ? -1 : 1)
    }

    /// Path segments compare by UTF-8 bytes, except numeric ids (`__id123__`, Datastore's
    /// integer ids), which come before every string id, in numeric order.
    public static func compareSegments(_ x: String, _ y: String) -> Int {
        switch (ResourcePath.numericID(x), ResourcePath.numericID(y)) {
        case (let a?, let b?): return a == b ? 0 : (a < b ? -1 : 1)
        case (_?, nil): return -1
        case (nil, _?): return 1
        case (nil, nil): return compareUTF8(x, y)
        }
    }
}
