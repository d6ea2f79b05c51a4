public import HearthCore
import Foundation

extension DocumentEngine {
    public struct ListResult: Sendable {
        public var documents: [Document]
        /// Paths of missing documents that have sub-collections (with `showMissing`).
        public var missing: [ResourcePath]
        public var nextPageToken: String?
        public var readTime: Timestamp
    }

    /// ListDocuments: a collection's documents in `orderBy` order (default `__name__`), paged
    /// with opaque tokens that carry the position after the last document returned.
    public func listDocuments(
        _ database: DatabaseName, parent: ResourcePath, collectionId: String, pageSize: Int?, pageToken: String?,
        orderBy: [Query.Order], mask: [FieldPath]?, showMissing: Bool, consistency: ReadConsistency = .latest
    ) async throws -> ListResult {
        try parent.validate()
        guard parent.isRoot || parent.isDocument else {
            throw HearthError.invalidArgument("Parent \"\(parent.text)\" must be a document or the database root.")
        }
        try ResourcePath.validateId(collectionId, in: parent.appending(collectionId))
        if let pageSize, pageSize < 0 { throw HearthError.invalidArgument("page_size must be non-negative.") }
        var query = Query(parent: parent, collectionId: collectionId, orderBy: orderBy)
        if showMissing {
            let (readTime, _) = try snapshot(for: consistency, database: database)
            let db = database.database
            let collection = query.collectionPath
            let query = query
            let nq = try NormalizedQuery(query, database: database)
            let execution = execution(nq, readTime: readTime)
            // The documents and the parents of missing ones, from one snapshot.
            let read = try await store.snapshot(
                DocumentSnapshotRead(database: db, at: readTime, scans: execution.scans, parentsBelow: collection))
            let docs = execution.finish(read.scans).documents
            let existing = Set(docs.map(\.path))
            let missing = read.parents.filter { !existing.contains($0) }
            return ListResult(documents: docs.map { $0.masked(mask) }, missing: missing.sorted(), nextPageToken: nil, readTime: readTime ?? clock.current())
        }
        let size = (pageSize ?? 0) == 0 ? 300 : pageSize!
        if let pageToken, !pageToken.isEmpty {
            query.startAt = Query.Cursor(values: try Self.decodePageToken(pageToken), before: false)
        }
        query.limit = size + 1
        var result = try await runQuery(database, query, consistency: consistency)
        var next: String?
        if result.documents.count > size {
            result.documents.removeLast()
            let nq = try NormalizedQuery(query, database: database)
            if let last = result.documents.last {
                next = Self.encodePageToken(nq.orders.map { last.value(at: $0.field, database: database) ?? .null })
            }
        }
        return ListResult(documents: result.documents.map { $0.masked(mask) }, missing: [], nextPageToken: next, readTime: result.readTime)
    }

    static func encodePageToken(_ values: [Value]) -> String {
        "H1" + Data(ValueCodec.encode(["c": .array(values)])).base64EncodedString()
    }

    static func decodePageToken(_ token: String) throws(HearthError) -> [Value] {
        guard token.hasPrefix("H1"), let data = Data(base64Encoded: String(token.dropFirst(2))),
              let fields = try? ValueCodec.decode(Array(data)), case .array(let values)? = fields["c"]
        else { throw .invalidArgument("Invalid page token.") }
        return values
    }
}
