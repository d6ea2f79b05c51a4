import Testing
import Foundation
import Crypto
import _CryptoExtras
import HearthCore
import HearthJWT
@testable import HearthAuth

@Suite struct TokenTests {
    let clock = TestClock()

    func service(allowUnsigned: Bool = false, signers: [CustomTokenSigner] = [], ring: KeyRing? = nil) throws -> TokenService {
        TokenService(
            projectID: "demo-proj", keyRing: try ring ?? KeyRing(directory: nil, clock: clock.clock), clock: clock.clock,
            allowUnsigned: allowUnsigned, customTokenSigners: signers)
    }

    var alice: Account {
        Account(uid: "alice", email: "alice@example.com", emailVerified: true, passwordHash: .pbkdf2SHA256(rounds: 1, salt: [], hash: [1]),
            displayName: "Alice", customClaims: #"{"admin":true,"sub":"nope"}"#, createdAt: 0, validSince: 0)
    }

    /// Re-encodes `payload` (and header) with the original signature segment, or a given one.
    func forge(_ token: String, header: JSON? = nil, payload: (JSON) -> JSON = { $0 }, signature: String? = nil) -> String {
        let jwt = JWT.parse(token)!
        let parts = token.split(separator: ".")
        let h = Base64.urlEncode((header ?? jwt.header).serializedBytes())
        let p = Base64.urlEncode(payload(jwt.payload).serializedBytes())
        return "\(h).\(p).\(signature ?? String(parts[2]))"
    }

    func set(_ claims: JSON, _ key: String, _ value: JSON) -> JSON {
        var m = claims.objectValue!
        if let i = m.firstIndex(where: { $0.0 == key }) { m[i].1 = value } else { m.append((key, value)) }
        return .object(m)
    }

    @Test func idTokenRoundTrip() throws {
        let s = try service()
        let token = try s.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds - 10)
        let jwt = try #require(JWT.parse(token))
        #expect(jwt.algorithm == "RS256")
        #expect(jwt.keyID == s.keyRing.publishedKeys.first?.kid)
        let v = try s.verifyIDToken(token)
        #expect(v.uid == "alice" && v.signed)
        #expect(v.claims["iss"]?.stringValue == "https://securetoken.google.com/demo-proj")
        #expect(v.claims["user_id"]?.stringValue == "alice")
        #expect(v.claims["exp"]?.int64Value == clock.seconds + 3600)
        #expect(v.claims["admin"]?.boolValue == true)
        #expect(v.claims["sub"]?.stringValue == "alice")
        #expect(v.claims["email_verified"]?.boolValue == true)
        #expect(v.claims["firebase"]?["identities"]?["email"] == .array([.string("alice@example.com")]))
        #expect(v.signInProvider == "password")
        #expect(v.authTime == clock.seconds - 10)
    }

    @Test func rejections() throws {
        let s = try service()
        let token = try s.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)
        let other = try service()  // a different key ring
        let kid = JWT.parse(token)!.keyID!

        try expectSync(.invalidIDToken) { try s.verifyIDToken("not.a.jwt") }
        try expectSync(.invalidIDToken) { try s.verifyIDToken("") }
        try expectSync(.invalidIDToken) { try other.verifyIDToken(token) }  // kid unknown
        try expectSync(.invalidIDToken) { try s.verifyIDToken(forge(token, payload: { set($0, "admin", .bool(false)) })) }  // tampered
        try expectSync(.invalidIDToken) { try s.verifyIDToken(forge(token, payload: { set($0, "aud", .string("other")) })) }
        try expectSync(.invalidIDToken) { try s.verifyIDToken(forge(token, payload: { set($0, "iss", .string("https://evil")) })) }
        try expectSync(.invalidIDToken) {
            try s.verifyIDToken(forge(token, header: .object([("alg", .string("none")), ("typ", .string("JWT"))]), signature: ""))
        }
        try expectSync(.invalidIDToken) {
            try s.verifyIDToken(forge(token, header: .object([("alg", .string("HS256")), ("kid", .string(kid))])))
        }
        try expectSync(.invalidIDToken) {
            try s.verifyIDToken(forge(token, header: .object([("alg", .string("RS256"))])))  // no kid
        }
        // The same signature bytes in a non-canonical spelling (an unused bit of the last digit set).
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var respelled = Array(token)
        respelled[respelled.count - 1] = alphabet[alphabet.firstIndex(of: respelled.last!)! | 1]
        try expectSync(.invalidIDToken) { try s.verifyIDToken(String(respelled)) }
        clock.advance(seconds: 3600)
        try expectSync(.tokenExpired) { try s.verifyIDToken(token) }
    }

    @Test func repeatedTokensSkipTheSignatureButNotTheClock() throws {
        let s = try service()
        let token = try s.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)
        #expect(try s.verifyIDToken(token).uid == alice.uid)
        #expect(s.verifiedIDTokens.count == 1)
        #expect(try s.verifyIDToken(token).uid == alice.uid)  // from the cache
        // Claims are checked on every presentation, cached or not.
        try expectSync(.invalidIDToken) { try s.verifyIDToken(token, issuer: "https://elsewhere") }
        // A tampered copy is another string: its signature is checked, and fails.
        try expectSync(.invalidIDToken) { try s.verifyIDToken(forge(token, payload: { set($0, "role", .string("root")) })) }
        // Another service (another key ring) does not share the cache.
        try expectSync(.invalidIDToken) { try service().verifyIDToken(token) }
        clock.advance(seconds: 3600)
        try expectSync(.tokenExpired) { try s.verifyIDToken(token) }
    }

    @Test func futureIssuedAtAndBadSubjectRejected() throws {
        let s = try service(allowUnsigned: true)
        let good = try s.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)
        func unsigned(_ f: (JSON) -> JSON) -> String {
            forge(good, header: .object([("alg", .string("none")), ("typ", .string("JWT"))]), payload: f, signature: "")
        }
        #expect(try s.verifyIDToken(unsigned { $0 }).signed == false)
        try expectSync(.invalidIDToken) { try s.verifyIDToken(unsigned { set($0, "iat", .int(clock.seconds + 100)) }) }
        try expectSync(.invalidIDToken) { try s.verifyIDToken(unsigned { set($0, "auth_time", .int(clock.seconds + 100)) }) }
        try expectSync(.invalidIDToken) { try s.verifyIDToken(unsigned { set($0, "sub", .string("")) }) }
        try expectSync(.invalidIDToken) { try s.verifyIDToken(unsigned { set($0, "sub", .string(String(repeating: "x", count: 129))) }) }
        try expectSync(.invalidIDToken) { try s.verifyIDToken(unsigned { set($0, "aud", .string("x")) }) }
    }

    @Test func keyRotationKeepsUnexpiredTokensVerifying() throws {
        let policy = KeyRing.Policy(rotationInterval: 7200, maxTokenLifetime: 3600, clockSkew: 300)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let ring = try KeyRing(directory: dir, policy: policy, clock: clock.clock)
        let s = try service(ring: ring)
        #expect(ring.publishedKeys.count == 2)  // active + next, published ahead
        let next = ring.publishedKeys[1].kid
        let t1 = try s.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)
        clock.advance(seconds: 7200 - 1)
        let t2 = try s.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)  // last second of key 1
        clock.advance(seconds: 1)
        let t3 = try s.mintIDToken(for: alice, signInProvider: "password", authTime: clock.seconds)
        #expect(JWT.parse(t3)!.keyID == next)
        #expect(JWT.parse(t2)!.keyID != next)
        #expect(throws: HearthError.self) { try s.verifyIDToken(t1) }  // expired by time, not by key
        #expect(try s.verifyIDToken(t2).uid == "alice")
        clock.advance(seconds: 3598)
        #expect(try s.verifyIDToken(t2).uid == "alice")  // key 1 retired but still published
        #expect(ring.publishedKeys.count == 3)
        // Persisted: a second ring over the same directory knows the same keys.
        let reloaded = try KeyRing(directory: dir, policy: policy, clock: clock.clock)
        #expect(reloaded.publishedKeys.map(\.kid) == ring.publishedKeys.map(\.kid))
        #expect(try TokenService(projectID: "demo-proj", keyRing: reloaded, clock: clock.clock).verifyIDToken(t3).uid == "alice")
        clock.advance(seconds: 302 + 1)
        #expect(ring.publishedKeys.count == 2)  // key 1 gone once nothing it signed can be valid
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".pem") }
        #expect(files.count == 2)
    }

    @Test func jwksShape() throws {
        let jwks = sharedRing.jwks()
        let keys = try #require(jwks["keys"]?.arrayValue)
        #expect(keys.count == 2)
        let k = keys[0]
        #expect(k["kty"]?.stringValue == "RSA" && k["alg"]?.stringValue == "RS256" && k["e"]?.stringValue == "AQAB")
        let n = try #require(Base64.urlDecode(k["n"]!.stringValue!))
        #expect(n.count == 256)
        let rebuilt = try _RSA.Signing.PublicKey(n: n, e: Base64.urlDecode("AQAB")!)
        #expect(rebuilt.derRepresentation == sharedRing.publishedKeys[0].publicKey.derRepresentation)
    }

    @Test func customTokens() throws {
        let sa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let email = "hearth-admin@demo-proj.iam.gserviceaccount.com"
        let s = try service(signers: [CustomTokenSigner(clientEmail: email, publicKey: sa.publicKey)])
        func mint(_ claims: [(String, JSON)], alg: String = "RS256", key: _RSA.Signing.PrivateKey? = nil) -> String {
            let payload: JSON = .object([
                ("aud", .string(TokenService.customTokenAudience)), ("iss", .string(email)), ("sub", .string(email)),
                ("iat", .int(clock.seconds)), ("exp", .int(clock.seconds + 3600)),
            ] + claims)
            return JWT.encode(header: .object([("alg", .string(alg)), ("typ", .string("JWT"))]), payload: payload) { input in
                guard alg == "RS256" else { return [] }
                return Array(try! (key ?? sa).signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
            }
        }
        let v = try s.verifyCustomToken(mint([("uid", .string("bob")), ("claims", .object([("premium", .bool(true))]))]))
        #expect(v.uid == "bob" && v.claims?["premium"] == .bool(true))
        try expectSync(.invalidCustomToken) { try s.verifyCustomToken(mint([("uid", .string("bob"))], key: try! .init(keySize: .bits2048))) }
        try expectSync(.invalidCustomToken) { try s.verifyCustomToken(mint([("uid", .string("bob"))], alg: "none")) }
        try expectSync(.invalidCustomToken) { try s.verifyCustomToken(mint([])) }
        try expectSync(.forbiddenClaim) { try s.verifyCustomToken(mint([("uid", .string("b")), ("claims", .object([("aud", .string("x"))]))])) }
        try expectSync(.claimsTooLarge) {
            try s.verifyCustomToken(mint([("uid", .string("b")), ("claims", .object([("big", .string(String(repeating: "x", count: 1000)))]))]))
        }
        let emu = try service(allowUnsigned: true)
        #expect(try emu.verifyCustomToken(mint([("uid", .string("carol"))], alg: "none")).uid == "carol")
        let old = mint([("uid", .string("bob"))])
        clock.advance(seconds: 3601)
        try expectSync(.invalidCustomToken) { try s.verifyCustomToken(old) }
    }
}

func expectSync<T>(_ code: AuthErrorCode, _ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) throws {
    do {
        _ = try body()
        Issue.record("expected \(code.rawValue), got success", sourceLocation: sourceLocation)
    } catch let e as HearthError {
        #expect(e.authErrorCode == code, "got \(e.message)", sourceLocation: sourceLocation)
    }
}
