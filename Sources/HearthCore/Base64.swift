/// Base64 (RFC 4648 §4) and base64url (§5) without Foundation: table-driven, one pass, no
/// intermediate strings — JWT verification decodes three segments per request.
///
/// `decode` accepts either alphabet, with or without padding (firebase-admin's hash exports
/// use both); `urlDecode` accepts only the URL-safe alphabet without padding, as JWTs require.
public enum Base64 {
    static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 0–63 for a digit of either alphabet, 0xFF otherwise.
    static let values: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in standard.enumerated() { t[Int(c)] = UInt8(i) }
        t[Int(UInt8(ascii: "-"))] = 62
        t[Int(UInt8(ascii: "_"))] = 63
        return t
    }()

    public static func encode(_ bytes: some Collection<UInt8>) -> String { encode(bytes, alphabet: standard, pad: true) }

    public static func urlEncode(_ bytes: some Collection<UInt8>) -> String { encode(bytes, alphabet: url, pad: false) }

    static func encode(_ bytes: some Collection<UInt8>, alphabet: [UInt8], pad: Bool) -> String {
        let input = Array(bytes)
        let full = input.count / 3, rest = input.count % 3
        let length = full * 4 + (rest == 0 ? 0 : (pad ? 4 : rest + 1))
        return String(unsafeUninitializedCapacity: length) { out in
            var o = 0
            var i = 0
            while i + 3 <= input.count {
                let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                out[o] = alphabet[Int(n >> 18)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                out[o + 3] = alphabet[Int(n & 63)]
                i += 3
                o += 4
            }
            if rest > 0 {
                let n = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
                out[o] = alphabet[Int(n >> 18)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                o += 2
                if rest == 2 {
                    out[o] = alphabet[Int(n >> 6 & 63)]
                    o += 1
                } else if pad {
                    out[o] = UInt8(ascii: "=")
                    o += 1
                }
                if pad {
                    out[o] = UInt8(ascii: "=")
                    o += 1
                }
            }
            return o
        }
    }

    /// Either alphabet, padded or not; nil for anything else (whitespace included).
    public static func decode(_ text: String) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        for _ in 0..<2 where utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        return decodeDigits(utf8, urlOnly: false)
    }

    /// base64url without padding, as in JWTs; nil for `+`, `/`, `=` or any other byte.
    public static func urlDecode(_ text: some StringProtocol) -> [UInt8]? {
        decodeDigits(Array(text.utf8), urlOnly: true)
    }

    /// 0–63 for a digit of the URL-safe alphabet only, 0xFF otherwise (`+` and `/` too).
    static let urlValues: [UInt8] = {
        var t = values
        t[Int(UInt8(ascii: "+"))] = 0xFF
        t[Int(UInt8(ascii: "/"))] = 0xFF
        return t
    }()

    static func decodeDigits(_ digits: [UInt8], urlOnly: Bool) -> [UInt8]? {
        digits.withUnsafeBufferPointer { decodeDigits($0, urlOnly: urlOnly) }
    }

    /// Decodes unpadded digits, four at a time, straight into the result's storage.
    static func decodeDigits(_ digits: UnsafeBufferPointer<UInt8>, urlOnly: Bool) -> [UInt8]? {
        let count = digits.count
        let rest = count % 4
        guard rest != 1 else { return nil }
        let length = count / 4 * 3 + (rest == 0 ? 0 : rest - 1)
        var valid = true
        let out = (urlOnly ? urlValues : values).withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
                var bad: UInt8 = 0
                var i = 0, o = 0
                let full = count - rest
                while i < full {
                    let a = table[Int(digits[i])], b = table[Int(digits[i + 1])]
                    let c = table[Int(digits[i + 2])], d = table[Int(digits[i + 3])]
                    bad |= a | b | c | d
                    let n = UInt32(a & 63) << 18 | UInt32(b & 63) << 12 | UInt32(c & 63) << 6 | UInt32(d & 63)
                    buffer[o] = UInt8(truncatingIfNeeded: n >> 16)
                    buffer[o + 1] = UInt8(truncatingIfNeeded: n >> 8)
                    buffer[o + 2] = UInt8(truncatingIfNeeded: n)
                    i += 4
                    o += 3
                }
                // Leftover bits of the last digit are ignored, as Foundation's decoder does.
                if rest >= 2 {
                    let a = table[Int(digits[i])], b = table[Int(digits[i + 1])]
                    let c = rest == 3 ? table[Int(digits[i + 2])] : 0
                    bad |= a | b | c
                    let n = UInt32(a & 63) << 18 | UInt32(b & 63) << 12 | UInt32(c & 63) << 6
                    buffer[o] = UInt8(truncatingIfNeeded: n >> 16)
                    o += 1
                    if rest == 3 {
                        buffer[o] = UInt8(truncatingIfNeeded: n >> 8)
                        o += 1
                    }
                }
                // A non-digit maps to 0xFF: its high bit survives the OR.
                valid = bad & 0x80 == 0
                initialized = o
            }
        }
        return valid ? out : nil
    }

    /// A compact JWS (`header.payload.signature`, base64url each) split and decoded, with the
    /// signing input (`header.payload` as sent); nil unless exactly three valid segments.
    public static func jwsSegments(_ token: String) -> (header: [UInt8], payload: [UInt8], signature: [UInt8], signingInput: [UInt8])? {
        var token = token
        return token.withUTF8 { bytes in
            guard let first = bytes.firstIndex(of: UInt8(ascii: ".")),
                let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ".")),
                !bytes[(second + 1)...].contains(UInt8(ascii: "."))
            else { return nil }
            guard let h = decodeDigits(UnsafeBufferPointer(rebasing: bytes[..<first]), urlOnly: true),
                let p = decodeDigits(UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second]), urlOnly: true),
                let s = decodeDigits(UnsafeBufferPointer(rebasing: bytes[(second + 1)...]), urlOnly: true)
            else { return nil }
            return (h, p, s, Array(UnsafeBufferPointer(rebasing: bytes[..<second])))
        }
    }
}
