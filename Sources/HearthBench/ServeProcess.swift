import Foundation

/// One `hearth serve` in a process of its own, for the phases that measure whole servers (the
/// replicas phase): `--emulator` on a data directory of its own, every port 0 (the OS picks;
/// they are read from `--ready-file`), over PostgreSQL when `databaseURL` is given and over the
/// data directory's SQLite files otherwise. The child's environment has no `HEARTH_*` variable
/// and it runs in the data directory's parent (no firebase.json of the caller's applies).
///
/// A watchdog shell (bash: dash cannot close descriptors above 9) starts it (`exec`, so the child's pid is the server's): if this process
/// goes away without stopping it (killed, interrupted), the server gets SIGTERM within a second,
/// and SIGKILL 10 s later if it is still there.
final class ServeProcess: Sendable {
    let process: Process
    let ports: [String: Int]
    let log: String

    var pid: Int32 { process.processIdentifier }
    var firestorePort: Int { ports["firestore"] ?? 0 }

    private init(process: Process, ports: [String: Int], log: String) {
        self.process = process
        self.ports = ports
        self.log = log
    }

    static let portFlags = [
        "--firestore-port", "0", "--auth-port", "0", "--storage-port", "0", "--s3-port", "0", "--database-port", "0", "--api-port", "0",
        "--console-port", "0",
    ]

    /// The watchdog: `$1` is this process's pid, the rest the server's command line. The watching
    /// subshell first closes every descriptor it inherited above stderr: Foundation learns that a
    /// child exited when the socket it handed the child closes, which a descendant holding a copy
    /// would delay for ever.
    static let watchdog = """
        parent=$1; shift
        (for fd in /proc/self/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-"; done 2>/dev/null
         while kill -0 "$parent" 2>/dev/null && kill -0 $$ 2>/dev/null; do sleep 1; done
         kill -0 "$parent" 2>/dev/null && exit
         kill -TERM $$ 2>/dev/null
         for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1; kill -0 $$ 2>/dev/null || exit; done
         kill -KILL $$ 2>/dev/null) &
        exec "$@"
        """

    /// Starts the server and waits for its ready file (at most `timeout`); if it exits first or
    /// does not get ready in time, throws with the end of its log (and stops it).
    static func start(
        executable: String, dataDirectory: String, databaseURL: String?, timeout: Duration = .seconds(180)
    ) async throws -> ServeProcess {
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let readyFile = dataDirectory + ".ready.json"
        let log = dataDirectory + ".log"
        try? FileManager.default.removeItem(atPath: readyFile)
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        var arguments = [
            executable, "serve", "--emulator", "--data-dir", dataDirectory, "--project", "demo-hearth", "--host", "127.0.0.1",
        ]
        arguments += portFlags + ["--ready-file", readyFile]
        if let databaseURL { arguments += ["--database-url", databaseURL] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", watchdog, "hearth-serve", String(getpid())] + arguments
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HEARTH_") }
        // A crash (e.g. a stop that outlasts the server's own shutdown timeout) ends at once
        // instead of symbolicating a backtrace for minutes on a loaded machine.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: dataDirectory).deletingLastPathComponent()
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? output.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while true {
            if let ports = readPorts(readyFile) { return ServeProcess(process: process, ports: ports, log: log) }
            let failure: String?
            if !BenchProcess.isAlive(process) {
                failure = "hearth serve exited before it was ready"
            } else if ContinuousClock.now > deadline {
                failure = "hearth serve was not ready within \(timeout)"
            } else if Task.isCancelled {
                failure = "cancelled"
            } else {
                failure = nil
            }
            if let failure {
                await BenchProcess.stop(process, grace: .seconds(10))
                let tail = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").suffix(2000)
                throw BenchError("\(failure) (\(log)):\n\(tail)")
            }
            await BenchProcess.pause()
        }
    }

    /// The ready file's ports, once it is there and complete.
    static func readPorts(_ path: String) -> [String: Int]? {
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        let ports = object.compactMapValues { ($0 as? Int) ?? ($0 as? NSNumber)?.intValue }
        return ports["firestore"] == nil ? nil : ports
    }

    /// SIGTERM (a graceful stop), SIGKILL after 10 s (said on stderr); returns once the process is gone.
    func stop() async {
        if await BenchProcess.stop(process, grace: .seconds(10)) {
            FileHandle.standardError.write(Data("  hearth serve (pid \(pid)) did not stop within 10 s of SIGTERM: killed (\(log))\n".utf8))
        }
    }
}

/// The servers of one configuration that started so far, to stop them whatever happens.
final class StartedServers: Sendable {
    private let servers = Mutex2<[ServeProcess]>([])

    func add(_ server: ServeProcess) { servers.withLock { $0.append(server) } }
    var all: [ServeProcess] { servers.withLock { $0 } }

    func stopAll() async {
        let all = servers.withLock { list in
            let copy = list
            list = []
            return copy
        }
        await withTaskGroup(of: Void.self) { group in
            for server in all { group.addTask { await server.stop() } }
        }
    }
}
