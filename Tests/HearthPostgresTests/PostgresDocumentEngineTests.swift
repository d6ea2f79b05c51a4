import HearthCore
import HearthDocuments
import Synchronization
import Testing

@testable import HearthPostgres

/// The document engine over ``PostgresDocumentStore``: writes, queries through the built-in
/// and composite indexes, transactions, reads at a past time, and two engines (two servers)
/// committing to one database.
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresDocumentEngineTests {
    let database = DatabaseName(project: "demo", database: "(default)")

    static func path(_ text: String) -> ResourcePath { ResourcePath(parsing: text) }
    static func field(_ text: String) -> FieldPath { try! FieldPath(parsing: text) }

    func names(_ engine: DocumentEngine, _ query: Query, consistency: ReadConsistency = .latest) async throws -> [String] {
        try await engine.runQuery(database, query, consistency: consistency).documents.map(\.path.text)
    }

    @Test("Writes, queries, a transaction and a read at a past time through the engine")
    func engineOverPostgres() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        let engine = try await DocumentEngine(store: PostgresDocumentStore(backend: backend))
        for (name, age, city) in [("ann", 31, "Oslo"), ("bob", 25, "Rome"), ("cy", 40, "Oslo"), ("dee", 19, "Oslo"), ("eve", 52, "Rome")] {
            _ = try await engine.commit(database, [.set(Self.path("users/\(name)"), ["age": .integer(Int64(age)), "city": .string(city)])])
        }
        _ = try await engine.commit(database, [.set(Self.path("users/ann/posts/p1"), ["age": .integer(1)])])
        let (ann, _) = try await engine.get(database, Self.path("users/ann"))
        #expect(ann?.fields["city"] == .string("Oslo"))

        // A range on one field: the built-in index, in order, with a limit.
        let older = Query(
            collectionId: "users", filter: .field(Self.field("age"), .greaterThan, .integer(20)), orderBy: [.init(Self.field("age"))], limit: 3)
        #expect(try await names(engine, older) == ["users/bob", "users/ann", "users/cy"])
        // Equality and an order on another field: a composite index (created on first use), back-filled.
        let oslo = Query(
            collectionId: "users", filter: .field(Self.field("city"), .equal, .string("Oslo")), orderBy: [.init(Self.field("age"), descending: true)])
        #expect(try await names(engine, oslo) == ["users/cy", "users/ann", "users/dee"])
        #expect(try await engine.compositeIndexes(database: "(default)").count == 1)
        // A collection group query, and a kindless one.
        #expect(try await names(engine, Query(collectionId: "posts", allDescendants: true)) == ["users/ann/posts/p1"])
        #expect(try await names(engine, Query(parent: Self.path("users/ann"), collectionId: "", allDescendants: true)) == ["users/ann/posts/p1"])
        #expect(try await engine.listCollectionIds(database, parent: Self.path("users/ann")) == ["posts"])

        // A read-write transaction moves age from one document to another.
        let before = try await engine.commit(database, [.set(Self.path("users/bob"), ["age": .integer(26), "city": .string("Rome")])])
        let txn = try engine.beginTransaction(database, readOnly: false)
        let (bob, _) = try await engine.get(database, Self.path("users/bob"), consistency: .transaction(txn))
        #expect(bob?.fields["age"] == .integer(26))
        _ = try await engine.commit(
            database,
            [.update(Self.path("users/bob"), ["age": .integer(27)], mask: [Self.field("age")]), .delete(Self.path("users/eve"))],
            transaction: txn)
        #expect(try await engine.get(database, Self.path("users/eve")).0 == nil)
        // The past, from the history: before the transaction, bob was 26 and eve existed.
        let then = ReadConsistency.readTime(before.commitTime)
        #expect(try await engine.get(database, Self.path("users/bob"), consistency: then).0?.fields["age"] == .integer(26))
        let rome = Query(collectionId: "users", filter: .field(Self.field("city"), .equal, .string("Rome")))
        #expect(try await names(engine, rome, consistency: then) == ["users/bob", "users/eve"])
        #expect(try await names(engine, rome) == ["users/bob"])

        // A new engine on the database (a restarted server) continues after the stored commit time.
        let last = try #require(try await PostgresDocumentStore(backend: backend).lastCommitTime())
        let restarted = try await DocumentEngine(store: PostgresDocumentStore(backend: backend))
        let next = try await restarted.commit(database, [.set(Self.path("users/fay"), ["age": .integer(3)])])
        #expect(next.commitTime > last)
        #expect(try await names(restarted, oslo) == ["users/cy", "users/ann", "users/dee"])
        try await restarted.clear(database)
        #expect(try await restarted.countDocuments(database: "(default)", upTo: 10) == 0)
    }

    @Test("A document near 1 MiB of two long strings is stored, indexed, queried and rewritten (its index keys outgrow a B-tree row)")
    func documentOfLongStrings() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        let engine = try await DocumentEngine(store: PostgresDocumentStore(backend: backend))
        let a = String(repeating: "a", count: 500_000)
        let b = String(repeating: "b", count: 500_000)
        _ = try await engine.commit(database, [.set(Self.path("big/one"), ["a": .string(a), "b": .string(b)])])
        _ = try await engine.commit(database, [.set(Self.path("big/two"), ["a": .string(a + "z"), "b": .string("short")])])
        let equal = Query(collectionId: "big", filter: .field(Self.field("a"), .equal, .string(a)))
        #expect(try await names(engine, equal) == ["big/one"])
        let byA = Query(collectionId: "big", orderBy: [.init(Self.field("a"), descending: true)])
        #expect(try await names(engine, byA) == ["big/two", "big/one"])
        // Rewriting it removes its old entries: the old value no longer finds it.
        _ = try await engine.commit(database, [.set(Self.path("big/one"), ["a": .string(b), "b": .string(a)])])
        #expect(try await names(engine, equal).isEmpty)
        #expect(try await names(engine, byA) == ["big/one", "big/two"])
    }

    @Test("Two engines over one database lose no increment of a shared counter")
    func twoServersIncrementOneCounter() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        // Each server has its own pool and its own engine (and clock) over the one database.
        let other = await TestPostgres.shared.start(backend.settings)
        // Writers of the one document queue on its lock (12 per engine); on a loaded machine (the
        // whole suite in parallel beside the conformance suites) the default wait limit was not
        // always enough.
        var configuration = DocumentEngine.Configuration()
        configuration.lockWaitLimit = .seconds(120)
        let engines = [
            try await DocumentEngine(store: PostgresDocumentStore(backend: backend), configuration: configuration),
            try await DocumentEngine(store: PostgresDocumentStore(backend: other), configuration: configuration),
        ]
        let counter = Self.path("counters/c")
        let increment = Write(path: counter, kind: .transform, transforms: [FieldTransform(field: Self.field("n"), operation: .increment(.integer(1)))])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<24 {
                group.addTask { _ = try await engines[i % 2].commit(database, [increment]) }
            }
            try await group.waitForAll()
        }
        let stored = try await PostgresDocumentStore(backend: backend).documents("(default)", [counter], at: nil)
        #expect(stored[0]?.fields["n"] == .integer(24))
    }

    /// Records the time each judged commit was judged at, by document.
    struct TimeAuthorizer: WriteAuthorizer {
        let seen: @Sendable (ResourcePath, Timestamp) -> Void
        func authorize(_ changes: [DocumentChange], database: DatabaseName, time: Timestamp, documents: any DocumentPeek) async throws(HearthError) {
            for change in changes { seen(change.path, time) }
        }
    }

    @Test("Two engines on the shared clock: concurrent commits, judged and not, get unique times, and a judged one keeps the time it was judged at")
    func twoServersOnTheSharedClock() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        let other = await TestPostgres.shared.start(backend.settings)
        let engines = [
            try await DocumentEngine(store: PostgresDocumentStore(backend: backend, sharedClock: true)),
            try await DocumentEngine(store: PostgresDocumentStore(backend: other, sharedClock: true)),
        ]
        let judged = Mutex<[ResourcePath: Timestamp]>([:])
        let authorizer = TimeAuthorizer { path, time in judged.withLock { $0[path] = time } }
        let results = try await withThrowingTaskGroup(of: (ResourcePath, Timestamp, Bool).self) { group in
            for i in 0..<40 {
                group.addTask {
                    let path = Self.path("shared/d\(i)")
                    let write = Write(
                        path: path, kind: .update(fields: ["i": .integer(Int64(i))], mask: nil),
                        transforms: [FieldTransform(field: Self.field("at"), operation: .serverTimestamp)])
                    let withRules = i % 4 == 0
                    let result = try await engines[i % 2].commit(database, [write], authorizer: withRules ? authorizer : nil)
                    return (path, result.commitTime, withRules)
                }
            }
            var out: [(ResourcePath, Timestamp, Bool)] = []
            for try await r in group { out.append(r) }
            return out
        }
        #expect(Set(results.map(\.1)).count == results.count, "every commit has its own time")
        for (path, time, withRules) in results {
            let stored = try await engines[0].get(database, path).0
            #expect(stored?.updateTime == time)
            #expect(stored?.fields["at"] == .timestamp(Timestamp(seconds: time.seconds, nanos: time.nanos - time.nanos % 1_000_000)))
            if withRules { #expect(judged.withLock { $0[path] } == time, "judged at its commit time") }
        }
    }
}
