/// A compact, exact binary serialisation of values, used to keep documents on disk.
/// Unlike ``IndexKey`` it is lossless (integer vs double, -0.0, NaN payloads are kept).
public enum ValueCodec {
    public static func encode(_ fields: [String: Value]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        out.append(1)  // format version
        appendMap(fields, to: &out)
        return out
    }

    public static func decode(_ bytes: [UInt8]) throws(HearthError) -> [String: Value] {
        var reader = Reader(bytes: bytes, offset: 0)
        guard try reader.byte() == 1 else { throw HearthError(.dataLoss, "Unknown stored document format.") }
        guard case .map(let m) = try reader.value(tag: 11) else { throw HearthError(.dataLoss, "Corrupt stored document.") }
        return m
    }

    static func appendMap(_ m: [String: Value], to out: inout [UInt8]) {
        appendVarint(UInt64(m.count), to: &out)
        for (k, v) in m {
            appendString(k, to: &out)
            append(v, to: &out)
        }
    }

    static func append(_ v: Value, to out: inout [UInt8]) {
        switch v {
        case .null: out.append(0)
        case .boolean(let b): out.append(b ? 2 : 1)
        case .integer(let i): out.append(3); appendFixed(UInt64(bitPattern: i), to: &out)
        case .double(let d): out.append(4); appendFixed(d.bitPattern, to: &out)
        case .timestamp(let t):
            out.append(5)
            appendFixed(UInt64(bitPattern: t.seconds), to: &out)
            appendVarint(UInt64(t.nanos), to: &out)
        case .string(let s): out.append(6); appendString(s, to: &out)
        case .bytes(let b): out.append(7); appendVarint(UInt64(b.count), to: &out); out.append(contentsOf: b)
        case .reference(let r): out.append(8); appendString(r, to: &out)
        case .geoPoint(let la, let lo): out.append(9); appendFixed(la.bitPattern, to: &out); appendFixed(lo.bitPattern, to: &out)
        case .array(let a):
            out.append(10)
            appendVarint(UInt64(a.count), to: &out)
            for e in a { append(e, to: &out) }
        case .map(let m): out.append(11); appendMap(m, to: &out)
        }
    }

    static func appendString(_ s: String, to out: inout [UInt8]) {
        let u = s.utf8
        appendVarint(UInt64(u.count), to: &out)
        out.append(contentsOf: u)
    }

    static func appendFixed(_ v: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    static func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    struct Reader {
        let bytes: [UInt8]
        var offset: Int

        mutating func byte() throws(HearthError) -> UInt8 {
            guard offset < bytes.count else { throw HearthError(.dataLoss, "Truncated stored document.") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func fixed() throws(HearthError) -> UInt64 {
            guard offset + 8 <= bytes.count else { throw HearthError(.dataLoss, "Truncated stored document.") }
            var v: UInt64 = 0
            for i in 0..<8 { v |= UInt64(bytes[offset + i]) << UInt64(8 * i) }
            offset += 8
            return v
        }

        mutating func varint() throws(HearthError) -> UInt64 {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try byte()
                v |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return v }
                shift += 7
                guard shift < 64 else { throw HearthError(.dataLoss, "Corrupt stored document.") }
            }
        }

        /// A length or count that must fit in the bytes that remain.
        mutating func length() throws(HearthError) -> Int {
            let v = try varint()
            guard v <= UInt64(bytes.count - offset) else { throw HearthError(.dataLoss, "Corrupt stored document (length).") }
            return Int(v)
        }

        mutating func raw(_ n: Int) throws(HearthError) -> ArraySlice<UInt8> {
            guard n >= 0, n <= bytes.count - offset else { throw HearthError(.dataLoss, "Truncated stored document.") }
            defer { offset += n }
            return bytes[offset..<(offset + n)]
        }

        mutating func string() throws(HearthError) -> String {
            String(decoding: try raw(try length()), as: UTF8.self)
        }

        mutating func value(tag: UInt8? = nil, depth: Int = 0) throws(HearthError) -> Value {
            guard depth < 64 else { throw HearthError(.dataLoss, "Corrupt stored document (nesting).") }
            let t: UInt8
            if let tag { t = tag } else { t = try byte() }
            switch t {
            case 0: return .null
            case 1: return .boolean(false)
            case 2: return .boolean(true)
            case 3: return .integer(Int64(bitPattern: try fixed()))
            case 4: return .double(Double(bitPattern: try fixed()))
            case 5:
                let s = Int64(bitPattern: try fixed())
                let nanos = try varint()
                guard nanos < 1_000_000_000 else { throw HearthError(.dataLoss, "Corrupt stored document (timestamp).") }
                return .timestamp(Timestamp(seconds: s, nanos: Int32(nanos)))
            case 6: return .string(try string())
            case 7: return .bytes(Array(try raw(try length())))
            case 8: return .reference(try string())
            case 9: return .geoPoint(latitude: Double(bitPattern: try fixed()), longitude: Double(bitPattern: try fixed()))
            case 10:
                let n = try length()
                var a: [Value] = []
                a.reserveCapacity(min(n, 1024))
                for _ in 0..<n { a.append(try value(depth: depth + 1)) }
                return .array(a)
            case 11:
                let n = try length()
                var m: [String: Value] = [:]
                m.reserveCapacity(min(n, 1024))
                for _ in 0..<n {
                    let k = try string()
                    m[k] = try value(depth: depth + 1)
                }
                return .map(m)
            default: throw HearthError(.dataLoss, "Corrupt stored document (tag \(t)).")
            }
        }
    }
}
