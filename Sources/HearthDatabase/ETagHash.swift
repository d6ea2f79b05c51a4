import Crypto
import HearthCore

/// The ETag of a value: base64 of the SHA-1 of its export JSON (an opaque tag, as Firebase's).
enum ETagHash {
    static func hash(_ bytes: [UInt8]) -> String {
        Base64.encode(Array(Insecure.SHA1.hash(data: bytes)))
    }
}
