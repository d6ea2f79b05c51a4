import HearthCore
import Testing

/// Property tests over seeded random values of every type: the index key encoding must sort
/// exactly as ``ValueOrdering`` does (SQLite compares the keys with memcmp), and the storage
/// codec must give back exactly what it was given.
@Suite("IndexKey and ValueCodec properties")
struct IndexKeyPropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 0xFEED]

    static func values(seed: UInt64, count: Int) -> [Value] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { _ in ValueGenerator.value(&g) }
    }

    @Test("sign(memcmp(key(a), key(b))) == sign(compare(a, b)), and reversed when descending", arguments: seeds)
    func keysFollowOrdering(seed: UInt64) {
        let values = Self.values(seed: seed, count: 300)
        let asc = values.map { IndexKey.encode($0) }
        let desc = values.map { IndexKey.encode($0, descending: true) }
        var failures = 0
        for i in values.indices {
            for j in values.indices {
                let expected = sign(ValueOrdering.compare(values[i], values[j]))
                let a = memcmp(asc[i], asc[j]), d = memcmp(desc[i], desc[j])
                if a != expected || d != -expected {
                    failures += 1
                    if failures <= 10 {
                        Issue.record("\(values[i]) vs \(values[j]): compare \(expected), asc keys \(a), desc keys \(d)")
                    }
                }
            }
        }
        #expect(failures == 0)
    }

    @Test("compare is a total order: antisymmetric and consistent with sorting", arguments: seeds)
    func compareIsTotalOrder(seed: UInt64) {
        let values = Self.values(seed: seed, count: 300)
        for a in values.prefix(60) {
            for b in values {
                #expect(sign(ValueOrdering.compare(a, b)) == -sign(ValueOrdering.compare(b, a)))
                if ValueOrdering.compare(a, b) == 0 { #expect(a.hashValue == b.hashValue, "equal values \(a), \(b) hash alike") }
            }
        }
        let sorted = values.sorted { ValueOrdering.compare($0, $1) < 0 }
        for i in sorted.indices.dropLast() {
            #expect(ValueOrdering.compare(sorted[i], sorted[i + 1]) <= 0)
            #expect(!IndexKey.encode(sorted[i + 1]).lexicographicallyPrecedes(IndexKey.encode(sorted[i])))
        }
    }

    @Test("Concatenated keys (composite index rows) sort column by column", arguments: seeds)
    func compositeKeys(seed: UInt64) {
        var g = SeededGenerator(seed: seed)
        let rows: [(Value, Value, Bool)] = (0..<150).map { _ in
            (ValueGenerator.value(&g, depth: 2), ValueGenerator.value(&g, depth: 2), g.chance(0.5))
        }
        for descendingSecond in [false, true] {
            func key(_ r: (Value, Value, Bool)) -> [UInt8] {
                var k: [UInt8] = []
                IndexKey.append(r.0, descending: false, to: &k)
                IndexKey.append(r.1, descending: descendingSecond, to: &k)
                return k
            }
            for x in rows.prefix(50) {
                for y in rows {
                    var expected = sign(ValueOrdering.compare(x.0, y.0))
                    if expected == 0 { expected = sign(ValueOrdering.compare(x.1, y.1)) * (descendingSecond ? -1 : 1) }
                    #expect(memcmp(key(x), key(y)) == expected, "(\(x.0), \(x.1)) vs (\(y.0), \(y.1))")
                }
            }
        }
    }

    @Test("successor(ofPrefix:) bounds exactly the keys that start with the prefix")
    func successor() {
        #expect(IndexKey.successor(ofPrefix: [1, 2, 3]) == [1, 2, 4])
        #expect(IndexKey.successor(ofPrefix: [1, 0xFF, 0xFF]) == [2])
        #expect(IndexKey.successor(ofPrefix: [0xFF]) == nil)
        #expect(IndexKey.successor(ofPrefix: []) == nil)
        var g = SeededGenerator(seed: 9)
        for _ in 0..<500 {
            let p = IndexKey.encode(ValueGenerator.value(&g), descending: g.chance(0.5))
            guard let s = IndexKey.successor(ofPrefix: p) else { continue }
            #expect(p.lexicographicallyPrecedes(s))
            #expect((p + [0xFF, 0xFF]).lexicographicallyPrecedes(s))
        }
    }

    @Test("Document names encode in Firestore's path order")
    func pathKeys() {
        let paths = ["a/b", "a/b/c/d", "a/b/c/e", "a/b\u{0}", "a/c", "a-/b", "a0/b", "\u{FFFF}/x", "\u{1F600}/x"].map(ResourcePath.init(parsing:))
        for (i, p) in paths.enumerated() {
            for (j, q) in paths.enumerated() {
                #expect(memcmp(IndexKey.encodePath(p), IndexKey.encodePath(q)) == sign(i - j), "\(p) vs \(q)")
                #expect(memcmp(IndexKey.encodePath(p, descending: true), IndexKey.encodePath(q, descending: true)) == sign(j - i))
                #expect((p < q) == (i < j))
            }
        }
    }

    @Test("ValueCodec round-trips every value bit for bit", arguments: seeds)
    func codecRoundTrip(seed: UInt64) throws {
        var g = SeededGenerator(seed: seed)
        for _ in 0..<400 {
            var fields: [String: Value] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &g) { fields[ValueGenerator.randomString(&g)] = ValueGenerator.value(&g) }
            let decoded = try ValueCodec.decode(ValueCodec.encode(fields))
            #expect(identicalMaps(decoded, fields), "round trip of \(fields)")
        }
    }

    @Test("ValueCodec keeps what IndexKey forgets: int vs double, -0.0, NaN payloads")
    func codecIsLossless() throws {
        let fields: [String: Value] = [
            "i": .integer(1), "d": .double(1), "nz": .double(-0.0), "nan": .double(Double(nan: 0x1234, signaling: false)),
            "g": .geoPoint(latitude: -0.0, longitude: 0), "t": .timestamp(Timestamp(seconds: -1, nanos: 999_999_999)),
            "s": .string("e\u{301}"), "b": .bytes([0, 0xFF]), "big": .integer(.min),
        ]
        let decoded = try ValueCodec.decode(ValueCodec.encode(fields))
        #expect(identicalMaps(decoded, fields))
        #expect(IndexKey.encode(.integer(1)) == IndexKey.encode(.double(1)))
        #expect(IndexKey.encode(.double(-0.0)) == IndexKey.encode(.integer(0)))
    }

    @Test("ValueCodec rejects truncated and unknown data with DATA_LOSS")
    func codecRejectsCorruption() throws {
        let good = ValueCodec.encode(["a": .array([.string("hello"), .integer(7)]), "b": .map(["c": .bytes([1, 2, 3])])])
        for n in 0..<good.count {
            do {
                _ = try ValueCodec.decode(Array(good.prefix(n)))
                Issue.record("decoding \(n) of \(good.count) bytes should fail")
            } catch {
                #expect(error.code == .dataLoss)
            }
        }
        #expect(throws: HearthError.self) { try ValueCodec.decode([2, 0]) }  // unknown format version
        #expect(throws: HearthError.self) { try ValueCodec.decode([1, 1, 1, 0x61, 99]) }  // unknown tag
    }

    /// Corrupt stored documents, and client page tokens (which carry ValueCodec bytes), must
    /// fail with an error rather than trap. A length varint above Int.max currently traps in
    /// `Int(varint())`; run in a child process so a crash fails this test, not the whole run.
    @Test("ValueCodec never crashes on huge length varints")
    func codecHugeLengths() async {
        await #expect(processExitsWith: .success) {
            let tenByteMax: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
            let inputs: [[UInt8]] = [
                [1] + tenByteMax,  // map entry count
                [1, 1] + tenByteMax,  // key length
                [1, 1, 1, 0x61, 6] + tenByteMax,  // string length
                [1, 1, 1, 0x61, 7] + tenByteMax,  // bytes length
                [1, 1, 1, 0x61, 10] + tenByteMax,  // array count
            ]
            for input in inputs { _ = try? ValueCodec.decode(input) }
        }
    }

    @Test("ValueCodec decoding of random bytes throws or returns, never crashes")
    func codecFuzz() async {
        await #expect(processExitsWith: .success) {
            var g = SeededGenerator(seed: 77)
            let seedDoc = ValueCodec.encode(["k": .array([.string("x"), .map(["y": .double(1)]), .bytes([1, 2])])])
            for _ in 0..<20_000 {
                var bytes: [UInt8]
                if g.chance(0.5) {
                    bytes = [1] + (0..<Int.random(in: 0...24, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
                } else {
                    bytes = seedDoc
                    for _ in 0..<Int.random(in: 1...3, using: &g) {
                        bytes[Int.random(in: 1..<bytes.count, using: &g)] = UInt8.random(in: 0...255, using: &g)
                    }
                }
                _ = try? ValueCodec.decode(bytes)
            }
        }
    }
}
