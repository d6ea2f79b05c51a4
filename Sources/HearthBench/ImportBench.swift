import AsyncHTTPClient
import Foundation
import HearthCore
import HearthApp
import HearthServer

/// The `import` phase of `hearth bench`: `hearth import` of a Firestore export of
/// `--import-documents` documents (written here with the project's own export writer), timed
/// in this process with its peak RSS, next to two same-run baselines — the engine path
/// (commits of 500, as clients write and as `hearth import` did before the bulk loader) and the
/// bulk path on the first `--import-baseline` documents — and Google's Firestore emulator
/// loading the same export at start (`--seed_from_export`) when it is installed.
struct ImportBench {
    let directory: String
    let documents: Int
    let baseline: Int

    static let header = "import phase".padding(toLength: 58, withPad: " ", startingAt: 0)
        + "      docs     wall s     docs/s   µs/doc   CPU s  peak RSS MB"

    func run() async throws {
        let fm = FileManager.default
        try? fm.removeItem(atPath: directory)
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let full = URL(fileURLWithPath: directory + "/export-\(documents)")
        let small = URL(fileURLWithPath: directory + "/export-\(baseline)")
        var started = ContinuousClock.now
        let bytes = try Self.writeExport(full, documents: documents)
        note(String(format: "  wrote the %d-document export (%.0f MB) in %.1f s", documents, Double(bytes) / 1e6, seconds(since: started)))
        _ = try Self.writeExport(small, documents: baseline)
        print(Self.header)

        // Same-run baselines on the small export: the engine path, then the bulk path.
        for path in [EmulatorExportRunner.FirestoreImport.engine, .bulk] {
            let target = URL(fileURLWithPath: directory + "/data-\(path)-\(baseline)")
            started = ContinuousClock.now
            let cpu = Self.cpuSeconds()
            var runner = EmulatorExportRunner(dataDirectory: target, project: "demo-hearth")
            runner.firestoreImport = path
            let summary = try await runner.importing(from: small, only: [.firestore]) { _ in }
            print(row("hearth import, \(path == .bulk ? "bulk load" : "engine commits of 500 (baseline)")", summary.documents, seconds(since: started), cpu: Self.cpuSeconds() - cpu))
            try? fm.removeItem(at: target)
        }

        // The measured import.
        let target = URL(fileURLWithPath: directory + "/data-bulk-\(documents)")
        started = ContinuousClock.now
        let cpu = Self.cpuSeconds()
        let summary = try await EmulatorExportRunner(dataDirectory: target, project: "demo-hearth")
            .importing(from: full, only: [.firestore]) { line in note("  " + line) }
        guard summary.documents == documents else { throw BenchError("imported \(summary.documents) documents, expected \(documents)") }
        print(row("hearth import, bulk load", summary.documents, seconds(since: started), cpu: Self.cpuSeconds() - cpu))
        let size = (try? fm.attributesOfItem(atPath: target.path + "/hearth.sqlite")[.size] as? Int) ?? 0
        note(String(format: "  hearth.sqlite: %.0f MB", Double(size) / 1e6))
        try? fm.removeItem(at: target)

        // The emulator: its plain start, then a start that loads the same export.
        if let emulator = FirestoreEmulator.find() {
            let scratch = directory + "/emulator"
            try fm.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            started = ContinuousClock.now
            var running = try await emulator.start(scratch: scratch)
            let plain = seconds(since: started)
            running.stop()
            print(row("emulator: plain start to ready (no data)", 0, plain))
            let metadata = full.appendingPathComponent("firestore_export/firestore_export.overall_export_metadata").path
            started = ContinuousClock.now
            running = try await emulator.start(scratch: scratch, arguments: ["--seed_from_export=\(metadata)"], timeout: .seconds(1800))
            let seeded = seconds(since: started)
            let loaded = try await Self.holdsLast(port: running.port, documents: documents)
            running.stop()
            guard loaded else { throw BenchError("the emulator does not hold the export's last document") }
            print(row("emulator: --seed_from_export start to ready", documents, seeded))
            print(row("emulator: the load alone (ready minus plain start)", documents, seeded - plain))
        } else {
            note("  Google's Firestore emulator is not installed: no emulator row")
        }
        try? fm.removeItem(atPath: directory)
    }

    /// A result row; `cpu` (this process's user and system time) and the peak RSS only for
    /// Hearth's rows (the emulator runs in its own process).
    func row(_ name: String, _ docs: Int, _ wall: Double, cpu: Double? = nil) -> String {
        name.padding(toLength: 58, withPad: " ", startingAt: 0)
            + String(format: " %9d %10.2f %10.0f %8.1f", docs, wall, docs == 0 ? 0 : Double(docs) / wall, docs == 0 ? 0 : wall * 1e6 / Double(docs))
            + (cpu.map { String(format: " %7.1f %12.0f", $0, Self.peakRSSMegabytes()) } ?? "")
    }

    /// This process's CPU time so far (user and system, every thread).
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    func note(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

    func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// This process's peak resident set so far (getrusage).
    static func peakRSSMegabytes() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }

    /// An export of `documents` documents `items/dNNNNNNN` (an integer, a string, a timestamp,
    /// a 2-item array and a map of two, from a fixed pseudo-random sequence), as
    /// `hearth export` writes it; the output's size in bytes.
    static func writeExport(_ root: URL, documents: Int) throws -> Int {
        try? FileManager.default.removeItem(at: root)
        var file = try FirestoreExportFile(directory: root.appendingPathComponent("firestore_export"), name: "firestore_export")
        var random = SplitMix(seed: 17)
        for i in 0..<documents {
            let r = random.next()
            let fields: [String: Value] = [
                "n": .integer(Int64(i)),
                "name": .string("name-\(r % 1_000_003)"),
                "at": .timestamp(Timestamp(seconds: 1_700_000_000 + Int64(r % 10_000_000), nanos: 0)),
                "tags": .array([.string("t\(r % 97)"), .integer(Int64(r % 13))]),
                "info": .map(["score": .double(Double(r % 10_000) / 100), "city": .string("c\(r % 1000)")]),
            ]
            try file.append(.init(path: ["items", String(format: "d%08d", i)], fields: fields), project: "demo-hearth")
        }
        _ = try file.finish()
        let metadata = EmulatorExport.Metadata(version: EmulatorExport.writtenVersion, paths: [.firestore: "firestore_export"])
        try Data(metadata.json.serializedBytes()).write(to: root.appendingPathComponent(EmulatorExport.metadataFile))
        let output = root.appendingPathComponent("firestore_export/all_namespaces/all_kinds/output-0").path
        return (try FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
    }

    /// Whether the emulator holds the export's last document, `items/d<documents - 1>` (it
    /// seeds in file order; a COUNT over a million documents outlasts its HTTP timeouts).
    static func holdsLast(port: Int, documents: Int) async throws -> Bool {
        let id = String(format: "d%08d", documents - 1)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/projects/demo-hearth/databases/(default)/documents/items/\(id)")
        request.headers.add(name: "Authorization", value: "Bearer owner")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response.status == .ok
    }

    /// SplitMix64: a fixed, fast pseudo-random sequence.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
