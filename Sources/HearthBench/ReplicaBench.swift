import AsyncHTTPClient
import Foundation
import HearthCore
import NIOCore
import NIOHTTP1

/// `hearth bench --phases replicas` (issue 18 part 4): REST writes and point reads against 1, 2
/// and 3 real `hearth serve --database-url …` processes over one PostgreSQL database, next to one
/// `hearth serve` on SQLite files, same run, same client.
///
/// - Servers: this binary's own `hearth serve --emulator`, each with a data directory of its own,
///   every port 0 (read from its ready file) — ``ServeProcess``. Each PostgreSQL configuration
///   gets a fresh database (created from `HEARTH_BENCH_POSTGRES_URL`, dropped afterwards); the
///   servers are stopped after each configuration, and on errors and cancellation.
/// - Load: wrk, one process per server with its share of `connections` (HTTP/1.1 keep-alive) —
///   ``WrkLoad``: first PATCHes of small documents (creates, then updates once a server's 10,000
///   names came round), then GETs of the documents another server wrote.
/// - Where the time goes: per window, each process's CPU (`/proc/<pid>/stat`): the servers, wrk,
///   PostgreSQL's backends of the bench database and its other processes (the postmaster's
///   children, when the server runs on this machine), the whole machine's busy time and iowait
///   (`/proc/stat`: other users of the machine show as the remainder); and the database's own
///   count of write transactions (transaction ids assigned), WAL bytes, and whether the shared
///   commit clock row moved.
struct ReplicaBench {
    static let phase = "replicas"
    static let urlVariable = "HEARTH_BENCH_POSTGRES_URL"
    /// Document names per server (its writes cycle through them).
    static let names = 10_000

    let replicas: [Int]
    let connections: Int
    let duration: Double
    let scratch: String

    /// One configuration's figures, for the closing summary.
    struct Figures {
        var label: String
        var writes: WrkLoad.Result
        var reads: WrkLoad.Result
        var transactions: Measurement
    }

    func run() async throws {
        guard let url = ProcessInfo.processInfo.environment[Self.urlVariable] else {
            print(
                "replicas: skipped — set \(Self.urlVariable)=postgres://postgres@127.0.0.1:5432/postgres (a role that may CREATE DATABASE: "
                    + "each configuration runs on a database of its own, dropped afterwards) to run it")
            return
        }
        guard let wrk = Wrk.find() else {
            print("replicas: skipped — wrk is not installed (apt-get install wrk)")
            return
        }
        guard let psqlPath = BenchProcess.find("psql", postgres: true) else {
            print("replicas: skipped — psql is not installed (apt-get install postgresql-client)")
            return
        }
        guard let executable = BenchProcess.ownExecutable else { throw BenchError("cannot find this process's own executable") }
        guard connections >= replicas.max() ?? 1 else { throw BenchError("--connections must be at least the largest replica count") }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let admin = Psql(executable: psqlPath, url: url, scratch: scratch)
        let settings = try await admin.row(
            "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit'), "
                + "current_setting('wal_sync_method'), current_setting('max_connections')")
        let postmaster = try await Self.postmaster(admin)
        print(
            "replicas: PostgreSQL \(settings[0]) (fsync=\(settings[1]), synchronous_commit=\(settings[2]), wal_sync_method=\(settings[3]), "
                + "max_connections=\(settings[4])); wrk, \(connections) connections spread over the servers, \(duration) s per window; "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores")
        if postmaster == nil {
            print("  (PostgreSQL's processes are not visible from here — another machine or pid namespace: no PostgreSQL CPU figures)")
        }
        let load = WrkLoad(wrk: wrk, scratch: scratch)
        var figures: [Figures] = []
        figures.append(
            try await configuration(
                "sqlite, 1 server", servers: 1, databaseURL: nil, load: load, executable: executable, psql: psqlPath, postmaster: nil))
        for count in replicas {
            let name = "hearth_bench_replicas_\(getpid())_\(count)_\(UInt32.random(in: 0...UInt32.max))"
            _ = try await admin.rows("CREATE DATABASE \(name)")
            let databaseURL = try Psql.url(url, database: name)
            do {
                let label = "postgres, \(count) replica\(count == 1 ? "" : "s")"
                figures.append(
                    try await configuration(
                        label, servers: count, databaseURL: databaseURL, load: load, executable: executable, psql: psqlPath,
                        postmaster: postmaster.map { (pid: $0, database: name) }))
            } catch {
                _ = try? await admin.rows("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                throw error
            }
            _ = try await admin.rows("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
        print("replicas summary (\(connections) connections, wrk):")
        print(
            "  " + "configuration".padding(toLength: 22, withPad: " ", startingAt: 0)
                + "   writes/s  p50 ms  p99 ms   reads/s  p50 ms  p99 ms   REST tx/s  p50 ms  p99 ms")
        for f in figures {
            let t = f.transactions
            print(
                "  " + f.label.padding(toLength: 22, withPad: " ", startingAt: 0)
                    + String(
                        format: " %10.0f %7.2f %7.2f %9.0f %7.2f %7.2f %11.0f %7.2f %7.2f", f.writes.rate, f.writes.percentile(0.5),
                        f.writes.percentile(0.99), f.reads.rate, f.reads.percentile(0.5), f.reads.percentile(0.99),
                        Double(t.operations) / t.seconds, t.percentile(0.5) * 1000, t.percentile(0.99) * 1000))
        }
    }

    /// Starts `servers` servers, measures writes then reads through them, stops them (also when
    /// something fails).
    func configuration(
        _ label: String, servers count: Int, databaseURL: String?, load: WrkLoad, executable: String, psql: String,
        postmaster: (pid: Int32, database: String)?
    ) async throws -> Figures {
        FileHandle.standardError.write(Data("  starting \(label)…\n".utf8))
        let directory = scratch + "/" + label.replacingOccurrences(of: ", ", with: "-").replacingOccurrences(of: " ", with: "-")
        let started = StartedServers()
        do {
            // Each start records its server itself: one that is ready when another fails is stopped too.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    group.addTask {
                        started.add(
                            try await ServeProcess.start(executable: executable, dataDirectory: directory + "/server\(index)", databaseURL: databaseURL))
                    }
                }
                try await group.waitForAll()
            }
            let servers = started.all.sorted { $0.pid < $1.pid }
            let database = databaseURL.map { Psql(executable: psql, url: $0, scratch: scratch) }
            let figures = try await measure(label, servers: servers, database: database, load: load, postmaster: postmaster)
            await started.stopAll()
            return figures
        } catch {
            await started.stopAll()
            throw error
        }
    }

    func measure(
        _ label: String, servers: [ServeProcess], database: Psql?, load: WrkLoad, postmaster: (pid: Int32, database: String)?
    ) async throws -> Figures {
        let base = "/v1/projects/demo-hearth/databases/(default)/documents/replicas"
        let share = (0..<servers.count).map { connections / servers.count + ($0 < connections % servers.count ? 1 : 0) }
        let headers = ["Content-Type": "application/json", "Authorization": "Bearer owner"]
        let clock = try await database?.row("SELECT to_regclass('firestore_clock') IS NOT NULL").first == "t"

        // Writes: each server its own names (creates, then updates).
        let writeTargets = servers.enumerated().map { index, server in
            WrkLoad.Target(port: server.firestorePort, connections: share[index], paths: (0..<Self.names).map { "\(base)/s\(index)d\($0)" })
        }
        let writes = try await window(
            "\(label): write (PATCH)", servers: servers, targets: writeTargets, method: "PATCH", headers: headers, body: WriteBench.body,
            load: load, database: database, clock: clock, postmaster: postmaster)
        // Reads: each server the documents the next one wrote (over PostgreSQL, another replica's).
        let readTargets = try servers.enumerated().map { index, server in
            let writer = (index + 1) % servers.count
            // Names are handed out in order; the last `connections` may still have been in flight
            // when wrk stopped (not written), so they are left out.
            let written = min(Self.names, writes.runs[writer].requests - share[writer])
            guard written > 0 else { throw BenchError("\(label): server \(writer) wrote nothing") }
            return WrkLoad.Target(port: server.firestorePort, connections: share[index], paths: (0..<written).map { "\(base)/s\(writer)d\($0)" })
        }
        let reads = try await window(
            "\(label): point get (GET)", servers: servers, targets: readTargets, method: "GET", headers: headers, body: nil, load: load,
            database: database, clock: clock, postmaster: postmaster)
        let transactions = try await transactions("\(label): REST transaction", servers: servers, share: share)
        print(transactions)
        return Figures(label: label, writes: writes, reads: reads, transactions: transactions)
    }

    /// REST read-write transactions as GAPIC's REST transport sends them: `beginTransaction`, a
    /// `GET` in the transaction, a `commit` writing the document. The clients are spread over the
    /// servers like wrk's connections; each runs one transaction after another on a document of its
    /// own (no contention), every call to its own server. Over several replicas a transaction
    /// begins on the replica ordering them (docs/postgres.md, "Transactions across replicas"), so
    /// the calls reaching the other replicas are handed over: the row shows what that costs next to
    /// the same transactions on one server.
    func transactions(_ name: String, servers: [ServeProcess], share: [Int]) async throws -> Measurement {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let database = "projects/demo-hearth/databases/(default)"
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(duration * 1000))
        let results: Result<[([Double], Int)], any Error>
        do {
            results = .success(try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
                for (index, server) in servers.enumerated() {
                    for c in 0..<share[index] {
                        group.addTask {
                            let base = "http://127.0.0.1:\(server.firestorePort)/v1/\(database)/documents"
                            let document = "\(database)/documents/replicatx/s\(index)c\(c)"
                            func call(_ method: HTTPMethod, _ url: String, _ body: String?) async throws -> JSON {
                                var request = HTTPClientRequest(url: url)
                                request.method = method
                                request.headers.add(name: "authorization", value: "Bearer owner")
                                request.headers.add(name: "content-type", value: "application/json")
                                if let body { request.body = .bytes(ByteBuffer(string: body)) }
                                let response = try await client.execute(request, timeout: .seconds(30))
                                let bytes = try await response.body.collect(upTo: 1 << 20)
                                guard response.status == .ok else { throw BenchError("\(url) answered \(response.status.code)") }
                                return try JSON.parse(Array(bytes.readableBytesView))
                            }
                            var latencies: [Double] = []
                            var errors = 0
                            var n = 0
                            while ContinuousClock.now < deadline {
                                n += 1
                                let t0 = ContinuousClock.now
                                do {
                                    let begun = try await call(.POST, "\(base):beginTransaction", "{}")
                                    guard let transaction = begun["transaction"]?.stringValue else { throw BenchError("no transaction") }
                                    let escaped = transaction.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? transaction
                                    _ = try? await call(.GET, "\(base)/replicatx/s\(index)c\(c)?transaction=\(escaped)", nil)
                                    let write = #"{"update":{"name":"\#(document)","fields":{"n":{"integerValue":"\#(n)"}}}}"#
                                    _ = try await call(.POST, "\(base):commit", #"{"writes":[\#(write)],"transaction":"\#(transaction)"}"#)
                                    let d = ContinuousClock.now - t0
                                    latencies.append(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
                                } catch {
                                    errors += 1
                                }
                            }
                            return (latencies, errors)
                        }
                    }
                }
                var all: [([Double], Int)] = []
                for try await r in group { all.append(r) }
                return all
            })
        } catch {
            results = .failure(error)
        }
        try await client.shutdown()
        let all = try results.get()
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Measurement(name: name, operations: all.map(\.0.count).reduce(0, +), errors: all.map(\.1).reduce(0, +), seconds: seconds, latencies: all.flatMap(\.0))
    }

    /// One measured window: the load, then its row, where the CPU went, and the database's view.
    func window(
        _ name: String, servers: [ServeProcess], targets: [WrkLoad.Target], method: String, headers: [String: String], body: String?,
        load: WrkLoad, database: Psql?, clock: Bool, postmaster: (pid: Int32, database: String)?
    ) async throws -> WrkLoad.Result {
        var databaseBefore: (xid: Int, wal: Int, clock: String?)?
        if let database { databaseBefore = try await Self.databaseSample(database, clock: clock) }
        var cpu = CPUWindow(servers: servers.map(\.pid), postmaster: postmaster)
        let result = try await load.run(targets, method: method, headers: headers, body: body, duration: duration) { _ in cpu.begin() }
        let usage = cpu.end(wrkSeconds: result.cpu)
        var databaseAfter: (xid: Int, wal: Int, clock: String?)?
        if let database { databaseAfter = try await Self.databaseSample(database, clock: clock) }
        print(result.row(name))
        for (index, run) in result.runs.enumerated() where run.errors > 0 {
            print("    errors from server \(index)'s wrk: \(run.errorKinds)")
        }
        print("    " + usage.describe(rate: result.rate))
        if let before = databaseBefore, let after = databaseAfter {
            let seconds = usage.seconds
            var line = String(
                format: "    database: %.0f write transactions/s (transaction ids assigned), WAL %.2f MB/s",
                Double(after.xid - before.xid) / seconds, Double(after.wal - before.wal) / seconds / 1e6)
            if let a = after.clock, let b = before.clock { line += a != b ? ", shared commit clock: in use" : ", shared commit clock: not in use" }
            print(line)
        }
        return result
    }

    /// The database's own counters: the next transaction id, the WAL position (bytes), the
    /// shared commit clock's last time (when its table is there).
    static func databaseSample(_ database: Psql, clock: Bool) async throws -> (xid: Int, wal: Int, clock: String?) {
        let row = try await database.row(
            "SELECT txid_snapshot_xmax(txid_current_snapshot()), pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
                + (clock ? ", (SELECT last_us FROM firestore_clock WHERE id = 0)" : ""))
        guard row.count >= 2, let xid = Int(row[0]), let wal = Int(row[1]) else { throw BenchError("unexpected answer from PostgreSQL: \(row)") }
        return (xid, wal, clock ? row.dropFirst(2).first : nil)
    }

    /// The postmaster's pid when PostgreSQL runs on this machine: the parent of its checkpointer.
    static func postmaster(_ admin: Psql) async throws -> Int32? {
        let row = try await admin.row("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
        guard let text = row.first, let checkpointer = Int32(text), let parent = BenchProcess.stat(checkpointer)?.parent,
            let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(parent)/cmdline")),
            String(decoding: command, as: UTF8.self).contains("postgres") || String(decoding: command, as: UTF8.self).contains("postmaster")
        else { return nil }
        return parent
    }
}
