import Foundation

/// One measured load spread over several servers: a wrk process per server (HTTP/1.1
/// keep-alive, its share of the connections), all started together, their latency
/// distributions merged exactly (each prints its whole histogram: ``Wrk/script(paths:method:headers:body:histogram:)``).
struct WrkLoad {
    /// What one server's wrk is given: its port, its connections, the paths it cycles through.
    struct Target {
        var port: Int
        var connections: Int
        var paths: [String]
    }

    /// What one wrk process measured.
    struct Run {
        var requests: Int
        var seconds: Double
        var errors: Int
        /// wrk's errors by kind ("connect 0 read 0 write 0 status 3 timeout 0").
        var errorKinds = ""
        /// Latency in microseconds → how many requests took it.
        var latencies: [Int: Int]

        /// Parses the `HEARTH-WRK` and `HEARTH-LATENCY` lines of wrk's output.
        init(parsing text: String) throws {
            var summary: [Int]?
            var latencies: [Int: Int] = [:]
            var errorKinds = ""
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.first == "HEARTH-ERRORS" {
                    errorKinds = fields.dropFirst().joined(separator: " ")
                } else if fields.first == "HEARTH-WRK", fields.count == 4 {
                    summary = fields.dropFirst().compactMap { Double($0).map { Int($0) } }
                } else if fields.first == "HEARTH-LATENCY", fields.count == 3, let value = Double(fields[1]), let count = Double(fields[2]) {
                    latencies[Int(value), default: 0] += Int(count)
                }
            }
            guard let summary, summary.count == 3 else { throw BenchError("wrk printed no summary: \(text.prefix(500))") }
            requests = summary[0]
            seconds = Double(summary[1]) / 1e6
            errors = summary[2]
            self.latencies = latencies
            self.errorKinds = errorKinds
        }
    }

    /// The merged result of every server's wrk.
    struct Result {
        var runs: [Run]
        /// The wrk processes' CPU time in seconds (user + system), last read while they ran.
        var cpu: Double = 0

        var requests: Int { runs.map(\.requests).reduce(0, +) }
        var errors: Int { runs.map(\.errors).reduce(0, +) }
        /// Requests per second over all servers (each wrk's count over its own duration).
        var rate: Double { runs.map { Double($0.requests) / max($0.seconds, 1e-9) }.reduce(0, +) }

        /// A percentile of the merged distribution, in milliseconds.
        func percentile(_ p: Double) -> Double {
            var merged: [Int: Int] = [:]
            for run in runs { merged.merge(run.latencies, uniquingKeysWith: +) }
            let total = merged.values.reduce(0, +)
            guard total > 0 else { return .nan }
            let rank = min(total - 1, Int(Double(total) * p))
            var seen = 0
            for (value, count) in merged.sorted(by: { $0.key < $1.key }) {
                seen += count
                if seen > rank { return Double(value) / 1000 }
            }
            return .nan
        }

        func row(_ name: String) -> String {
            name.padding(toLength: 46, withPad: " ", startingAt: 0)
                + String(format: " %10.0f %10.3f %10.3f %8d", rate, percentile(0.5), percentile(0.99), errors)
        }
    }

    let wrk: Wrk
    let scratch: String

    /// Starts one wrk per target; `started` is called with their pids once all run (to sample
    /// CPU); returns when all finished.
    func run(
        _ targets: [Target], method: String, headers: [String: String], body: String?, duration: Double,
        started: ([Int32]) -> Void = { _ in }
    ) async throws -> Result {
        var processes: [(Process, String, String)] = []
        defer {
            for (process, script, output) in processes {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                try? FileManager.default.removeItem(atPath: script)
                try? FileManager.default.removeItem(atPath: output)
            }
        }
        for target in targets {
            let id = UUID().uuidString
            let script = scratch + "/wrk-\(id).lua", output = scratch + "/wrk-\(id).out"
            try Wrk.script(paths: target.paths, method: method, headers: headers, body: body, histogram: true)
                .write(toFile: script, atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            defer { try? handle.close() }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: wrk.executable)
            process.arguments = [
                "-t1", "-c\(target.connections)", "-d\(max(1, Int(duration.rounded())))s", "--timeout", "30s", "-s", script,
                "http://127.0.0.1:\(target.port)/",
            ]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            processes.append((process, script, output))
        }
        let pids = processes.map { $0.0.processIdentifier }
        started(pids)
        // A process's /proc entry is gone once it exited: its CPU time is read while it runs.
        var cpu: [Int32: Double] = [:]
        while processes.contains(where: { BenchProcess.isAlive($0.0) }) {
            for pid in pids { if let used = BenchProcess.stat(pid)?.cpu { cpu[pid] = used } }
            try await Task.sleep(for: .milliseconds(20))
        }
        var runs: [Run] = []
        for (process, _, output) in processes {
            try await BenchProcess.waitForExit(process)
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            guard process.terminationStatus == 0 else { throw BenchError("wrk failed (\(process.terminationStatus)): \(text.prefix(500))") }
            runs.append(try Run(parsing: text))
        }
        return Result(runs: runs, cpu: cpu.values.reduce(0, +))
    }
}
