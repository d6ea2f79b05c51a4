import AsyncHTTPClient
import Foundation
import GRDB
import HearthCore
import Hummingbird
import Logging

/// `write-wrk`: REST single-document creates (`POST …/documents/{collection}`, server-chosen ids)
/// from wrk in a process of its own, against Hearth and — when it is installed — Google's
/// Firestore emulator under the same load, next to raw GRDB single-row commits with Hearth's
/// durability (WAL, `synchronous=FULL`), all in the same run. Issue 13's targets for the write
/// path are stated against these two peers: ≥ 25% of the raw commit rate, ≥ 5× the emulator.
/// Two same-run ceilings follow under the identical wrk load: the bare HTTP stack answering the
/// same POST, and that plus a JSON parse and one durable SQLite insert (``ceilings()``).
struct WriteBench {
    let wrk: Wrk
    let connections: Int
    let duration: Double
    let scratch: String

    /// The body every create sends (four fields, like the other write phases).
    static let body =
        #"{"fields":{"title":{"stringValue":"hello world"},"n":{"integerValue":"7"},"group":{"integerValue":"7"},"score":{"doubleValue":2.5}}}"#

    func run(hearthPort: Int) async throws {
        let raw = try await GRDBBaseline.measure("baseline: GRDB insert, 1 per transaction", clients: connections, duration: duration) {
            [pool = try Self.baselinePool(scratch + "/write-baseline.sqlite")] i in
            try await pool.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)", arguments: ["k\(i)", Data(repeating: 0x61, count: 120)])
            }
        }
        print(raw)
        let hearth = try creates(port: hearthPort)
        print(wrk.format("hearth: REST create, \(connections) conns (wrk)", hearth))
        var emulatorRate: Double?
        if let emulator = FirestoreEmulator.find() {
            FileHandle.standardError.write(Data("  starting Google's Firestore emulator (JVM start takes a few seconds)…\n".utf8))
            let running = try await emulator.start(scratch: scratch)
            defer { running.stop() }
            // The JVM compiles as it runs: an unmeasured run as long as the measured one first, so
            // the emulator is measured warm, as a fair peer.
            _ = try creates(port: running.port, seconds: max(3, duration))
            let result = try creates(port: running.port)
            print(wrk.format("emulator: REST create, \(connections) conns (wrk)", result))
            emulatorRate = result.rate
        } else {
            FileHandle.standardError.write(Data("  Google's Firestore emulator is not installed: no emulator row\n".utf8))
        }
        let ceiling = try await ceilings()
        var ratios = String(format: "  write path: %.0f%% of raw GRDB single-row commits (target ≥ 25%%)", 100 * hearth.rate / max(Double(raw.operations) / raw.seconds, 1))
        if let emulatorRate { ratios += String(format: ", %.1f× the emulator (target ≥ 5×)", hearth.rate / max(emulatorRate, 1)) }
        print(ratios)
        var limits = String(format: "  ceilings: Hearth at %.0f%% of the bare POST route, %.0f%% of bare route + JSON parse + one durable insert",
            100 * hearth.rate / max(ceiling.bare, 1), 100 * hearth.rate / max(ceiling.insert, 1))
        if let emulatorRate { limits += String(format: "; that ceiling is %.1f× the emulator", ceiling.insert / max(emulatorRate, 1)) }
        print(limits)
    }

    /// Same-run ceilings under the same wrk load (same body, same connections): the bare HTTP
    /// stack answering the POST (Hummingbird, no Hearth middleware), and the same plus the body
    /// parsed as JSON and one durable SQLite insert of it (its own transaction, WAL,
    /// `synchronous=FULL`) — what any durable create over this stack costs at least, before ids,
    /// documents, index entries, history, rules or an answer built from the stored document.
    func ceilings() async throws -> (bare: Double, insert: Double) {
        let pool = try Self.baselinePool(scratch + "/write-ceiling.sqlite")
        let router = Router()
        router.post("/bare") { request, _ -> String in
            _ = try await request.body.collect(upTo: 1 << 20)
            return "{}"
        }
        router.post("/insert") { request, _ -> String in
            let body = try await request.body.collect(upTo: 1 << 20)
            let bytes = try JSON.parse(body.readableBytesView).serializedBytes()
            let id = AutoID.make()
            try await pool.write { db in try db.execute(sql: "INSERT INTO kv(k, v) VALUES (?, ?)", arguments: [id, Data(bytes)]) }
            return "{}"
        }
        let rates = Mutex2<[Double]>([])
        var logger = Logger(label: "hearth.bench.write")
        logger.logLevel = .warning
        try await withBenchRouter(router, logger: logger) { port in
            for (route, label) in [("bare", "ceiling: bare POST route"), ("insert", "ceiling: + JSON parse + durable insert")] {
                let result = try wrk.measure(
                    urls: [URL(string: "http://127.0.0.1:\(port)/\(route)")!], method: "POST", headers: ["Content-Type": "application/json"],
                    body: Self.body, connections: connections, duration: duration, scratch: scratch)
                print(wrk.format("\(label), \(connections) conns (wrk)", result))
                let rate = result.rate
                rates.withLock { $0.append(rate) }
            }
        }
        let measured = rates.withLock { $0 }
        guard measured.count == 2 else { throw BenchError("the ceiling routes were not measured") }
        return (measured[0], measured[1])
    }

    func creates(port: Int, seconds: Double? = nil) throws -> Wrk.Result {
        let url = URL(string: "http://127.0.0.1:\(port)/v1/projects/demo-hearth/databases/(default)/documents/wrk")!
        return try wrk.measure(
            urls: [url], method: "POST", headers: ["Content-Type": "application/json", "Authorization": "Bearer owner"], body: Self.body,
            connections: connections, duration: seconds ?? duration, scratch: scratch)
    }

    static func baselinePool(_ path: String) throws -> DatabasePool {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let pool = try DatabasePool(path: path, configuration: config)
        try pool.write { db in try db.execute(sql: "CREATE TABLE IF NOT EXISTS kv(k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID") }
        return pool
    }
}

/// Google's Cloud Firestore emulator from the Cloud SDK (`google-cloud-cli-firestore-emulator`),
/// in a process group of its own, so that stopping it stops its JVM too.
struct FirestoreEmulator {
    let executable: String

    static func find() -> FirestoreEmulator? {
        if let explicit = ProcessInfo.processInfo.environment["FIRESTORE_EMULATOR_BIN"] { return FirestoreEmulator(executable: explicit) }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let gcloud = "\(dir)/gcloud"
            guard FileManager.default.isExecutableFile(atPath: gcloud) else { continue }
            let sdkBin = URL(fileURLWithPath: gcloud).resolvingSymlinksInPath().deletingLastPathComponent()
            let emulator = sdkBin.appendingPathComponent("../platform/cloud-firestore-emulator/cloud_firestore_emulator").standardized.path
            if FileManager.default.isExecutableFile(atPath: emulator) { return FirestoreEmulator(executable: emulator) }
        }
        return nil
    }

    final class Running: Sendable {
        let process: Process
        let port: Int
        init(process: Process, port: Int) {
            self.process = process
            self.port = port
        }

        /// Stops the whole process group (the wrapper script and its JVM): SIGTERM, then SIGKILL
        /// after 10 s. (Not `waitUntilExit`: the group is watched with `kill(-pgid, 0)`.)
        func stop() {
            let group = -process.processIdentifier
            kill(group, SIGTERM)
            for _ in 0..<100 where kill(group, 0) == 0 { usleep(100_000) }
            kill(group, SIGKILL)
        }
    }

    /// Starts the emulator (with `arguments` added) and waits until it answers, at most `timeout`.
    func start(scratch: String, arguments: [String] = [], timeout: Duration = .seconds(60)) async throws -> Running {
        let port = try Self.freePort()
        let process = Process()
        // Foundation starts the child in a process group of its own (pgid = pid), which the
        // wrapper script's JVM inherits.
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["start", "--host=127.0.0.1", "--port=\(port)", "--project_id=demo-hearth"] + arguments
        let log = scratch + "/emulator.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = process.standardOutput
        try process.run()
        let running = Running(process: process, port: port)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if !process.isRunning { break }
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"), timeout: .seconds(2)),
                response.status == .ok
            {
                return running
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        running.stop()
        throw BenchError("the Firestore emulator did not start (see \(log))")
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw BenchError("bind() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
