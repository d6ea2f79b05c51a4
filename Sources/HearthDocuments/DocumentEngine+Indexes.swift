import HearthCore

extension DocumentEngine {
    /// The composite indexes of a database (declared, created by an admin, or automatic), by id.
    public func compositeIndexes(database: String) async throws -> [IndexDefinition] {
        indexes.withLock { $0[database] ?? [] }.filter { $0.id >= 16 }.sorted { $0.id < $1.id }
    }

    /// How many documents a database holds, counting stops at `limit` (for overviews).
    public func countDocuments(database: String, upTo limit: Int) async throws -> Int {
        try await store.countDocuments(database, upTo: limit)
    }
}
