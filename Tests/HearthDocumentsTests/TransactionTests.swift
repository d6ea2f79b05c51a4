import HearthCore
import HearthDocuments
import HearthSQLite
import Synchronization
import Testing

@Suite("Transactions")
struct TransactionTests {
    @Test("A read-write transaction commits its writes", arguments: Backend.allCases)
    func readWrite(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("acct/a", ["balance": .integer(100)])
            try await db.set("acct/b", ["balance": .integer(0)])
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            let a = try #require(try await db.get("acct/a", consistency: .transaction(txn)))
            let b = try #require(try await db.get("acct/b", consistency: .transaction(txn)))
            guard case .integer(let x)? = a.fields["balance"], case .integer(let y)? = b.fields["balance"] else {
                Issue.record("bad balances")
                return
            }
            try await db.commit([.set(path("acct/a"), ["balance": .integer(x - 30)]), .set(path("acct/b"), ["balance": .integer(y + 30)])], transaction: txn)
            #expect(try await db.value("acct/a", "balance") == .integer(70))
            #expect(try await db.value("acct/b", "balance") == .integer(30))
            // A transaction commits once.
            await expectError(.invalidArgument) { try await db.commit([], transaction: txn) }
        }
    }

    @Test("A write to a document a transaction read waits until the transaction commits", arguments: Backend.allCases)
    func writerWaits(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", ["v": .integer(1)])
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            _ = try await db.get("c/d", consistency: .transaction(txn))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await db.set("c/d", ["v": .integer(2)]) }
                try await Task.sleep(for: .milliseconds(200))
                #expect(try await db.value("c/d", "v") == .integer(1), "the write went ahead of the transaction's lock")
                try await db.commit([.set(path("c/d"), ["v": .integer(10)]), .set(path("c/e"), [:])], transaction: txn)
                try await group.waitForAll()
            }
            // The transaction committed (no ABORTED), then the waiting write applied.
            #expect(try await db.value("c/d", "v") == .integer(2))
            #expect(try await db.get("c/e") != nil)
        }
    }

    @Test("A create of a missing document a transaction read waits for it, then sees its result", arguments: Backend.allCases)
    func creatorWaitsOnMissing(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            #expect(try await db.get("c/new", consistency: .transaction(txn)) == nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await expectError(.alreadyExists) { try await db.create("c/new", ["by": .string("other")]) } }
                try await Task.sleep(for: .milliseconds(100))
                try await db.commit([.create(path("c/new"), ["by": .string("txn")])], transaction: txn)
                try await group.waitForAll()
            }
            #expect(try await db.value("c/new", "by") == .string("txn"))
        }
    }

    @Test("Two transactions that deadlock: exactly one is ABORTED, the older commits", arguments: Backend.allCases)
    func deadlock(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/a", ["v": .integer(0)])
            try await db.set("c/b", ["v": .integer(0)])
            let older = try db.engine.beginTransaction(db.database, readOnly: false)
            let younger = try db.engine.beginTransaction(db.database, readOnly: false)
            _ = try await db.get("c/a", consistency: .transaction(older))
            _ = try await db.get("c/b", consistency: .transaction(younger))
            let writes: [Write] = [.set(path("c/a"), ["v": .integer(1)]), .set(path("c/b"), ["v": .integer(1)])]
            try await withThrowingTaskGroup(of: String?.self) { group in
                // The younger commits first: it needs the older's document and waits for it.
                group.addTask {
                    do {
                        try await db.commit([.set(path("c/b"), ["v": .integer(2)]), .set(path("c/a"), ["v": .integer(2)])], transaction: younger)
                        return nil
                    } catch let e as HearthError where e.code == .aborted {
                        return e.message
                    }
                }
                try await Task.sleep(for: .milliseconds(100))
                // The older needs the younger's document: the younger is aborted, the older commits.
                try await db.commit(writes, transaction: older)
                let message = try await group.next()!
                #expect(message?.hasPrefix("Aborted due to cross-transaction contention.") == true)
            }
            #expect(try await db.value("c/a", "v") == .integer(1))
            #expect(try await db.value("c/b", "v") == .integer(1))
        }
    }

    @Test("A transaction holding a lock past the hold limit is aborted; the waiting write goes ahead", arguments: Backend.allCases)
    func holdLimit(_ backend: Backend) async throws {
        try await withHearth(backend, configure: { $0.lockHoldLimit = .milliseconds(300); $0.lockWaitLimit = .seconds(5) }) { (db) async throws in
            try await db.set("c/d", ["v": .integer(1)])
            let idle = try db.engine.beginTransaction(db.database, readOnly: false)
            _ = try await db.get("c/d", consistency: .transaction(idle))
            let started = ContinuousClock.now
            try await db.set("c/d", ["v": .integer(2)])
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            do {
                try await db.commit([.set(path("c/d"), ["v": .integer(3)])], transaction: idle)
                Issue.record("the aborted transaction committed")
            } catch let e as HearthError {
                #expect(e.code == .aborted && e.message == "Transaction lock timeout.")
            }
            #expect(try await db.value("c/d", "v") == .integer(2))
        }
    }

    @Test("A wait is bounded: past the wait limit the waiting transaction is ABORTED", arguments: Backend.allCases)
    func waitLimit(_ backend: Backend) async throws {
        try await withHearth(backend, configure: { $0.lockHoldLimit = .seconds(60); $0.lockWaitLimit = .milliseconds(300) }) { (db) async throws in
            let older = try db.engine.beginTransaction(db.database, readOnly: false)
            let younger = try db.engine.beginTransaction(db.database, readOnly: false)
            _ = try await db.get("c/d", consistency: .transaction(older))
            await expectError(.aborted) { try await db.commit([.set(path("c/d"), [:])], transaction: younger) }
            await expectError(.aborted) { try await db.set("c/d", ["v": .integer(1)]) }
            try await db.commit([.set(path("c/d"), ["v": .integer(7)])], transaction: older)
            #expect(try await db.value("c/d", "v") == .integer(7))
        }
    }

    @Test("A retry that names the first attempt (as google-cloud-firestore does) keeps its place through several retries", arguments: Backend.allCases)
    func retryByFirstAttempt(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", ["v": .integer(0)])
            let holder = try db.engine.beginTransaction(db.database, readOnly: false)
            _ = try await db.get("c/d", consistency: .transaction(holder))
            let first = try db.engine.beginTransaction(db.database, readOnly: false)
            try db.engine.rollback(db.database, first)
            let newer = try db.engine.beginTransaction(db.database, readOnly: false)
            let second = try db.engine.beginTransaction(db.database, readOnly: false, retrying: first)
            try db.engine.rollback(db.database, second)
            let third = try db.engine.beginTransaction(db.database, readOnly: false, retrying: first)
            let order = Recorder()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    _ = try await db.get("c/d", consistency: .transaction(newer))
                    order.record("newer")
                    try await db.commit([.set(path("c/d"), ["v": .integer(3)])], transaction: newer)
                }
                try await Task.sleep(for: .milliseconds(100))
                group.addTask {
                    _ = try await db.get("c/d", consistency: .transaction(third))
                    order.record("retry")
                    try await db.commit([.set(path("c/d"), ["v": .integer(2)])], transaction: third)
                }
                try await Task.sleep(for: .milliseconds(100))
                try await db.commit([.set(path("c/d"), ["v": .integer(1)])], transaction: holder)
                try await group.waitForAll()
            }
            #expect(order.events == ["retry", "newer"])
            #expect(try await db.value("c/d", "v") == .integer(3))
        }
    }

    @Test("Documents a query in a transaction returned are locked until it commits", arguments: Backend.allCases)
    func queryLocks(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/a", ["open": .boolean(true), "n": .integer(1)])
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            let q = Query(collectionId: "c", filter: .field(field("open"), .equal, .boolean(true)))
            #expect(try await db.names(q, consistency: .transaction(txn)) == ["c/a"])
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await db.set("c/a", ["open": .boolean(false)]) }
                try await Task.sleep(for: .milliseconds(150))
                #expect(try await db.value("c/a", "n") == .integer(1))
                try await db.commit([.set(path("c/a"), ["open": .boolean(true), "n": .integer(2)])], transaction: txn)
                try await group.waitForAll()
            }
            #expect(try await db.get("c/a")?.fields == ["open": .boolean(false)])
        }
    }

    @Test("A new document matching a query the transaction ran aborts it", arguments: Backend.allCases)
    func queryConflict(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/a", ["open": .boolean(true)])
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            let q = Query(collectionId: "c", filter: .field(field("open"), .equal, .boolean(true)))
            #expect(try await db.names(q, consistency: .transaction(txn)) == ["c/a"])
            try await db.set("c/b", ["open": .boolean(true)])
            await expectError(.aborted) { try await db.commit([.set(path("c/summary"), ["count": .integer(1)])], transaction: txn) }
            #expect(try await db.get("c/summary") == nil)
        }
    }

    @Test("Unrelated writes by others do not abort the transaction", arguments: Backend.allCases)
    func noConflict(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", ["v": .integer(1)])
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            _ = try await db.get("c/d", consistency: .transaction(txn))
            try await db.set("c/other", ["v": .integer(1)])
            try await db.commit([.set(path("c/d"), ["v": .integer(2)])], transaction: txn)
            #expect(try await db.value("c/d", "v") == .integer(2))
        }
    }

    @Test("A read-only transaction reads one snapshot and cannot write", arguments: Backend.allCases)
    func readOnlySnapshot(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", ["v": .integer(1)])
            let txn = try db.engine.beginTransaction(db.database, readOnly: true)
            #expect(try await db.value("c/d", "v") == .integer(1))
            try await db.set("c/d", ["v": .integer(2)])
            try await db.set("c/e", ["v": .integer(3)])
            #expect(try await db.get("c/d", consistency: .transaction(txn))?.fields == ["v": .integer(1)])
            #expect(try await db.get("c/e", consistency: .transaction(txn)) == nil)
            #expect(try await db.names(Query(collectionId: "c"), consistency: .transaction(txn)) == ["c/d"])
            #expect(try await db.query(Query(collectionId: "c"), consistency: .transaction(txn)).first?.fields == ["v": .integer(1)])
            await expectError(.invalidArgument) { try await db.commit([.set(path("c/f"), [:])], transaction: txn) }
            #expect(try await db.get("c/f") == nil)
            let other = try db.engine.beginTransaction(db.database, readOnly: true)
            try await db.commit([], transaction: other)
        }
    }

    @Test("Rollback ends the transaction and is harmless once it ended; unknown transactions are INVALID_ARGUMENT", arguments: Backend.allCases)
    func rollbackAndUnknown(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            try db.engine.rollback(db.database, txn)
            await expectError(.invalidArgument) { try await db.commit([.set(path("c/d"), [:])], transaction: txn) }
            // Rolling back what already ended (rolled back, committed, aborted) is harmless, as clients do.
            try db.engine.rollback(db.database, txn)
            let committed = try db.engine.beginTransaction(db.database, readOnly: false)
            try await db.commit([], transaction: committed)
            try db.engine.rollback(db.database, committed)
            try db.engine.rollback(db.database, TransactionID(bytes: [UInt8](repeating: 7, count: 16)))
            #expect(try await db.get("c/d") == nil)
            let unknown = TransactionID(bytes: [1, 2, 3])
            await expectError(.invalidArgument) { _ = try await db.get("c/d", consistency: .transaction(unknown)) }
            await expectError(.invalidArgument) { _ = try await db.query(Query(collectionId: "c"), consistency: .transaction(unknown)) }
            await expectError(.invalidArgument) { try await db.commit([], transaction: unknown) }
            await expectError(.invalidArgument) { try db.engine.rollback(db.database, unknown) }
            // A transaction belongs to its database.
            let mine = try db.engine.beginTransaction(db.database, readOnly: false)
            let other = DatabaseName(project: "demo", database: "other")
            await expectError(.invalidArgument) { _ = try await db.engine.get(other, path("c/d"), consistency: .transaction(mine)) }
            await expectError(.invalidArgument) { try db.engine.rollback(other, mine) }
            // read_time only with read-only transactions.
            await expectError(.invalidArgument) {
                _ = try db.engine.beginTransaction(db.database, readOnly: false, readTime: Timestamp(seconds: 1, nanos: 0))
            }
        }
    }

    @Test("A replica's transaction ids start with its id; rollback takes ids of that shape")
    func transactionIDPrefix() async throws {
        let prefix: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        try await withHearth(.sqliteInMemory, configure: { $0.transactionIDPrefix = prefix }) { (db) async throws in
            let txn = try db.engine.beginTransaction(db.database, readOnly: false)
            #expect(txn.bytes.count == 24 && Array(txn.bytes.prefix(8)) == prefix)
            let other = try db.engine.beginTransaction(db.database, readOnly: true)
            #expect(Array(other.bytes.prefix(8)) == prefix && other.bytes != txn.bytes)
            try await db.commit([.set(path("c/p"), ["v": .integer(1)])], transaction: txn)
            // Rolling back an ended or unknown id of the replica's shape is harmless; one server's shape is not this one's.
            try db.engine.rollback(db.database, txn)
            try db.engine.rollback(db.database, TransactionID(bytes: prefix + [UInt8](repeating: 7, count: 16)))
            await expectError(.invalidArgument) { try db.engine.rollback(db.database, TransactionID(bytes: [UInt8](repeating: 7, count: 16))) }
        }
    }

    @Test("Concurrent read-modify-write transactions with retries lose no update", arguments: Backend.allCases)
    func concurrentIncrements(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/counter", ["n": .integer(0)])
            let workers = 8, perWorker = 5
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<workers {
                    group.addTask {
                        for _ in 0..<perWorker {
                            var retrying: TransactionID?
                            for attempt in 0... {
                                let txn = try db.engine.beginTransaction(db.database, readOnly: false, retrying: retrying)
                                guard case .integer(let n)? = try await db.get("c/counter", consistency: .transaction(txn))?.fields["n"] else {
                                    Issue.record("counter missing")
                                    return
                                }
                                do {
                                    try await db.commit([.set(path("c/counter"), ["n": .integer(n + 1)])], transaction: txn)
                                    break
                                } catch let e as HearthError where e.code == .aborted && attempt < 200 {
                                    // Under locks only wound-wait aborts (or, on a machine slowed past the
                                    // 20 s lock wait, its timeout); the optimistic re-check never fires here.
                                    #expect(
                                        e.message.hasPrefix("Aborted due to cross-transaction contention.") || e.message == "Transaction lock timeout.",
                                        "\(e.message)")
                                    retrying = txn
                                    await Task.yield()
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await db.value("c/counter", "n") == .integer(Int64(workers * perWorker)))
        }
    }

    @Test("Reads racing with writes always end on the last written version", arguments: Backend.allCases)
    func readsRacingWrites(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for i in 1...30 { try await db.set("c/d", ["v": .integer(Int64(i))]) }
                }
                for _ in 0..<4 {
                    group.addTask {
                        var last: Int64 = 0
                        for _ in 0..<60 {
                            if case .integer(let v)? = try await db.value("c/d", "v") {
                                #expect(v >= last, "a read went back in time: \(v) after \(last)")
                                last = v
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await db.value("c/d", "v") == .integer(30))
            #expect(try await db.names(Query(collectionId: "c", filter: .field(field("v"), .equal, .integer(30)))) == ["c/d"])
        }
    }

    @Test("Retrying a transaction replaces the old one", arguments: Backend.allCases)
    func retry(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let first = try db.engine.beginTransaction(db.database, readOnly: false)
            let second = try db.engine.beginTransaction(db.database, readOnly: false, retrying: first)
            #expect(first != second)
            await expectError(.invalidArgument) { try await db.commit([], transaction: first) }
            try await db.commit([.set(path("c/d"), [:])], transaction: second)
        }
    }
}

@Suite("Reads at a past time")
struct ReadTimeTests {
    @Test("get and queries at read_time see the versions of that time", arguments: Backend.allCases)
    func versions(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let t1 = try await db.set("c/d", ["v": .integer(1)]).commitTime
            let t2 = try await db.set("c/d", ["v": .integer(2)]).commitTime
            let t3 = try await db.write(.delete(path("c/d"))).updateTime
            #expect(t3 == nil)
            let t4 = try await db.set("c/e", ["v": .integer(9)]).commitTime
            #expect(try await db.get("c/d", consistency: .readTime(t1))?.fields == ["v": .integer(1)])
            #expect(try await db.get("c/d", consistency: .readTime(t2.adding(micros: -1)))?.fields == ["v": .integer(1)])
            #expect(try await db.get("c/d", consistency: .readTime(t2))?.fields == ["v": .integer(2)])
            #expect(try await db.get("c/d", consistency: .readTime(t1.adding(micros: -1))) == nil)
            #expect(try await db.get("c/d", consistency: .readTime(t4)) == nil)
            #expect(try await db.get("c/d", consistency: .readTime(t2))?.updateTime == t2)
            #expect(try await db.get("c/d", consistency: .readTime(t2))?.createTime == t1)

            let q = Query(collectionId: "c", filter: .field(field("v"), .greaterThanOrEqual, .integer(1)))
            #expect(try await db.names(q, consistency: .readTime(t1)) == ["c/d"])
            #expect(try await db.names(q, consistency: .readTime(t4)) == ["c/e"])
            #expect(try await db.names(q) == ["c/e"])
            let q2 = Query(collectionId: "c", filter: .field(field("v"), .equal, .integer(2)))
            #expect(try await db.names(q2, consistency: .readTime(t2)) == ["c/d"])
            #expect(try await db.names(q2, consistency: .readTime(t1)) == [])
            let agg = try await db.engine.runAggregation(db.database, Query(collectionId: "c"), [Aggregation(alias: "n", kind: .count(upTo: nil))], consistency: .readTime(t2))
            #expect(agg.values.first?.value == .integer(1))
            let listed = try await db.engine.listDocuments(
                db.database, parent: .root, collectionId: "c", pageSize: nil, pageToken: nil, orderBy: [], mask: nil, showMissing: false,
                consistency: .readTime(t1))
            #expect(listed.documents.map(\.path.text) == ["c/d"])
        }
    }

    /// When one commit writes a document twice, the version before the commit is what a
    /// read just before the commit time must see — not the intermediate state.
    @Test("Two writes to one document in one commit keep the pre-commit version", arguments: Backend.allCases)
    func twoWritesInOneCommit(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            try await db.set("c/d", ["v": .integer(1)])
            let t = try await db.commit([.set(path("c/d"), ["v": .integer(2)]), .set(path("c/d"), ["v": .integer(3)])]).commitTime
            #expect(try await db.value("c/d", "v") == .integer(3))
            #expect(try await db.get("c/d", consistency: .readTime(t.adding(micros: -1)))?.fields == ["v": .integer(1)])
            let t2 = try await db.commit([.set(path("c/new"), ["v": .integer(1)]), .set(path("c/new"), ["v": .integer(2)])]).commitTime
            #expect(try await db.get("c/new", consistency: .readTime(t2.adding(micros: -1))) == nil)
        }
    }

    @Test("read_time in the future or older than the retention is rejected", arguments: Backend.allCases)
    func bounds(_ backend: Backend) async throws {
        try await withHearth(backend) { (db) async throws in
            let now = try await db.set("c/d", [:]).commitTime
            await expectError(.invalidArgument) { _ = try await db.get("c/d", consistency: .readTime(now.adding(micros: 3_600_000_000))) }
            await expectError(.failedPrecondition) { _ = try await db.get("c/d", consistency: .readTime(now.adding(micros: -2 * 3_600_000_000))) }
            await expectError(.invalidArgument) { _ = try await db.get("c/d", consistency: .readTime(Timestamp(seconds: 0, nanos: -1))) }
        }
    }
}

@Suite("Commit clock")
struct CommitClockTests {
    @Test("Commit times strictly increase even when the wall clock stands still or goes back")
    func monotonic() {
        let clock = CommitClock(after: Timestamp(microseconds: 5_000), now: { 1_000 })
        var last = Timestamp(microseconds: 5_000)
        for _ in 0..<100 {
            let t = clock.next()
            #expect(t > last)
            last = t
        }
        clock.observe(Timestamp(microseconds: 1_000_000))
        #expect(clock.next() == Timestamp(microseconds: 1_000_001))
    }

    /// A read time handed out must stay a consistent snapshot: no later commit may get a
    /// time at or before it, or a re-read at that time would see a write the first read did not.
    @Test("A commit after a read time is handed out gets a later time")
    func commitAfterReadTime() {
        let clock = CommitClock(now: { 1_000 })
        let read = clock.current()
        let commit = clock.next()
        #expect(commit > read)
    }
}

@Suite("Durability")
struct DurabilityTests {
    @Test("A file-backed store keeps documents, indexes and the clock across reopening")
    func reopen() async throws {
        try await withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("durable.sqlite").path
            let db = DatabaseName(project: "demo", database: "(default)")
            let q = Query(collectionId: "c", filter: .field(field("k"), .equal, .integer(1)), orderBy: [Query.Order(field("v"), descending: true)])
            let lastCommit: Timestamp
            do {
                let engine = try await DocumentEngine(store: try SQLiteDocumentStore(path: file))
                _ = try await engine.commit(db, (0..<50).map { .set(path("c/d\($0)"), ["k": .integer(Int64($0 % 2)), "v": .integer(Int64($0))]) })
                _ = try await engine.runQuery(db, q)  // creates the composite index
                lastCommit = try await engine.commit(db, [.delete(path("c/d1")), .set(path("c/x"), ["s": .string("caf\u{E9}")])]).commitTime
            }
            let reopened = try await DocumentEngine(store: try SQLiteDocumentStore(path: file), configuration: .init(strictIndexes: true))
            #expect(try await reopened.get(db, path("c/d2")).0?.fields == ["k": .integer(0), "v": .integer(2)])
            #expect(try await reopened.get(db, path("c/d1")).0 == nil)
            #expect(try await reopened.get(db, path("c/x")).0?.fields == ["s": .string("caf\u{E9}")])
            let names = try await reopened.runQuery(db, q).documents.map(\.path.lastSegment)
            #expect(names == stride(from: 49, through: 3, by: -2).map { "d\($0)" })
            let next = try await reopened.commit(db, [.set(path("c/y"), [:])]).commitTime
            #expect(next > lastCommit)
        }
    }
}

/// Events in the order concurrent tasks recorded them.
final class Recorder: Sendable {
    private let log = Mutex<[String]>([])
    func record(_ event: String) { log.withLock { $0.append(event) } }
    var events: [String] { log.withLock { $0 } }
}
