import HearthCore
import HearthRules

/// Fuzz targets for every parser of untrusted text that lives below the transports: each takes
/// arbitrary bytes, runs one parser, and checks the properties its callers rely on (results in
/// range, round trips, no trap). A violated property is a `preconditionFailure`, so libFuzzer
/// (`scripts/fuzz`) reports it as a crash and keeps the input; the Swift tests replay the kept
/// inputs (`Tests/HearthCoreTests/FuzzCorpus/<target>/`) on every run.
///
/// Parsers that need the transports' dependencies (the aws-chunked decoder, multipart bodies)
/// are covered by their own randomized tests instead (`PayloadDecoderTests`).
public enum FuzzTargets {
    public struct Target: Sendable {
        public let name: String
        public let summary: String
        public let run: @Sendable ([UInt8]) -> Void
    }

    public static let all: [Target] = [
        Target(name: "byte-range", summary: "HTTP Range header against object sizes (Storage v0 alt=media, GCS downloads, S3 GetObject)", run: byteRange),
        Target(name: "content-range", summary: "GCS resumable upload Content-Range", run: contentRange),
        Target(name: "http-date", summary: "HTTP dates (S3 If-Modified-Since / If-Unmodified-Since)", run: httpDate),
        Target(name: "grpc-timeout", summary: "gRPC grpc-timeout header", run: grpcTimeout),
        Target(name: "wire-integer", summary: "decimal numbers from headers and query parameters (limits, offsets, page sizes, part numbers, lengths)", run: wireInteger),
        Target(name: "rfc3339", summary: "RFC 3339 timestamps (Firestore JSON values, read times, preconditions)", run: rfc3339),
        Target(name: "json", summary: "the JSON parser behind every REST body", run: json),
        Target(name: "resource-path", summary: "Firestore document names and numeric ids", run: resourcePath),
        Target(name: "value-codec", summary: "stored document decoding (corrupt rows must fail cleanly)", run: valueCodec),
        Target(name: "base64", summary: "base64 and base64url (bytes values, tokens, resume tokens)", run: base64),
        Target(name: "database-rules", summary: "Realtime Database rules files (JSON with comments, expressions, regex literals)",
               run: databaseRules),
    ]

    public static func named(_ name: String) -> Target? { all.first { $0.name == name } }

    /// The first bytes pick a size (so the fuzzer explores sizes too), the rest is the text.
    static func split(_ data: [UInt8]) -> (size: Int64, text: String) {
        guard data.count >= 8 else { return (Int64(data.count) * 37, String(decoding: data, as: UTF8.self)) }
        var raw: UInt64 = 0
        for b in data.prefix(8) { raw = raw << 8 | UInt64(b) }
        let size = Int64(bitPattern: raw & 0x7FFF_FFFF_FFFF_FFFF)  // non-negative, up to Int64.max
        return (size, String(decoding: data.dropFirst(8), as: UTF8.self))
    }

    static func check(_ condition: Bool, _ what: @autoclosure () -> String) {
        if !condition { preconditionFailure(what()) }
    }

    static func byteRange(_ data: [UInt8]) {
        let (size, text) = split(data)
        for s in [size, 0, 1, 10, Int64.max] {
            switch HTTPByteRange.parse(text, size: s) {
            case .whole, .unsatisfiable: break
            case .partial(let r):
                check(r.lowerBound >= 0 && r.upperBound <= s && !r.isEmpty, "range \(r) outside 0..<\(s) for \(text.debugDescription)")
                _ = HTTPByteRange.contentRange(r, size: s)
            }
        }
    }

    static func contentRange(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        guard let parsed = HTTPContentRange.parse(text) else { return }
        if let bytes = parsed.bytes {
            check(bytes.lowerBound >= 0, "negative first byte in \(text.debugDescription)")
            if let total = parsed.total { check(bytes.upperBound < total, "last byte past total in \(text.debugDescription)") }
        }
        if let total = parsed.total { check(total >= 0, "negative total in \(text.debugDescription)") }
    }

    static func httpDate(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        if let seconds = HTTPDate.parse(text) {
            check(seconds >= CivilCalendar.minSeconds && seconds <= CivilCalendar.maxSeconds + 1, "date out of range: \(text.debugDescription)")
            // The formatted form reads back as the same second (leap seconds read as the next one).
            let again = HTTPDate.parse(HTTPDate.format(Timestamp(seconds: seconds, nanos: 0)))
            check(seconds > CivilCalendar.maxSeconds || again == seconds, "round trip of \(text.debugDescription)")
        }
        let (size, _) = split(data)
        let t = Timestamp(seconds: CivilCalendar.minSeconds + size % (CivilCalendar.maxSeconds - CivilCalendar.minSeconds), nanos: 0)
        check(HTTPDate.parse(HTTPDate.format(t)) == t.seconds, "format/parse of \(t.seconds)")
    }

    static func grpcTimeout(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        if let d = GRPCTimeout.parse(text) { check(d >= .zero, "negative timeout from \(text.debugDescription)") }
    }

    static func wireInteger(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        if let n = WireInteger.saturating(text) { check(n >= 0, "negative saturating value") }
        if let n = WireInteger.count(text) {
            check(n >= 0, "negative count")
            check(String(n) == text.drop(while: { $0 == "0" }).description || (n == 0 && text.allSatisfy { $0 == "0" }), "count \(n) from \(text.debugDescription)")
        }
        if let n = WireInteger.parse(text, in: -100...100, allowPlus: true) { check((-100...100).contains(n), "out of range") }
        // Agrees with Swift's own parser wherever that one accepts digits with an optional minus.
        if let swift = Int64(text), !text.hasPrefix("+") {
            check(WireInteger.parse(text, in: Int64.min...Int64.max) == swift, "disagrees with Int64(\(text.debugDescription))")
        }
    }

    static func rfc3339(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        guard let t = Timestamp(rfc3339: text) else { return }
        check(t.nanos >= 0 && t.nanos < 1_000_000_000, "nanos out of range")
        if t.isValid { check(Timestamp(rfc3339: t.rfc3339) == t, "round trip of \(text.debugDescription)") }
    }

    static func json(_ data: [UInt8]) {
        guard let value = try? JSON.parse(data) else { return }
        let again = try? JSON.parse(value.serializedBytes())
        check(again == value, "serialize/parse round trip")
    }

    static func resourcePath(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        let path = ResourcePath(parsing: text)
        _ = try? path.validate()
        _ = try? path.validateAsPosition()
        for segment in path.segments { _ = ResourcePath.numericID(segment) }
        let database = DatabaseName(project: "p", database: "(default)")
        if let p = try? database.path(fromName: text) {
            check((try? database.path(fromName: database.name(of: p))) == p, "name round trip of \(text.debugDescription)")
        }
        _ = try? database.documentPath(fromName: text)
        _ = try? database.position(fromName: text)
        _ = IndexKey.encodePath(path)
    }

    static func valueCodec(_ data: [UInt8]) {
        guard let fields = try? ValueCodec.decode(data) else { return }
        let again = try? ValueCodec.decode(ValueCodec.encode(fields))
        check(again.map { $0.count == fields.count } ?? false, "re-encoded document does not decode")
    }

    static func databaseRules(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        let length = text.utf8.count
        do throws(RulesCompileError) {
            let ruleset = try DatabaseRuleset.parse(text, fileName: "fuzz.json")
            for path in [[], ["a"], ["a", "b", "c"]] { _ = ruleset.indexOn(path: path) }
            // The strict form (comments removed) compiles to the same indexes.
            let strict = try? DatabaseRuleset.parse(ruleset.strictJSON.serialized(), fileName: "strict.json")
            check(strict != nil, "strict JSON of \(text.debugDescription) does not compile")
            check(strict?.strictJSON == ruleset.strictJSON, "strict JSON round trip of \(text.debugDescription)")
        } catch {
            check(!error.errors.isEmpty, "a failed compile without errors for \(text.debugDescription)")
            for d in error.diagnostics {
                check(d.range.start.line >= 1 && d.range.start.column >= 1, "diagnostic before 1:1: \(d)")
                check(d.range.start.offset >= 0 && d.range.start.offset <= length && d.range.end.offset <= length + 1,
                      "diagnostic range outside the text: \(d)")
            }
            _ = error.rendered
        }
    }

    static func base64(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        if let bytes = Base64.decode(text) { check(Base64.decode(Base64.encode(bytes)) == bytes, "base64 round trip") }
        if let bytes = Base64.urlDecode(text) { check(Base64.urlDecode(Base64.urlEncode(bytes)) == bytes, "base64url round trip") }
        check(Base64.decode(Base64.encode(data)) == data, "encode/decode of raw bytes")
    }
}
