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

    static func decodeDigits(_ digits: [UInt8], urlOnly: Bool) -> [UInt8]? {
        let rest = digits.count % 4
        guard rest != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(digits.count / 4 * 3 + 2)
        var acc: UInt32 = 0
        var n = 0
        for c in digits {
            if urlOnly && (c == UInt8(ascii: "+") || c == UInt8(ascii: "/")) { return nil }
            let v = values[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            n += 1
            if n == 4 {
                out.append(UInt8(acc >> 16))
                out.append(UInt8(acc >> 8 & 0xFF))
                out.append(UInt8(acc & 0xFF))
                acc = 0
                n = 0
            }
        }
        // Leftover bits of the last digit are ignored, as Foundation's decoder does.
        if n == 2 {
            out.append(UInt8(acc >> 4 & 0xFF))
        } else if n == 3 {
            out.append(UInt8(acc >> 10))
            out.append(UInt8(acc >> 2 & 0xFF))
        }
        return out
    }

    /// A compact JWS (`header.payload.signature`, base64url each) split and decoded, with the
    /// signing input (`header.payload` as sent); nil unless exactly three valid segments.
    public static func jwsSegments(_ token: String) -> (header: [UInt8], payload: [UInt8], signature: [UInt8], signingInput: [UInt8])? {
        let bytes = Array(token.utf8)
        guard let first = bytes.firstIndex(of: UInt8(ascii: ".")),
            let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ".")),
            !bytes[(second + 1)...].contains(UInt8(ascii: "."))
        else { return nil }
        guard let h = decodeDigits(Array(bytes[..<first]), urlOnly: true),
            let p = decodeDigits(Array(bytes[(first + 1)..<second]), urlOnly: true),
            let s = decodeDigits(Array(bytes[(second + 1)...]), urlOnly: true)
        else { return nil }
        return (h, p, s, Array(bytes[..<second]))
    }
}
