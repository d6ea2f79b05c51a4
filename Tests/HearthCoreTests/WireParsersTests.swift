import Foundation
import HearthCore
import HearthFuzzTargets
import Testing

@Suite struct HTTPByteRangeTests {
    @Test(arguments: [
        // The header that stopped the whole process: an end at Int64.max.
        ("bytes=0-9223372036854775807", 100, HTTPByteRange.partial(0..<100)),
        ("bytes=0-99999999999999999999999999", 100, .partial(0..<100)),
        ("bytes=9223372036854775807-", 100, .unsatisfiable),
        ("bytes=-9223372036854775807", 100, .partial(0..<100)),
        ("bytes=-99999999999999999999999999", 100, .partial(0..<100)),
        ("bytes=0-9", 100, .partial(0..<10)),
        ("bytes=90-", 100, .partial(90..<100)),
        ("bytes=-10", 100, .partial(90..<100)),
        ("bytes=99-200", 100, .partial(99..<100)),
        ("bytes=100-", 100, .unsatisfiable),
        ("bytes=-0", 100, .unsatisfiable),
        ("bytes=-5", 0, .unsatisfiable),
        ("bytes=0-", 0, .unsatisfiable),
        ("bytes=5-4", 100, .whole),
        ("bytes=0-1,5-6", 100, .whole),
        ("bytes=a-b", 100, .whole),
        ("bytes=-", 100, .whole),
        ("bytes=+1-2", 100, .whole),
        ("items=0-1", 100, .whole),
        (" BYTES = 1 - 2 ", 100, .whole),
        ("Bytes=1-2", 100, .partial(1..<3)),
        ("bytes=9223372036854775806-9223372036854775807", Int64.max, .partial(9_223_372_036_854_775_806..<Int64.max)),
    ] as [(String, Int64, HTTPByteRange)])
    func parses(header: String, size: Int64, expected: HTTPByteRange) {
        #expect(HTTPByteRange.parse(header, size: size) == expected)
    }

    @Test func contentRangeOfAPartialAnswer() {
        #expect(HTTPByteRange.contentRange(90..<100, size: 100) == "bytes 90-99/100")
    }
}

@Suite struct HTTPContentRangeTests {
    @Test func acceptsTheFourForms() {
        #expect(HTTPContentRange.parse("bytes 0-9/100") == HTTPContentRange(bytes: 0...9, total: 100))
        #expect(HTTPContentRange.parse("bytes 0-9/*") == HTTPContentRange(bytes: 0...9, total: nil))
        #expect(HTTPContentRange.parse("bytes */100") == HTTPContentRange(bytes: nil, total: 100))
        #expect(HTTPContentRange.parse("bytes */*") == HTTPContentRange(bytes: nil, total: nil))
    }

    @Test(arguments: [
        "bytes 0-9223372036854775808/*", "bytes */9223372036854775808", "bytes 5-4/10", "bytes 0-10/10", "bytes -1-2/5",
        "bytes 0-/5", "bytes 0-1", "bytes", "items 0-1/2", "bytes 0-1/2/3", "bytes 1-2-3/9",
    ])
    func refusesMalformedOrInconsistent(header: String) {
        #expect(HTTPContentRange.parse(header) == nil)
    }
}

@Suite struct HTTPDateTests {
    @Test func readsTheThreeFormsHTTPAllows() {
        let expected: Int64 = 784_111_777
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.format(Timestamp(seconds: expected, nanos: 0)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test(arguments: [
        "Thu, 01 Jan 9223372036854775807 00:00:00 GMT",  // overflowed the day arithmetic before
        "Thu, 9223372036854775807 Jan 2020 00:00:00 GMT", "Thu, 01 Jan 2020 9223372036854775807:00:00 GMT",
        "Thu, 31 Feb 2020 00:00:00 GMT", "Thu, 01 Foo 2020 00:00:00 GMT", "Thu, 01 Jan 2020 24:00:00 GMT",
        "Thu, 01 Jan 0000 00:00:00 GMT", "Thu, 01 Jan 20 00:00:00 GMT", "Thu, 01 Jan 2020 00:00:00 UTC", "", "garbage",
        "Thu, -1 Jan 2020 00:00:00 GMT",
    ])
    func refusesInvalidDates(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}

@Suite struct WireIntegerTests {
    @Test func parsesWithinTheStatedRange() {
        #expect(WireInteger.parse("42", in: 0...100) == 42)
        #expect(WireInteger.parse("-9223372036854775808", in: .min ... .max) == .min)
        #expect(WireInteger.parse("9223372036854775807", in: .min ... .max) == .max)
        #expect(WireInteger.parse("9223372036854775808", in: .min ... .max) == nil)
        #expect(WireInteger.parse("184467440737095516160", in: .min ... .max) == nil)
        #expect(WireInteger.parse("101", in: 0...100) == nil)
        #expect(WireInteger.parse("+1", in: 0...100) == nil)
        #expect(WireInteger.parse("+1", in: 0...100, allowPlus: true) == 1)
        #expect(WireInteger.parse(" 1", in: 0...100) == nil)
        #expect(WireInteger.parse("", in: 0...100) == nil)
        #expect(WireInteger.parse("-", in: -5...100) == nil)
        #expect(WireInteger.count("-1") == nil)
        #expect(WireInteger.saturating("99999999999999999999999") == .max)
        #expect(WireInteger.saturating("12x") == nil)
    }

    @Test func grpcTimeoutsStayInRange() {
        #expect(GRPCTimeout.parse("99999999H") == .seconds(99_999_999 * 3600))
        #expect(GRPCTimeout.parse("100000000H") == nil)
        #expect(GRPCTimeout.parse("-1S") == nil)
        #expect(GRPCTimeout.parse("+1S") == nil)
    }
}

/// Replays every input kept in `FuzzCorpus/<target>/` (seeds and whatever libFuzzer found)
/// through its target: a regression is a crash here too.
@Suite struct FuzzCorpusTests {
    @Test(arguments: FuzzTargets.all.map(\.name))
    func replaysKeptInputs(target name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let folder = try #require(Bundle.module.url(forResource: "FuzzCorpus", withExtension: nil)).appendingPathComponent(name)
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        #expect(!files.isEmpty, "every target keeps at least one input")
        for file in files { target.run(Array(try Data(contentsOf: file))) }
    }
}
