import HearthCore
import Foundation

/// A compact JWS split and decoded, before any check.
struct ParsedToken {
    var header: JSON
    var payload: JSON
    var signingInput: [UInt8]
    var signature: [UInt8]

    init(_ token: String) throws(TokenVerificationError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024,
            let h = PublicKeySet.base64URLDecode(String(parts[0])), let p = PublicKeySet.base64URLDecode(String(parts[1])),
            let s = PublicKeySet.base64URLDecode(String(parts[2])),
            let header = try? JSON.parse(h), header.objectValue != nil,
            let payload = try? JSON.parse(p), payload.objectValue != nil
        else { throw .malformed }
        self.header = header
        self.payload = payload
        self.signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        self.signature = s
    }

    var algorithm: String? { header["alg"]?.stringValue }
    var keyID: String? { header["kid"]?.stringValue }
}
