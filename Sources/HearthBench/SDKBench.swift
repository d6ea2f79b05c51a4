import Foundation
import HearthClientCore
import HearthClientFirestore
import Synchronization

/// Issue 16's Swift SDK figures (`--phases sdk`), against the bench's own server over gRPC:
///
/// - listener latency: a write by another client (a second SDK app) to the listening app's
///   snapshot callback, p50/p99, next to the same measurement with Python's google-cloud-firestore
///   (a second `firestore.Client` writes, the first one's `on_snapshot` callback fires) in the same run;
/// - cold start to the first snapshot from a 10k-document cache (a new app on a copy of a cache
///   that a listener filled), next to the first snapshot of the same listener with no cache (from
///   the server);
/// - queued writes drained per second: 1,000 `setData` queued with the network disabled, then
///   enabled, first to last acknowledgement; next to the same writes from Python, one `set` at a time.
///
/// The Python baseline runs `--python` (default `$HEARTH_BENCH_PYTHON`, else `python3`) with
/// `FIRESTORE_EMULATOR_HOST`; without google-cloud-firestore its rows are skipped with a note.
struct SDKBench {
    let directory: String
    let firestorePort: Int
    let authPort: Int
    let python: String
    /// Samples of the listener-latency rows (SDK and Python alike), each after `latencyWarmUp`
    /// unmeasured rounds: the first writes of a fresh client pay for first-use paths (connections'
    /// windows, lazily built tables, page faults) that say nothing about its steady state.
    var latencySamples = 500
    var latencyWarmUp = 20
    var cachedDocuments = 10_000
    var queuedWrites = 1_000
    var coldRounds = 5

    func run() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let python = runPython()
        // The SDK's clients in a process of their own (as Python's are), then in the server's.
        if let own = try runLatencyClient() { print(own) }
        print(try await latency(name: "  same, SDK in the server's process"))
        if let python { print(python.latency) }
        try await coldStart()
        try await drain()
        if let python { print(python.writes) }
    }

    // MARK: Apps

    func app(_ label: String, cacheDirectory: URL?) -> Firestore {
        var options = HearthOptions(projectID: "demo-hearth")
        options.firestorePort = firestorePort
        options.authPort = authPort
        let name = "sdk-bench-\(label)-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: options)
        let db = Firestore.firestore(app: HearthApp.app(name: name)!)
        let settings = db.settings
        if let cacheDirectory {
            settings.cacheDirectory = cacheDirectory
        } else {
            settings.cacheSettings = MemoryCacheSettings()
        }
        db.settings = settings
        return db
    }

    static func int(_ value: Any?) -> Int? {
        switch value {
        case let i as Int: i
        case let i as Int64: Int(i)
        case let n as NSNumber: n.intValue
        default: nil
        }
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    /// Waits (polling) until `condition` holds or `seconds` pass.
    static func until(_ seconds: Double, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !condition() {
            guard ContinuousClock.now < deadline else { throw BenchError("sdk bench: timed out") }
            try await Task.sleep(for: .microseconds(200))
        }
    }

    // MARK: Listener latency

    /// `hearth bench --sdk-client <port>`: the latency loop alone, printed as JSON, in this process.
    static func latencyClient(firestorePort: Int, directory: String) async throws {
        let bench = SDKBench(directory: directory, firestorePort: firestorePort, authPort: 1, python: "")
        let (latencies, seconds) = try await bench.measureLatency()
        let json = try JSONSerialization.data(withJSONObject: ["latencies": latencies, "seconds": seconds])
        print(String(decoding: json, as: UTF8.self))
    }

    /// Runs this binary with `--sdk-client`: nil (with a note) when that fails.
    func runLatencyClient() throws -> Measurement? {
        var executable = ProcessInfo.processInfo.arguments[0]
        if !executable.hasPrefix("/") { executable = FileManager.default.currentDirectoryPath + "/" + executable }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["bench", "--sdk-client", "\(firestorePort)", "--data-dir", directory + "/latency-client"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        struct Output: Decodable {
            var latencies: [Double]
            var seconds: Double
        }
        guard process.terminationStatus == 0, let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
            let output = try? JSONDecoder().decode(Output.self, from: Data(line.utf8))
        else {
            FileHandle.standardError.write(Data("  sdk: the latency client process failed\n".utf8))
            return nil
        }
        return Measurement(
            name: "sdk: write by another app → listener", operations: output.latencies.count, errors: 0, seconds: output.seconds,
            latencies: output.latencies)
    }

    func latency(name: String) async throws -> Measurement {
        let (latencies, seconds) = try await measureLatency()
        return Measurement(name: name, operations: latencies.count, errors: 0, seconds: seconds, latencies: latencies)
    }

    /// A second app writes a document `latencySamples` times; each time, from just before the
    /// write to the first app's snapshot callback showing it.
    func measureLatency() async throws -> ([Double], Double) {
        let listener = app("listener", cacheDirectory: URL(fileURLWithPath: directory + "/latency-cache-\(UUID().uuidString)"))
        let writer = app("writer", cacheDirectory: nil)
        // A document of its own per run (another run's last value would hide this one's first).
        let path = "sdk-latency/\(UUID().uuidString)"
        let ref = listener.document(path)
        let seen = Mutex<(value: Int, at: ContinuousClock.Instant)>((-1, .now))
        let registration = ref.addSnapshotListener { snapshot, _ in
            guard let snapshot, let i = Self.int(snapshot.get("i")) else { return }
            let now = ContinuousClock.now
            seen.withLock { if i > $0.value { $0 = (i, now) } }
        }
        try await writer.document(path).setData(["i": 0])
        try await Self.until(30) { seen.withLock { $0.value } == 0 }
        var latencies: [Double] = []
        var start = ContinuousClock.now
        for i in 1...(latencyWarmUp + latencySamples) {
            if i == latencyWarmUp + 1 { start = ContinuousClock.now }
            let t0 = ContinuousClock.now
            writer.document(path).setData(["i": i], completion: nil)
            try await Self.until(30) { seen.withLock { $0.value } >= i }
            if i > latencyWarmUp { latencies.append(Self.seconds(seen.withLock { $0.at } - t0)) }
        }
        let elapsed = Self.seconds(ContinuousClock.now - start)
        registration.remove()
        await listener.terminate()
        await writer.terminate()
        return (latencies, elapsed)
    }

    // MARK: Cold start

    func coldStart() async throws {
        let count = cachedDocuments
        let writer = app("cold-writer", cacheDirectory: nil)
        var batch = writer.batch()
        for i in 0..<count {
            try batch.setData(["n": i, "title": "Item number \(i) with a title of ordinary length", "done": i % 2 == 0], forDocument: writer.document("sdk-cold/i\(i)"))
            if (i + 1) % 500 == 0 {
                try await batch.commit()
                batch = writer.batch()
            }
        }
        try await batch.commit()
        await writer.terminate()

        // A listener fills a cache; its files are copied for each round (a fresh process's view).
        let seed = directory + "/cold-seed"
        let seeding = app("cold-seed", cacheDirectory: URL(fileURLWithPath: seed))
        let complete = Mutex(false)
        let seeded = seeding.collection("sdk-cold").order(by: "n").addSnapshotListener { snapshot, _ in
            if let snapshot, snapshot.count == count, !snapshot.metadata.isFromCache { complete.withLock { $0 = true } }
        }
        try await Self.until(120) { complete.withLock { $0 } }
        seeded.remove()
        await seeding.terminate()

        var fromCache: [Double] = []
        var readCache: [Double] = []
        var fromServer: [Double] = []
        for round in 0..<coldRounds {
            let copy = directory + "/cold-round-\(round)"
            try Self.copyCache(from: seed, to: copy)
            let (first, read) = try await firstSnapshot(app("cold-\(round)", cacheDirectory: URL(fileURLWithPath: copy)), count: count, expectCache: true)
            fromCache.append(first)
            readCache.append(read)
            try? FileManager.default.removeItem(atPath: copy)
            fromServer.append(try await firstSnapshot(app("cold-memory-\(round)", cacheDirectory: nil), count: count, expectCache: false).first)
        }
        print(Measurement(
            name: "sdk: first snapshot, \(count)-doc cache", operations: coldRounds, errors: 0, seconds: fromCache.reduce(0, +), latencies: fromCache))
        print(Measurement(
            name: "  same, until the app read every document's \"n\"", operations: coldRounds, errors: 0, seconds: readCache.reduce(0, +),
            latencies: readCache))
        print(Measurement(
            name: "  baseline: same listener, no cache (server)", operations: coldRounds, errors: 0, seconds: fromServer.reduce(0, +),
            latencies: fromServer))
    }

    /// Copies a cache directory whose instance was terminated: once SQLite has folded the WAL
    /// into the file (when the connection closes), else with the WAL (nothing writes any more).
    static func copyCache(from seed: String, to copy: String) throws {
        let manager = FileManager.default
        for _ in 0..<100 where manager.fileExists(atPath: seed + "/cache.sqlite-wal") { usleep(20_000) }
        try manager.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] {
            let source = seed + "/cache.sqlite" + suffix
            guard let data = manager.contents(atPath: source) else { continue }
            try data.write(to: URL(fileURLWithPath: copy + "/cache.sqlite" + suffix))
        }
    }

    /// From opening the app's instance to its listener's first snapshot of `count` documents, and
    /// to the end of reading every document's `n` in that snapshot (in order, as a list would).
    func firstSnapshot(_ db: Firestore, count: Int, expectCache: Bool) async throws -> (first: Double, read: Double) {
        let first = Mutex<(Double, Double, Int, Bool)?>(nil)
        let start = ContinuousClock.now
        let registration = db.collection("sdk-cold").order(by: "n").addSnapshotListener { snapshot, _ in
            guard let snapshot, first.withLock({ $0 == nil }) else { return }
            let elapsed = Self.seconds(ContinuousClock.now - start)
            var ordered = true
            for (i, document) in snapshot.documents.enumerated() where Self.int(document.get("n")) != i { ordered = false }
            let read = Self.seconds(ContinuousClock.now - start)
            first.withLock { $0 = (elapsed, read, ordered ? snapshot.count : -1, snapshot.metadata.isFromCache) }
        }
        try await Self.until(120) { first.withLock { $0 } != nil }
        registration.remove()
        await db.terminate()
        let (elapsed, read, documents, isFromCache) = first.withLock { $0 }!
        guard documents == count, isFromCache == expectCache else {
            throw BenchError("sdk bench: first snapshot had \(documents) documents (-1: out of order), isFromCache \(isFromCache)")
        }
        return (elapsed, read)
    }

    // MARK: Drain

    func drain() async throws {
        let db = app("drain", cacheDirectory: URL(fileURLWithPath: directory + "/drain-cache"))
        try await db.disableNetwork()
        let acks = Mutex<[ContinuousClock.Instant]>([])
        let failures = Mutex(0)
        for i in 0..<queuedWrites {
            db.collection("sdk-drain").document("d\(i)").setData(["n": i, "title": "queued offline"]) { error in
                if error == nil { acks.withLock { $0.append(.now) } } else { failures.withLock { $0 += 1 } }
            }
        }
        let enabled = ContinuousClock.now
        try await db.enableNetwork()
        try await db.waitForPendingWrites()
        try await Self.until(10) { acks.withLock { $0.count } + failures.withLock { $0 } == queuedWrites }
        let times = acks.withLock { $0 }
        await db.terminate()
        // Per-write latency here is each write's acknowledgement after the network came back.
        let latencies = times.map { Self.seconds($0 - enabled) }
        let draining = times.count > 1 ? Self.seconds(times.last! - times.first!) : 0
        print(Measurement(
            name: "sdk: \(queuedWrites) queued writes drained", operations: max(0, times.count - 1), errors: failures.withLock { $0 },
            seconds: max(draining, 1e-9), latencies: latencies))
    }

    // MARK: Python baseline

    struct PythonRows {
        var latency: Measurement
        var writes: Measurement
    }

    static let pythonScript = #"""
        import json, os, sys, threading, time
        from google.cloud import firestore
        from google.auth.credentials import AnonymousCredentials
        samples, writes, warm_up = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        listener = firestore.Client(project="demo-hearth", credentials=AnonymousCredentials())
        writer = firestore.Client(project="demo-hearth", credentials=AnonymousCredentials())
        ref = listener.collection("py-latency").document("doc")
        cond = threading.Condition()
        state = {"i": -1, "at": 0.0}
        def on_snapshot(docs, changes, read_time):
            now = time.perf_counter()
            for d in docs:
                if d.exists:
                    i = d.to_dict().get("i", -1)
                    with cond:
                        if i > state["i"]:
                            state["i"], state["at"] = i, now
                            cond.notify_all()
        watch = ref.on_snapshot(on_snapshot)
        target = writer.collection("py-latency").document("doc")
        def wait_for(i):
            with cond:
                if not cond.wait_for(lambda: state["i"] >= i, timeout=30):
                    raise SystemExit("timed out waiting for the listener")
        target.set({"i": 0})
        wait_for(0)
        latencies = []
        start = time.perf_counter()
        for i in range(1, warm_up + samples + 1):
            if i == warm_up + 1:
                start = time.perf_counter()
            t0 = time.perf_counter()
            target.set({"i": i})
            wait_for(i)
            if i > warm_up:
                latencies.append(state["at"] - t0)
        latency_seconds = time.perf_counter() - start
        watch.unsubscribe()
        write_latencies = []
        start = time.perf_counter()
        for i in range(writes):
            t0 = time.perf_counter()
            writer.collection("py-writes").document("d%d" % i).set({"n": i, "title": "queued offline"})
            write_latencies.append(time.perf_counter() - t0)
        write_seconds = time.perf_counter() - start
        print(json.dumps({"latencies": latencies, "latency_seconds": latency_seconds,
                          "write_latencies": write_latencies, "write_seconds": write_seconds}))
        """#

    /// Python's google-cloud-firestore against the same server: nil (with a note) when it cannot run.
    func runPython() -> PythonRows? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, "-c", Self.pythonScript, "\(latencySamples)", "\(queuedWrites)", "\(latencyWarmUp)"]
        var environment = ProcessInfo.processInfo.environment
        environment["FIRESTORE_EMULATOR_HOST"] = "127.0.0.1:\(firestorePort)"
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do { try process.run() } catch {
            FileHandle.standardError.write(Data("  sdk: \(python) could not run (\(error)): no Python baseline\n".utf8))
            return nil
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        struct Output: Decodable {
            var latencies: [Double]
            var latency_seconds: Double
            var write_latencies: [Double]
            var write_seconds: Double
        }
        guard process.terminationStatus == 0, let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
            let output = try? JSONDecoder().decode(Output.self, from: Data(line.utf8))
        else {
            let reason = String(decoding: errors, as: UTF8.self).split(separator: "\n").suffix(3).joined(separator: " / ")
            FileHandle.standardError.write(Data("  sdk: the Python baseline failed (\(reason)); set --python to a Python with google-cloud-firestore\n".utf8))
            return nil
        }
        return PythonRows(
            latency: Measurement(
                name: "  baseline: python google-cloud-firestore", operations: output.latencies.count, errors: 0,
                seconds: output.latency_seconds, latencies: output.latencies),
            writes: Measurement(
                name: "  baseline: python set(), one at a time", operations: output.write_latencies.count, errors: 0,
                seconds: output.write_seconds, latencies: output.write_latencies))
    }
}
