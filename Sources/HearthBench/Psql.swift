import Foundation

/// SQL through `psql`, for the few statements the replicas phase runs itself (creating and
/// dropping its databases, reading counters): HearthBench has no PostgreSQL driver of its own
/// (HearthPostgres keeps postgres-nio inside). One statement per call, rows as tab-separated fields.
struct Psql {
    let executable: String
    let url: String
    let scratch: String

    func rows(_ sql: String) async throws -> [[String]] {
        var environment = ProcessInfo.processInfo.environment
        environment["PGCONNECT_TIMEOUT"] = "10"
        let (status, output) = try await BenchProcess.run(
            executable, ["-X", "-q", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql], environment: environment,
            scratch: scratch)
        guard status == 0 else { throw BenchError("psql failed on \(sql.prefix(80)): \(output.prefix(500))") }
        return output.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    /// The first row (empty when there is none).
    func row(_ sql: String) async throws -> [String] { try await rows(sql).first ?? [] }

    /// `url` naming `database` instead of its own.
    static func url(_ url: String, database: String) throws -> String {
        guard var components = URLComponents(string: url) else { throw BenchError("\(ReplicaBench.urlVariable) is not a URL") }
        components.path = "/" + database
        guard let result = components.string else { throw BenchError("\(ReplicaBench.urlVariable) is not a URL") }
        return result
    }
}
