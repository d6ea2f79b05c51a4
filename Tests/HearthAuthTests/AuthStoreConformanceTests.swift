import Testing
import HearthStoreConformance
@testable import HearthAuth

/// The AuthStore conformance suite (HearthStoreConformance) on every backend of this package:
/// in memory, SQLite through a `DatabaseQueue` and through a `DatabasePool` on a file.
@Suite struct AuthStoreConformanceTests {
    @Test(arguments: Backend.allCases, AuthStoreConformance.scenarios)
    func conformance(_ backend: Backend, _ scenario: AuthStoreConformance.Scenario) async throws {
        try await scenario.run { try backend.makeStore() }
    }
}
