import HearthCore
import HearthDocuments
import Testing

/// A randomized differential test of query execution. The engine serves queries from index
/// scans bounded by key ranges (DocumentEngine+Query.swift: plan/keyRange/cursorKey); a scan
/// that starts or stops in the wrong place silently drops or adds results. The reference here
/// is brute force: every document the test wrote, filtered with `NormalizedQuery.matches` and
/// sorted with `NormalizedQuery.compare`, then offset and limit.
///
/// Documents mix every type in the same fields (so type boundaries inside index ranges are
/// exercised), include ties, NaN, -0.0, int/double pairs, missing fields and non-map parents;
/// queries mix every operator, AND/OR, orders in both directions, cursors (from real documents
/// and arbitrary values), offsets and limits, collections and collection groups. After a first
/// round of queries (which creates composite indexes), documents are changed and deleted, and
/// the queries run again — also at the earlier read time.
@Suite("Query differential")
struct QueryDifferentialTests {
    static let database = DatabaseName(project: "demo", database: "(default)")
    static let epoch = Timestamp(seconds: 0, nanos: 0)

    struct Generator {
        var g: SeededGenerator
        var paths: [ResourcePath] = []

        mutating func scalar() -> Value {
            g.pick([
                .null, .boolean(false), .boolean(true), .double(.nan), .integer(0), .integer(1), .integer(2), .integer(3), .integer(-1),
                .double(0.5), .double(1), .double(2), .double(-0.0), .integer((1 << 53) + 1), .double(9_007_199_254_740_992), .integer(.max),
                .double(.infinity), .string(""), .string("a"), .string("b"), .string("\u{E9}"), .string("\u{FFFF}"), .string("\u{1F600}"),
                .bytes([0]), .bytes([1, 2]), .timestamp(Timestamp(seconds: 0, nanos: 0)), .timestamp(Timestamp(seconds: 1, nanos: 5000)),
                .reference(QueryDifferentialTests.database.name(of: ResourcePath(parsing: "d/x"))), .geoPoint(latitude: 0, longitude: 0),
                .array([]), .array([.integer(1)]), .array([.integer(1), .string("a")]), .map([:]), .map(["x": .integer(1)]),
                .map(["__type__": .string("__vector__"), "value": .array([.double(1)])]),
            ])
        }

        /// An array element: anything but an array (arrays cannot nest directly).
        mutating func element() -> Value {
            while true {
                let v = scalar()
                if v.arrayValue == nil { return v }
            }
        }

        mutating func small() -> Value {
            g.chance(0.8) ? .integer(Int64.random(in: 0...3, using: &g)) : g.pick([.string("x"), .double(1.5), .null, .double(2)])
        }

        mutating func fields() -> [String: Value] {
            var f: [String: Value] = [:]
            if g.chance(0.9) { f["a"] = scalar() }
            if g.chance(0.85) { f["b"] = small() }
            if g.chance(0.7) { f["tags"] = .array((0..<Int.random(in: 0...3, using: &g)).map { _ in g.chance(0.5) ? small() : element() }) }
            if g.chance(0.6) { f["m"] = g.chance(0.92) ? .map(g.chance(0.9) ? ["x": g.chance(0.5) ? small() : scalar()] : [:]) : scalar() }
            return f
        }

        mutating func newPath(_ i: Int) -> ResourcePath {
            let prefix = (0..<Int.random(in: 0...2, using: &g)).map { _ in g.pick(["a", "B", "z", "-", "0", "\u{E9}", "\u{1F600}", "\u{FFFF}", "k"]) }.joined()
            let collection: String
            switch Int.random(in: 0..<20, using: &g) {
            case 0..<15: collection = "d"
            case 15, 16: collection = "p/1/d"
            case 17: collection = "p/2/d"
            case 18: collection = "p/1/d/\(prefix)q/d"
            default: collection = "other"
            }
            return ResourcePath(parsing: "\(collection)/\(prefix)\(i)")
        }

        mutating func filter(depth: Int = 0) -> Query.Filter {
            if depth == 0 && g.chance(0.2) {
                return .or((0..<Int.random(in: 2...3, using: &g)).map { _ in filter(depth: 1) })
            }
            let n = depth == 0 ? Int.random(in: 1...3, using: &g) : Int.random(in: 1...2, using: &g)
            let simple = (0..<n).map { _ in simpleFilter() }
            return simple.count == 1 ? simple[0] : .and(simple)
        }

        mutating func operand() -> Value { g.chance(0.5) ? small() : scalar() }

        mutating func simpleFilter() -> Query.Filter {
            let roll = Int.random(in: 0..<100, using: &g)
            if roll < 10, let p = paths.randomElement(using: &g) {
                let ref = Value.reference(QueryDifferentialTests.database.name(of: p))
                let op: Query.Operator = g.pick([.equal, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .in])
                return .field(.documentName, op, op == .in ? .array([ref]) : ref)
            }
            if roll < 25 {
                if g.chance(0.6) { return .field(FieldPath(["tags"]), .arrayContains, operand()) }
                return .field(FieldPath(["tags"]), .arrayContainsAny, .array((0..<Int.random(in: 1...3, using: &g)).map { _ in operand() }))
            }
            let f = FieldPath(g.pick([["a"], ["b"], ["m", "x"], ["b"], ["m"]]))
            if roll < 33 { return .unary(f, g.pick([.isNull, .isNaN, .isNotNull, .isNotNaN])) }
            let op: Query.Operator = g.pick([.equal, .equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .in, .notIn])
            if op == .in || op == .notIn { return .field(f, op, .array((0..<Int.random(in: 1...3, using: &g)).map { _ in operand() })) }
            return .field(f, op, operand())
        }

        mutating func query() -> Query {
            var q: Query
            switch Int.random(in: 0..<10, using: &g) {
            case 0..<6: q = Query(collectionId: "d")
            case 6: q = Query(parent: ResourcePath(parsing: "p/1"), collectionId: "d")
            case 7: q = Query(collectionId: "d", allDescendants: true)
            case 8: q = Query(parent: ResourcePath(parsing: "p/1"), collectionId: "d", allDescendants: true)
            default: q = Query(parent: ResourcePath(parsing: "p/2"), collectionId: "d", allDescendants: true)
            }
            if g.chance(0.8) { q.filter = filter() }
            var fields = [["a"], ["b"], ["m", "x"], ["tags"]].map(FieldPath.init)
            for _ in 0..<Int.random(in: 0...2, using: &g) where !fields.isEmpty {
                let f = fields.remove(at: Int.random(in: 0..<fields.count, using: &g))
                q.orderBy.append(Query.Order(f, descending: g.chance(0.4)))
            }
            // An explicit trailing __name__ order, in the direction of the last order (a
            // different direction is covered by QueryTests.explicitNameDirection).
            if g.chance(0.15) { q.orderBy.append(Query.Order(.documentName, descending: q.orderBy.last?.descending ?? g.chance(0.5))) }
            if g.chance(0.3) { q.offset = Int.random(in: 0...3, using: &g) }
            if g.chance(0.6) { q.limit = Int.random(in: 1...12, using: &g) }
            return q
        }

        /// Cursor positions: the order values of a real document (a prefix of them), or an arbitrary first value.
        mutating func addCursors(_ q: inout Query, _ model: [ResourcePath: [String: Value]]) {
            guard g.chance(0.35), let nq = try? NormalizedQuery(q, database: QueryDifferentialTests.database) else { return }
            func position() -> [Value]? {
                let candidates = model.keys.filter { nq.inScope($0) }
                if !nq.orders[0].field.isDocumentName && g.chance(0.3) { return [operand()] }
                guard let p = candidates.randomElement(using: &g) else { return nil }
                let doc = Document(path: p, fields: model[p]!, createTime: QueryDifferentialTests.epoch, updateTime: QueryDifferentialTests.epoch)
                let values = nq.orders.map { doc.value(at: $0.field, database: QueryDifferentialTests.database) }
                let count = Int.random(in: 1...values.count, using: &g)
                let prefix = values.prefix(count)
                return prefix.contains { $0 == nil } ? nil : prefix.map { $0! }
            }
            if g.chance(0.7), let v = position() { q.startAt = Query.Cursor(values: v, before: g.chance(0.5)) }
            if g.chance(0.5), let v = position() { q.endAt = Query.Cursor(values: v, before: g.chance(0.5)) }
        }
    }

    static func expected(_ q: Query, _ model: [ResourcePath: [String: Value]]) throws -> [String] {
        let nq = try NormalizedQuery(q, database: database)
        var docs = model.map { Document(path: $0.key, fields: $0.value, createTime: epoch, updateTime: epoch) }
            .filter { nq.matches($0) }
            .sorted { nq.compare($0, $1) < 0 }
        docs = Array(docs.dropFirst(q.offset))
        if let l = q.limit { docs = Array(docs.prefix(l)) }
        return docs.map(\.path.text)
    }

    static func describe(_ q: Query) -> String {
        "parent=\(q.parent) collection=\(q.collectionId) group=\(q.allDescendants) filter=\(q.filter.map { "\($0)" } ?? "-") "
            + "orderBy=\(q.orderBy.map { "\($0.field)\($0.descending ? " desc" : "")" }) start=\(q.startAt.map { "\($0)" } ?? "-") "
            + "end=\(q.endAt.map { "\($0)" } ?? "-") offset=\(q.offset) limit=\(q.limit.map(String.init) ?? "-")"
    }

    @Test("Index-served queries return exactly what brute force returns", arguments: Backend.allCases, [UInt64(1), 2, 3])
    func differential(_ backend: Backend, _ seed: UInt64) async throws {
        try await withHearth(backend) { (db) async throws in
            var gen = Generator(g: SeededGenerator(seed: seed))
            var model: [ResourcePath: [String: Value]] = [:]
            var writes: [Write] = []
            for i in 0..<200 {
                let p = gen.newPath(i)
                let f = gen.fields()
                model[p] = f
                writes.append(.set(p, f))
            }
            gen.paths = Array(model.keys)
            let readTime = try await db.commit(writes).commitTime

            var mismatches = 0, executed = 0, rejected = 0
            func check(_ q: Query, _ model: [ResourcePath: [String: Value]], consistency: ReadConsistency = .latest, phase: String) async throws {
                let expected: [String]
                do {
                    expected = try Self.expected(q, model)
                } catch {
                    rejected += 1
                    return
                }
                executed += 1
                let actual: [String]
                do {
                    actual = try await db.names(q, consistency: consistency)
                } catch {
                    mismatches += 1
                    if mismatches <= 6 { Issue.record("\(phase): \(Self.describe(q)) threw \(error)") }
                    return
                }
                if actual != expected {
                    mismatches += 1
                    if mismatches <= 6 {
                        let missing = expected.filter { !actual.contains($0) }, extra = actual.filter { !expected.contains($0) }
                        Issue.record("\(phase): \(Self.describe(q))\n expected \(expected)\n got      \(actual)\n missing \(missing) extra \(extra)")
                    }
                }
            }

            var queries: [Query] = []
            for _ in 0..<150 {
                var q = gen.query()
                gen.addCursors(&q, model)
                queries.append(q)
                try await check(q, model, phase: "initial data")
            }

            // Change a third of the documents, delete some, add some.
            let before = model
            var changes: [Write] = []
            var touched = Set<ResourcePath>()
            for i in 0..<80 {
                var p = gen.paths.randomElement(using: &gen.g)!
                if touched.contains(p) { p = gen.newPath(1000 + i) }
                touched.insert(p)
                switch Int.random(in: 0..<4, using: &gen.g) {
                case 0:
                    model[p] = nil
                    changes.append(.delete(p))
                case 1:
                    let f = gen.fields()
                    model[p] = f
                    changes.append(.set(p, f))
                default:
                    let field = FieldPath(gen.g.pick([["a"], ["b"], ["m", "x"], ["tags"], ["m"]]))
                    var fields = model[p] ?? [:]
                    var data: [String: Value] = [:]
                    if gen.g.chance(0.8) {
                        let v = gen.operand()
                        FieldMask.set(&data, field.segments[...], v)
                        FieldMask.set(&fields, field.segments[...], v)
                    } else {
                        FieldMask.remove(&fields, field.segments[...])
                    }
                    model[p] = fields
                    changes.append(Write(path: p, kind: .update(fields: data, mask: [field])))
                }
            }
            try await db.commit(changes)
            gen.paths = Array(Set(gen.paths).union(model.keys))

            for q in queries { try await check(q, model, phase: "after changes") }
            for _ in 0..<60 {
                var q = gen.query()
                gen.addCursors(&q, model)
                try await check(q, model, phase: "new query after changes")
            }
            for q in queries.prefix(40) { try await check(q, before, consistency: .readTime(readTime), phase: "at the earlier read time") }

            #expect(mismatches == 0, "\(mismatches) of \(executed) queries differ from brute force")
            #expect(executed > 200, "only \(executed) valid queries (\(rejected) rejected)")
        }
    }
}
