import Testing
import Foundation
import Crypto
import _CryptoExtras
import HearthCore
import HearthJWT
@testable import HearthAuth

/// Service accounts (key files, the JWT-bearer grant, access tokens), session cookies and the
/// published X.509 certificates.
@Suite struct ServiceAccountTests {
    /// An assertion as google-auth signs it with the key file's private key.
    func assertion(_ file: JSON, iat: Int64, exp: Int64, aud: String = "http://127.0.0.1:9099/token") throws -> String {
        let key = try _RSA.Signing.PrivateKey(pemRepresentation: file["private_key"]!.stringValue!)
        let header = JSON.object([("alg", .string("RS256")), ("typ", .string("JWT")), ("kid", file["private_key_id"]!)])
        let claims = JSON.object([
            ("iss", file["client_email"]!), ("scope", .string("https://www.googleapis.com/auth/cloud-platform")),
            ("aud", .string(aud)), ("iat", .number(String(iat))), ("exp", .number(String(exp))),
        ])
        return try JWT.encode(header: header, payload: claims) { input in
            Array(try key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        }
    }

    @Test func keyFileGrantAndAccessToken() async throws {
        let h = try Harness(.sqliteQueue)
        let created = try await h.engine.createServiceAccount(tokenURI: "http://127.0.0.1:9099/token", name: "ci-admin")
        let file = created.keyFile
        #expect(file["type"]?.stringValue == "service_account")
        #expect(file["client_email"]?.stringValue == "ci-admin@demo-proj.iam.gserviceaccount.com")
        #expect(file["private_key"]?.stringValue?.hasPrefix("-----BEGIN PRIVATE KEY-----") == true)
        #expect(file["token_uri"]?.stringValue == "http://127.0.0.1:9099/token")
        await #expect(throws: HearthError.self) { try await h.engine.createServiceAccount(tokenURI: "x/token", name: "ci-admin") }

        let now = h.clock.seconds
        let grant = try await h.engine.exchangeJWTBearer(assertion: try assertion(file, iat: now, exp: now + 3600))
        #expect(grant.expiresIn == 3600)
        let principal = try await h.engine.verifyAccessToken(grant.accessToken)
        #expect(principal?.clientEmail == "ci-admin@demo-proj.iam.gserviceaccount.com")
        // An access token is not an ID token, and an ID token is not an access token.
        #expect(throws: HearthError.self) { try h.engine.tokens.verifyIDToken(grant.accessToken) }
        let session = try await h.engine.signUp(email: nil, password: nil)
        #expect(try await h.engine.verifyAccessToken(session.idToken) == nil)
        h.clock.advance(seconds: 3601)
        #expect(try await h.engine.verifyAccessToken(grant.accessToken) == nil)

        // Expired, too long-lived, wrongly signed assertions are refused.
        let t = h.clock.seconds
        for bad in [try assertion(file, iat: t - 7200, exp: t - 3600), try assertion(file, iat: t, exp: t + 7200)] {
            await #expect(throws: HearthError.self) { try await h.engine.exchangeJWTBearer(assertion: bad) }
        }
        let other = try await h.engine.createServiceAccount(tokenURI: "x/token", name: "other-admin")
        var forged = other.keyFile.objectValue!
        forged.removeAll { $0.0 == "client_email" }
        forged.append(("client_email", file["client_email"]!))
        await #expect(throws: HearthError.self) { try await h.engine.exchangeJWTBearer(assertion: try assertion(.object(forged), iat: t, exp: t + 60)) }
        // The account signs custom tokens too.
        #expect(try await h.engine.serviceAccountSigners().count == 2)
    }

    @Test func sessionCookies() async throws {
        let h = try Harness(.memory)
        let s = try await h.engine.signUp(email: "c@example.com", password: "secret1")
        let cookie = try await h.engine.createSessionCookie(idToken: s.idToken, validDuration: 3600)
        let v = try await h.engine.verifySessionCookie(cookie, checkRevoked: true)
        #expect(v.uid == s.account.uid)
        #expect(v.expiresAt - v.issuedAt == 3600)
        #expect(throws: HearthError.self) { try h.engine.tokens.verifyIDToken(cookie) }
        await expectAuthError(.invalidSessionCookieDuration) { try await h.engine.createSessionCookie(idToken: s.idToken, validDuration: 299) }
        h.clock.advance(seconds: 10)
        try await h.engine.revokeTokens(uid: s.account.uid)
        await expectAuthError(.tokenExpired) { try await h.engine.verifySessionCookie(cookie, checkRevoked: true) }
    }

    @Test func certificatesCarryThePublishedKeys() throws {
        let doc = try sharedRing.x509Document()
        let keys = sharedRing.publishedKeys
        #expect(doc.objectValue?.map { $0.0 } == keys.map { $0.kid })
        for key in keys {
            let der = try sharedRing.certificate(for: key)
            #expect(der.first == 0x30)
            // The SubjectPublicKeyInfo is embedded verbatim and the certificate is deterministic.
            let spki = Array(key.publicKey.derRepresentation)
            #expect(der.indices.contains { i in i + spki.count <= der.count && Array(der[i..<i + spki.count]) == spki })
            #expect(try sharedRing.certificate(for: key) == der)
            // swift-certificates reads the key back, from the DER and from the document's PEM.
            #expect(try RSAKeySet.publicKey(certificateDER: der).derRepresentation == key.publicKey.derRepresentation)
            let pem = try #require(doc[key.kid]?.stringValue)
            #expect(pem.hasPrefix("-----BEGIN CERTIFICATE-----\n") && pem.hasSuffix("\n-----END CERTIFICATE-----\n"))
            #expect(try RSAKeySet.publicKey(certificatePEM: pem).derRepresentation == key.publicKey.derRepresentation)
        }
    }
}
