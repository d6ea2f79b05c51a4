/// A minimal DER encoder: just what a self-signed X.509 certificate needs.
enum DER {
    static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var v = n
        while v > 0 { bytes.insert(UInt8(v & 0xff), at: 0); v >>= 8 }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }
    static func sequence(_ parts: [UInt8]...) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static func set(_ parts: [UInt8]...) -> [UInt8] { tlv(0x31, parts.flatMap { $0 }) }
    static let null: [UInt8] = [0x05, 0x00]

    /// A non-negative INTEGER from big-endian magnitude bytes.
    static func unsignedInteger(_ magnitude: [UInt8]) -> [UInt8] {
        var m = Array(magnitude.drop(while: { $0 == 0 }))
        if m.isEmpty { m = [0] }
        if m[0] & 0x80 != 0 { m.insert(0, at: 0) }
        return tlv(0x02, m)
    }

    static func integer(_ v: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var x = v
        repeat { bytes.insert(UInt8(x & 0xff), at: 0); x >>= 8 } while x > 0
        return unsignedInteger(bytes)
    }

    /// An OBJECT IDENTIFIER from its dotted arcs.
    static func oid(_ arcs: [UInt]) -> [UInt8] {
        var out: [UInt8] = [UInt8(arcs[0] * 40 + arcs[1])]
        for arc in arcs.dropFirst(2) {
            var chunk: [UInt8] = [UInt8(arc & 0x7f)]
            var v = arc >> 7
            while v > 0 { chunk.insert(UInt8(v & 0x7f) | 0x80, at: 0); v >>= 7 }
            out += chunk
        }
        return tlv(0x06, out)
    }

    static func utf8String(_ s: String) -> [UInt8] { tlv(0x0c, Array(s.utf8)) }
    static func bitString(_ bytes: [UInt8]) -> [UInt8] { tlv(0x03, [0] + bytes) }
    static func explicit(_ tagNumber: UInt8, _ content: [UInt8]) -> [UInt8] { tlv(0xa0 | tagNumber, content) }

    /// UTCTime before 2050, GeneralizedTime from 2050 on (RFC 5280 §4.1.2.5).
    static func time(_ secondsSinceEpoch: Int64) -> [UInt8] {
        let days = Int(secondsSinceEpoch.floorDiv(86_400))
        let secs = Int(secondsSinceEpoch - Int64(days) * 86_400)
        let (y, m, d) = civil(days)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let clock = two(m) + two(d) + two(secs / 3600) + two(secs / 60 % 60) + two(secs % 60) + "Z"
        if y < 2050 { return tlv(0x17, Array((two(y % 100) + clock).utf8)) }
        return tlv(0x18, Array((String(y) + clock).utf8))
    }

    /// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar.
    static func civil(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

extension Int64 {
    fileprivate func floorDiv(_ d: Int64) -> Int64 { self >= 0 ? self / d : -((-self + d - 1) / d) }
}
