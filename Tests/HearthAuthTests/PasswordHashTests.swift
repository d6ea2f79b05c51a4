import Testing
import Crypto
import _CryptoExtras
import HearthCore
@testable import HearthAuth

struct ScryptVector: Sendable, CustomTestStringConvertible {
    var password: String, salt: String, n: Int, r: Int, p: Int, expected: String
    var testDescription: String { "scrypt(\(password), \(salt), N=\(n), r=\(r), p=\(p))" }
}

/// RFC 7914 §12 (the N = 2^20 vector is left out: it needs 1 GiB).
let rfc7914Vectors = [
    ScryptVector(password: "", salt: "", n: 16, r: 1, p: 1, expected: """
        77 d6 57 62 38 65 7b 20 3b 19 ca 42 c1 8a 04 97 f1 6b 48 44 e3 07 4a e8 df df fa 3f ed e2 14 42
        fc d0 06 9d ed 09 48 f8 32 6a 75 3a 0f c8 1f 17 e8 d3 e0 fb 2e 0d 36 28 cf 35 e2 0c 38 d1 89 06
        """),
    ScryptVector(password: "password", salt: "NaCl", n: 1024, r: 8, p: 16, expected: """
        fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe 7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62
        2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da c7 27 af b9 4a 83 ee 6d 83 60 cb df a2 cc 06 40
        """),
    ScryptVector(password: "pleaseletmein", salt: "SodiumChloride", n: 16384, r: 8, p: 1, expected: """
        70 23 bd cb 3a fd 73 48 46 1c 06 cd 81 fd 38 eb fd a8 fb ba 90 4f 8e 3e a9 b5 43 f6 54 5d a1 f2
        d5 43 29 55 61 3f 0f cf 62 d4 97 05 24 2a 9a f9 e6 1e 85 dc 0d 65 1e 40 df cf 01 7b 45 57 58 87
        """),
]

@Suite struct PasswordHashTests {
    @Test(arguments: rfc7914Vectors)
    func scryptRFC7914(_ v: ScryptVector) throws {
        let out = try Scrypt.derive(password: Array(v.password.utf8), salt: Array(v.salt.utf8), n: v.n, r: v.r, p: v.p, length: 64)
        #expect(out == hex(v.expected))
    }

    /// Odd shapes (N = 2, p = 3, lengths not a multiple of the block), answers from OpenSSL
    /// (Python's hashlib.scrypt): an implementation independent of the BoringSSL one used.
    @Test func scryptOddShapesMatchOpenSSL() throws {
        let pw = Array("correct horse".utf8), salt: [UInt8] = [1, 2, 3, 250]
        #expect(try Scrypt.derive(password: pw, salt: salt, n: 2, r: 1, p: 1, length: 1) == hex("1d"))
        #expect(try Scrypt.derive(password: pw, salt: salt, n: 32, r: 2, p: 3, length: 33) == hex("""
            54cb2cda503c8f02a083aab73b6c0850aaf01daf92cf1e6b6da8948e8c8892e54e
            """))
        #expect(try Scrypt.derive(password: pw, salt: salt, n: 256, r: 4, p: 1, length: 100) == hex("""
            ac579bbb44ec7a2ca7673979602260ddce6ba8e2e53aa642f4e4d56bf2196e8bc84817e963c69f98e9ae41e1ac6ab9ef536d70c866bb1200a0ce
            e884d455e611a264bd9cbf4ab402d7fde01a3953e8e5c99e291365f734ce6ed9b812bbe4bfc802e53a77
            """))
    }

    @Test func scryptRejectsBadParameters() {
        #expect(throws: HearthError.self) { try Scrypt.derive(password: [1], salt: [], n: 3, r: 1, p: 1, length: 8) }
        #expect(throws: HearthError.self) { try Scrypt.derive(password: [1], salt: [], n: 1 << 20, r: 16, p: 1, length: 8) }
    }

    /// RFC 7914 §11.
    @Test func pbkdf2SHA256Vectors() {
        #expect(PBKDF2.derive(SHA256.self, password: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1, length: 64) == hex("""
            55 ac 04 6e 56 e3 08 9f ec 16 91 c2 25 44 b6 05 f9 41 85 21 6d de 04 65 e6 8b 9d 57 c2 0d ac bc
            49 ca 9c cc f1 79 b6 45 99 16 64 b3 9d 77 ef 31 7c 71 b8 45 b1 e3 0b d5 09 11 20 41 d3 a1 97 83
            """))
        #expect(PBKDF2.derive(SHA256.self, password: Array("Password".utf8), salt: Array("NaCl".utf8), iterations: 80000, length: 64) == hex("""
            4d dc d8 f6 0b 98 be 21 83 0c ee 5e f2 27 01 f9 64 1a 44 18 d0 4c 04 14 ae ff 08 87 6b 34 ab 56
            a1 d4 25 a1 22 58 33 54 9a db 84 1b 51 c9 b3 17 6a 27 2b de bb a1 d0 78 47 8f 62 b3 97 f3 3c 8d
            """))
        #expect(PBKDF2.derive(SHA256.self, password: [1], salt: [], iterations: 1, length: 0) == [])
    }

    /// RFC 6070 (SHA-1), and SHA-512 against OpenSSL (Python's hashlib).
    @Test func pbkdf2OtherHashes() {
        #expect(PBKDF2.derive(Insecure.SHA1.self, password: Array("password".utf8), salt: Array("salt".utf8), iterations: 4096, length: 20)
            == hex("4b007901b765489abead49d926f721d065a429c1"))
        #expect(PBKDF2.derive(SHA512.self, password: Array("Password".utf8), salt: Array("NaCl".utf8), iterations: 1000, length: 40)
            == hex("770848fb6d2da0ab075635d163e49e6c000d5238141cc78e70751e4dfd200e55f5a8ac244ed11813"))
    }

    /// The example from firebase/scrypt's README (the utility Firebase publishes for its hashes).
    @Test func firebaseScryptKnownExample() throws {
        let params = try FirebaseScryptParameters(
            base64SignerKey: "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
            base64SaltSeparator: "Bw==", rounds: 8, memoryCost: 14)
        let hash = PasswordHash.firebaseScrypt(
            params, salt: b64("42xEC+ixf3L2lw=="),
            hash: b64("lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="))
        #expect(try hash.verify("user1password"))
        #expect(try !hash.verify("user1passwordX"))
    }

    @Test func nativeScryptRoundTrip() throws {
        let h = try ScryptParameters.testing.hash("hunter22")
        #expect(try h.verify("hunter22"))
        #expect(try !h.verify("hunter23"))
        #expect(h.salt.count == 16)
        #expect(try ScryptParameters.testing.hash("hunter22").salt != h.salt)
        #expect(h.isNative(.testing) && !h.isNative(.strong))
    }

    @Test func importedPBKDF2AndHMAC() throws {
        let salt: [UInt8] = Array("NaCl".utf8)
        let pb = PasswordHash.pbkdf2SHA256(
            rounds: 1000, salt: salt,
            hash: PBKDF2.derive(SHA256.self, password: Array("s3cret!".utf8), salt: salt, iterations: 1000, length: 32))
        #expect(try pb.verify("s3cret!"))
        #expect(try !pb.verify("s3cret?"))
        let key: [UInt8] = Array("import-key".utf8)
        let mac = Array(HMAC<SHA256>.authenticationCode(for: Array("s3cret!".utf8) + salt, using: SymmetricKey(data: key)))
        #expect(try PasswordHash.hmacSHA256(key: key, order: .passwordFirst, salt: salt, hash: mac).verify("s3cret!"))
        #expect(try !PasswordHash.hmacSHA256(key: key, order: .saltFirst, salt: salt, hash: mac).verify("s3cret!"))
    }
}
