import Foundation
import HearthDocuments
import HearthSQLite
import HearthStoreConformance
import Testing

/// The ``DocumentStore`` contract (`HearthStoreConformance`), every scenario against every
/// backend of this target: SQLite in memory and in a WAL file. A PostgreSQL store runs the same
/// cases from its own test target.
@Suite("DocumentStore conformance")
struct DocumentStoreConformanceTests {
    @Test("DocumentStore conformance", arguments: Backend.allCases, DocumentStoreConformance.cases)
    func conformance(_ backend: Backend, _ scenario: DocumentStoreConformance.Case) async throws {
        switch backend {
        case .sqliteInMemory:
            try await scenario.run { try SQLiteDocumentStore.inMemory() }
        case .sqliteFile:
            try await withTemporaryDirectory { dir in
                try await scenario.run { try SQLiteDocumentStore(path: dir.appendingPathComponent("hearth.sqlite").path) }
            }
        }
    }
}
