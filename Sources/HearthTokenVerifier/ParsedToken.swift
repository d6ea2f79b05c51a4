import HearthCore
import Foundation

/// A compact JWS split and decoded, before any check.
struct ParsedToken {
    var header: JSON
    var payload: JSON
    var signingInput: [UInt8]
    var signature: [UInt8]

    init(_ token: String) throws(TokenVerificationError) {
        guard token.utf8.count <= 16 * 1024, let segments = Base64.jwsSegments(token),
            let header = try? JSON.parse(segments.header), header.objectValue != nil,
            let payload = try? JSON.parse(segments.payload), payload.objectValue != nil
        else { throw .malformed }
        self.header = header
        self.payload = payload
        self.signingInput = segments.signingInput
        self.signature = segments.signature
    }

    var algorithm: String? { header["alg"]?.stringValue }
    var keyID: String? { header["kid"]?.stringValue }
}
