import Foundation
import Synchronization

/// A tiny wrapper so `Counter` can hold a `Mutex` in a final class.
final class Mutex2<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ v: Value) { mutex = Mutex(v) }
    func withLock<R: Sendable>(_ body: (inout sending Value) -> sending R) -> R { mutex.withLock(body) }
}

/// `wrk`, when it is installed: load from a process of its own, so the server does not share
/// its cores' time with an in-process client's HTTP stack. Requests cycle through `urls`
/// (a Lua script hands them out); the result is one `Measurement`-style row.
struct Wrk {
    let executable: String

    /// `wrk` on the PATH, or nil.
    static func find() -> Wrk? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/wrk"
            if FileManager.default.isExecutableFile(atPath: candidate) { return Wrk(executable: candidate) }
        }
        return nil
    }

    /// Runs GETs of `urls` (same host) over `connections` connections for `duration` seconds.
    func run(_ name: String, urls: [URL], connections: Int, duration: Double, scratch: String) throws -> String {
        try format(name, measure(urls: urls, connections: connections, duration: duration, scratch: scratch))
    }

    /// What one wrk run measured.
    struct Result {
        var rate: Double
        var p50: Double?
        var p99: Double?
        var errors: Int
    }

    func format(_ name: String, _ r: Result) -> String {
        name.padding(toLength: 46, withPad: " ", startingAt: 0)
            + String(format: " %10.0f %10.3f %10.3f %8d", r.rate, r.p50 ?? .nan, r.p99 ?? .nan, r.errors)
    }

    /// Requests of `method` to `urls` in turn (same host), with `headers` and `body`.
    func measure(
        urls: [URL], method: String = "GET", headers: [String: String] = [:], body: String? = nil, connections: Int, duration: Double,
        scratch: String
    ) throws -> Result {
        guard let first = urls.first, let scheme = first.scheme, let host = first.host, let port = first.port else {
            throw BenchError("wrk needs absolute URLs")
        }
        let paths = urls.map { u -> String in
            let q = u.query(percentEncoded: true).map { "?\($0)" } ?? ""
            return u.path(percentEncoded: true) + q
        }
        let script = Self.script(paths: paths, method: method, headers: headers, body: body)
        let scriptPath = scratch + "/wrk-\(UUID().uuidString).lua"
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: scriptPath) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "-t1", "-c\(connections)", "-d\(max(1, Int(duration.rounded())))s", "--latency", "-s", scriptPath, "\(scheme)://\(host):\(port)/",
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0, let rate = Self.number(after: "Requests/sec:", in: text) else {
            throw BenchError("wrk failed: \(text.prefix(500))")
        }
        let p50 = Self.latency("50%", in: text), p99 = Self.latency("99%", in: text)
        var errors = 0
        if let non2xx = Self.number(after: "Non-2xx or 3xx responses:", in: text) { errors += Int(non2xx) }
        if let line = text.split(separator: "\n").first(where: { $0.contains("Socket errors:") }) {
            errors += line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }.reduce(0, +)
        }
        return Result(rate: rate, p50: p50, p99: p99, errors: errors)
    }

    /// The Lua script that hands out requests of `method` to `paths` in turn, with `headers` and
    /// `body`; with `histogram`, wrk also prints its whole latency distribution at the end
    /// (`HEARTH-WRK requests duration_us errors`, `HEARTH-ERRORS` by kind, then `HEARTH-LATENCY
    /// microseconds count` lines), so that several wrk processes' runs can be merged exactly
    /// (``WrkLoad``).
    static func script(paths: [String], method: String, headers: [String: String], body: String?, histogram: Bool = false) -> String {
        func lua(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        let list = paths.map(lua)
        let headerTable = headers.map { "[\(lua($0.key))] = \(lua($0.value))" }.joined(separator: ", ")
        var script = """
            local paths = { \(list.joined(separator: ",\n")) }
            local headers = { \(headerTable) }
            local body = \(body.map(lua) ?? "nil")
            -- wrk calls request() once before the run to check the script: that call gets the
            -- last path, and the run starts with the first.
            local i = -1
            request = function()
              local path = paths[(i % #paths) + 1]
              i = i + 1
              return wrk.format(\(lua(method)), path, headers, body)
            end
            """
        if histogram {
            script += """

                done = function(summary, latency, requests)
                  local e = summary.errors
                  io.write("HEARTH-WRK ", summary.requests, " ", summary.duration, " ", e.connect + e.read + e.write + e.status + e.timeout, "\\n")
                  io.write("HEARTH-ERRORS connect ", e.connect, " read ", e.read, " write ", e.write, " status ", e.status, " timeout ", e.timeout, "\\n")
                  for n = 1, #latency do
                    local value, count = latency(n)
                    io.write("HEARTH-LATENCY ", value, " ", count, "\\n")
                  end
                end
                """
        }
        return script
    }

    static func number(after label: String, in text: String) -> Double? {
        guard let r = text.range(of: label) else { return nil }
        let rest = text[r.upperBound...].drop(while: { $0 == " " })
        return Double(rest.prefix(while: { $0.isNumber || $0 == "." }))
    }

    /// A percentile of wrk's latency distribution, in milliseconds.
    static func latency(_ percentile: String, in text: String) -> Double? {
        guard let line = text.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix(percentile + " ") })
        else { return nil }
        let value = line.split(separator: " ").last.map(String.init) ?? ""
        let digits = value.prefix(while: { $0.isNumber || $0 == "." })
        guard let v = Double(digits) else { return nil }
        switch value.dropFirst(digits.count) {
        case "us": return v / 1000
        case "ms": return v
        case "s": return v * 1000
        case "m": return v * 60_000
        default: return nil
        }
    }
}
