public import HearthCore
import PostgresNIO

/// Rules loaded at run time (emulator mode) for every server over the database, in
/// `runtime_rules` with one version row in `runtime_rules_version` (migration 12 of
/// ``PostgresSchema``). A publish takes the version row's lock, so publishes are ordered and each
/// gets its own version; a server reads the version (one primary-key read) before each request
/// its rules judge and the whole table only when it moved.
public struct PostgresRuntimeRulesStore: RuntimeRulesStore {
    let backend: PostgresBackend

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    public func version() async throws -> Int64 {
        try await backend.read { db in
            try await db.value("SELECT version FROM runtime_rules_version WHERE id = 0", as: Int64.self) ?? 0
        }
    }

    public func snapshot() async throws -> (version: Int64, rules: [RuntimeRules]) {
        try await backend.snapshot { db in
            let version = try await db.value("SELECT version FROM runtime_rules_version WHERE id = 0", as: Int64.self) ?? 0
            let rules = try await db.rows("SELECT service, scope, file_name, source FROM runtime_rules ORDER BY service, scope").map { row in
                let (service, scope, fileName, source) = try row.decode((String, String, String, String?).self)
                return RuntimeRules(service: service, scope: scope, fileName: fileName, source: source)
            }
            return (version, rules)
        }
    }

    public func publish(_ rules: RuntimeRules) async throws -> Int64 {
        try await backend.writeCommitted { db in
            let version = try await db.value(
                "UPDATE runtime_rules_version SET version = version + 1 WHERE id = 0 RETURNING version", as: Int64.self) ?? 0
            try await db.execute(
                """
                INSERT INTO runtime_rules (service, scope, file_name, source, version)
                VALUES (\(rules.service), \(rules.scope), \(rules.fileName), \(rules.source), \(version))
                ON CONFLICT (service, scope) DO UPDATE SET file_name = excluded.file_name, source = excluded.source, version = excluded.version
                """)
            return version
        }
    }
}
