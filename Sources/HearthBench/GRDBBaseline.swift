import Foundation
import GRDB

/// Raw GRDB baselines with the durability Hearth uses (WAL, synchronous=FULL): the ceiling
/// the storage engine allows, measured in the same run.
struct GRDBBaseline {
    let path: String
    let clients: Int
    let duration: Double

    func run() async throws {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let pool = try DatabasePool(path: path, configuration: config)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS kv(k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
        }
        let value = Data(repeating: 0x61, count: 120)
        let counter = Counter()
        print(try await measure("baseline: GRDB insert, 1 per transaction") { _ in
            let k = "a\(counter.next())"
            try await pool.write { db in try db.execute(sql: "INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)", arguments: [k, value]) }
        })
        print(try await measure("baseline: GRDB insert, 64 per transaction", perCall: 64) { _ in
            let base = counter.next() * 64
            try await pool.write { db in
                for i in 0..<64 { try db.execute(sql: "INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)", arguments: ["b\(base + i)", value]) }
            }
        })
        let n = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM kv") ?? 1 }
        print(try await measure("baseline: GRDB point select") { i in
            let k = "a\(1 + i % max(1, n / 2))"
            _ = try await pool.read { db in try Data.fetchOne(db, sql: "SELECT v FROM kv WHERE k = ?", arguments: [k]) }
        })
    }

    func measure(_ name: String, perCall: Int = 1, _ op: @escaping @Sendable (Int) async throws -> Void) async throws -> Measurement {
        try await Self.measure(name, perCall: perCall, clients: clients, duration: duration, op)
    }

    /// Runs `op` from `clients` concurrent loops for `duration` seconds.
    static func measure(
        _ name: String, perCall: Int = 1, clients: Int, duration: Double, _ op: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> Measurement {
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(duration * 1000))
        let counter = Counter()
        let all = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<clients {
                group.addTask {
                    var latencies: [Double] = []
                    while ContinuousClock.now < deadline {
                        let t0 = ContinuousClock.now
                        try await op(counter.next())
                        let d = ContinuousClock.now - t0
                        latencies.append(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
                    }
                    return latencies
                }
            }
            var out: [Double] = []
            for try await l in group { out += l }
            return out
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Measurement(name: name, operations: all.count * perCall, errors: 0, seconds: seconds, latencies: all)
    }
}
