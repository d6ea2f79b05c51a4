public import HearthCore
import Foundation

/// A compact-serialised JWS (header.payload.signature) with JSON header and payload.
public struct JWT: Sendable {
    public var header: JSON
    public var payload: JSON
    /// The bytes the signature covers: the first two segments as sent.
    public var signingInput: [UInt8]
    public var signature: [UInt8]

    /// Splits and decodes a compact JWT; nil if it is not one.
    public static func parse(_ token: String) -> JWT? {
        guard token.utf8.count <= 16 * 1024, let segments = Base64.jwsSegments(token),
            let header = try? JSON.parse(segments.header), header.objectValue != nil,
            let payload = try? JSON.parse(segments.payload), payload.objectValue != nil
        else { return nil }
        return JWT(header: header, payload: payload, signingInput: segments.signingInput, signature: segments.signature)
    }

    /// Serialises header and payload and appends the signature `sign` makes over them.
    public static func encode(header: JSON, payload: JSON, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64.urlEncode(header.serializedBytes()) + "." + Base64.urlEncode(payload.serializedBytes())
        return input + "." + Base64.urlEncode(try sign(Array(input.utf8)))
    }

    public var algorithm: String? { header["alg"]?.stringValue }
    public var keyID: String? { header["kid"]?.stringValue }
}

extension JSON {
    /// An integral number (JWT NumericDate); fractional seconds are truncated.
    public var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let i = Int64(text) { return i }
        if let d = Double(text), d.isFinite, abs(d) < 9e15 { return Int64(d) }
        return nil
    }

    static func int(_ i: Int64) -> JSON { .number(String(i)) }
}
