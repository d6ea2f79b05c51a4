import HearthCore
import Testing

@Suite("Timestamp RFC 3339")
struct TimestampTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var text: String
        var seconds: Int64
        var nanos: Int32
        /// The canonical proto3 JSON form (Z, 0/3/6/9 fraction digits).
        var canonical: String
        var testDescription: String { text }
    }

    @Test(
        "Parses and formats known instants",
        arguments: [
            Case(text: "1970-01-01T00:00:00Z", seconds: 0, nanos: 0, canonical: "1970-01-01T00:00:00Z"),
            Case(text: "1969-12-31T23:59:59Z", seconds: -1, nanos: 0, canonical: "1969-12-31T23:59:59Z"),
            Case(text: "1969-12-31T23:59:59.999999999Z", seconds: -1, nanos: 999_999_999, canonical: "1969-12-31T23:59:59.999999999Z"),
            Case(text: "2024-02-29T12:34:56Z", seconds: 1_709_210_096, nanos: 0, canonical: "2024-02-29T12:34:56Z"),
            Case(text: "2024-02-29T12:34:56.5Z", seconds: 1_709_210_096, nanos: 500_000_000, canonical: "2024-02-29T12:34:56.500Z"),
            Case(text: "2024-02-29T12:34:56.123Z", seconds: 1_709_210_096, nanos: 123_000_000, canonical: "2024-02-29T12:34:56.123Z"),
            Case(text: "2024-02-29T12:34:56.000001Z", seconds: 1_709_210_096, nanos: 1_000, canonical: "2024-02-29T12:34:56.000001Z"),
            Case(text: "2024-02-29T12:34:56.1234567Z", seconds: 1_709_210_096, nanos: 123_456_700, canonical: "2024-02-29T12:34:56.123456700Z"),
            Case(text: "2024-02-29T12:34:56.000000001Z", seconds: 1_709_210_096, nanos: 1, canonical: "2024-02-29T12:34:56.000000001Z"),
            Case(text: "2024-02-29t12:34:56z", seconds: 1_709_210_096, nanos: 0, canonical: "2024-02-29T12:34:56Z"),
            Case(text: "2024-01-01T01:00:00+01:00", seconds: 1_704_067_200, nanos: 0, canonical: "2024-01-01T00:00:00Z"),
            Case(text: "2023-12-31T18:30:00.25-05:30", seconds: 1_704_067_200, nanos: 250_000_000, canonical: "2024-01-01T00:00:00.250Z"),
            Case(text: "2024-01-01T00:00:00+00:00", seconds: 1_704_067_200, nanos: 0, canonical: "2024-01-01T00:00:00Z"),
            Case(text: "2000-02-29T00:00:00Z", seconds: 951_782_400, nanos: 0, canonical: "2000-02-29T00:00:00Z"),
            Case(text: "1900-03-01T00:00:00Z", seconds: -2_203_891_200, nanos: 0, canonical: "1900-03-01T00:00:00Z"),
            Case(text: "0001-01-01T00:00:00Z", seconds: Timestamp.minSeconds, nanos: 0, canonical: "0001-01-01T00:00:00Z"),
            Case(text: "9999-12-31T23:59:59.999999999Z", seconds: Timestamp.maxSeconds, nanos: 999_999_999, canonical: "9999-12-31T23:59:59.999999999Z"),
        ])
    func known(_ c: Case) throws {
        let t = try #require(Timestamp(rfc3339: c.text))
        #expect(t.seconds == c.seconds)
        #expect(t.nanos == c.nanos)
        #expect(t.rfc3339 == c.canonical)
        #expect(t.isValid)
        #expect(Timestamp(rfc3339: t.rfc3339) == t)
    }

    @Test(
        "Rejects malformed text",
        arguments: [
            "", "2024", "2024-01-01", "2024-01-01T00:00:00", "2024-01-01T00:00Z", "2024-01-01 00:00:00Z", "2024-1-01T00:00:00Z",
            "2024-01-1T00:00:00Z", "2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z", "2024-01-32T00:00:00Z",
            "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-04-31T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z",
            "2024-01-01T00:00:60Z", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00.1234567890Z", "2024-01-01T00:00:00ZZ",
            "2024-01-01T00:00:00+0100", "2024-01-01T00:00:00+01", "2024-01-01T00:00:00+01:00Z", "2024-01-01T00:00:00 Z",
            "+2024-01-01T00:00:00Z", "2024-01-01T00:00:00.12a3Z", "2024-01-01T00:00:00X", "2024/01/01T00:00:00Z",
            "２０２４-01-01T00:00:00Z", "2024-01-01T00:00:00.５Z",
        ])
    func malformed(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    /// RFC 3339's time-numoffset is `time-hour ":" time-minute`: hours 00–23, minutes 00–59.
    @Test("Rejects out-of-range UTC offsets", arguments: ["2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00-99:00", "2024-01-01T00:00:00+00:60", "2024-01-01T00:00:00+05:99"])
    func offsetOutOfRange(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test("Random valid instants round-trip through text")
    func roundTrip() throws {
        var g = SeededGenerator(seed: 11)
        for _ in 0..<2000 {
            let nanos: Int32 = g.pick([0, 1, 1_000, 1_000_000, 999_999_999, Int32.random(in: 0..<1_000_000_000, using: &g)])
            let t = Timestamp(seconds: Int64.random(in: Timestamp.minSeconds...Timestamp.maxSeconds, using: &g), nanos: nanos)
            let text = t.rfc3339
            #expect(try #require(Timestamp(rfc3339: text)) == t, "\(text)")
            #expect(text.utf8.count >= 20 && text.hasSuffix("Z"))
        }
    }

    @Test("Microseconds, truncation, ordering, validity")
    func helpers() {
        #expect(Timestamp(microseconds: -1) == Timestamp(seconds: -1, nanos: 999_999_000))
        #expect(Timestamp(microseconds: 1_500_000) == Timestamp(seconds: 1, nanos: 500_000_000))
        #expect(Timestamp(seconds: -1, nanos: 999_999_000).microseconds == -1)
        #expect(Timestamp(seconds: 3, nanos: 123_456_789).truncatedToMicroseconds == Timestamp(seconds: 3, nanos: 123_456_000))
        #expect(Timestamp(seconds: 0, nanos: 999_999_999) < Timestamp(seconds: 1, nanos: 0))
        #expect(Timestamp(seconds: -1, nanos: 5) < Timestamp(seconds: 0, nanos: 0))
        #expect(!Timestamp(seconds: Timestamp.minSeconds - 1, nanos: 0).isValid)
        #expect(!Timestamp(seconds: Timestamp.maxSeconds + 1, nanos: 0).isValid)
        #expect(!Timestamp(seconds: 0, nanos: 1_000_000_000).isValid)
        #expect(!Timestamp(seconds: 0, nanos: -1).isValid)
    }
}
