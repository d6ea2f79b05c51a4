public import HearthCore
import Crypto
import Foundation
import Synchronization

/// AWS Signature Version 4 for S3: canonical requests, signing keys, and the signatures of
/// headers, presigned query strings, presigned POST policies and `aws-chunked` payload chunks.
/// Used both to verify requests (the S3 endpoint) and to sign them (the presigner).
public enum SigV4 {
    public static let algorithm = "AWS4-HMAC-SHA256"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    public static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// `20261122/us-east-1/s3/aws4_request`.
    public struct Scope: Sendable, Hashable {
        public var date: String
        public var region: String
        public var service: String

        public init(date: String, region: String, service: String = "s3") {
            self.date = date
            self.region = region
            self.service = service
        }

        public var text: String { "\(date)/\(region)/\(service)/aws4_request" }
    }

    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for b in bytes {
            out.append(lowerHex[Int(b >> 4)])
            out.append(lowerHex[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static let lowerHex = Array("0123456789abcdef".utf8)

    public static func sha256Hex(_ bytes: [UInt8]) -> String { hex(SHA256.hash(data: bytes)) }

    public static func hmac(_ key: [UInt8], _ message: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(message.utf8), using: SymmetricKey(data: key)))
    }

    public static func signingKey(secret: String, scope: Scope) -> [UInt8] {
        // Four HMACs that only change with the day: remembered per secret and scope.
        let cacheKey = "\(secret)\n\(scope.text)"
        if let known = signingKeys.withLock({ $0[cacheKey] }) { return known }
        let kDate = hmac(Array("AWS4\(secret)".utf8), scope.date)
        let kRegion = hmac(kDate, scope.region)
        let kService = hmac(kRegion, scope.service)
        let key = hmac(kService, "aws4_request")
        signingKeys.withLock { cache in
            if cache.count >= 256 { cache.removeAll(keepingCapacity: true) }
            cache[cacheKey] = key
        }
        return key
    }

    static let signingKeys = Mutex<[String: [UInt8]]>([:])

    /// RFC 3986 encoding as AWS wants it: everything but `A-Z a-z 0-9 - _ . ~` is `%XX`
    /// (and `/` too, unless `keepSlash`).
    public static func uriEncode(_ s: String, keepSlash: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 8)
        for b in s.utf8 {
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x5F, 0x2E, 0x7E: out.append(b)
            case 0x2F where keepSlash: out.append(b)
            default: out += [UInt8(ascii: "%"), upperHex[Int(b >> 4)], upperHex[Int(b & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static let upperHex = Array("0123456789ABCDEF".utf8)

    /// The canonical request. `path` is decoded (it is re-encoded here once, as S3 does);
    /// `query` holds decoded pairs; `headers` maps lower-case names to values.
    public static func canonicalRequest(
        method: String, path: String, query: [(String, String)], headers: [String: String], signedHeaders: [String], payloadHash: String
    ) -> String {
        String(
            decoding: canonicalRequestBytes(
                method: method, path: path, query: query, headers: headers, signedHeaders: signedHeaders, payloadHash: payloadHash),
            as: UTF8.self)
    }

    /// ``canonicalRequest(method:path:query:headers:signedHeaders:payloadHash:)`` built in
    /// one byte buffer (every signed request builds one).
    public static func canonicalRequestBytes(
        method: String, path: String, query: [(String, String)], headers: [String: String], signedHeaders: [String], payloadHash: String
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        out += method.utf8
        out.append(0x0A)
        appendURIEncoded(path, keepSlash: true, to: &out)
        out.append(0x0A)
        // Encoded names and values are ASCII, so byte order is the order AWS sorts in.
        var encoded: [([UInt8], [UInt8])] = query.map { pair in
            var k: [UInt8] = [], v: [UInt8] = []
            appendURIEncoded(pair.0, keepSlash: false, to: &k)
            appendURIEncoded(pair.1, keepSlash: false, to: &v)
            return (k, v)
        }
        encoded.sort { a, b in a.0 == b.0 ? a.1.lexicographicallyPrecedes(b.1) : a.0.lexicographicallyPrecedes(b.0) }
        for (n, (k, v)) in encoded.enumerated() {
            if n > 0 { out.append(UInt8(ascii: "&")) }
            out += k
            out.append(UInt8(ascii: "="))
            out += v
        }
        out.append(0x0A)
        for name in signedHeaders {
            out += name.utf8
            out.append(UInt8(ascii: ":"))
            appendCanonicalHeaderValue(headers[name] ?? "", to: &out)
            out.append(0x0A)
        }
        out.append(0x0A)
        for (n, name) in signedHeaders.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ";")) }
            out += name.utf8
        }
        out.append(0x0A)
        out += payloadHash.utf8
        return out
    }

    /// A header value with surrounding whitespace trimmed and inner runs of spaces made one.
    static func appendCanonicalHeaderValue(_ raw: String, to out: inout [UInt8]) {
        guard raw.utf8.allSatisfy({ $0 < 0x80 }) else {
            // Non-ASCII values: Foundation's trimming (Unicode whitespace), as always.
            let words = raw.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
            out += words.joined(separator: " ").utf8
            return
        }
        let bytes = raw.utf8
        // `.whitespaces` in ASCII: space and tab.
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while end > start, bytes[bytes.index(before: end)] == 0x20 || bytes[bytes.index(before: end)] == 0x09 { end = bytes.index(before: end) }
        var previousSpace = false
        for b in bytes[start..<end] {
            if b == 0x20 {
                if !previousSpace { out.append(b) }
                previousSpace = true
            } else {
                out.append(b)
                previousSpace = false
            }
        }
    }

    static func appendURIEncoded(_ s: String, keepSlash: Bool, to out: inout [UInt8]) {
        for b in s.utf8 {
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x5F, 0x2E, 0x7E: out.append(b)
            case 0x2F where keepSlash: out.append(b)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(upperHex[Int(b >> 4)])
                out.append(upperHex[Int(b & 15)])
            }
        }
    }

    public static func stringToSign(amzDate: String, scope: Scope, canonicalRequest: String) -> String {
        stringToSign(amzDate: amzDate, scope: scope, canonicalRequestBytes: Array(canonicalRequest.utf8))
    }

    public static func stringToSign(amzDate: String, scope: Scope, canonicalRequestBytes: [UInt8]) -> String {
        [algorithm, amzDate, scope.text, sha256Hex(canonicalRequestBytes)].joined(separator: "\n")
    }

    public static func signature(secret: String, scope: Scope, stringToSign: String) -> String {
        hex(hmac(signingKey(secret: secret, scope: scope), stringToSign))
    }

    /// The signature of one `aws-chunked` chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD).
    public static func chunkSignature(signingKey: [UInt8], amzDate: String, scope: Scope, previous: String, chunk: [UInt8]) -> String {
        chunkSignature(signingKey: signingKey, amzDate: amzDate, scope: scope, previous: previous, chunkSHA256: sha256Hex(chunk))
    }

    /// The same from the chunk's SHA-256 in hex (a decoder hashes chunks as they stream by).
    public static func chunkSignature(signingKey: [UInt8], amzDate: String, scope: Scope, previous: String, chunkSHA256: String) -> String {
        let sts = ["AWS4-HMAC-SHA256-PAYLOAD", amzDate, scope.text, previous, emptySHA256, chunkSHA256].joined(separator: "\n")
        return hex(hmac(signingKey, sts))
    }

    /// Constant-time comparison of two hex signatures.
    public static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var d: UInt8 = 0
        for i in x.indices { d |= x[i] ^ y[i] }
        return d == 0
    }

    /// `20261122T093000Z` ↔ seconds since the epoch.
    public static func parseAmzDate(_ s: String) -> Int64? {
        let u = Array(s.utf8)
        guard u.count == 16, u[8] == UInt8(ascii: "T"), u[15] == UInt8(ascii: "Z") else { return nil }
        func num(_ r: Range<Int>) -> Int64? { Int64(String(decoding: u[r], as: UTF8.self)) }
        guard let y = num(0..<4), let mo = num(4..<6), let d = num(6..<8), let h = num(9..<11), let mi = num(11..<13), let se = num(13..<15),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, se < 61
        else { return nil }
        return CivilCalendar.days(year: y, month: mo, day: d) * 86_400 + h * 3600 + mi * 60 + se
    }

    public static func formatAmzDate(_ seconds: Int64) -> String {
        let days = CivilCalendar.floorDiv(seconds, 86_400)
        let rem = seconds - days * 86_400
        let (y, m, d) = CivilCalendar.civil(days: days)
        // By hand: `String(format:)` costs more than the rest of a presigned URL's date handling.
        var out: [UInt8] = []
        out.reserveCapacity(16)
        func digits(_ value: Int64, _ width: Int) {
            var v = value
            var buffer = [UInt8](repeating: UInt8(ascii: "0"), count: width)
            var i = width - 1
            while v > 0 && i >= 0 {
                buffer[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                i -= 1
            }
            out += buffer
        }
        digits(y, 4)
        digits(m, 2)
        digits(d, 2)
        out.append(UInt8(ascii: "T"))
        digits(rem / 3600, 2)
        digits(rem / 60 % 60, 2)
        digits(rem % 60, 2)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }
}
