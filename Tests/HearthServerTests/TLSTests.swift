import Crypto
import Foundation
import Testing
import X509

@testable import HearthServer

/// A CA-less self-signed certificate and its key as PEM, valid in [notBefore, notAfter].
private func pair(notBefore: Date = Date().addingTimeInterval(-3600), notAfter: Date = Date().addingTimeInterval(86400)) throws
    -> (certificate: String, key: String)
{
    let key = P256.Signing.PrivateKey()
    let name = try DistinguishedName { CommonName("127.0.0.1") }
    let certificate = try Certificate(
        version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: notBefore, notValidAfter: notAfter,
        issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256, extensions: .init(), issuerPrivateKey: .init(key))
    return (try certificate.serializeAsPEM().pemString + "\n", key.pemRepresentation + "\n")
}

@Suite("TLS certificates")
struct TLSIdentityTests {
    @Test func aValidPairLoads() throws {
        let (certificate, key) = try pair()
        let identity = try TLSIdentity.parse(certificatePEM: certificate, keyPEM: key)
        #expect(identity.chain.count == 1)
        #expect(identity.notValidAfter > Date())
        // A key file with EC PARAMETERS first (openssl ecparam -genkey) still loads.
        let withParameters = "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + key
        _ = try TLSIdentity.parse(certificatePEM: certificate, keyPEM: withParameters)
    }

    @Test func refusals() throws {
        let (certificate, key) = try pair()
        let (_, otherKey) = try pair()
        let expired = try pair(notBefore: Date().addingTimeInterval(-86400 * 10), notAfter: Date().addingTimeInterval(-60))
        let future = try pair(notBefore: Date().addingTimeInterval(86400), notAfter: Date().addingTimeInterval(86400 * 2))
        func reason(_ certificate: String, _ key: String) -> TLSLoadError.Reason? {
            do {
                _ = try TLSIdentity.parse(certificatePEM: certificate, keyPEM: key)
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason(certificate, otherKey) == .mismatchedPair)
        #expect(reason(expired.certificate, expired.key) == .expired)
        #expect(reason(future.certificate, future.key) == .notYetValid)
        #expect(reason("", key) == .noCertificate)
        #expect(reason(key, key) == .noCertificate)
        #expect(reason(certificate, certificate) == .invalidKey)
        #expect(reason(certificate, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") == .invalidKey)
    }

    @Test func missingFiles() throws {
        do {
            _ = try TLSIdentity.load(TLSFiles(certificate: "/nonexistent/cert.pem", key: "/nonexistent/key.pem"))
            Issue.record("loaded nothing")
        } catch {
            #expect(error.reason == .unreadable)
            #expect(error.message.contains("/nonexistent/cert.pem does not exist"))
        }
    }

    @Test func plaintextIsToldFromAHandshake() {
        #expect(PlaintextOnTLSPortHandler.isTLS(firstByte: 0x16))
        #expect(!PlaintextOnTLSPortHandler.isTLS(firstByte: UInt8(ascii: "G")))
        #expect(!PlaintextOnTLSPortHandler.isTLS(firstByte: UInt8(ascii: "P")))
        #expect(PlaintextOnTLSPortHandler.answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
    }
}

@Suite("Forwarded headers")
struct ForwardedHeadersTests {
    @Test func cidr() throws {
        let v4 = try #require(CIDR("10.0.0.0/8"))
        #expect(v4.contains("10.200.3.4"))
        #expect(!v4.contains("11.0.0.1"))
        #expect(v4.contains("::ffff:10.1.2.3"))
        #expect(!v4.contains("not an address"))
        let host = try #require(CIDR("192.168.1.7"))
        #expect(host.contains("192.168.1.7") && !host.contains("192.168.1.8"))
        let v6 = try #require(CIDR("fd00::/8"))
        #expect(v6.contains("fd12::1") && !v6.contains("fe80::1") && !v6.contains("10.0.0.1"))
        #expect(CIDR("::1/128")?.contains("[::1]") == true)
        #expect(CIDR("0.0.0.0/0")?.contains("8.8.8.8") == true)
        for bad in ["10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0/8", "example.com", "", "::1/129", "10.0.0.0/"] {
            #expect(CIDR(bad) == nil, "\(bad)")
        }
    }

    @Test func untrustedPeersCannotSayAnything() {
        let policy = ForwardedPolicy(trustedProxies: [CIDR("10.0.0.0/8")!], tls: false)
        let r = policy.resolve(peer: "203.0.113.5", forwardedProto: "https", forwardedFor: ["1.2.3.4"])
        #expect(r.scheme == "http" && r.client == "203.0.113.5")
        let tls = ForwardedPolicy(trustedProxies: [], tls: true)
        #expect(tls.resolve(peer: "127.0.0.1", forwardedProto: "http", forwardedFor: []).scheme == "https")
    }

    @Test func trustedProxiesAreBelieved() {
        let policy = ForwardedPolicy(trustedProxies: [CIDR("10.0.0.0/8")!], tls: false)
        var r = policy.resolve(peer: "10.0.0.2", forwardedProto: "https", forwardedFor: ["198.51.100.7"])
        #expect(r.scheme == "https" && r.client == "198.51.100.7")
        // A client's forged entry on the left is skipped: the right-most untrusted hop is the client.
        r = policy.resolve(peer: "10.0.0.2", forwardedProto: "HTTPS, http", forwardedFor: ["6.6.6.6, 198.51.100.7", "10.0.0.9"])
        #expect(r.scheme == "https" && r.client == "198.51.100.7")
        // Nonsense is ignored.
        r = policy.resolve(peer: "10.0.0.2", forwardedProto: "gopher", forwardedFor: ["garbage"])
        #expect(r.scheme == "http" && r.client == "10.0.0.2")
        // Only proxies all the way: the left-most.
        r = policy.resolve(peer: "10.0.0.2", forwardedProto: nil, forwardedFor: ["10.0.0.3"])
        #expect(r.client == "10.0.0.3")
    }
}
