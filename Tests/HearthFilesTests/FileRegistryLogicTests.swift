import HearthCore
import Testing

@testable import HearthFiles

@Suite struct ULIDTests {
    @Test func encodesTimeAndRandomnessInCrockfordBase32() {
        // The specification's example time, with zero and all-one randomness.
        let low = ULID(milliseconds: 1_469_918_176_385, randomness: Array(repeating: 0, count: 10))
        #expect(low.text == "01ARYZ6S410000000000000000")
        let high = ULID(milliseconds: 1_469_918_176_385, randomness: Array(repeating: 0xFF, count: 10))
        #expect(high.text == "01ARYZ6S41ZZZZZZZZZZZZZZZZ")
        #expect(low.milliseconds == 1_469_918_176_385)
        #expect(ULID(milliseconds: (1 << 48) - 1, randomness: Array(repeating: 0xFF, count: 10)).text == "7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
    }

    @Test func laterIdsSortAfterEarlierOnes() {
        let first = ULID.make(now: Timestamp(seconds: 1_700_000_000, nanos: 0))
        let second = ULID.make(now: Timestamp(seconds: 1_700_000_000, nanos: 2_000_000))
        #expect(first.text < second.text)
        #expect(ULID(parsing: first.text) == first)
    }

    @Test(arguments: ["", "01ARYZ6S41", "81ARYZ6S410000000000000000", "01aryz6s410000000000000000", "01ARYZ6S41000000000000000U",
                      "01ARYZ6S41000000000000000/", "01ARYZ6S4100000000000000000"])
    func parsingRefusesAnythingButTheCanonicalForm(_ text: String) {
        #expect(ULID(parsing: text) == nil)
    }
}

@Suite struct FileUploadPolicyTests {
    let policy = FileUploadPolicy(maxUploadBytes: 1000)

    @Test func acceptsAKnownTypeWithItsExtension() throws {
        let checked = try policy.validate(contentType: "Image/JPEG", fileExtension: "JPG", declaredSize: 1000)
        #expect(checked.contentType == "image/jpeg")
        #expect(checked.fileExtension == "jpg")
    }

    @Test(arguments: [
        ("application/x-msdownload", "exe", FileRegistryError.Reason.contentTypeNotAllowed),
        ("image/jpeg", "../x", .invalidExtension), ("image/jpeg", "a/b", .invalidExtension), ("image/jpeg", "jp\u{0}g", .invalidExtension),
        ("image/jpeg", "", .invalidExtension), ("image/jpeg", "png", .invalidExtension), ("image/jpeg", String(repeating: "j", count: 17), .invalidExtension),
        ("image/jpeg", "jpé", .invalidExtension),
    ])
    func refusesBadInput(_ contentType: String, _ fileExtension: String, _ reason: FileRegistryError.Reason) {
        #expect {
            try policy.validate(contentType: contentType, fileExtension: fileExtension, declaredSize: nil)
        } throws: { ($0 as? FileRegistryError)?.reason == reason }
    }

    @Test(arguments: [Int64(1001), -1, Int64.max])
    func refusesDeclaredSizesOutsideTheLimit(_ size: Int64) {
        #expect {
            try policy.validate(contentType: "image/png", fileExtension: "png", declaredSize: size)
        } throws: { ($0 as? FileRegistryError)?.reason == .sizeNotAllowed }
    }

    @Test(arguments: ["Xq3kP9aL2mN8bV4cR7tY1wZ0eF5g", "alice@example.com", "user_1+tag=x-y"])
    func acceptsUidsAsKeySegments(_ uid: String) throws {
        try FileUploadPolicy.validateKeySegment(uid: uid)
    }

    @Test(arguments: ["", ".", "..", "a/b", "../x", "a\u{0}b", "é", String(repeating: "u", count: 129), "a b"])
    func refusesUidsThatWouldShapeTheKey(_ uid: String) {
        #expect { try FileUploadPolicy.validateKeySegment(uid: uid) } throws: { ($0 as? FileRegistryError)?.reason == .invalidUser }
    }

    @Test func quotesControlCharactersVisibly() {
        #expect(FileUploadPolicy.quoted("a\u{0}b") == "'a\\u{0}b'")
    }
}

@Suite struct ContentSnifferTests {
    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10] + Array("JFIF".utf8)
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
    static let m4a: [UInt8] = [0, 0, 0, 0x20] + Array("ftypM4A ".utf8)
    static let webp: [UInt8] = Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WEBPVP8 ".utf8)

    @Test(arguments: [
        ("image/jpeg", jpeg), ("image/png", png), ("audio/mp4", m4a), ("image/webp", webp), ("image/gif", Array("GIF89a....".utf8)),
        ("application/pdf", Array("%PDF-1.7\n".utf8)), ("audio/mpeg", Array("ID3\u{4}".utf8)), ("text/plain", Array("héllo".utf8)),
        ("text/plain", Array(Array("hé".utf8).dropLast())), ("application/x-unknown", [0, 1, 2]),
    ])
    func acceptsMatchingContent(_ type: String, _ head: [UInt8]) {
        #expect(ContentSniffer.matches(type, head: head))
    }

    @Test(arguments: [
        ("image/jpeg", png), ("image/png", jpeg), ("image/jpeg", []), ("audio/mp4", jpeg), ("image/webp", Array("RIFF....WAVE".utf8)),
        ("application/pdf", Array("<html>".utf8)), ("text/plain", [0x68, 0, 0x69]), ("text/plain", [0xC3, 0x28, 0x41, 0x42, 0x43]),
        ("image/gif", Array("GIF90a".utf8)),
    ])
    func refusesOtherContent(_ type: String, _ head: [UInt8]) {
        #expect(!ContentSniffer.matches(type, head: head))
    }
}

@Suite struct PageTokenTests {
    @Test func roundTrips() throws {
        let token = PageToken(createdAt: Timestamp(microseconds: 1_700_000_000_123_456), fileId: "01ARYZ6S410000000000000000")
        #expect(PageToken(text: token.text) == token)
    }

    @Test(arguments: ["", "!!!", Base64.urlEncode(Array("12.nope".utf8)), Base64.urlEncode(Array("-5.01ARYZ6S410000000000000000".utf8)),
                      Base64.urlEncode(Array("x.01ARYZ6S410000000000000000".utf8)), String(repeating: "A", count: 400)])
    func refusesMalformedTokens(_ text: String) {
        #expect(PageToken(text: text) == nil)
    }
}
