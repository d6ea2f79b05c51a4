/// An order-preserving, prefix-free byte encoding of values: for any two values,
/// `memcmp(encode(a), encode(b))` has the sign of ``ValueOrdering/compare(_:_:)``.
/// Index entries are stored under these keys so that SQLite's BLOB order is Firestore's order.
/// Inverting every byte of a prefix-free encoding reverses the order, which gives descending keys.
public enum IndexKey {
    static let end: UInt8 = 0x01
    static let entry: UInt8 = 0x02
    static let tagNull: UInt8 = 0x10, tagFalse: UInt8 = 0x20, tagTrue: UInt8 = 0x21
    static let tagNaN: UInt8 = 0x30, tagNumber: UInt8 = 0x31, tagTimestamp: UInt8 = 0x40
    static let tagString: UInt8 = 0x50, tagBytes: UInt8 = 0x60, tagReference: UInt8 = 0x70
    static let tagGeo: UInt8 = 0x80, tagArray: UInt8 = 0x90, tagVector: UInt8 = 0xA0, tagMap: UInt8 = 0xB0

    /// The first and last leading byte of the keys of one type (numbers include NaN).
    public static func tagRange(of type: Value.TypeOrder) -> (UInt8, UInt8) {
        switch type {
        case .null: (tagNull, tagNull)
        case .boolean: (tagFalse, tagTrue)
        case .number: (tagNaN, tagNumber)
        case .timestamp: (tagTimestamp, tagTimestamp)
        case .string: (tagString, tagString)
        case .bytes: (tagBytes, tagBytes)
        case .reference: (tagReference, tagReference)
        case .geoPoint: (tagGeo, tagGeo)
        case .array: (tagArray, tagArray)
        case .vector: (tagVector, tagVector)
        case .map: (tagMap, tagMap)
        }
    }

    public static func encode(_ value: Value, descending: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        append(value, to: &out)
        if descending { invert(&out, from: 0) }
        return out
    }

    public static func append(_ value: Value, descending: Bool, to out: inout [UInt8]) {
        let start = out.count
        append(value, to: &out)
        if descending { invert(&out, from: start) }
    }

    static func invert(_ out: inout [UInt8], from start: Int) {
        for i in start..<out.count { out[i] = ~out[i] }
    }

    public static func append(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(tagNull)
        case .boolean(let b): out.append(b ? tagTrue : tagFalse)
        case .double(let d) where d.isNaN: out.append(tagNaN)
        case .double(let d):
            out.append(tagNumber)
            appendDouble(d == 0 ? 0 : d, to: &out)
            appendUInt64(1 << 63, to: &out)
        case .integer(let i):
            out.append(tagNumber)
            var d = Double(i)
            if d >= 9.223372036854775808e18 || Int64(d) > i { d = d.nextDown }
            appendDouble(d, to: &out)
            appendUInt64(UInt64(bitPattern: i &- Int64(d)) ^ (1 << 63), to: &out)
        case .timestamp(let t):
            out.append(tagTimestamp)
            appendUInt64(UInt64(bitPattern: t.seconds) ^ (1 << 63), to: &out)
            appendUInt32(UInt32(bitPattern: t.nanos), to: &out)
        case .string(let s):
            out.append(tagString)
            appendEscaped(s.utf8, to: &out)
        case .bytes(let b):
            out.append(tagBytes)
            appendEscaped(b, to: &out)
        case .reference(let r):
            out.append(tagReference)
            for segment in r.split(separator: "/", omittingEmptySubsequences: false) {
                out.append(entry)
                appendSegment(segment, to: &out)
            }
            out.append(end)
        case .geoPoint(let la, let lo):
            out.append(tagGeo)
            appendDouble(la == 0 ? 0 : la, to: &out)
            appendDouble(lo == 0 ? 0 : lo, to: &out)
        case .array(let a):
            out.append(tagArray)
            for v in a { append(v, to: &out) }
            out.append(end)
        case .map(let m):
            if value.isVector, let elements = m["value"]?.arrayValue {
                out.append(tagVector)
                appendUInt64(UInt64(elements.count), to: &out)
                for v in elements { append(v, to: &out) }
                out.append(end)
                return
            }
            out.append(tagMap)
            for key in ValueOrdering.sortedKeys(m) {
                out.append(entry)
                appendEscaped(key.utf8, to: &out)
                append(m[key]!, to: &out)
            }
            out.append(end)
        }
    }

    /// Encodes a document path so that byte order is Firestore's `__name__` order.
    public static func encodePath(_ path: ResourcePath, descending: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        appendPath(path, to: &out)
        if descending { invert(&out, from: 0) }
        return out
    }

    public static func appendPath(_ path: ResourcePath, descending: Bool = false, to out: inout [UInt8]) {
        let start = out.count
        for segment in path.segments {
            out.append(entry)
            appendSegment(segment, to: &out)
        }
        out.append(end)
        if descending { invert(&out, from: start) }
    }

    /// The smallest key greater than every key that starts with `prefix`.
    public static func successor(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var p = prefix
        while let last = p.last {
            if last < 0xFF {
                p[p.count - 1] = last + 1
                return p
            }
            p.removeLast()
        }
        return nil
    }

    /// A path segment: its escaped bytes, or — for a numeric id — `00 00` and the integer,
    /// which sorts before every string (whose encoding starts `00 01` when empty, `00 FF` for
    /// a NUL, or a byte ≥ 1), numeric ids in numeric order.
    static func appendSegment<S: StringProtocol>(_ segment: S, to out: inout [UInt8]) {
        if let n = ResourcePath.numericID(segment) {
            out.append(0)
            out.append(0)
            appendUInt64(UInt64(bitPattern: n) ^ (1 << 63), to: &out)
        } else {
            appendEscaped(segment.utf8, to: &out)
        }
    }

    static func appendEscaped<S: Sequence>(_ bytes: S, to out: inout [UInt8]) where S.Element == UInt8 {
        for b in bytes {
            if b == 0 {
                out.append(0)
                out.append(0xFF)
            } else {
                out.append(b)
            }
        }
        out.append(0)
        out.append(1)
    }

    static func appendDouble(_ d: Double, to out: inout [UInt8]) {
        let bits = d.bitPattern
        appendUInt64(bits & (1 << 63) != 0 ? ~bits : bits ^ (1 << 63), to: &out)
    }

    static func appendUInt64(_ v: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    static func appendUInt32(_ v: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }
}
