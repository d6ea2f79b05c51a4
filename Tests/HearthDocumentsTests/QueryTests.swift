import HearthCore
import HearthDocuments
import Testing

/// Queries against a small hand-built collection, with results worked out by hand.
///
/// | doc | n      | s   | tags             | b     | z    |
/// |-----|--------|-----|------------------|-------|------|
/// | a   | 1      | "x" | ["red", "blue"]  | true  |      |
/// | b   | 2.5    | "y" | ["blue"]         | false |      |
/// | c   | 3      | "x" | []               | true  | null |
/// | d   | NaN    | "z" | ["green", 1]     |       |      |
/// | e   | "3"    | "y" |                  | false | 0    |
/// | f   | null   | "x" | ["red"]          |       |      |
/// | g   |        | "w" | ["blue", "red"]  |       |      |
/// | h   | 3.0    | "z" | [1.0]            | true  |      |
///
/// plus `c/a/c/x` {n: 1}, `other/o/c/y` {n: 2} (same collection id, other parents) and `c2/q` {n: 1}.
@Suite("Queries")
struct QueryTests {
    static func seed(_ db: Hearth) async throws {
        let docs: [(String, [String: Value])] = [
            ("c/a", ["n": .integer(1), "s": .string("x"), "tags": .array([.string("red"), .string("blue")]), "b": .boolean(true)]),
            ("c/b", ["n": .double(2.5), "s": .string("y"), "tags": .array([.string("blue")]), "b": .boolean(false)]),
            ("c/c", ["n": .integer(3), "s": .string("x"), "tags": .array([]), "b": .boolean(true), "z": .null]),
            ("c/d", ["n": .double(.nan), "s": .string("z"), "tags": .array([.string("green"), .integer(1)])]),
            ("c/e", ["n": .string("3"), "s": .string("y"), "b": .boolean(false), "z": .integer(0)]),
            ("c/f", ["n": .null, "s": .string("x"), "tags": .array([.string("red")])]),
            ("c/g", ["s": .string("w"), "tags": .array([.string("blue"), .string("red")])]),
            ("c/h", ["n": .double(3), "s": .string("z"), "tags": .array([.double(1)]), "b": .boolean(true)]),
            ("c/a/c/x", ["n": .integer(1)]),
            ("other/o/c/y", ["n": .integer(2)]),
            ("c2/q", ["n": .integer(1)]),
        ]
        try await db.commit(docs.map { Write.set(path($0.0), $0.1) })
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var query: Query
        var expected: [String]
        var testDescription: String { name }
    }

    static let database = DatabaseName(project: "demo", database: "(default)")
    static func ref(_ p: String) -> Value { .reference(database.name(of: path(p))) }
    static func c(_ filter: Query.Filter? = nil, orderBy: [Query.Order] = [], startAt: Query.Cursor? = nil, endAt: Query.Cursor? = nil, offset: Int = 0, limit: Int? = nil) -> Query {
        Query(collectionId: "c", filter: filter, orderBy: orderBy, startAt: startAt, endAt: endAt, offset: offset, limit: limit)
    }
    static func f(_ p: String, _ op: Query.Operator, _ v: Value) -> Query.Filter { .field(field(p), op, v) }
    static func asc(_ p: String) -> Query.Order { Query.Order(field(p)) }
    static func desc(_ p: String) -> Query.Order { Query.Order(field(p), descending: true) }
    static func names(_ ids: String) -> [String] { ids.map { "c/\($0)" } }

    static let cases: [Case] = [
        Case(name: "no filter: every document of the collection, by name", query: c(), expected: names("abcdefgh")),
        Case(name: "== int matches int and double", query: c(f("n", .equal, .integer(3))), expected: names("ch")),
        Case(name: "== double matches int", query: c(f("n", .equal, .double(1))), expected: names("a")),
        Case(name: "== null", query: c(f("n", .equal, .null)), expected: names("f")),
        Case(name: "== NaN matches nothing", query: c(f("n", .equal, .double(.nan))), expected: []),
        Case(name: "> number: numbers only, by value then name", query: c(f("n", .greaterThan, .integer(1))), expected: names("bch")),
        Case(name: ">= 3", query: c(f("n", .greaterThanOrEqual, .integer(3))), expected: names("ch")),
        Case(name: "< 3 excludes NaN", query: c(f("n", .lessThan, .integer(3))), expected: names("ab")),
        Case(name: "<= 2.5", query: c(f("n", .lessThanOrEqual, .double(2.5))), expected: names("ab")),
        Case(name: "> string: strings only", query: c(f("n", .greaterThan, .string("2"))), expected: names("e")),
        Case(name: "range on both sides", query: c(.and([f("n", .greaterThan, .integer(1)), f("n", .lessThan, .integer(3))])), expected: names("b")),
        Case(name: "!= orders by the field", query: c(f("s", .notEqual, .string("x"))), expected: names("gbedh")),
        Case(name: "not-in", query: c(f("s", .notIn, .array([.string("x"), .string("y")]))), expected: names("gdh")),
        Case(name: "in, across int and double", query: c(f("n", .in, .array([.integer(1), .integer(3)]))), expected: names("ach")),
        Case(name: "array-contains", query: c(f("tags", .arrayContains, .string("blue"))), expected: names("abg")),
        Case(name: "array-contains 1 matches 1.0", query: c(f("tags", .arrayContains, .integer(1))), expected: names("dh")),
        Case(name: "array-contains-any", query: c(f("tags", .arrayContainsAny, .array([.string("red"), .integer(1)]))), expected: names("adfgh")),
        Case(name: "is null", query: c(.unary(field("z"), .isNull)), expected: names("c")),
        Case(name: "is NaN", query: c(.unary(field("n"), .isNaN)), expected: names("d")),
        Case(name: "is not null orders by the field (NaN first among numbers)", query: c(.unary(field("n"), .isNotNull)), expected: names("dabche")),
        Case(name: "is not NaN on booleans", query: c(.unary(field("b"), .isNotNaN)), expected: names("beach")),
        Case(name: "AND of equalities", query: c(.and([f("s", .equal, .string("x")), f("b", .equal, .boolean(true))])), expected: names("ac")),
        Case(name: "OR", query: c(.or([f("n", .equal, .integer(1)), f("s", .equal, .string("z"))])), expected: names("adh")),
        Case(name: "OR of an AND and an array-contains",
             query: c(.or([.and([f("s", .equal, .string("x")), f("n", .greaterThan, .integer(1))]), f("tags", .arrayContains, .string("green"))])),
             expected: names("dc")),
        Case(name: "nested AND inside OR inside AND",
             query: c(.and([f("b", .equal, .boolean(true)), .or([f("s", .equal, .string("z")), f("tags", .arrayContains, .string("red"))])])),
             expected: names("ah")),
        Case(name: "orderBy: missing fields excluded; null < NaN < numbers < strings", query: c(orderBy: [asc("n")]), expected: names("fdabche")),
        Case(name: "orderBy desc: __name__ follows the last direction", query: c(orderBy: [desc("s")]), expected: names("hdebfcag")),
        Case(name: "two orders", query: c(orderBy: [asc("s"), desc("n")]), expected: names("cafebhd")),
        Case(name: "limit", query: c(orderBy: [asc("n")], limit: 3), expected: names("fda")),
        Case(name: "offset and limit", query: c(orderBy: [asc("n")], offset: 2, limit: 3), expected: names("abc")),
        Case(name: "offset past the end", query: c(offset: 20), expected: []),
        Case(name: "limit 0", query: c(limit: 0), expected: []),
        Case(name: "startAt", query: c(orderBy: [asc("n")], startAt: .init(values: [.integer(3)], before: true)), expected: names("che")),
        Case(name: "startAfter", query: c(orderBy: [asc("n")], startAt: .init(values: [.integer(3)], before: false)), expected: names("e")),
        Case(name: "endAt", query: c(orderBy: [asc("n")], endAt: .init(values: [.double(2.5)], before: false)), expected: names("fdab")),
        Case(name: "endBefore", query: c(orderBy: [asc("n")], endAt: .init(values: [.double(2.5)], before: true)), expected: names("fda")),
        Case(name: "startAt with a __name__ tie-breaker", query: c(orderBy: [asc("n")], startAt: .init(values: [.integer(3), ref("c/h")], before: true)), expected: names("he")),
        Case(name: "startAfter with a __name__ tie-breaker", query: c(orderBy: [asc("n")], startAt: .init(values: [.integer(3), ref("c/c")], before: false)), expected: names("he")),
        Case(name: "cursors at both ends", query: c(orderBy: [asc("n")], startAt: .init(values: [.integer(1)], before: false), endAt: .init(values: [.integer(3)], before: false)), expected: names("bch")),
        Case(name: "cursor with descending order", query: c(orderBy: [desc("s")], startAt: .init(values: [.string("y")], before: true), limit: 3), expected: names("ebf")),
        Case(name: "startAfter on __name__", query: c(startAt: .init(values: [ref("c/c")], before: false)), expected: names("defgh")),
        Case(name: "endBefore on __name__", query: c(endAt: .init(values: [ref("c/c")], before: true)), expected: names("ab")),
        Case(name: "__name__ descending with startAt", query: c(orderBy: [desc("__name__")], startAt: .init(values: [ref("c/c")], before: true)), expected: names("cba")),
        Case(name: "__name__ filters", query: c(.and([f("__name__", .greaterThan, ref("c/b")), f("__name__", .lessThanOrEqual, ref("c/e"))])), expected: names("cde")),
        Case(name: "__name__ in", query: c(f("__name__", .in, .array([ref("c/h"), ref("c/b"), ref("c/nope")]))), expected: names("bh")),
        Case(name: "equality with cursor on name", query: c(f("s", .equal, .string("x")), startAt: .init(values: [ref("c/c")], before: false)), expected: names("f")),
        Case(name: "equality, order and limit", query: c(f("b", .equal, .boolean(true)), orderBy: [desc("n")], limit: 2), expected: names("hc")),
        Case(name: "array-contains with order", query: c(f("tags", .arrayContains, .string("red")), orderBy: [asc("s")]), expected: names("gaf")),
    ]

    @Test("Hand-computed results", arguments: Backend.allCases, cases)
    func handComputed(_ backend: Backend, _ c: Case) async throws {
        try await withHearth(backend) { (db) async throws in
            try await Self.seed(db)
            #expect(try await db.names(c.query) == c.expected)
        }
    }

    @Test("select projects fields; an empty select returns names only", arguments: Backend.allCases)
    func select(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await Self.seed(db)
            var q = Self.c(Self.f("s", .equal, .string("x")))
            q.select = [field("n"), field("missing")]
            let docs = try await db.query(q)
            #expect(docs.map(\.path.text) == ["c/a", "c/c", "c/f"])
            #expect(docs.map(\.fields) == [["n": .integer(1)], ["n": .integer(3)], ["n": .null]])
            q.select = []
            #expect(try await db.query(q).allSatisfy { $0.fields.isEmpty })
        }
    }

    @Test("Collection groups see every collection with the id, scoped to the parent", arguments: Backend.allCases)
    func collectionGroup(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await Self.seed(db)
            func group(_ parent: String, _ filter: Query.Filter? = nil, orderBy: [Query.Order] = []) -> Query {
                Query(parent: path(parent), collectionId: "c", allDescendants: true, filter: filter, orderBy: orderBy)
            }
            let one = Self.f("n", .equal, .integer(1))
            #expect(try await db.names(group("", one)) == ["c/a", "c/a/c/x"])
            #expect(try await db.names(group("", Self.f("n", .equal, .integer(2)))) == ["other/o/c/y"])
            #expect(try await db.names(group("other/o")) == ["other/o/c/y"])
            #expect(try await db.names(group("c/a")) == ["c/a/c/x"])
            #expect(try await db.names(group("c/zzz")) == [])
            #expect(try await db.names(group("", Self.f("n", .greaterThanOrEqual, .integer(1)), orderBy: [Self.desc("n")]))
                == ["c/h", "c/c", "c/b", "other/o/c/y", "c/a/c/x", "c/a"])
            #expect(try await db.names(group("", one, orderBy: [Self.asc("s")])) == ["c/a"])
        }
    }

    /// A collection selector without a collection id and with all_descendants selects every
    /// document below the parent (the Admin SDKs' recursive delete and listDocuments use it).
    @Test("All descendants of a parent, of any collection id", arguments: Backend.allCases)
    func kindless(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await Self.seed(db)
            #expect(try await db.names(Query(parent: path("c/a"), collectionId: "", allDescendants: true)) == ["c/a/c/x"])
            #expect(try await db.names(Query(parent: path("other/o"), collectionId: "", allDescendants: true)) == ["other/o/c/y"])
            #expect(try await db.names(Query(parent: .root, collectionId: "", allDescendants: true)).count == 11)
        }
    }

    /// An explicit `__name__` order whose direction differs from the last field order must
    /// be honoured even when a composite index (which stores names in the last field's
    /// direction) serves the query.
    @Test("Explicit __name__ direction is honoured with a composite index", arguments: Backend.allCases)
    func explicitNameDirection(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.commit((1...5).map { Write.set(path("t/\($0)"), ["k": .integer(1), "a": .integer(0)]) })
            var q = Query(collectionId: "t", filter: .field(field("k"), .equal, .integer(1)), orderBy: [Query.Order(field("a")), Query.Order(.documentName, descending: true)])
            #expect(try await db.names(q) == ["t/5", "t/4", "t/3", "t/2", "t/1"])
            q.limit = 2
            #expect(try await db.names(q) == ["t/5", "t/4"])
            var r = Query(collectionId: "t", orderBy: [Query.Order(field("k")), Query.Order(field("a")), Query.Order(.documentName, descending: true)])
            r.limit = 2
            #expect(try await db.names(r) == ["t/5", "t/4"])
        }
    }

    @Test("Invalid queries are INVALID_ARGUMENT", arguments: Backend.allCases)
    func invalid(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await Self.seed(db)
            let many = Value.array((0..<31).map { .integer(Int64($0)) })
            let eleven = Value.array((0..<11).map { .integer(Int64($0)) })
            let bad: [Query] = [
                Self.c(offset: -1),
                Self.c(limit: -1),
                Query(collectionId: ""),
                Self.c(Self.f("n", .in, .array([]))),
                Self.c(Self.f("n", .in, .integer(1))),
                Self.c(Self.f("n", .in, many)),
                Self.c(Self.f("n", .arrayContainsAny, many)),
                Self.c(Self.f("n", .notIn, eleven)),
                Self.c(.and([Self.f("n", .notIn, .array([.integer(1)])), Self.f("s", .notIn, .array([.integer(1)]))])),
                Self.c(.and([Self.f("n", .notIn, .array([.integer(1)])), Self.f("s", .notEqual, .integer(1))])),
                Self.c(.and([])),
                Self.c(.or([])),
                Self.c(Self.f("__name__", .equal, .string("c/a"))),
                Self.c(Self.f("__name__", .arrayContains, Self.ref("c/a"))),
                Self.c(orderBy: [Self.asc("n"), Self.asc("n")]),
                Self.c(orderBy: [Self.asc("n")], startAt: .init(values: [.integer(1), Self.ref("c/a"), .integer(2)], before: true)),
                Self.c(startAt: .init(values: [.string("c/a")], before: true)),
                Self.c(startAt: .init(values: [Self.ref("c2/q")], before: true)),
                Self.c(endAt: .init(values: [Self.ref("c/a/c/x")], before: true)),
                Self.c(.or((0..<6).map { i in .and([Self.f("n", .in, .array((0..<6).map { .integer(Int64($0 + 10 * i)) }))]) })),
            ]
            for (i, q) in bad.enumerated() {
                await expectError(.invalidArgument, "query #\(i)") { _ = try await db.query(q) }
            }
        }
    }

    @Test("Strict indexes: a query needing an undeclared composite index is FAILED_PRECONDITION", arguments: Backend.allCases)
    func strictIndexes(_ backend: Backend) async throws {
        try await withHearth(backend, strictIndexes: true) { (db) async throws in
            try await Self.seed(db)
            let needsIndex = Self.c(Self.f("s", .equal, .string("x")), orderBy: [Self.asc("n")])
            await expectError(.failedPrecondition) { _ = try await db.query(needsIndex) }
            await expectError(.failedPrecondition) { _ = try await db.query(Self.c(orderBy: [Self.asc("s"), Self.asc("n")])) }
            await expectError(.failedPrecondition) { _ = try await db.query(Self.c(.and([Self.f("b", .equal, .boolean(true)), Self.f("n", .greaterThan, .integer(0))]))) }
            // Built-in single-field indexes serve these.
            #expect(try await db.names(Self.c(Self.f("n", .greaterThan, .integer(1)))) == Self.names("bch"))
            #expect(try await db.names(Self.c(orderBy: [Self.desc("n")])) == Self.names("ehcbadf"))
            #expect(try await db.names(Self.c(.and([Self.f("s", .equal, .string("x")), Self.f("b", .equal, .boolean(true))]))) == Self.names("ac"))
            #expect(try await db.names(Self.c(Self.f("tags", .arrayContains, .string("red")))) == Self.names("afg"))
            // Declaring the index makes the query work, in both directions.
            try await db.engine.createIndex(IndexDefinition(
                id: 0, database: db.database.database, collectionGroup: "c", groupScope: false,
                fields: [IndexDefinition.Field(field("s"), .ascending), IndexDefinition.Field(field("n"), .ascending)], automatic: false))
            #expect(try await db.names(needsIndex) == Self.names("fac"))
            #expect(try await db.names(Self.c(Self.f("s", .equal, .string("x")), orderBy: [Self.desc("n")])) == Self.names("caf"))
            // A collection-scope index does not serve a collection-group query.
            await expectError(.failedPrecondition) {
                _ = try await db.query(Query(collectionId: "c", allDescendants: true, filter: Self.f("s", .equal, .string("x")), orderBy: [Self.asc("n")]))
            }
        }
    }

    @Test("Without strict indexes, the composite index is created on first use and back-filled", arguments: Backend.allCases)
    func automaticIndexes(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await Self.seed(db)
            let q = Self.c(Self.f("s", .equal, .string("x")), orderBy: [Self.asc("n")])
            #expect(try await db.names(q) == Self.names("fac"))
            let defs = try await db.engine.store.indexDefinitions()
            #expect(defs.count == 1)
            #expect(defs.first?.automatic == true)
            #expect(defs.first?.fields == [IndexDefinition.Field(field("s"), .ascending), IndexDefinition.Field(field("n"), .ascending)])
            // The index is maintained by later writes.
            try await db.set("c/i", ["s": .string("x"), "n": .integer(2)])
            try await db.write(.delete(path("c/a")))
            try await db.update("c/c", ["s": .string("y")], mask: ["s"])
            #expect(try await db.names(q) == ["c/f", "c/i"])
            _ = try await db.names(q)
            #expect(try await db.engine.store.indexDefinitions().count == 1)
        }
    }
}
