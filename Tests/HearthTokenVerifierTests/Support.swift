import Foundation
import HearthAuth
import HearthCore
@testable import HearthTokenVerifier
import Synchronization
import _CryptoExtras
import Crypto

/// A settable clock shared by the token issuer and the verifier (seconds since the epoch).
final class TestClock: Sendable {
    let value: Mutex<Int64>
    init(_ seconds: Int64 = 1_800_000_000) { value = Mutex(seconds) }
    var seconds: Int64 { value.withLock { $0 } }
    func advance(_ s: Int64) { value.withLock { $0 += s } }
    var auth: AuthClock { AuthClock { [self] in seconds * 1000 } }
    var now: @Sendable () -> Int64 { { [self] in seconds } }
}

/// A key source that serves a replaceable document and counts fetches.
final class CountingKeySource: PublicKeySource {
    let document: Mutex<[UInt8]>
    let maxAge: Int64?
    let count = Mutex(0)

    init(document: [UInt8], maxAge: Int64?) {
        self.document = Mutex(document)
        self.maxAge = maxAge
    }

    var fetches: Int { count.withLock { $0 } }
    func replace(_ d: [UInt8]) { document.withLock { $0 = d } }

    func fetchKeys() async throws(TokenVerificationError) -> PublicKeySet {
        count.withLock { $0 += 1 }
        return try PublicKeySet.parse(document.withLock { $0 }, maxAge: maxAge)
    }
}

/// A Hearth issuer (KeyRing + TokenService) on a test clock.
struct Issuer {
    static let project = "demo-verifier"
    let clock: TestClock
    let keyRing: KeyRing
    let tokens: TokenService

    init(clock: TestClock = TestClock(), rotationInterval: Int64 = 6 * 3600) throws {
        self.clock = clock
        keyRing = try KeyRing(directory: nil, policy: .init(rotationInterval: rotationInterval), clock: clock.auth)
        tokens = TokenService(projectID: Self.project, keyRing: keyRing, clock: clock.auth)
    }

    var jwks: [UInt8] { keyRing.jwks().serializedBytes() }

    /// The x509 JSON document (`{"kid": "-----BEGIN CERTIFICATE-----…"}`) for the published keys.
    var x509: [UInt8] {
        JSON.object(keyRing.publishedKeys.map { k -> (String, JSON) in (k.kid, .string(TestCertificate.pem(for: k.privateKey))) }).serializedBytes()
    }

    /// Firebase-style claims for `uid`, now, with `overrides` replacing or adding members.
    func claims(uid: String = "alice", _ overrides: [(String, JSON)] = []) -> JSON {
        let now = clock.seconds
        var m: [(String, JSON)] = [
            ("iss", .string("https://securetoken.google.com/\(Self.project)")), ("aud", .string(Self.project)),
            ("auth_time", .number(String(now))), ("user_id", .string(uid)), ("sub", .string(uid)),
            ("iat", .number(String(now))), ("exp", .number(String(now + 3600))), ("email", .string("alice@example.com")),
            ("email_verified", .bool(true)),
            ("firebase", .object([("identities", .object([])), ("sign_in_provider", .string("password"))])),
        ]
        for (k, v) in overrides {
            if let i = m.firstIndex(where: { $0.0 == k }) { m[i].1 = v } else { m.append((k, v)) }
        }
        return .object(m)
    }

    func token(uid: String = "alice", _ overrides: [(String, JSON)] = []) throws -> String {
        try tokens.sign(claims(uid: uid, overrides))
    }

    func verifier(source: any PublicKeySource, minimumRefetchInterval: Int64 = 30) -> TokenVerifier {
        TokenVerifier(
            configuration: .init(projectID: Self.project, leeway: 0, minimumRefetchInterval: minimumRefetchInterval),
            source: source, now: clock.now)
    }
}

/// A self-signed X.509 v3 certificate written with a small DER writer (no openssl needed).
enum TestCertificate {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var len: [UInt8]
        if content.count < 0x80 {
            len = [UInt8(content.count)]
        } else {
            var n = content.count
            var bytes: [UInt8] = []
            while n > 0 { bytes.insert(UInt8(n & 0xff), at: 0); n >>= 8 }
            len = [0x80 | UInt8(bytes.count)] + bytes
        }
        return [tag] + len + content
    }
    static func seq(_ parts: [UInt8]...) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }

    static func der(for key: _RSA.Signing.PrivateKey) -> [UInt8] {
        let sha256WithRSA: [UInt8] = [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00]
        let name = seq(tlv(0x31, seq([0x06, 0x03, 0x55, 0x04, 0x03], tlv(0x0c, Array("hearth-test".utf8)))))
        let validity = seq(tlv(0x17, Array("250101000000Z".utf8)), tlv(0x17, Array("350101000000Z".utf8)))
        let tbs = seq(
            tlv(0xa0, tlv(0x02, [0x02])), tlv(0x02, [0x01, 0x23]), tlv(0x30, sha256WithRSA), name, validity, name,
            Array(key.publicKey.derRepresentation))
        let signature = try! key.signature(for: SHA256.hash(data: tbs), padding: .insecurePKCS1v1_5).rawRepresentation
        return seq(tbs, tlv(0x30, sha256WithRSA), tlv(0x03, [0x00] + Array(signature)))
    }

    static func pem(for key: _RSA.Signing.PrivateKey) -> String {
        let b64 = Data(der(for: key)).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN CERTIFICATE-----\n\(b64)\n-----END CERTIFICATE-----\n"
    }
}

extension String {
    /// The token with one character of its signature changed.
    var tamperedSignature: String {
        var chars = Array(self)
        let i = chars.count - 5
        chars[i] = chars[i] == "A" ? "B" : "A"
        return String(chars)
    }
}
