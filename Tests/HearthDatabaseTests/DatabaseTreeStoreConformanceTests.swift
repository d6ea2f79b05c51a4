import Foundation
import HearthCore
import HearthSQLite
import HearthStoreConformance
import Testing

@testable import HearthDatabase

/// Every ``DatabaseTreeStore`` backend runs the same scenarios (`HearthStoreConformance`;
/// HearthPostgresTests runs them on PostgreSQL).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, sqlite

    var testDescription: String { rawValue }

    func make() throws -> any DatabaseTreeStore {
        switch self {
        case .memory: return InMemoryDatabaseTreeStore()
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            return try SQLiteDatabaseTreeStore(path: dir.appendingPathComponent("database.sqlite").path)
        }
    }
}

func path(_ text: String) -> DatabasePath { DatabasePath(text.split(separator: "/").map(String.init)) }

@Suite struct DatabaseTreeStoreConformanceTests {
    @Test(arguments: StoreKind.allCases, DatabaseTreeStoreConformance.all)
    func conformance(_ kind: StoreKind, _ scenario: DatabaseTreeStoreConformance.Case) async throws {
        try await scenario.run { try kind.make() }
    }
}
