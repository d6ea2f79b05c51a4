public import HearthCore

/// A value of the rules language.
///
/// `==` (``Equatable``) is the equality rules use for set membership: numbers compare by
/// value (`1 == 1.0`) at the top level, strictly inside lists and maps (`[1] != [1.0]`), and
/// NaN equals itself so sets stay well-behaved. The language's own `==` operator differs
/// only for NaN (see ``RulesValue/rulesEquals(_:)``).
public enum RulesValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Double)
    case string(String)
    case bytes([UInt8])
    case list([RulesValue])
    case map([String: RulesValue])
    case set(RulesSet)
    case path(RulesPath)
    case timestamp(Timestamp)
    case duration(RulesDuration)
    case latlng(latitude: Double, longitude: Double)
    case mapDiff(RulesMapDiff)

    /// The type name as the `is` operator and error messages spell it.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .string: "string"
        case .bytes: "bytes"
        case .list: "list"
        case .map: "map"
        case .set: "set"
        case .path: "path"
        case .timestamp: "timestamp"
        case .duration: "duration"
        case .latlng: "latlng"
        case .mapDiff: "map_diff"
        }
    }

    public static func == (a: RulesValue, b: RulesValue) -> Bool { RulesEquality.equal(a, b, topLevel: true, ieee: false) }

    public func hash(into hasher: inout Hasher) { RulesEquality.hash(self, into: &hasher, topLevel: true) }

    /// The rules `==` operator: like ``==`` but NaN is unequal to everything, itself included.
    public func rulesEquals(_ other: RulesValue) -> Bool { RulesEquality.equal(self, other, topLevel: true, ieee: true) }

    public var description: String { RulesFormatting.debugString(self) }

    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var mapValue: [String: RulesValue]? { if case .map(let m) = self { return m }; return nil }
}

/// A set of values (from `list.toSet()` or map diffs). Element order is the order of first
/// insertion, which only matters for display.
public struct RulesSet: Sendable, Hashable {
    public private(set) var elements: [RulesValue]
    private var index: Set<RulesValue>

    public init<S: Sequence>(_ values: S) where S.Element == RulesValue {
        elements = []
        index = []
        for v in values where index.insert(v).inserted { elements.append(v) }
    }

    public var count: Int { elements.count }
    public func contains(_ v: RulesValue) -> Bool { index.contains(v) }

    public static func == (a: RulesSet, b: RulesSet) -> Bool { a.index == b.index }
    public func hash(into hasher: inout Hasher) { hasher.combine(index) }
}

/// The result of `a.diff(b)`: which keys were added, removed, changed or kept.
public struct RulesMapDiff: Sendable, Hashable {
    public var added: [String]
    public var removed: [String]
    public var changed: [String]
    public var unchanged: [String]

    /// Compares `a` (usually the new data) with `b` (usually the old data).
    public init(_ a: [String: RulesValue], _ b: [String: RulesValue]) {
        added = []; removed = []; changed = []; unchanged = []
        for k in a.keys.sorted(by: RulesOrdering.utf16Less) {
            if let old = b[k] {
                // Values compare as the `==` operator does at the top level (1 and 1.0 are unchanged).
                if a[k]!.rulesEquals(old) { unchanged.append(k) } else { changed.append(k) }
            } else {
                added.append(k)
            }
        }
        for k in b.keys.sorted(by: RulesOrdering.utf16Less) where a[k] == nil { removed.append(k) }
    }

    public var affected: [String] { added + removed + changed }
}

/// A duration with nanosecond precision, normalised as protobuf's: `seconds` and `nanos`
/// have the same sign and `|nanos| < 1e9`.
public struct RulesDuration: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let seconds: Int64
    public let nanos: Int32

    /// Normalises any combination; nil when out of the Int64-seconds range.
    public init?(seconds: Int64, nanos: Int64) {
        var s = seconds
        var n = nanos
        let (q, r) = n.quotientAndRemainder(dividingBy: 1_000_000_000)
        let (s1, o) = s.addingReportingOverflow(q)
        if o { return nil }
        s = s1
        n = r
        if s > 0 && n < 0 {
            s -= 1
            n += 1_000_000_000
        } else if s < 0 && n > 0 {
            s += 1
            n -= 1_000_000_000
        }
        self.seconds = s
        self.nanos = Int32(n)
    }

    public static func < (a: RulesDuration, b: RulesDuration) -> Bool {
        a.seconds != b.seconds ? a.seconds < b.seconds : a.nanos < b.nanos
    }

    public var description: String {
        if nanos == 0 { return "\(seconds)s" }
        let frac = String(abs(Int64(nanos)) + 1_000_000_000).dropFirst()
        let sign = (seconds < 0 || nanos < 0) && seconds == 0 ? "-" : ""
        return "\(sign)\(seconds).\(frac)s"
    }
}
