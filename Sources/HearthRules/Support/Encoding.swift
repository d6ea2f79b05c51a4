/// Base64 (URL-safe alphabet with padding, as Firebase's `bytes.toBase64()`) and hex.
enum Encoding {
    static let base64URL = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func base64(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [base64URL[Int(n >> 18 & 63)], base64URL[Int(n >> 12 & 63)], base64URL[Int(n >> 6 & 63)], base64URL[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out += [base64URL[Int(n >> 18 & 63)], base64URL[Int(n >> 12 & 63)], 61, 61]
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [base64URL[Int(n >> 18 & 63)], base64URL[Int(n >> 12 & 63)], base64URL[Int(n >> 6 & 63)], 61]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map(RulesFormatting.hex2).joined() }
}
