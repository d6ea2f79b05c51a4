import Foundation
import HearthCore
import HearthSQLite
import HearthStoreConformance
import Testing

@testable import HearthAppCheck

/// Every ``AppCheckStore`` runs the same scenarios (`HearthStoreConformance`; HearthPostgresTests
/// runs them on PostgreSQL).
enum AppCheckStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, sqlite

    var testDescription: String { rawValue }

    func make() throws -> any AppCheckStore {
        switch self {
        case .memory: return InMemoryAppCheckStore()
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-app-check-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            return try GRDBAppCheckStore.open(path: dir.appendingPathComponent("app-check.sqlite").path)
        }
    }
}

@Suite struct AppCheckStoreConformanceTests {
    @Test(arguments: AppCheckStoreKind.allCases, AppCheckStoreConformance.all)
    func conformance(_ kind: AppCheckStoreKind, _ scenario: AppCheckStoreConformance.Case) async throws {
        try await scenario.run { try kind.make() }
    }
}
