import Foundation
import HearthCore
import Logging
import PostgresNIO
import Testing

@testable import HearthPostgres

/// The PostgreSQL server of this test process, and a fresh database per store.
///
/// `HEARTH_TEST_POSTGRES_URL` (a superuser URL) points the tests at a running server. Without it,
/// the first test starts one: `initdb` into a temporary directory, `postgres` on 127.0.0.1 on a
/// free port (trust authentication, fsync off), run as the `postgres` OS user when the tests run as
/// root (initdb refuses root). A watchdog shell beside the server stops it (and removes its
/// directory) as soon as this process is gone — whether it exited or was killed. One server per
/// test process: initdb costs seconds, a database milliseconds.
///
/// When neither a URL nor PostgreSQL's binaries (`/usr/lib/postgresql/*/bin`, Debian's
/// `postgresql` package) are there, the tests are reported as not run with the reason, or fail
/// when `HEARTH_REQUIRE_POSTGRES=1` (scripts/test sets it: CI never skips them silently).
actor TestPostgres {
    static let shared = TestPostgres()

    /// Whether the tests can run here (a URL, or binaries to start a server with).
    static var available: Bool {
        ProcessInfo.processInfo.environment["HEARTH_TEST_POSTGRES_URL"] != nil || binDirectory != nil
            || ProcessInfo.processInfo.environment["HEARTH_REQUIRE_POSTGRES"] == "1"
    }

    /// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `postgres`.
    static var binDirectory: String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "\(root)/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") && FileManager.default.isExecutableFile(atPath: "\($0)/postgres") }
    }

    /// Warnings and errors only: every fresh database logs its migrations at info.
    static let logger = {
        var logger = Logger(label: "hearth.postgres.tests")
        logger.logLevel = .warning
        return logger
    }()

    /// The one start of the server (callers that arrive while it starts wait for the same one).
    private var admin: Task<PostgresSettings, any Error>?
    private var counter = 0
    /// The pools' run tasks: they live as long as the test process.
    private var running: [Task<Void, any Error>] = []

    /// The server's superuser settings (starting the server on first use).
    func adminSettings() async throws -> PostgresSettings {
        if let admin { return try await admin.value }
        let start = Task {
            if let url = ProcessInfo.processInfo.environment["HEARTH_TEST_POSTGRES_URL"] { return try PostgresSettings(url: url) }
            return try await Self.startServer()
        }
        admin = start
        return try await start.value
    }

    /// Settings for a new, empty database on the server (not migrated).
    func freshDatabase() async throws -> PostgresSettings {
        var settings = try await adminSettings()
        counter += 1
        let name = "hearth_test_\(ProcessInfo.processInfo.processIdentifier)_\(counter)_\(UInt32.random(in: 0...UInt32.max))"
        try await Self.withConnection(settings) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: Self.logger).collect()
        }
        settings.database = name
        settings.maximumConnections = 4
        settings.connectionIdleTimeout = .seconds(5)
        // Scenarios queue dozens of calls on four connections (40 concurrent commits); on a loaded
        // machine a lease waited longer than the default 5 s. The fault tests, which test the
        // timeout, set their own.
        settings.acquireTimeout = .seconds(30)
        return settings
    }

    /// A running pool over a new, migrated database.
    func freshBackend() async throws -> PostgresBackend {
        let settings = try await freshDatabase()
        try await PostgresSchema.migrate(settings, logger: Self.logger)
        return start(settings)
    }

    /// Runs a pool for `settings` for the rest of the test process.
    func start(_ settings: PostgresSettings) -> PostgresBackend {
        let backend = PostgresBackend(settings: settings, logger: Self.logger)
        running.append(Task { try await backend.run() })
        return backend
    }

    /// One direct connection to `settings` for `body`.
    /// Ends the connection while PostgreSQL runs a write's COMMIT and expects the write to fail
    /// UNAVAILABLE, never to succeed. A deferred constraint trigger (`trigger`, e.g.
    /// "AFTER INSERT ON t") holds every such commit inside COMMIT, sleeping; this backend is then
    /// terminated. `write` returns a description of what it got, recorded if it succeeds.
    static func cutOffDuringCommit(
        _ settings: PostgresSettings, trigger: String, _ write: @escaping @Sendable () async throws -> String
    ) async throws {
        let logger = Self.logger
        let table = trigger.components(separatedBy: " ").last ?? ""
        try await withConnection(settings) { admin in
            // Test-only: every commit the trigger fires for sleeps inside COMMIT.
            _ = try await admin.query(
                "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$",
                logger: logger
            ).collect()
            _ = try await admin.query(
                PostgresQuery(
                    unsafeSQL: "CREATE CONSTRAINT TRIGGER slow_commit \(trigger) DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()"),
                logger: logger
            ).collect()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        let result = try await write()
                        Issue.record("a write whose COMMIT was cut off returned \(result)")
                    } catch let error as HearthError {
                        #expect(error.code == .unavailable, "\(error)")
                    }
                }
                var terminated = 0
                let deadline = ContinuousClock.now + .seconds(30)
                while terminated == 0 && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    terminated = try await admin.query(
                        """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE datname = current_database() AND state = 'active' AND query = 'COMMIT' AND pid <> pg_backend_pid()
                        """, logger: logger
                    ).collect().count
                }
                #expect(terminated == 1, "the write reached its COMMIT")
                try await group.waitForAll()
            }
            _ = try await admin.query(PostgresQuery(unsafeSQL: "DROP TRIGGER slow_commit ON \(table)"), logger: logger).collect()
        }
    }

    static func withConnection<Result: Sendable>(
        _ settings: PostgresSettings, _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let connection = try await PostgresConnection.connect(
            on: PostgresConnection.defaultEventLoopGroup.next(), configuration: try settings.connectionConfiguration(), id: 1, logger: logger
        ).get()
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    // MARK: Starting a server

    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    static func startServer() async throws -> PostgresSettings {
        guard let bin = binDirectory else {
            throw StartFailure(
                description: "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install -y postgresql, "
                    + "or set HEARTH_TEST_POSTGRES_URL")
        }
        let asRoot = getuid() == 0
        var lastError = ""
        for _ in 0..<3 {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pg-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if asRoot { try run("/bin/chown", ["postgres:postgres", directory]) }
            // initdb (as the postgres user when we are root: it refuses root).
            try run(
                bin + "/initdb", ["-D", directory + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
                asPostgres: asRoot)
            let port = try freePort()
            let settings = PostgresSettings(host: "127.0.0.1", port: port, username: "postgres", database: "postgres", tls: .disable)
            // The server and its watchdog: when this process is gone (or asks, with a `stop` file), stop
            // the server and remove the directory.
            let script = """
                "$1/postgres" -D "$2/data" -p "$3" -k "$2" -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \\
                  -c full_page_writes=off -c max_connections=400 -c shared_buffers=32MB >"$2/server.log" 2>&1 &
                server=$!
                while [ -d "/proc/$4" ] && [ ! -e "$2/stop" ] && kill -0 "$server" 2>/dev/null; do sleep 0.5; done
                kill -INT "$server" 2>/dev/null; wait "$server"; rm -rf "$2" || { sleep 1; rm -rf "$2"; }
                """
            let arguments = ["-c", script, "hearth-postgres", bin, directory, String(port), String(getpid())]
            let process = Process()
            if asRoot {
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
                process.arguments = ["-u", "postgres", "--", "/bin/sh"] + arguments
            } else {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = arguments
            }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline, process.isRunning {
                do {
                    try await withConnection(settings) { connection in
                        _ = try await connection.query("SELECT 1", logger: logger).collect()
                    }
                    return settings
                } catch {
                    lastError = "\(String(reflecting: error))"
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // The port was taken between picking and binding, or the server did not come up: stop it, try again.
            lastError += "\n" + ((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")
            _ = FileManager.default.createFile(atPath: directory + "/stop", contents: nil)
            process.waitUntilExit()
        }
        throw StartFailure(description: "PostgreSQL did not start: \(lastError)")
    }

    static func run(_ executable: String, _ arguments: [String], asPostgres: Bool = false) throws {
        let process = Process()
        if asPostgres {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw StartFailure(description: "\(executable) \(arguments.joined(separator: " ")) failed: \(text)")
        }
    }

    /// A port the OS picks on 127.0.0.1 (free when we looked).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StartFailure(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw StartFailure(description: "bind() failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
