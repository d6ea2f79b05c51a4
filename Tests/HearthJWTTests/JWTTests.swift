import Foundation
import HearthCore
import Testing
import _CryptoExtras
import X509
@testable import HearthJWT

/// Known answers for the one JWT implementation: a token signed by a fixed key (made by an
/// independent implementation) verifies, one flipped bit anywhere fails, a PEM certificate
/// and a JWKS give the key, and the strict parser refuses every malformed spelling.
@Suite struct JWTTests {
    let key = try! _RSA.Signing.PrivateKey(pemRepresentation: KnownAnswers.privateKeyPEM)
    var publicKey: _RSA.Signing.PublicKey { key.publicKey }

    /// The signer reproduces the known token byte for byte (PKCS#1 v1.5 is deterministic).
    @Test func signerMatchesTheKnownToken() throws {
        let header = try JSON.parse(KnownAnswers.header), payload = try JSON.parse(KnownAnswers.payload)
        #expect(try JWT.signRS256(header: header, payload: payload, key: key) == KnownAnswers.token)
        #expect(JWT.rs256Header(keyID: "kat-1") == header)
    }

    @Test func knownTokenVerifies() throws {
        let jwt = try #require(JWT.parse(KnownAnswers.token))
        #expect(jwt.algorithm == "RS256" && jwt.keyID == "kat-1" && jwt.type == "JWT")
        #expect(jwt.payload["sub"]?.stringValue == "alice")
        #expect(jwt.payload["exp"]?.int64Value == 1_700_003_600)
        #expect(try jwt.verifySignature { kid in kid == "kat-1" ? [publicKey] : [] } == "RS256")
        #expect(RS256.isValid(jwt.signature, for: jwt.signingInput, key: publicKey))
    }

    /// Every single-bit change of the signature or the signed bytes is caught.
    @Test func oneFlippedBitFails() throws {
        let jwt = try #require(JWT.parse(KnownAnswers.token))
        for i in [0, 1, jwt.signature.count / 2, jwt.signature.count - 1] {
            for bit in [0, 7] {
                var forged = jwt
                forged.signature[i] ^= 1 << bit
                #expect(throws: JWTError.invalidSignature) { try forged.verifySignature { _ in [publicKey] } }
            }
        }
        for i in [0, jwt.signingInput.count / 2, jwt.signingInput.count - 1] {
            var forged = jwt
            forged.signingInput[i] ^= 1
            #expect(throws: JWTError.invalidSignature) { try forged.verifySignature { _ in [publicKey] } }
        }
        // Through the text: one changed payload character ("alice" → "alicf"), the signature kept.
        var parts = KnownAnswers.token.split(separator: ".").map(String.init)
        parts[1] = Base64.urlEncode(Array(KnownAnswers.payload.replacingOccurrences(of: "alice", with: "alicf").utf8))
        let tampered = try #require(JWT.parse(parts.joined(separator: ".")))
        #expect(tampered.payload["sub"]?.stringValue == "alicf")
        #expect(throws: JWTError.invalidSignature) { try tampered.verifySignature { _ in [publicKey] } }
    }

    /// Algorithm pinning, kid lookup.
    @Test func headerChecks() throws {
        let payload = try JSON.parse(KnownAnswers.payload)
        func token(_ header: JSON, signature: [UInt8]? = nil) throws -> JWT {
            let text = JWT.encode(header: header, payload: payload) { input in signature ?? (try! RS256.sign(input, with: key)) }
            return try #require(JWT.parse(text))
        }
        let keys: (String?) -> [_RSA.Signing.PublicKey] = { kid in kid == "kat-1" ? [publicKey] : [] }
        let none = try token(.object([("alg", .string("none"))]), signature: [])
        #expect(throws: JWTError.unsupportedAlgorithm("none")) { try none.verifySignature(keys: keys) }
        #expect(try none.verifySignature(algorithms: ["RS256", "none"], keys: keys) == "none")
        // `none` with a signature is not unsigned.
        let noneSigned = try token(.object([("alg", .string("none"))]), signature: [1, 2, 3])
        #expect(throws: JWTError.unsupportedAlgorithm("none")) { try noneSigned.verifySignature(algorithms: ["RS256", "none"], keys: keys) }
        for alg in ["HS256", "RS512", "PS256", "ES256", "rs256"] {
            let t = try token(.object([("alg", .string(alg)), ("kid", .string("kat-1"))]))
            #expect(throws: JWTError.unsupportedAlgorithm(alg)) { try t.verifySignature(keys: keys) }
            // Listing another algorithm does not make this module verify it.
            #expect(throws: JWTError.unsupportedAlgorithm(alg)) { try t.verifySignature(algorithms: [alg], keys: keys) }
        }
        let noAlg = try token(.object([("kid", .string("kat-1"))]))
        #expect(throws: JWTError.unsupportedAlgorithm(nil)) { try noAlg.verifySignature(keys: keys) }
        let noKid = try token(.object([("alg", .string("RS256"))]))
        #expect(throws: JWTError.missingKeyID) { try noKid.verifySignature(keys: keys) }
        #expect(throws: JWTError.unknownKeyID(nil)) { try noKid.verifySignature(requireKeyID: false, keys: keys) }
        #expect(try noKid.verifySignature(requireKeyID: false) { _ in [publicKey] } == "RS256")
        let otherKid = try token(.object([("alg", .string("RS256")), ("kid", .string("kat-2"))]))
        #expect(throws: JWTError.unknownKeyID("kat-2")) { try otherKid.verifySignature(keys: keys) }
        // A different key under the right kid.
        let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let wrongKey = try token(JWT.rs256Header(keyID: "kat-1"), signature: RS256.sign(Array("x".utf8), with: stranger))
        #expect(throws: JWTError.invalidSignature) { try wrongKey.verifySignature(keys: keys) }
    }

    @Test func strictParser() throws {
        let parts = KnownAnswers.token.split(separator: ".").map(String.init)
        #expect(JWT.parse(KnownAnswers.token) != nil)
        let malformed = [
            "", "a", "a.b", "a.b.c.d", "..", parts[0] + "." + parts[1],
            parts.joined(separator: ".") + ".",
            parts[0] + "=." + parts[1] + "." + parts[2],  // padding
            parts[0] + "." + parts[1] + "." + parts[2] + "==",
            parts[0].replacingOccurrences(of: "J", with: "+") + "." + parts[1] + "." + parts[2],  // standard alphabet
            parts[0] + ". " + parts[1] + "." + parts[2],  // whitespace
            Base64.urlEncode(Array("[]".utf8)) + "." + parts[1] + "." + parts[2],  // header not an object
            parts[0] + "." + Base64.urlEncode(Array("\"x\"".utf8)) + "." + parts[2],  // payload not an object
            parts[0] + "." + Base64.urlEncode(Array("{".utf8)) + "." + parts[2],  // not JSON
            parts[0] + "." + parts[1] + "." + String(repeating: "A", count: JWT.maxLength),  // too long
        ]
        for text in malformed { #expect(JWT.parse(text) == nil, "\(text.prefix(60))") }
        // One token, one spelling: a last digit whose unused bits are set is refused.
        let signature = parts[2]
        #expect(signature.count % 4 == 2)  // 256 bytes: 342 digits, 4 unused bits
        var last = Array(signature)
        last[last.count - 1] = "B"  // 0b000001: an unused bit set
        #expect(JWT.parse(parts[0] + "." + parts[1] + "." + String(last)) == nil)
        last[last.count - 1] = "Q"  // 0b010000: a used bit only
        #expect(JWT.parse(parts[0] + "." + parts[1] + "." + String(last)) != nil)
        #expect(JWT.isCanonical("AA.AAA.AAAA") && !JWT.isCanonical("AB.AA") && !JWT.isCanonical("AAB.AA"))
    }

    @Test func timeRules() throws {
        let claims = try JSON.parse(#"{"exp":1000,"iat":900,"nbf":950}"#)
        let at = { (now: Int64, rules: JWTTimeRules) throws(JWTError) in _ = try JWTTimes(claims: claims, now: now, rules: rules) }
        try at(999, JWTTimeRules(expiryLeeway: 0))
        #expect(throws: JWTError.expired(expiresAt: 1000, now: 1000)) { try at(1000, JWTTimeRules(expiryLeeway: 0)) }
        try at(1004, JWTTimeRules(expiryLeeway: 5))
        #expect(throws: JWTError.expired(expiresAt: 1000, now: 1005)) { try at(1005, JWTTimeRules(expiryLeeway: 5)) }
        #expect(throws: JWTError.issuedInFuture(issuedAt: 900, now: 800)) { try at(800, JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: 60)) }
        try at(840, JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: 60))
        #expect(throws: JWTError.notYetValid(notBefore: 950, now: 940)) {
            try at(940, JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: 60, notBeforeLeeway: 0))
        }
        #expect(throws: JWTError.lifetimeTooLong(seconds: 100, limit: 60)) { try at(950, JWTTimeRules(expiryLeeway: 0, maxLifetime: 60)) }
        let bare = try JSON.parse(#"{"exp":1000}"#)
        #expect(throws: JWTError.missingClaim("iat")) { _ = try JWTTimes(claims: bare, now: 0, rules: JWTTimeRules(expiryLeeway: 0, issuedAtLeeway: 0)) }
        #expect(throws: JWTError.missingClaim("exp")) { _ = try JWTTimes(claims: .object([]), now: 0, rules: JWTTimeRules(expiryLeeway: 0)) }
        #expect(throws: JWTError.missingClaim("exp")) {
            _ = try JWTTimes(claims: try JSON.parse(#"{"exp":"1000"}"#), now: 0, rules: JWTTimeRules(expiryLeeway: 0))
        }
    }

    /// JWKS → key: the RS256 signing key is read; keys for encryption and non-RSA keys are skipped.
    @Test func jwksGivesTheKey() throws {
        let keys = RSAKeySet.keys(jwks: try JSON.parse(KnownAnswers.jwks))
        #expect(Set(keys.keys) == ["kat-1"])
        #expect(Array(try #require(keys["kat-1"]).derRepresentation) == Base64.decode(KnownAnswers.publicKeySPKI))
        // And back: the JWK Hearth publishes for the key has the same n and e.
        let jwk = try #require(RSAKeySet.jwk(kid: "kat-1", key: publicKey))
        let first = try #require(try JSON.parse(KnownAnswers.jwks)["keys"]?.arrayValue?.first)
        #expect(jwk["n"] == first["n"] && jwk["e"] == first["e"])
        #expect(RSAKeySet.keys(jwks: RSAKeySet.jwks([(kid: "a", key: publicKey)]))["a"]?.derRepresentation == publicKey.derRepresentation)
    }

    /// PEM certificate → key, with swift-certificates; a document of them by kid.
    @Test func pemCertificateGivesTheKey() throws {
        let key = try RSAKeySet.publicKey(certificatePEM: KnownAnswers.certificatePEM)
        #expect(Array(key.derRepresentation) == Base64.decode(KnownAnswers.publicKeySPKI))
        let document = JSON.object([("kat-1", .string(KnownAnswers.certificatePEM)), ("junk", .string("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")), ("n", .number("1"))])
        let keys = RSAKeySet.keys(x509Document: document)
        #expect(Set(keys.keys) == ["kat-1"])
        #expect(throws: (any Error).self) { try RSAKeySet.publicKey(certificatePEM: "no certificate") }
    }

    /// The certificates Hearth publishes: swift-certificates reads them back, self-signed, with
    /// the validity asked for (UTCTime before 2050, GeneralizedTime from 2050 on).
    @Test func selfSignedCertificates() throws {
        for (notBefore, notAfter) in [(Int64(1_700_000_000), Int64(1_800_000_000)), (2_524_521_600, 2_524_608_000)] {
            let der = try RSAKeySet.selfSignedCertificate(key: key, commonName: "kat.example", serial: [0x01, 0x02], notBefore: notBefore, notAfter: notAfter)
            #expect(try RSAKeySet.selfSignedCertificate(key: key, commonName: "kat.example", serial: [0x01, 0x02], notBefore: notBefore, notAfter: notAfter) == der)
            let certificate = try Certificate(derEncoded: der)
            #expect(certificate.notValidBefore == Date(timeIntervalSince1970: TimeInterval(notBefore)))
            #expect(certificate.notValidAfter == Date(timeIntervalSince1970: TimeInterval(notAfter)))
            #expect(certificate.subject == certificate.issuer)
            #expect(certificate.publicKey.isValidSignature(certificate.signature, for: certificate))
            #expect(try RSAKeySet.publicKey(certificateDER: der).derRepresentation == publicKey.derRepresentation)
            let pem = RSAKeySet.pem(certificateDER: der)
            #expect(try RSAKeySet.publicKey(certificatePEM: pem).derRepresentation == publicKey.derRepresentation)
        }
    }
}
