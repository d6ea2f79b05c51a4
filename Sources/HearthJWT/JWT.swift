public import HearthCore

/// A compact-serialised JWS (`header.payload.signature`) with JSON object header and payload —
/// the one JWT parser of Hearth (Auth, App Check, the token-verifier library, the client SDK).
///
/// Parsing is strict: exactly three segments, each base64url without padding (RFC 7515 §2)
/// in its canonical form (the unused bits of a final partial digit are zero, so one token
/// has one spelling), header and payload JSON objects, at most 16 KiB in all. Parsing checks
/// no signature: see ``verifySignature(algorithms:requireKeyID:keys:)``.
public struct JWT: Sendable {
    public var header: JSON
    public var payload: JSON
    /// The bytes the signature covers: the first two segments as sent.
    public var signingInput: [UInt8]
    public var signature: [UInt8]

    /// The longest token accepted, in bytes.
    public static let maxLength = 16 * 1024

    public init(header: JSON, payload: JSON, signingInput: [UInt8], signature: [UInt8]) {
        self.header = header
        self.payload = payload
        self.signingInput = signingInput
        self.signature = signature
    }

    /// Splits and decodes a compact JWT; nil if it is not one.
    public static func parse(_ token: String) -> JWT? {
        guard token.utf8.count <= maxLength, isCanonical(token), let segments = Base64.jwsSegments(token),
            let header = try? JSON.parse(segments.header), header.objectValue != nil,
            let payload = try? JSON.parse(segments.payload), payload.objectValue != nil
        else { return nil }
        return JWT(header: header, payload: payload, signingInput: segments.signingInput, signature: segments.signature)
    }

    /// Serialises header and payload and appends the signature `sign` makes over them.
    public static func encode<E: Error>(header: JSON, payload: JSON, sign: ([UInt8]) throws(E) -> [UInt8]) throws(E) -> String {
        let input = Base64.urlEncode(header.serializedBytes()) + "." + Base64.urlEncode(payload.serializedBytes())
        return input + "." + Base64.urlEncode(try sign(Array(input.utf8)))
    }

    /// `alg` of the header.
    public var algorithm: String? { header["alg"]?.stringValue }
    /// `kid` of the header.
    public var keyID: String? { header["kid"]?.stringValue }
    /// `typ` of the header.
    public var type: String? { header["typ"]?.stringValue }

    /// Whether every segment's final partial digit leaves its unused low bits zero (RFC 4648
    /// §3.5: the canonical encoding). The digits themselves are checked by the decoder.
    static func isCanonical(_ token: String) -> Bool {
        var length = 0
        var last: UInt8 = 0
        for byte in token.utf8 {
            if byte == UInt8(ascii: ".") {
                guard canonicalTail(length: length, last: last) else { return false }
                length = 0
            } else {
                length += 1
                last = byte
            }
        }
        return canonicalTail(length: length, last: last)
    }

    @inline(__always) static func canonicalTail(length: Int, last: UInt8) -> Bool {
        let unused: UInt8
        switch length % 4 {
        case 2: unused = 0x0f
        case 3: unused = 0x03
        default: return true
        }
        let value: UInt8
        switch last {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = last - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): value = last - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): value = last - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): value = 62
        case UInt8(ascii: "_"): value = 63
        default: return false
        }
        return value & unused == 0
    }
}

extension JSON {
    /// An integral number (JWT NumericDate); fractional seconds are truncated.
    public var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let i = Int64(text) { return i }
        if let d = Double(text), d.isFinite, abs(d) < 9e15 { return Int64(d) }
        return nil
    }

    /// A JSON number for an integer claim.
    public static func int(_ i: Int64) -> JSON { .number(String(i)) }
}
