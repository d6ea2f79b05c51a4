import HearthCore
import HearthDocuments

/// The `transactions` phase: read-write transactions on the engine (begin, get, commit of an
/// increment, retried on ABORTED with `retrying:` as the client libraries do), uncontended (each
/// on its own document) and contended (every client on one document), next to plain commits
/// in the same run.
struct TransactionBench {
    let engine: DocumentEngine
    let clients: Int
    let duration: Double

    func run() async throws {
        let db = DatabaseName(project: "demo-hearth", database: "(default)")
        let fields: [String: Value] = ["n": .integer(0)]
        print(try await GRDBBaseline.measure("baseline: engine commit, no transaction", clients: clients, duration: duration) { i in
            _ = try await engine.commit(db, [.set(ResourcePath(["txbench-plain", "p\(i)"]), fields)])
        })
        let uncontended = Counter()
        print(try await GRDBBaseline.measure("hearth engine: transaction, own document", clients: clients, duration: duration) { i in
            try await increment(db, ResourcePath(["txbench-own", "o\(i)"]), aborted: uncontended)
        })
        let hot = ResourcePath(["txbench-hot", "counter"])
        _ = try await engine.commit(db, [.set(hot, fields)])
        let contended = Counter()
        let measured = try await GRDBBaseline.measure("hearth engine: transaction, one document (\(clients))", clients: clients, duration: duration) { _ in
            try await increment(db, hot, aborted: contended)
        }
        print(measured)
        let (final, _) = try await engine.get(db, hot)
        let aborts = contended.value.withLock { $0 }
        print("  contended: \(aborts) aborted attempts for \(measured.operations) commits; counter = \(final?.fields["n"].map { "\($0)" } ?? "missing")")
    }

    /// One transactional increment, retried (keeping its place in line) until it commits.
    func increment(_ db: DatabaseName, _ path: ResourcePath, aborted: Counter) async throws {
        var retrying: TransactionID?
        while true {
            let txn = try engine.beginTransaction(db, readOnly: false, retrying: retrying)
            let (doc, _) = try await engine.get(db, path, consistency: .transaction(txn))
            var n: Int64 = 0
            if case .integer(let v)? = doc?.fields["n"] { n = v }
            do {
                _ = try await engine.commit(db, [.set(path, ["n": .integer(n + 1)])], transaction: txn)
                return
            } catch let error as HearthError where error.code == .aborted {
                _ = aborted.next()
                retrying = txn
            }
        }
    }
}
