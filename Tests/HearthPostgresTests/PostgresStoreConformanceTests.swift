import HearthAppCheck
import HearthAuth
import HearthDatabase
import HearthDocuments
import HearthStorage
import HearthStoreConformance
import Testing

@testable import HearthPostgres

/// The store conformance suites, unchanged, on PostgreSQL: each scenario on a fresh, migrated
/// database of the test server.
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresStoreConformanceTests {
    @Test(arguments: DocumentStoreConformance.cases)
    func documents(_ scenario: DocumentStoreConformance.Case) async throws {
        try await scenario.run { PostgresDocumentStore(backend: try await TestPostgres.shared.freshBackend()) }
    }

    /// The same with the database's one commit clock (several servers).
    @Test(arguments: DocumentStoreConformance.cases)
    func documentsOnTheSharedClock(_ scenario: DocumentStoreConformance.Case) async throws {
        try await scenario.run { PostgresDocumentStore(backend: try await TestPostgres.shared.freshBackend(), sharedClock: true) }
    }

    @Test(arguments: DatabaseTreeStoreConformance.all)
    func databaseTree(_ scenario: DatabaseTreeStoreConformance.Case) async throws {
        try await scenario.run { PostgresDatabaseTreeStore(backend: try await TestPostgres.shared.freshBackend()) }
    }

    @Test(arguments: ObjectMetadataStoreConformance.all)
    func objectMetadata(_ scenario: ObjectMetadataStoreConformance.Case) async throws {
        try await scenario.run { PostgresObjectMetadataStore(backend: try await TestPostgres.shared.freshBackend()) }
    }

    @Test(arguments: AppCheckStoreConformance.all)
    func appCheck(_ scenario: AppCheckStoreConformance.Case) async throws {
        try await scenario.run { PostgresAppCheckStore(backend: try await TestPostgres.shared.freshBackend()) }
    }

    @Test(arguments: AuthStoreConformance.scenarios)
    func auth(_ scenario: AuthStoreConformance.Scenario) async throws {
        try await scenario.run { PostgresAuthStore(backend: try await TestPostgres.shared.freshBackend()) }
    }

    @Test(arguments: SigningKeyStoreConformance.all)
    func signingKeys(_ scenario: SigningKeyStoreConformance.Case) async throws {
        try await scenario.run { PostgresSigningKeyStore(backend: try await TestPostgres.shared.freshBackend()) }
    }

    @Test(arguments: RuntimeRulesStoreConformance.all)
    func runtimeRules(_ scenario: RuntimeRulesStoreConformance.Case) async throws {
        try await scenario.run { PostgresRuntimeRulesStore(backend: try await TestPostgres.shared.freshBackend()) }
    }

    @Test(arguments: ReplicaRegistryConformance.all)
    func replicaRegistry(_ scenario: ReplicaRegistryConformance.Case) async throws {
        try await scenario.run { PostgresReplicaRegistry(backend: try await TestPostgres.shared.freshBackend()) }
    }

    @Test(arguments: ConsoleSessionStoreConformance.all)
    func consoleSessions(_ scenario: ConsoleSessionStoreConformance.Case) async throws {
        try await scenario.run { PostgresConsoleSessionStore(backend: try await TestPostgres.shared.freshBackend()) }
    }
}
