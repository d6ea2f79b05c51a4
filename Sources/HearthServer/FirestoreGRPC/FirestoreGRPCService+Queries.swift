import HearthCore
import HearthDocuments
import HearthFirestoreProto
import SwiftProtobuf
import Foundation

/// Queries, aggregations, partitions and collection ids.
extension FirestoreGRPCService {
    /// The parent of a query: the database root or a document.
    static func queryParent(_ parent: String) throws(HearthError) -> (DatabaseName, ResourcePath) {
        let (db, path) = try resource(parent, "parent")
        guard path.isRoot || path.isDocument else {
            throw .invalidArgument("Parent \"\(parent)\" must be a document or the database root.")
        }
        return (db, path)
    }

    func runQuery(_ r: Google_Firestore_V1_RunQueryRequest, _ call: GRPCCall, _ sender: GRPCMessageSender) async throws {
        if let handed = try await handOverRunQuery(r, call) {
            for m in handed { try sender.send(m) }
            return
        }
        let (db, parent) = try Self.queryParent(r.parent)
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        guard case .structuredQuery(let sq)? = r.queryType else { throw HearthError.invalidArgument("Missing structured_query.") }
        let query = try p.query(sq, parent: parent, "structured_query")
        try await security.checkQuery(identity, db, query)
        var txn: Data?, newTxn: Google_Firestore_V1_TransactionOptions?, readTime: Google_Protobuf_Timestamp?
        switch r.consistencySelector {
        case .transaction(let t)?: txn = t
        case .newTransaction(let o)?: newTxn = o
        case .readTime(let t)?: readTime = t
        case nil: break
        }
        let (consistency, begun) = try consistency(transaction: txn, newTransaction: newTxn, readTime: readTime, p, db)
        let result = try await engine.runQuery(db, query, consistency: consistency)
        let readTimeProto = FirestoreProto.timestamp(result.readTime)
        // The new transaction and the skipped count ride on the first response; an empty
        // result is one response with only the read time.
        var first = true
        for doc in result.documents {
            var m = Google_Firestore_V1_RunQueryResponse()
            if first {
                if let begun { m.transaction = Data(begun.bytes) }
                m.skippedResults = Int32(clamping: result.skippedResults)
                first = false
            }
            m.document = p.proto(doc)
            m.readTime = readTimeProto
            try sender.send(m)
        }
        if first {
            var m = Google_Firestore_V1_RunQueryResponse()
            if let begun { m.transaction = Data(begun.bytes) }
            m.skippedResults = Int32(clamping: result.skippedResults)
            m.readTime = readTimeProto
            try sender.send(m)
        }
    }

    func runAggregationQuery(_ r: Google_Firestore_V1_RunAggregationQueryRequest, _ call: GRPCCall, _ sender: GRPCMessageSender) async throws {
        if let handed = try await handOverRunAggregation(r, call) {
            for m in handed { try sender.send(m) }
            return
        }
        let (db, parent) = try Self.queryParent(r.parent)
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        guard case .structuredAggregationQuery(let saq)? = r.queryType, case .structuredQuery(let sq)? = saq.queryType else {
            throw HearthError.invalidArgument("Missing structured_aggregation_query.structured_query.")
        }
        let query = try p.query(sq, parent: parent, "structured_aggregation_query.structured_query")
        let aggregations = try p.aggregations(saq.aggregations, "structured_aggregation_query.aggregations")
        try await security.checkQuery(identity, db, query)
        var txn: Data?, newTxn: Google_Firestore_V1_TransactionOptions?, readTime: Google_Protobuf_Timestamp?
        switch r.consistencySelector {
        case .transaction(let t)?: txn = t
        case .newTransaction(let o)?: newTxn = o
        case .readTime(let t)?: readTime = t
        case nil: break
        }
        let (consistency, begun) = try consistency(transaction: txn, newTransaction: newTxn, readTime: readTime, p, db)
        let result = try await engine.runAggregation(db, query, aggregations, consistency: consistency)
        var m = Google_Firestore_V1_RunAggregationQueryResponse()
        if let begun { m.transaction = Data(begun.bytes) }
        var fields: [String: Google_Firestore_V1_Value] = [:]
        for (alias, value) in result.values { fields[alias] = p.proto(value) }
        m.result.aggregateFields = fields
        m.readTime = FirestoreProto.timestamp(result.readTime)
        try sender.send(m)
    }

    /// Splits a collection group into up to `partition_count` ranges by document name: the
    /// answer is the `partition_count - 1` (or fewer) cursors between them, in name order.
    func partitionQuery(_ r: Google_Firestore_V1_PartitionQueryRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_PartitionQueryResponse {
        let (db, parent) = try Self.queryParent(r.parent)
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        guard case .structuredQuery(let sq)? = r.queryType else { throw HearthError.invalidArgument("Missing structured_query.") }
        var query = try p.query(sq, parent: parent, "structured_query")
        guard query.allDescendants else {
            throw HearthError.invalidArgument("PartitionQuery requires a collection group query (all_descendants).")
        }
        guard query.filter == nil, query.startAt == nil, query.endAt == nil, query.offset == 0, query.limit == nil,
              query.orderBy.allSatisfy({ $0.field.isDocumentName && !$0.descending })
        else {
            throw HearthError.invalidArgument("PartitionQuery supports only a collection group query ordered by __name__ ascending, without filters, cursors, offset or limit.")
        }
        guard r.partitionCount > 0 else { throw HearthError.invalidArgument("partition_count must be positive.") }
        if r.pageSize < 0 { throw HearthError.invalidArgument("page_size must be non-negative.") }
        try await security.checkQuery(identity, db, query)
        var readTime = ReadConsistency.latest
        if case .readTime(let t)? = r.consistencySelector { readTime = .readTime(try FirestoreProto.timestamp(t, "read_time")) }
        query.select = []
        query.orderBy = []
        let names = try await engine.runQuery(db, query, consistency: readTime).documents.map(\.path)
        // Split points at equal shares of the group; at most partition_count - 1 of them.
        let parts = Int(min(r.partitionCount, Int64(names.count)))
        var points: [ResourcePath] = []
        if parts > 1 {
            for i in 1..<parts {
                let path = names[i * names.count / parts]
                if points.last != path { points.append(path) }
            }
        }
        var start = 0
        if !r.pageToken.isEmpty {
            guard let n = Int(r.pageToken), n >= 0, n <= points.count else { throw HearthError.invalidArgument("Invalid page token.") }
            start = n
        }
        let end = r.pageSize > 0 ? min(points.count, start + Int(r.pageSize)) : points.count
        var out = Google_Firestore_V1_PartitionQueryResponse()
        out.partitions = points[start..<end].map { path in
            var c = Google_Firestore_V1_Cursor()
            c.values = [p.proto(.reference(db.name(of: path)))]
            return c
        }
        if end < points.count { out.nextPageToken = String(end) }
        return out
    }

    func listCollectionIds(_ r: Google_Firestore_V1_ListCollectionIdsRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_ListCollectionIdsResponse {
        let (db, parent) = try Self.queryParent(r.parent)
        let identity = try await identity(call)
        if r.pageSize < 0 { throw HearthError.invalidArgument("page_size must be non-negative.") }
        var consistency = ReadConsistency.latest
        if case .readTime(let t)? = r.consistencySelector { consistency = .readTime(try FirestoreProto.timestamp(t, "read_time")) }
        try await security.checkListCollectionIds(identity, db)
        let ids = try await engine.listCollectionIds(db, parent: parent, consistency: consistency)
        var start = 0
        if !r.pageToken.isEmpty {
            guard let data = Data(base64Encoded: r.pageToken), let after = String(data: data, encoding: .utf8) else {
                throw HearthError.invalidArgument("Invalid page token.")
            }
            start = ids.firstIndex { ValueOrdering.compareUTF8($0, after) > 0 } ?? ids.count
        }
        let size = r.pageSize == 0 ? ids.count : Int(r.pageSize)
        let page = Array(ids[start..<min(ids.count, start + size)])
        var out = Google_Firestore_V1_ListCollectionIdsResponse()
        out.collectionIds = page
        if start + size < ids.count, let last = page.last { out.nextPageToken = Data(last.utf8).base64EncodedString() }
        return out
    }
}
