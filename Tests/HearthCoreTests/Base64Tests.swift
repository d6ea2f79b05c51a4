import Foundation
import HearthCore
import Testing

@Suite("Base64")
struct Base64Tests {
    @Test("Round trips of every length 0…300 agree with Foundation in both alphabets")
    func agreesWithFoundation() {
        var rng = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let foundation = Data(bytes).base64EncodedString()
            #expect(Base64.encode(bytes) == foundation)
            let url = foundation.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64.urlEncode(bytes) == url)
            #expect(Base64.decode(foundation) == bytes)
            #expect(Base64.decode(url) == bytes)
            #expect(Base64.urlDecode(url) == bytes)
        }
    }

    @Test("RFC 4648 test vectors")
    func vectors() {
        let cases = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in cases {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test("Invalid input is refused")
    func invalid() {
        #expect(Base64.decode("Zm9v YmFy") == nil)
        #expect(Base64.decode("Zm9vY") == nil)  // one digit past a group carries no byte
        #expect(Base64.decode("Zm9v!") == nil)
        #expect(Base64.urlDecode("Zm8=") == nil)  // JWT segments have no padding
        #expect(Base64.urlDecode("a+b/") == nil)  // … and only the URL-safe alphabet
        #expect(Base64.urlDecode("a-b_") == [0x6B, 0xE6, 0xFF])
        #expect(Base64.decode("\u{00E9}") == nil)
    }
}
