import Foundation
import HearthAuth
import HearthCore
import HearthJWT
@testable import HearthTokenVerifier
import Testing

@Suite struct TokenVerifierTests {
    @Test func verifiesHearthTokenViaJWKS() async throws {
        let issuer = try Issuer()
        let source = CountingKeySource(document: issuer.jwks, maxAge: 600)
        let verifier = issuer.verifier(source: source)
        let account = Account(uid: "u-1", email: "u1@example.com", emailVerified: true, createdAt: issuer.clock.seconds * 1000, validSince: 0)
        let token = try issuer.tokens.mintIDToken(for: account, signInProvider: "password", authTime: issuer.clock.seconds - 10)
        let v = try await verifier.verify(token)
        #expect(v.uid == "u-1")
        #expect(v.email == "u1@example.com")
        #expect(v.emailVerified)
        #expect(v.signInProvider == "password")
        #expect(v.authTime == issuer.clock.seconds - 10)
        #expect(v.expiresAt == issuer.clock.seconds + 3600)
        #expect(v[claim: "user_id"]?.stringValue == "u-1")
        #expect(v.keyID == (try issuer.keyRing.activeKey().kid))
    }

    @Test func verifiesHearthTokenViaX509Document() async throws {
        let issuer = try Issuer()
        let set = try PublicKeySet.parse(issuer.x509)
        #expect(set.keys.count == issuer.keyRing.publishedKeys.count)
        let verifier = issuer.verifier(source: CountingKeySource(document: issuer.x509, maxAge: nil))
        let v = try await verifier.verify(try issuer.token(uid: "bob", [("custom", .string("yes"))]))
        #expect(v.uid == "bob")
        #expect(v[claim: "custom"] == .string("yes"))
    }

    @Test func x509KeysEqualJWKSKeys() throws {
        let issuer = try Issuer()
        let a = try PublicKeySet.parse(issuer.x509), b = try PublicKeySet.parse(issuer.jwks)
        #expect(Set(a.keys.keys) == Set(b.keys.keys))
        for (kid, key) in a.keys { #expect(key.derRepresentation == b.keys[kid]?.derRepresentation) }
    }

    static let rejections: [(String, [(String, JSON)], TokenVerificationError)] = [
        ("expired", [("iat", .number("1799990000")), ("auth_time", .number("1799990000")), ("exp", .number("1799999999"))],
         .expired(expiresAt: 1_799_999_999, now: 1_800_000_000)),
        ("expiresNow", [("exp", .number("1800000000"))], .expired(expiresAt: 1_800_000_000, now: 1_800_000_000)),
        ("futureIat", [("iat", .number("1800000100"))], .issuedInFuture(issuedAt: 1_800_000_100, now: 1_800_000_000)),
        ("futureAuthTime", [("auth_time", .number("1800000100"))], .authTimeInFuture(authTime: 1_800_000_100, now: 1_800_000_000)),
        ("wrongAud", [("aud", .string("other-project"))], .wrongAudience("other-project")),
        ("wrongIss", [("iss", .string("https://securetoken.google.com/other-project"))],
         .wrongIssuer("https://securetoken.google.com/other-project")),
        ("missingIss", [("iss", .null)], .wrongIssuer(nil)),
        ("emptySub", [("sub", .string(""))], .invalidSubject),
        ("longSub", [("sub", .string(String(repeating: "x", count: 129)))], .invalidSubject),
        ("numericSub", [("sub", .number("12"))], .invalidSubject),
        ("missingExp", [("exp", .string("soon"))], .missingClaim("exp")),
    ]

    @Test(arguments: rejections.indices)
    func rejectsBadClaims(_ i: Int) async throws {
        let (_, overrides, expected) = Self.rejections[i]
        let issuer = try Issuer()
        let verifier = issuer.verifier(source: CountingKeySource(document: issuer.jwks, maxAge: 600))
        let token = try issuer.token(overrides)
        await #expect(throws: expected) { try await verifier.verify(token) }
    }

    @Test func leewayAcceptsSlightlySkewedClocks() async throws {
        let issuer = try Issuer()
        let verifier = TokenVerifier(
            configuration: .init(projectID: Issuer.project, leeway: 30),
            source: CountingKeySource(document: issuer.jwks, maxAge: 600), now: issuer.clock.now)
        let token = try issuer.token([("iat", .number("1800000020")), ("auth_time", .number("1800000020"))])
        #expect(try await verifier.verify(token).issuedAt == 1_800_000_020)
        let expired = try issuer.token([("iat", .number("1799990000")), ("exp", .number("1799999990"))])
        #expect(try await verifier.verify(expired).uid == "alice")
        let tooOld = try issuer.token([("iat", .number("1799990000")), ("exp", .number("1799999960"))])
        await #expect(throws: TokenVerificationError.expired(expiresAt: 1_799_999_960, now: 1_800_000_000)) {
            try await verifier.verify(tooOld)
        }
    }

    @Test func rejectsAlgNoneAndOtherAlgorithms() async throws {
        let issuer = try Issuer()
        let verifier = issuer.verifier(source: CountingKeySource(document: issuer.jwks, maxAge: 600))
        let kid = try issuer.keyRing.activeKey().kid
        func b64(_ j: JSON) -> String {
            Data(j.serializedBytes()).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let payload = b64(issuer.claims())
        let none = b64(.object([("alg", .string("none")), ("typ", .string("JWT"))])) + "." + payload + "."
        await #expect(throws: TokenVerificationError.unsupportedAlgorithm("none")) { try await verifier.verify(none) }
        // An HS256 token "signed" with the public key as secret: the classic confusion attack.
        let hs = b64(.object([("alg", .string("HS256")), ("kid", .string(kid))])) + "." + payload + ".AAAA"
        await #expect(throws: TokenVerificationError.unsupportedAlgorithm("HS256")) { try await verifier.verify(hs) }
        let noKid = b64(.object([("alg", .string("RS256"))])) + "." + payload + ".AAAA"
        await #expect(throws: TokenVerificationError.missingKeyID) { try await verifier.verify(noKid) }
        await #expect(throws: TokenVerificationError.malformed) { try await verifier.verify("not.a-token") }
        await #expect(throws: TokenVerificationError.malformed) { try await verifier.verify("") }
    }

    @Test func rejectsTamperedSignatureAndPayload() async throws {
        let issuer = try Issuer()
        let verifier = issuer.verifier(source: CountingKeySource(document: issuer.jwks, maxAge: 600))
        let token = try issuer.token()
        await #expect(throws: TokenVerificationError.invalidSignature) { try await verifier.verify(token.tamperedSignature) }
        // Same header and signature, another payload (uid swapped).
        let other = try issuer.token(uid: "mallory")
        let parts = token.split(separator: "."), otherParts = other.split(separator: ".")
        let spliced = "\(parts[0]).\(otherParts[1]).\(parts[2])"
        await #expect(throws: TokenVerificationError.invalidSignature) { try await verifier.verify(spliced) }
        // Signed by a key that is not published under this kid.
        let stranger = try Issuer(clock: issuer.clock)
        let forged = try stranger.token()
        let forgedParts = forged.split(separator: ".")
        let withOurKid = "\(parts[0]).\(forgedParts[1]).\(forgedParts[2])"
        await #expect(throws: TokenVerificationError.invalidSignature) { try await verifier.verify(withOurKid) }
    }

    @Test func unknownKidRefetchesOnceThenRateLimits() async throws {
        let issuer = try Issuer()
        let source = CountingKeySource(document: issuer.jwks, maxAge: 600)
        let verifier = issuer.verifier(source: source, minimumRefetchInterval: 30)
        _ = try await verifier.verify(try issuer.token())
        #expect(source.fetches == 1)
        let stranger = try Issuer(clock: issuer.clock)
        let foreign = try stranger.token()
        let kid = try stranger.keyRing.activeKey().kid
        issuer.clock.advance(31)
        await #expect(throws: TokenVerificationError.unknownKeyID(kid)) { try await verifier.verify(foreign) }
        #expect(source.fetches == 2)
        // Within the interval another unknown kid does not fetch again.
        issuer.clock.advance(5)
        await #expect(throws: TokenVerificationError.unknownKeyID(kid)) { try await verifier.verify(foreign) }
        #expect(source.fetches == 2)
        // Known kids keep verifying from the cache.
        _ = try await verifier.verify(try issuer.token())
        #expect(source.fetches == 2)
    }

    @Test func cacheHonoursMaxAge() async throws {
        let issuer = try Issuer()
        let source = CountingKeySource(document: issuer.jwks, maxAge: 100)
        let verifier = issuer.verifier(source: source)
        for _ in 0..<3 { _ = try await verifier.verify(try issuer.token()) }
        #expect(source.fetches == 1)
        issuer.clock.advance(99)
        _ = try await verifier.verify(try issuer.token())
        #expect(source.fetches == 1)
        issuer.clock.advance(1)
        _ = try await verifier.verify(try issuer.token())
        #expect(source.fetches == 2)
    }

    @Test func defaultMaxAgeWhenSourceGivesNone() async throws {
        let issuer = try Issuer()
        let source = CountingKeySource(document: issuer.jwks, maxAge: nil)
        let verifier = TokenVerifier(
            configuration: .init(projectID: Issuer.project, leeway: 0, defaultMaxAge: 50), source: source, now: issuer.clock.now)
        _ = try await verifier.verify(try issuer.token())
        issuer.clock.advance(49)
        _ = try await verifier.verify(try issuer.token())
        #expect(source.fetches == 1)
        issuer.clock.advance(1)
        _ = try await verifier.verify(try issuer.token())
        #expect(source.fetches == 2)
    }

    @Test func keyRotationIsPickedUpByRefetch() async throws {
        // A source that (unlike KeyRing) publishes only the active key, so a new key is unknown to the cache.
        let issuer = try Issuer(rotationInterval: 3600)
        let active = { try issuer.keyRing.activeKey() }
        let onlyActive = { () throws -> [UInt8] in
            let k = try active()
            let full = issuer.keyRing.jwks()
            let keys = full["keys"]?.arrayValue?.filter { $0["kid"]?.stringValue == k.kid } ?? []
            return JSON.object([("keys", .array(keys))]).serializedBytes()
        }
        let source = CountingKeySource(document: try onlyActive(), maxAge: 100_000)
        let verifier = issuer.verifier(source: source, minimumRefetchInterval: 30)
        let first = try active().kid
        _ = try await verifier.verify(try issuer.token())
        issuer.clock.advance(3600)
        let second = try active().kid
        #expect(first != second)
        source.replace(try onlyActive())
        let v = try await verifier.verify(try issuer.token())
        #expect(v.keyID == second)
        #expect(source.fetches == 2)
    }

    @Test func aRememberedTokenStillNeedsItsKeyPublished() async throws {
        let issuer = try Issuer()
        let source = CountingKeySource(document: issuer.jwks, maxAge: 100)
        let verifier = issuer.verifier(source: source, minimumRefetchInterval: 30)
        let token = try issuer.token()
        let kid = try issuer.keyRing.activeKey().kid
        _ = try await verifier.verify(token)
        _ = try await verifier.verify(token)  // remembered: no new fetch, no RSA
        #expect(source.fetches == 1)
        #expect(verifier.verified.count == 1)
        // The key is withdrawn (another one published); once the key cache expires the
        // remembered token fails too.
        source.replace(try Issuer(clock: issuer.clock).jwks)
        issuer.clock.advance(100)
        await #expect(throws: TokenVerificationError.unknownKeyID(kid)) { try await verifier.verify(token) }
        #expect(source.fetches == 2)
    }

    @Test func keyDocumentErrors() throws {
        #expect(throws: TokenVerificationError.self) { try PublicKeySet.parse(Array("[]".utf8)) }
        #expect(throws: TokenVerificationError.self) { try PublicKeySet.parse(Array("{\"keys\":[]}".utf8)) }
        #expect(throws: TokenVerificationError.self) { try PublicKeySet.parse(Array("{\"k\":\"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\"}".utf8)) }
        #expect(throws: TokenVerificationError.self) { try PublicKeySet.parse(Array("not json".utf8)) }
        #expect(PublicKeySet.maxAge(cacheControl: "public, max-age=19766, must-revalidate, no-transform") == 19766)
        #expect(PublicKeySet.maxAge(cacheControl: "no-cache") == nil)
        #expect(PublicKeySet.maxAge(cacheControl: nil) == nil)
    }

    @Test func certificateReaderRejectsTruncatedInput() throws {
        let issuer = try Issuer()
        let key = try issuer.keyRing.activeKey()
        let der = TestCertificate.der(for: key.privateKey)
        #expect(try RSAKeySet.publicKey(certificateDER: der).derRepresentation == key.publicKey.derRepresentation)
        for cut in [0, 1, 2, 10, der.count / 2, der.count - 1] {
            #expect(throws: (any Error).self) { try RSAKeySet.publicKey(certificateDER: Array(der.prefix(cut))) }
        }
    }
}
