/// A minimal DER reader: enough to walk an X.509 certificate to its SubjectPublicKeyInfo.
/// Definite lengths only (DER has no others); every length is checked against the input.
struct DER {
    struct Element {
        var tag: UInt8
        /// The whole element, header included.
        var raw: ArraySlice<UInt8>
        /// The contents after the header.
        var contents: ArraySlice<UInt8>
    }

    /// Reads the element at the start of `bytes`.
    static func element(_ bytes: ArraySlice<UInt8>) -> Element? {
        var i = bytes.startIndex
        guard i < bytes.endIndex else { return nil }
        let tag = bytes[i]
        guard tag & 0x1f != 0x1f else { return nil }  // high-tag-number form is not used in certificates
        i += 1
        guard i < bytes.endIndex else { return nil }
        let first = bytes[i]
        i += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7f)
            guard count >= 1, count <= 4, bytes.endIndex - i >= count else { return nil }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[i])
                i += 1
            }
        }
        guard bytes.endIndex - i >= length else { return nil }
        return Element(tag: tag, raw: bytes[bytes.startIndex..<(i + length)], contents: bytes[i..<(i + length)])
    }

    /// The elements inside a constructed element's contents, in order.
    static func children(_ contents: ArraySlice<UInt8>) -> [Element]? {
        var out: [Element] = []
        var rest = contents
        while !rest.isEmpty {
            guard let e = element(rest) else { return nil }
            out.append(e)
            rest = rest[e.raw.endIndex...]
        }
        return out
    }

    static let sequence: UInt8 = 0x30

    /// The DER SubjectPublicKeyInfo of an X.509 certificate:
    /// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
    /// signature, issuer, validity, subject, subjectPublicKeyInfo, … }, … }
    static func subjectPublicKeyInfo(certificate: [UInt8]) -> [UInt8]? {
        guard let cert = element(certificate[...]), cert.tag == sequence,
            let parts = children(cert.contents), let tbs = parts.first, tbs.tag == sequence,
            var fields = children(tbs.contents)
        else { return nil }
        if fields.first?.tag == 0xa0 { fields.removeFirst() }
        guard fields.count >= 6, fields[5].tag == sequence else { return nil }
        return Array(fields[5].raw)
    }
}
