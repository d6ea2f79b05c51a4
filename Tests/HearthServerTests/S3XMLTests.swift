import Testing

@testable import HearthServer

/// S3's XML bodies must be well-formed XML 1.0 whatever a request echoes into them.
@Suite struct S3XMLTests {
    static let forbidden: [Unicode.Scalar] = (0..<0x20).compactMap { v in [0x9, 0xA, 0xD].contains(v) ? nil : Unicode.Scalar(v) } + ["\u{FFFE}", "\u{FFFF}"]

    @Test(arguments: forbidden)
    func forbiddenCharactersNeverAppearRawNorAsReferences(_ c: Unicode.Scalar) {
        var key = "a"
        key.unicodeScalars.append(c)
        key += "b"
        let out = S3XML.escape(key)
        #expect(out == "a\u{FFFD}b")
        #expect(!out.unicodeScalars.contains { !S3XML.isAllowed($0) })
        #expect(!out.contains("&#"))
    }

    @Test func markupAndCarriageReturnsAreEscapedAndRoundTrip() {
        let text = "<a href=\"x\">Tom & 'Jerry'</a>\r\n\tend \u{7F}\u{85}\u{E000}\u{10FFFF}"
        let out = S3XML.escape(text)
        #expect(out == "&lt;a href=&quot;x&quot;&gt;Tom &amp; &apos;Jerry&apos;&lt;/a&gt;&#13;\n\tend \u{7F}\u{85}\u{E000}\u{10FFFF}")
        #expect(S3XML.unescape(Substring(out)) == text)
    }

    @Test(arguments: ["&#0;", "&#x1;", "&#x1F;", "&#xFFFE;", "&#65535;", "&#xD800;"])
    func requestDocumentsRefuseForbiddenReferences(_ ref: String) {
        #expect(S3XML.unescape(Substring("a" + ref + "b")) == nil)
    }
}
