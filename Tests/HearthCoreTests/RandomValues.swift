import HearthCore

/// A small, seeded generator (SplitMix64) so every "random" test is reproducible from its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func pick<T>(_ options: [T]) -> T { options[Int.random(in: 0..<options.count, using: &self)] }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}

/// Values of every Firestore type, biased towards the edges where orderings go wrong:
/// int/double boundaries, -0.0, NaN, strings whose UTF-8 and UTF-16 orders differ,
/// NUL bytes, prefixes of one another, vectors next to maps.
enum ValueGenerator {
    static let integers: [Int64] = [
        0, 1, -1, 2, 42, -42, 1 << 53, (1 << 53) + 1, (1 << 53) - 1, -(1 << 53) - 1, (1 << 62), Int64.max, Int64.max - 1,
        Int64.min, Int64.min + 1, 1_000_000,
    ]
    static let doubles: [Double] = [
        0, -0.0, .nan, -.nan, .infinity, -.infinity, 0.5, -0.5, 1.0, 1.5, 42.0, 9_007_199_254_740_992.0, 9_007_199_254_740_994.0,
        9.223372036854775807e18, -9.223372036854775808e18, 9.223372036854774784e18, .leastNonzeroMagnitude,
        -.leastNonzeroMagnitude, .greatestFiniteMagnitude, 1e-300, 3.0,
    ]
    static let strings: [String] = [
        "", "a", "A", "ab", "a\u{0}", "a\u{0}b", "\u{0}", "\u{1}", "b", "e", "e\u{301}", "\u{E9}", "z", "\u{7F}", "\u{FFFF}",
        "\u{1F600}", "\u{10FFFF}", "a/b", "__x__", "\u{FF}",
    ]
    static let keys: [String] = ["", "a", "b", "ab", "a\u{0}", "\u{E9}", "e\u{301}", "__type__", "value", "\u{1F600}", "\u{FFFF}"]
    static let segments: [String] = ["a", "b", "a-", "a0", "ab", "\u{E9}", "x\u{0}y", "\u{1F600}", "\u{FFFF}"]

    static func value(_ g: inout SeededGenerator, depth: Int = 0) -> Value {
        switch Int.random(in: 0..<(depth >= 3 ? 9 : 12), using: &g) {
        case 0: return .null
        case 1: return .boolean(g.chance(0.5))
        case 2: return .integer(g.chance(0.6) ? g.pick(integers) : Int64.random(in: -1000...1000, using: &g) * (g.chance(0.3) ? 1 << 50 : 1))
        case 3:
            if g.chance(0.6) { return .double(g.pick(doubles)) }
            if g.chance(0.5) { return .double(Double(Int64.random(in: -1000...1000, using: &g)) / 4) }
            // Any finite bit pattern, and the neighbours of integers.
            let d = Double(bitPattern: g.next())
            if d.isNaN { return .double(.nan) }
            return .double(g.chance(0.5) ? d : Double(g.pick(integers)).nextUp)
        case 4:
            let seconds = g.chance(0.5)
                ? Int64.random(in: -3...3, using: &g) : Int64.random(in: Timestamp.minSeconds...Timestamp.maxSeconds, using: &g)
            let nanos = g.chance(0.5) ? g.pick([0, 1, 999_999_999, 500_000_000]) : Int32.random(in: 0..<1_000_000_000, using: &g)
            return .timestamp(Timestamp(seconds: seconds, nanos: nanos))
        case 5: return .string(randomString(&g))
        case 6: return .bytes((0..<Int.random(in: 0...4, using: &g)).map { _ in g.pick([0, 1, 0x7F, 0x80, 0xFF, UInt8.random(in: 0...255, using: &g)]) })
        case 7:
            let n = 2 * Int.random(in: 1...3, using: &g)
            return .reference("projects/p/databases/d/documents/" + (0..<n).map { _ in g.pick(segments) }.joined(separator: "/"))
        case 8:
            let lat = g.chance(0.5) ? g.pick([-90.0, -0.0, 0.0, 1.5, 90.0]) : Double.random(in: -90...90, using: &g)
            let lon = g.chance(0.5) ? g.pick([-180.0, -0.0, 0.0, 1.5, 180.0]) : Double.random(in: -180...180, using: &g)
            return .geoPoint(latitude: lat, longitude: lon)
        case 9: return .array((0..<Int.random(in: 0...3, using: &g)).map { _ in value(&g, depth: depth + 1) })
        case 10:
            let elements = (0..<Int.random(in: 0...3, using: &g)).map { _ in Value.double(g.pick([0.0, 1.0, -1.0, 0.5, 2.0])) }
            return vector(elements)
        default:
            var m: [String: Value] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &g) { m[g.pick(keys)] = value(&g, depth: depth + 1) }
            return .map(m)
        }
    }

    static func randomString(_ g: inout SeededGenerator) -> String {
        if g.chance(0.6) { return g.pick(strings) }
        return (0..<Int.random(in: 1...3, using: &g)).map { _ in g.pick(strings) }.joined()
    }

    static func vector(_ elements: [Value]) -> Value {
        .map(["__type__": .string("__vector__"), "value": .array(elements)])
    }
}

/// Bit-for-bit equality: same case, same bits (1 and 1.0 differ, -0.0 and 0.0 differ, NaN is itself),
/// strings and map keys by their UTF-8 bytes.
func identical(_ a: Value, _ b: Value) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.boolean(let x), .boolean(let y)): return x == y
    case (.integer(let x), .integer(let y)): return x == y
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    case (.timestamp(let x), .timestamp(let y)): return x.seconds == y.seconds && x.nanos == y.nanos
    case (.string(let x), .string(let y)): return Array(x.utf8) == Array(y.utf8)
    case (.bytes(let x), .bytes(let y)): return x == y
    case (.reference(let x), .reference(let y)): return Array(x.utf8) == Array(y.utf8)
    case (.geoPoint(let a1, let o1), .geoPoint(let a2, let o2)): return a1.bitPattern == a2.bitPattern && o1.bitPattern == o2.bitPattern
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
    case (.map(let x), .map(let y)): return identicalMaps(x, y)
    default: return false
    }
}

func identicalMaps(_ x: [String: Value], _ y: [String: Value]) -> Bool {
    let kx = x.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
    let ky = y.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
    guard kx == ky else { return false }
    for (k, v) in x { guard let w = y[k], identical(v, w) else { return false } }
    return true
}

func sign(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

/// `memcmp` on byte strings, as SQLite compares BLOBs.
func memcmp(_ a: [UInt8], _ b: [UInt8]) -> Int {
    if a == b { return 0 }
    return a.lexicographicallyPrecedes(b) ? -1 : 1
}
