import HearthCore
import HearthDocuments
import Testing

@Suite("Aggregations")
struct AggregationTests {
    static func aggregate(_ db: Hearth, _ q: Query, _ aggs: [Aggregation]) async throws -> [String: Value] {
        let r = try await db.engine.runAggregation(db.database, q, aggs)
        return Dictionary(uniqueKeysWithValues: r.values.map { ($0.alias, $0.value) })
    }

    @Test("count, count up_to, sum and avg with Firestore's numeric rules", arguments: Backend.allCases)
    func aggregations(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.commit([
                .set(path("agg/1"), ["v": .integer(1), "g": .string("a")]),
                .set(path("agg/2"), ["v": .integer(2), "g": .string("a")]),
                .set(path("agg/3"), ["v": .integer(3), "g": .string("b")]),
                .set(path("agg/4"), ["v": .string("ignored"), "g": .string("b")]),
                .set(path("agg/5"), ["g": .string("b")]),
                .set(path("agg/6"), ["v": .null, "g": .string("c")]),
                .set(path("other/1"), ["v": .integer(100)]),
            ])
            let all = Query(collectionId: "agg")
            // Count alone counts every document.
            expectIdentical(try await Self.aggregate(db, all, [Aggregation(alias: "n", kind: .count(upTo: nil))])["n"], .integer(6))
            let r = try await Self.aggregate(db, all, [
                Aggregation(alias: "count", kind: .count(upTo: nil)),
                Aggregation(alias: "upTo", kind: .count(upTo: 4)),
                Aggregation(alias: "sum", kind: .sum(field("v"))),
                Aggregation(alias: "avg", kind: .avg(field("v"))),
                Aggregation(alias: "bigUpTo", kind: .count(upTo: 100)),
            ])
            // With sum/avg in the request, only documents that have the field take part (agg/5 lacks it).
            expectIdentical(r["count"], .integer(5))
            expectIdentical(r["upTo"], .integer(4))
            expectIdentical(r["bigUpTo"], .integer(5))
            expectIdentical(r["sum"], .integer(6))
            expectIdentical(r["avg"], .double(2))

            let b = Query(collectionId: "agg", filter: .field(field("g"), .equal, .string("b")))
            let rb = try await Self.aggregate(db, b, [Aggregation(alias: "n", kind: .count(upTo: nil)), Aggregation(alias: "s", kind: .sum(field("v")))])
            expectIdentical(rb["n"], .integer(2))
            expectIdentical(rb["s"], .integer(3))

            // No numeric values: sum is integer 0, avg is null.
            let c = Query(collectionId: "agg", filter: .field(field("g"), .equal, .string("c")))
            let rc = try await Self.aggregate(db, c, [Aggregation(alias: "s", kind: .sum(field("v"))), Aggregation(alias: "a", kind: .avg(field("v")))])
            expectIdentical(rc["s"], .integer(0))
            expectIdentical(rc["a"], .null)

            // Limit applies before aggregation (agg/1 comes first by name and by value).
            var limited = Query(collectionId: "agg", filter: .field(field("g"), .equal, .string("a")))
            limited.limit = 1
            expectIdentical(try await Self.aggregate(db, limited, [Aggregation(alias: "s", kind: .sum(field("v")))])["s"], .integer(1))

            // A double makes the sum a double.
            try await db.set("agg/7", ["v": .double(0.5)])
            expectIdentical(try await Self.aggregate(db, all, [Aggregation(alias: "s", kind: .sum(field("v")))])["s"], .double(6.5))
            expectIdentical(try await Self.aggregate(db, all, [Aggregation(alias: "a", kind: .avg(field("v")))])["a"], .double(6.5 / 4))
        }
    }

    @Test("An integer sum that overflows becomes a double", arguments: Backend.allCases)
    func overflow(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.commit([.set(path("big/1"), ["v": .integer(.max)]), .set(path("big/2"), ["v": .integer(.max)]), .set(path("big/3"), ["v": .integer(-5)])])
            let r = try await Self.aggregate(db, Query(collectionId: "big"), [Aggregation(alias: "s", kind: .sum(field("v")))])
            guard case .double(let d)? = r["s"] else {
                Issue.record("expected a double sum, got \(String(describing: r["s"]))")
                return
            }
            #expect(abs(d - (2 * 9.223372036854775807e18 - 5)) < 1e4)
        }
    }

    @Test("Invalid aggregations are INVALID_ARGUMENT", arguments: Backend.allCases)
    func invalid(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let q = Query(collectionId: "agg")
            await expectError(.invalidArgument) { _ = try await Self.aggregate(db, q, []) }
            await expectError(.invalidArgument) { _ = try await Self.aggregate(db, q, [Aggregation(alias: "c", kind: .count(upTo: 0))]) }
            await expectError(.invalidArgument) { _ = try await Self.aggregate(db, q, [Aggregation(alias: "c", kind: .count(upTo: -1))]) }
            await expectError(.invalidArgument) {
                _ = try await Self.aggregate(db, q, [Aggregation(alias: "c", kind: .count(upTo: nil)), Aggregation(alias: "c", kind: .sum(field("v")))])
            }
            await expectError(.invalidArgument) {
                _ = try await Self.aggregate(db, q, (0..<6).map { Aggregation(alias: "a\($0)", kind: .count(upTo: nil)) })
            }
        }
    }
}
