import Foundation
import HearthCore
import Testing

@testable import HearthDatabase

@Suite struct DatabaseIndexTests {
    static let scalars: [DatabaseScalar?] = [
        nil, .bool(false), .bool(true), .number(-1e300), .number(-2.5), .number(-0.0), .number(0), .number(1), .number(2),
        .number(10), .number(1e300), .string(""), .string("A"), .string("a"), .string("ab"), .string("b"), .string("\u{0}"),
        .string("é"), .string("😀"), .string("\u{FFFF}"),
    ]

    @Test func sortKeysOrderAsTheDatabaseOrdersValues() {
        var values: [(DatabaseScalar?, Bool)] = Self.scalars.map { ($0, false) }
        values.append((nil, true))
        for (a, aObject) in values {
            for (b, bObject) in values {
                let expected = DatabaseOrdering.compare(a, aIsObject: aObject, b, bIsObject: bObject)
                let ka = DatabaseIndexKey.sortKey(a, isObject: aObject), kb = DatabaseIndexKey.sortKey(b, isObject: bObject)
                let actual = ka == kb ? 0 : (ka.lexicographicallyPrecedes(kb) ? -1 : 1)
                #expect(actual == expected, "\(String(describing: a)) vs \(String(describing: b))")
            }
        }
    }

    @Test func childKeysOrderAsTheDatabaseOrdersKeys() {
        let keys = ["-2147483648", "-1", "0", "1", "9", "10", "2147483647", "2147483648", "01", "-", "A", "a", "aa", "b", "é", "😀", "\u{FFFD}"]
        for a in keys {
            for b in keys {
                let ka = DatabaseIndexKey.childKey(a), kb = DatabaseIndexKey.childKey(b)
                let actual = ka == kb ? 0 : (ka.lexicographicallyPrecedes(kb) ? -1 : 1)
                #expect(actual == DatabaseOrdering.compareKeys(a, b), "\(a) vs \(b)")
            }
        }
    }

    @Test func specsParseFromRulesAndRoundTripTheirNames() throws {
        let rules = try StoredDatabaseRules(
            text: #"{"rules":{"items":{".indexOn":["score","meta/rank"]},"users":{"$uid":{"posts":{".indexOn":".value"}}},"x":{".indexOn":".key"}}}"#)
        let expected: Set<DatabaseIndexSpec> = [
            DatabaseIndexSpec(location: ["items"], order: .child(path("score"))),
            DatabaseIndexSpec(location: ["items"], order: .child(path("meta/rank"))),
            DatabaseIndexSpec(location: ["users", nil, "posts"], order: .value),
        ]
        #expect(rules.indexes == expected)
        for spec in expected { #expect(DatabaseIndexSpec(name: spec.description) == spec) }
        let wildcard = DatabaseIndexSpec(location: ["users", nil, "posts"], order: .value)
        #expect(wildcard.matches(path("users/alice/posts")))
        #expect(!wildcard.matches(path("users/alice")))
        #expect(!wildcard.matches(path("people/alice/posts")))
    }
}
