import Foundation
import HearthCore
import PostgresNIO
import Synchronization
import Testing

@testable import HearthPostgres

@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresSchemaTests {
    static func appliedVersions(_ settings: PostgresSettings) async throws -> [Int] {
        try await TestPostgres.withConnection(settings) { connection in
            try await connection.query("SELECT version FROM hearth_schema_migrations ORDER BY version", logger: TestPostgres.logger)
                .collect().map { try $0.decode(Int.self) }
        }
    }

    @Test func migrationsApplyOnceAndAgainChangeNothing() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        let all = PostgresSchema.migrations.map(\.version)
        #expect(all == Array(1...PostgresSchema.currentVersion), "versions are numbered 1, 2, 3, … without gaps")
        #expect(try await PostgresSchema.migrate(settings, logger: TestPostgres.logger) == all)
        #expect(try await PostgresSchema.migrate(settings, logger: TestPostgres.logger).isEmpty)
        #expect(try await Self.appliedVersions(settings) == all)
        let backend = await TestPostgres.shared.start(settings)
        #expect(try await PostgresSchema.version(backend) == PostgresSchema.currentVersion)
    }

    /// Replicas starting at once: every migrator connects on its own; the advisory lock lets one
    /// apply each migration and the others find nothing left.
    @Test func processesStartingAtOnceApplyEachMigrationOnce() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        let results = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<6 { group.addTask { try await PostgresSchema.migrate(settings, logger: TestPostgres.logger) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.flatMap { $0 }.sorted() == PostgresSchema.migrations.map(\.version))
        #expect(results.filter { !$0.isEmpty }.count == 1, "one migrator applied everything: \(results)")
        #expect(try await Self.appliedVersions(settings) == PostgresSchema.migrations.map(\.version))
    }

    /// The lock is really taken: a migrator waits while another session holds it.
    @Test func aMigratorWaitsForTheAdvisoryLock() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        let finished = Flag()
        try await TestPostgres.withConnection(settings) { holder in
            _ = try await holder.query("SELECT pg_advisory_lock(\(PostgresSchema.lockKey))", logger: TestPostgres.logger).collect()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
                    finished.set()
                }
                try await Task.sleep(for: .milliseconds(700))
                #expect(finished.isSet == false, "migrated while another session held the lock")
                _ = try await holder.query("SELECT pg_advisory_unlock(\(PostgresSchema.lockKey))", logger: TestPostgres.logger).collect()
                try await group.waitForAll()
            }
        }
        #expect(finished.isSet)
        #expect(try await Self.appliedVersions(settings) == PostgresSchema.migrations.map(\.version))
    }

    /// An older binary over a newer schema refuses to start, naming both versions.
    @Test func aSchemaNewerThanTheBinaryIsRefused() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let older = Array(PostgresSchema.migrations.dropLast())
        do {
            _ = try await PostgresSchema.migrate(settings, migrations: older, logger: TestPostgres.logger)
            Issue.record("an older binary migrated a newer schema")
        } catch let error as HearthError {
            #expect(error.code == .failedPrecondition)
            let found = PostgresSchema.currentVersion, supported = older.last?.version ?? 0
            #expect((error.cause as? PostgresBackendError)?.reason == .schemaTooNew(found: found, supported: supported))
            #expect(error.message.contains("schema version \(found)") && error.message.contains("(\(supported))"), "\(error.message)")
        }
        #expect(try await Self.appliedVersions(settings) == PostgresSchema.migrations.map(\.version), "nothing changed")
    }

    /// Nothing listens on the port: UNAVAILABLE, naming the endpoint and the cause.
    @Test func anUnreachableDatabaseIsAClearError() async throws {
        let port = try TestPostgres.freePort()
        var settings = PostgresSettings(host: "127.0.0.1", port: port, username: "postgres", database: "hearth", tls: .disable)
        settings.connectTimeout = .seconds(2)
        do {
            try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
            Issue.record("migrated a database that does not exist")
        } catch let error as HearthError {
            #expect(error.code == .unavailable)
            #expect((error.cause as? PostgresBackendError)?.reason == .unavailable)
            #expect(error.message.contains("127.0.0.1:\(port)"), "\(error.message)")
            #expect(error.message.lowercased().contains("refused"), "the cause is named: \(error.message)")
        }
    }
}

@Suite struct PostgresSettingsTests {
    @Test func urlsParseLikeLibpq() throws {
        let full = try PostgresSettings(url: "postgres://hearth:s%40cret@db.example:6543/app?sslmode=require")
        #expect(full.host == "db.example" && full.port == 6543 && full.username == "hearth" && full.password == "s@cret")
        #expect(full.database == "app" && full.tls == .require)
        #expect(full.description == "postgres://hearth@db.example:6543/app", "no password in descriptions")
        let bare = try PostgresSettings(url: "postgresql://localhost")
        #expect(bare.port == 5432 && bare.username == "postgres" && bare.database == nil && bare.tls == .prefer)
        let socket = try PostgresSettings(url: "postgres://u@/db?host=/var/run/postgresql&sslmode=disable")
        #expect(socket.socketDirectory == "/var/run/postgresql" && socket.endpoint == "/var/run/postgresql/.s.PGSQL.5432")
        for bad in ["mysql://x/y", "not a url", "postgres://h/d?sslmode=sometimes"] {
            #expect(throws: HearthError.self, "\(bad)") { try PostgresSettings(url: bad) }
        }
    }
}

/// A flag one task sets and another reads.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
