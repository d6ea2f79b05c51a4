import Foundation
import HearthCore
import Testing

@testable import HearthStorage

/// SigV4 against AWS's published examples, and the presigner against Hearth's own verifier.
struct SigV4Tests {
    // AWS S3 documentation, "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)":
    // GET /test.txt on examplebucket, 2013-05-24T00:00:00Z, 86400 s.
    @Test func presignedURLMatchesAWSDocumentation() throws {
        let presigner = S3Presigner(
            endpoint: URL(string: "https://s3.amazonaws.com")!, region: "us-east-1", accessKeyID: "AKIAIOSFODNN7EXAMPLE",
            secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", addressing: .virtualHosted, now: { 1_369_353_600 })
        let url = try presigner.presignedURL(method: "GET", bucket: "examplebucket", key: "test.txt", expires: 86_400)
        #expect(url.absoluteString.hasPrefix("https://examplebucket.s3.amazonaws.com/test.txt?"))
        #expect(url.query?.contains("X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404") == true, "\(url)")
    }

    // AWS S3 documentation, "Signature Calculation: Transfer Payload in a Single Chunk" (GET Object with a Range).
    @Test func headerSignatureMatchesAWSDocumentation() {
        let scope = SigV4.Scope(date: "20130524", region: "us-east-1")
        let headers = [
            "host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
            "x-amz-content-sha256": SigV4.emptySHA256, "x-amz-date": "20130524T000000Z",
        ]
        let canonical = SigV4.canonicalRequest(
            method: "GET", path: "/test.txt", query: [], headers: headers, signedHeaders: ["host", "range", "x-amz-content-sha256", "x-amz-date"],
            payloadHash: SigV4.emptySHA256)
        let sts = SigV4.stringToSign(amzDate: "20130524T000000Z", scope: scope, canonicalRequest: canonical)
        #expect(SigV4.signature(secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", scope: scope, stringToSign: sts)
                == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    // AWS S3 documentation, "Example: Browser-Based Upload using HTTP POST (Using AWS Signature Version 4)":
    // the policy's signature with the example credentials.
    @Test func postPolicySignatureMatchesAWSDocumentation() {
        let policy = "eyAiZXhwaXJhdGlvbiI6ICIyMDE1LTEyLTMwVDEyOjAwOjAwLjAwMFoiLA0KICAiY29uZGl0aW9ucyI6IFsNCiAgICB7ImJ1Y2tldCI6ICJzaWd2NGV4YW1wbGVidWNrZXQifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRrZXkiLCAidXNlci91c2VyMS8iXSwNCiAgICB7ImFjbCI6ICJwdWJsaWMtcmVhZCJ9LA0KICAgIHsic3VjY2Vzc19hY3Rpb25fcmVkaXJlY3QiOiAiaHR0cDovL3NpZ3Y0ZXhhbXBsZWJ1Y2tldC5zMy5hbWF6b25hd3MuY29tL3N1Y2Nlc3NmdWxfdXBsb2FkLmh0bWwifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRDb250ZW50LVR5cGUiLCAiaW1hZ2UvIl0sDQogICAgeyJ4LWFtei1tZXRhLXV1aWQiOiAiMTQzNjUxMjM2NTEyNzQifSwNCiAgICB7IngtYW16LXNlcnZlci1zaWRlLWVuY3J5cHRpb24iOiAiQUVTMjU2In0sDQogICAgWyJzdGFydHMtd2l0aCIsICIkeC1hbXotbWV0YS10YWciLCAiIl0sDQoNCiAgICB7IngtYW16LWNyZWRlbnRpYWwiOiAiQUtJQUlPU0ZPRE5ON0VYQU1QTEUvMjAxNTEyMjkvdXMtZWFzdC0xL3MzL2F3czRfcmVxdWVzdCJ9LA0KICAgIHsieC1hbXotYWxnb3JpdGhtIjogIkFXUzQtSE1BQy1TSEEyNTYifSwNCiAgICB7IngtYW16LWRhdGUiOiAiMjAxNTEyMjlUMDAwMDAwWiIgfQ0KICBdDQp9"
        let key = SigV4.signingKey(secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", scope: SigV4.Scope(date: "20151229", region: "us-east-1"))
        #expect(SigV4.hex(SigV4.hmac(key, policy)) == "8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e")
    }

    @Test func amzDatesRoundTrip() {
        #expect(SigV4.formatAmzDate(1_369_353_600) == "20130524T000000Z")
        #expect(SigV4.formatAmzDate(1_700_000_000) == "20231114T221320Z")
        #expect(SigV4.formatAmzDate(951_782_399) == "20000228T235959Z")
        #expect(SigV4.parseAmzDate("20130524T000000Z") == 1_369_353_600)
        #expect(SigV4.parseAmzDate("2013-05-24T00:00:00Z") == nil)
    }

    @Test func presignedPostCarriesEveryFieldAsACondition() throws {
        let presigner = S3Presigner(
            endpoint: URL(string: "http://127.0.0.1:9900")!, region: "us-east-1", accessKeyID: "HRTHKEY", secretAccessKey: "secret",
            now: { 1_700_000_000 })
        let post = try presigner.presignedPost(
            bucket: "media", key: "uploads/${filename}", expires: 600, fields: ["Content-Type": "image/png"],
            conditions: [.contentLengthRange(1, 1000)])
        #expect(post.url.absoluteString == "http://127.0.0.1:9900/media")
        let policy = try JSON.parse(Array(Data(base64Encoded: post.fields["policy"]!)!))
        #expect(policy["expiration"]?.stringValue == "2023-11-14T22:23:20Z")
        let conditions = policy["conditions"]?.arrayValue ?? []
        #expect(conditions.contains(.array([.string("starts-with"), .string("$key"), .string("uploads/")])))
        #expect(conditions.contains(.object([("Content-Type", .string("image/png"))])))
        #expect(conditions.contains(.array([.string("content-length-range"), .number("1"), .number("1000")])))
        let expected = SigV4.hex(SigV4.hmac(SigV4.signingKey(secret: "secret", scope: SigV4.Scope(date: "20231114", region: "us-east-1")), post.fields["policy"]!))
        #expect(post.fields["x-amz-signature"] == expected)
    }
}

/// The byte-level canonical header values must equal the Foundation trimming they replaced.
struct CanonicalHeaderValueTests {
    static func reference(_ raw: String) -> String {
        raw.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    @Test func matchesFoundationTrimmingOnRandomValues() {
        var rng = SystemRandomNumberGenerator()
        let alphabet: [Character] = [" ", " ", "\t", "a", "b", "=", ";", "/", "\u{A0}", "é"]
        for _ in 0..<2_000 {
            let raw = String((0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            var out: [UInt8] = []
            SigV4.appendCanonicalHeaderValue(raw, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == Self.reference(raw), "\(Array(raw.unicodeScalars))")
        }
    }
}
