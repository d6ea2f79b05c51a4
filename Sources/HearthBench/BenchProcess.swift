import Foundation

/// Child processes of the bench that run beside it — `hearth serve` replicas, wrk, psql — and
/// the CPU time of processes, read from `/proc`, so that a phase shows where the time went
/// instead of guessing it.
enum BenchProcess {
    /// Runs `executable` with `arguments` to its end without blocking a thread of the
    /// concurrency pool (its output goes to a file, read once it exited). Cancelling the task
    /// terminates the process.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, scratch: String
    ) async throws -> (status: Int32, output: String) {
        let outputPath = scratch + "/process-\(UUID().uuidString).out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try await waitForExit(process)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return (process.terminationStatus, text)
    }

    /// Waits until `process` exited and Foundation reaped it (its `terminationStatus` can be
    /// read: for processes that start no children of their own); when the task is cancelled,
    /// terminates it (SIGTERM, then SIGKILL after 5 s) and throws `CancellationError`.
    static func waitForExit(_ process: Process) async throws {
        while process.isRunning {
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                await stop(process, grace: .seconds(5))
                throw error
            }
        }
    }

    /// SIGTERM, then SIGKILL once `grace` passed; returns when the process is gone, and whether
    /// it had to be killed.
    @discardableResult
    static func stop(_ process: Process, grace: Duration) async -> Bool {
        guard isAlive(process) else { return false }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while isAlive(process) && ContinuousClock.now < deadline { await pause() }
        let killed = isAlive(process)
        if killed { kill(process.processIdentifier, SIGKILL) }
        while isAlive(process) { await pause() }
        return killed
    }

    /// Whether `process` still runs. Not `isRunning` alone: Foundation learns of an exit when the
    /// socket it gave the child closes, which a descendant that inherited it (a crash backtracer,
    /// a shell's subshell) delays; an exited child that nobody reaped yet is a zombie (`Z`).
    static func isAlive(_ process: Process) -> Bool {
        guard process.isRunning, let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return false }
        let state = text[text.index(after: close)...].drop { $0 == " " }.first
        return state != "Z" && state != "X"
    }

    /// 20 ms, also in a cancelled task (where `Task.sleep` returns at once): the clean-up after
    /// a cancellation still waits for its processes.
    static func pause() async {
        if Task.isCancelled { usleep(20_000) } else { try? await Task.sleep(for: .milliseconds(20)) }
    }

    /// `name` on the PATH, else in the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout).
    static func find(_ name: String, postgres: Bool = false) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        var directories = path.split(separator: ":").map(String.init)
        if postgres {
            let root = "/usr/lib/postgresql"
            let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
            directories += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "\(root)/\($0)/bin" }
        }
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The path of this process's own executable (`hearth`, when the bench runs from the CLI).
    static var ownExecutable: String? {
        if let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return link }
        return Bundle.main.executablePath
    }

    // MARK: CPU time from /proc

    /// Clock ticks per second of `/proc`'s times.
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// One process's `/proc/<pid>/stat`: its parent and its user + system CPU time in seconds;
    /// nil when it is gone (or this is not Linux).
    static func stat(_ pid: Int32) -> (parent: Int32, cpu: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm) ": state ppid … utime (14th field) stime (15th).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let parent = Int32(fields[1]), let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (parent, (user + system) / ticksPerSecond)
    }

    /// The children of `parent` with their command lines (PostgreSQL writes a backend's title
    /// there: "postgres: user database host(port) idle").
    static func children(of parent: Int32) -> [(pid: Int32, title: String)] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> (Int32, String)? in
            guard let pid = Int32(entry), let s = stat(pid), s.parent == parent else { return nil }
            let raw = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
            let title = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            return (pid, title)
        }
    }

    /// The whole machine's busy and iowait time in seconds of CPU (`/proc/stat`'s first line).
    static func machine() -> (busy: Double, iowait: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8), let line = text.split(separator: "\n").first,
            line.hasPrefix("cpu ")
        else { return nil }
        let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard values.count >= 5 else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is already in user).
        let total = values.prefix(8).reduce(0, +)
        return ((total - values[3] - values[4]) / ticksPerSecond, values[4] / ticksPerSecond)
    }
}
