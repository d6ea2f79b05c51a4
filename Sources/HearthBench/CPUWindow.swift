import Foundation

/// Where the CPU went during one window: the servers, wrk, PostgreSQL's processes and the machine.
struct CPUWindow {
    let servers: [Int32]
    let postmaster: (pid: Int32, database: String)?
    var start = ContinuousClock.now
    var before: [Int32: Double] = [:]
    var machineBefore: (busy: Double, iowait: Double)?

    init(servers: [Int32], postmaster: (pid: Int32, database: String)?) {
        self.servers = servers
        self.postmaster = postmaster
    }

    /// PostgreSQL's processes: the postmaster and its children, each marked as a backend of the
    /// bench database (its title names the database) or not.
    func postgresProcesses() -> [(pid: Int32, backend: Bool)] {
        guard let postmaster else { return [] }
        return [(postmaster.pid, false)]
            + BenchProcess.children(of: postmaster.pid).map { ($0.pid, $0.title.contains(" \(postmaster.database) ")) }
    }

    mutating func begin() {
        start = ContinuousClock.now
        machineBefore = BenchProcess.machine()
        for pid in servers + postgresProcesses().map(\.pid) { before[pid] = BenchProcess.stat(pid)?.cpu }
    }

    /// Cores used in the window, by group.
    struct Usage {
        var seconds: Double
        var servers: [Double]
        var wrk: Double
        var backends: Double?
        var postgresOther: Double?
        var machine: Double?
        var iowait: Double?

        func describe(rate: Double) -> String {
            func f(_ v: Double) -> String { String(format: "%.2f", v) }
            var parts = ["hearth \(f(servers.reduce(0, +)))" + (servers.count > 1 ? " [\(servers.map(f).joined(separator: " "))]" : "")]
            if let backends { parts.append("postgres backends \(f(backends))") }
            if let postgresOther { parts.append("postgres other \(f(postgresOther))") }
            parts.append("wrk \(f(wrk))")
            var line = "cpu (cores): " + parts.joined(separator: ", ")
            let ours = servers.reduce(0, +) + wrk + (backends ?? 0) + (postgresOther ?? 0)
            if let machine {
                line += "; machine \(f(machine)) of \(ProcessInfo.processInfo.activeProcessorCount) busy (\(f(max(0, machine - ours))) outside these)"
            }
            if let iowait { line += ", iowait \(f(iowait))" }
            if rate > 0 {
                var perRequest = "hearth \(String(format: "%.2f", servers.reduce(0, +) / rate * 1000))"
                if let backends, let postgresOther { perRequest += ", postgres \(String(format: "%.2f", (backends + postgresOther) / rate * 1000))" }
                perRequest += ", wrk \(String(format: "%.2f", wrk / rate * 1000))"
                line += "; CPU ms per request: " + perRequest
            }
            return line
        }
    }

    /// The window's usage; wrk's CPU time (`wrkSeconds`) is read by ``WrkLoad`` while it runs.
    func end(wrkSeconds: Double) -> Usage {
        let seconds = max(1e-9, Self.seconds(ContinuousClock.now - start))
        func used(_ pid: Int32) -> Double {
            guard let now = BenchProcess.stat(pid)?.cpu else { return 0 }
            return max(0, now - (before[pid] ?? 0)) / seconds
        }
        let postgres = postgresProcesses()
        let machine = BenchProcess.machine()
        var usage = Usage(seconds: seconds, servers: servers.map(used), wrk: wrkSeconds / seconds)
        if self.postmaster != nil {
            usage.backends = postgres.filter(\.backend).map { used($0.pid) }.reduce(0, +)
            usage.postgresOther = postgres.filter { !$0.backend }.map { used($0.pid) }.reduce(0, +)
        }
        if let machine, let machineBefore {
            usage.machine = (machine.busy - machineBefore.busy) / seconds
            usage.iowait = (machine.iowait - machineBefore.iowait) / seconds
        }
        return usage
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
}
