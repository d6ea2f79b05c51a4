import HearthCore
import Testing

/// Firestore's total order over values, checked on a ladder of ranks: every value of a rank
/// compares equal to the others of its rank and below every value of a later rank.
private func ref(_ path: String) -> Value { .reference("projects/p/databases/(default)/documents/" + path) }
private func ts(_ s: Int64, _ n: Int32 = 0) -> Value { .timestamp(Timestamp(seconds: s, nanos: n)) }
private func vector(_ elements: [Value]) -> Value { ValueGenerator.vector(elements) }

@Suite("Value ordering")
struct ValueOrderingTests {

    static let ladder: [[Value]] = [
        [.null],
        [.boolean(false)],
        [.boolean(true)],
        [.double(.nan), .double(-.nan), .double(Double(nan: 7, signaling: false))],
        [.double(-.infinity)],
        [.double(-.greatestFiniteMagnitude)],
        [.double(-9.223372036854777856e18)],
        [.integer(.min), .double(-9.223372036854775808e18)],
        [.integer(.min + 1)],
        [.integer(-(1 << 53) - 1)],
        [.integer(-(1 << 53)), .double(-9_007_199_254_740_992)],
        [.integer(-1), .double(-1)],
        [.double(-0.5)],
        [.double(-.leastNonzeroMagnitude)],
        [.integer(0), .double(0), .double(-0.0)],
        [.double(.leastNonzeroMagnitude)],
        [.double(0.5)],
        [.integer(1), .double(1)],
        [.double(1.0.nextUp)],
        [.integer(2), .double(2)],
        [.integer((1 << 53) - 1), .double(9_007_199_254_740_991)],
        [.integer(1 << 53), .double(9_007_199_254_740_992)],
        [.integer((1 << 53) + 1)],
        [.integer((1 << 53) + 2), .double(9_007_199_254_740_994)],
        [.double(9.223372036854774784e18), .integer(9_223_372_036_854_774_784)],
        [.integer(9_223_372_036_854_774_785)],
        [.integer(.max - 1)],
        [.integer(.max)],
        [.double(9.223372036854775807e18)],  // rounds to 2^63, above every int64
        [.double(.greatestFiniteMagnitude)],
        [.double(.infinity)],
        [ts(Timestamp.minSeconds)],
        [ts(-1, 999_999_999)],
        [ts(0)],
        [ts(0, 1)],
        [ts(0, 999_999_999)],
        [ts(1)],
        [ts(Timestamp.maxSeconds, 999_999_999)],
        [.string("")],
        [.string("\u{0}")],
        [.string("\u{1}")],
        [.string("A")],
        [.string("a")],
        [.string("a\u{0}")],
        [.string("a\u{0}b")],
        [.string("ab")],
        [.string("e")],
        [.string("e\u{301}")],  // 65 CC 81
        [.string("z")],
        [.string("\u{7F}")],
        [.string("\u{E9}")],  // C3 A9: the same text as "e\u{301}" to Swift, different bytes to Firestore
        [.string("\u{FFFF}")],  // EF BF BF: above U+1F600 in UTF-16, below it in UTF-8
        [.string("\u{1F600}")],
        [.string("\u{10FFFF}")],
        [.bytes([])],
        [.bytes([0])],
        [.bytes([0, 0])],
        [.bytes([0, 1])],
        [.bytes([1])],
        [.bytes([0xFF])],
        [.bytes([0xFF, 0])],
        [ref("a/b")],
        [ref("a/b/c/d")],
        [ref("a/c")],
        [ref("a-/b")],  // segment "a" < "a-", though "a/" > "a-" as flat text
        [ref("a0/b")],
        [ref("b/a")],
        [.geoPoint(latitude: -90, longitude: 180)],
        [.geoPoint(latitude: 0, longitude: -180)],
        [.geoPoint(latitude: 0, longitude: 0), .geoPoint(latitude: -0.0, longitude: -0.0)],
        [.geoPoint(latitude: 0, longitude: 1)],
        [.geoPoint(latitude: 90, longitude: -180)],
        [.array([])],
        [.array([.null])],
        [.array([.integer(1)]), .array([.double(1)])],
        [.array([.integer(1), .null])],
        [.array([.integer(1), .integer(0)])],
        [.array([.integer(2)])],
        [.array([.string("a")])],
        [.array([.map([:])])],
        [vector([])],
        [vector([.double(100)])],
        [vector([.double(1), .double(2)])],
        [vector([.double(1), .double(3)])],
        [vector([.double(0), .double(0), .double(0)])],
        [.map([:])],
        [.map(["__type__": .string("__vector__"), "value": .string("not an array")])],  // not a vector: a plain map; "_" sorts before "a"
        [.map(["a": .null])],
        [.map(["a": .integer(1)]), .map(["a": .double(1)])],
        [.map(["a": .integer(1), "b": .null])],
        [.map(["a": .integer(2)])],
        [.map(["a\u{0}": .null])],
        [.map(["ab": .null])],
        [.map(["b": .null])],
        [.map(["\u{FFFF}": .null])],
        [.map(["\u{1F600}": .null])],
    ]

    @Test("The ladder is Firestore's total order")
    func ladderIsTotalOrder() {
        var failures = 0
        for (i, rank) in Self.ladder.enumerated() {
            for (j, other) in Self.ladder.enumerated() {
                for a in rank {
                    for b in other {
                        let c = sign(ValueOrdering.compare(a, b))
                        if c != sign(i - j) {
                            failures += 1
                            if failures <= 20 { Issue.record("compare(\(a), \(b)) = \(c), expected \(sign(i - j))") }
                        }
                    }
                }
            }
        }
        #expect(failures == 0)
    }

    @Test("Equal values are == and hash alike")
    func equalityAndHashing() {
        for rank in Self.ladder {
            for a in rank {
                for b in rank {
                    #expect(a == b, "\(a) == \(b)")
                    #expect(a.hashValue == b.hashValue, "hash(\(a)) == hash(\(b))")
                }
            }
        }
    }

    @Test("Index keys follow the ladder, ascending and descending")
    func indexKeysFollowLadder() {
        for (i, rank) in Self.ladder.enumerated() {
            for (j, other) in Self.ladder.enumerated() {
                for a in rank {
                    for b in other {
                        #expect(memcmp(IndexKey.encode(a), IndexKey.encode(b)) == sign(i - j), "keys of \(a) vs \(b)")
                        #expect(
                            memcmp(IndexKey.encode(a, descending: true), IndexKey.encode(b, descending: true)) == sign(j - i),
                            "descending keys of \(a) vs \(b)")
                    }
                }
            }
        }
    }

    struct NumberCase: Sendable, CustomTestStringConvertible {
        var a: Value, b: Value, expected: Int
        var testDescription: String { "\(a) vs \(b)" }
    }

    @Test(
        "Integers and doubles compare exactly",
        arguments: [
            NumberCase(a: .integer((1 << 53) + 1), b: .double(9_007_199_254_740_992), expected: 1),
            NumberCase(a: .double(9_007_199_254_740_992), b: .integer((1 << 53) + 1), expected: -1),
            NumberCase(a: .integer(1 << 53), b: .double(9_007_199_254_740_992), expected: 0),
            NumberCase(a: .integer(.max), b: .double(9.223372036854775807e18), expected: -1),
            NumberCase(a: .double(9.223372036854775807e18), b: .integer(.max), expected: 1),
            NumberCase(a: .integer(.min), b: .double(-9.223372036854775808e18), expected: 0),
            NumberCase(a: .integer(.min), b: .double((-9.223372036854775808e18).nextDown), expected: 1),
            NumberCase(a: .integer(0), b: .double(-0.0), expected: 0),
            NumberCase(a: .double(-0.0), b: .double(0), expected: 0),
            NumberCase(a: .integer(2), b: .double(1.5), expected: 1),
            NumberCase(a: .integer(-2), b: .double(-1.5), expected: -1),
            NumberCase(a: .integer(-1), b: .double(-1.5), expected: 1),
            NumberCase(a: .integer(.min), b: .double(.nan), expected: 1),
            NumberCase(a: .double(.nan), b: .double(-.infinity), expected: -1),
            NumberCase(a: .double(.nan), b: .double(.nan), expected: 0),
            NumberCase(a: .integer(.max), b: .double(.infinity), expected: -1),
        ])
    func numbers(_ c: NumberCase) {
        #expect(sign(ValueOrdering.compare(c.a, c.b)) == c.expected)
        #expect(memcmp(IndexKey.encode(c.a), IndexKey.encode(c.b)) == c.expected)
    }

    @Test("Cross-type order: null < bool < NaN < numbers < timestamp < string < bytes < reference < geopoint < array < vector < map")
    func typeOrder() {
        let one: [Value] = [
            .null, .boolean(true), .double(.nan), .integer(.min), ts(Timestamp.minSeconds), .string(""), .bytes([]),
            ref("a/b"), .geoPoint(latitude: -90, longitude: -180), .array([]), vector([]), .map([:]),
        ]
        for i in one.indices.dropLast() {
            #expect(ValueOrdering.compare(one[i], one[i + 1]) < 0, "\(one[i]) < \(one[i + 1])")
        }
        #expect(one.map(\.typeOrder) == [.null, .boolean, .number, .number, .timestamp, .string, .bytes, .reference, .geoPoint, .array, .vector, .map])
    }

    @Test("Strings compare by UTF-8 bytes, not UTF-16 units or Unicode equivalence")
    func stringsByUTF8() {
        #expect(ValueOrdering.compare(.string("\u{FFFF}"), .string("\u{1F600}")) < 0)
        #expect(ValueOrdering.compareUTF8("\u{FFFF}", "\u{1F600}") < 0)
        #expect(ValueOrdering.compare(.string("\u{E9}"), .string("e\u{301}")) > 0)
        #expect(Value.string("\u{E9}") != Value.string("e\u{301}"))
        #expect(ValueOrdering.compare(.string("a"), .string("a\u{0}")) < 0)
    }

    @Test("Maps compare key by key in key order, then value, shorter first")
    func maps() {
        // {b: 0} vs {a: 5, c: 0}: the first keys differ ("a" < "b"), so the values never matter.
        #expect(ValueOrdering.compare(.map(["b": .integer(0)]), .map(["a": .integer(5), "c": .integer(0)])) > 0)
        #expect(ValueOrdering.compare(.map(["a": .integer(1), "z": .integer(9)]), .map(["a": .integer(2)])) < 0)
        #expect(ValueOrdering.compare(.map(["a": .integer(1)]), .map(["a": .integer(1), "b": .integer(0)])) < 0)
        #expect(ValueOrdering.sortedKeys(["\u{1F600}": .null, "\u{FFFF}": .null, "a": .null]) == ["a", "\u{FFFF}", "\u{1F600}"])
    }

    @Test("Arrays compare element by element, shorter first")
    func arrays() {
        #expect(ValueOrdering.compare(.array([.integer(1), .integer(2)]), .array([.integer(1), .integer(3)])) < 0)
        #expect(ValueOrdering.compare(.array([.integer(2)]), .array([.integer(1), .integer(3)])) > 0)
        #expect(ValueOrdering.compare(.array([.integer(1)]), .array([.integer(1), .null])) < 0)
        #expect(ValueOrdering.compare(.array([.string("a")]), .array([.integer(99)])) > 0)
    }

    @Test("Vectors order by length first, sit between arrays and maps")
    func vectors() {
        #expect(vector([.double(9)]).isVector)
        #expect(ValueOrdering.compare(vector([.double(9)]), vector([.double(1), .double(1)])) < 0)
        #expect(ValueOrdering.compare(.array([.double(9), .double(9), .double(9)]), vector([])) < 0)
        #expect(ValueOrdering.compare(vector([.double(9), .double(9)]), .map([:])) < 0)
    }
}
