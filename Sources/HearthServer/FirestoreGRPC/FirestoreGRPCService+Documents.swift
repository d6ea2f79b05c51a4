import HearthCore
import HearthDocuments
import HearthFirestoreProto
import SwiftProtobuf
import Foundation

/// Single-document RPCs, batch reads, transactions, commits and batch writes.
extension FirestoreGRPCService {
    /// `transaction` / `read_time` of a plain read.
    static func consistency(transaction: Data?, readTime: Google_Protobuf_Timestamp?) throws(HearthError) -> ReadConsistency {
        if let transaction {
            guard !transaction.isEmpty else { throw .invalidArgument("Invalid transaction: empty.") }
            return .transaction(TransactionID(bytes: [UInt8](transaction)))
        }
        if let readTime { return .readTime(try FirestoreProto.timestamp(readTime, "read_time")) }
        return .latest
    }

    /// `transaction` / `new_transaction` / `read_time` of a query or batch read, beginning the new transaction.
    func consistency(
        transaction: Data?, newTransaction: Google_Firestore_V1_TransactionOptions?, readTime: Google_Protobuf_Timestamp?,
        _ p: FirestoreProto, _ db: DatabaseName
    ) throws(HearthError) -> (ReadConsistency, TransactionID?) {
        if let newTransaction {
            let id = try begin(try p.transactionOptions(newTransaction), db)
            return (.transaction(id), id)
        }
        return (try Self.consistency(transaction: transaction, readTime: readTime), nil)
    }

    func getDocument(_ r: Google_Firestore_V1_GetDocumentRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_Document {
        if let handed = try await handOverGet(r, call) { return handed }
        let (db, path) = try Self.document(r.name, "name")
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        var txn: Data?, readTime: Google_Protobuf_Timestamp?
        switch r.consistencySelector {
        case .transaction(let t)?: txn = t
        case .readTime(let t)?: readTime = t
        case nil: break
        }
        let mask = r.hasMask ? try p.mask(r.mask) : nil
        let (stored, _) = try await engine.get(db, path, consistency: try Self.consistency(transaction: txn, readTime: readTime))
        try await security.checkGet(identity, db, path, stored)
        guard let doc = stored?.masked(mask) else { throw HearthError(.notFound, "Document \"\(db.name(of: path))\" not found.") }
        return p.proto(doc)
    }

    func listDocuments(_ r: Google_Firestore_V1_ListDocumentsRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_ListDocumentsResponse {
        let (db, parent) = try Self.resource(r.parent, "parent")
        guard parent.isRoot || parent.isDocument else {
            throw HearthError.invalidArgument("Parent \"\(r.parent)\" must be a document or the database root.")
        }
        guard !r.collectionID.isEmpty else { throw HearthError.invalidArgument("Missing collection_id.") }
        let collection = parent.appending(r.collectionID)
        try collection.validate()
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        var orderBy: [Query.Order] = []
        if !r.orderBy.isEmpty {
            for part in r.orderBy.split(separator: ",") {
                let words = part.split(separator: " ").map(String.init)
                guard (1...2).contains(words.count), words.count == 1 || ["asc", "desc"].contains(words[1].lowercased()) else {
                    throw HearthError.invalidArgument("Invalid order_by \"\(r.orderBy)\".")
                }
                let field = words[0] == "name" ? FieldPath.documentName : try FieldPath(parsing: words[0])
                orderBy.append(Query.Order(field, descending: words.count == 2 && words[1].lowercased() == "desc"))
            }
        }
        let pageSize = r.pageSize > 0 ? Int(r.pageSize) : nil
        var txn: Data?, readTime: Google_Protobuf_Timestamp?
        switch r.consistencySelector {
        case .transaction(let t)?: txn = t
        case .readTime(let t)?: readTime = t
        case nil: break
        }
        try await security.checkQuery(identity, db, Query(parent: parent, collectionId: r.collectionID, orderBy: orderBy, limit: pageSize))
        let result = try await engine.listDocuments(
            db, parent: parent, collectionId: r.collectionID, pageSize: pageSize, pageToken: r.pageToken.isEmpty ? nil : r.pageToken,
            orderBy: orderBy, mask: r.hasMask ? try p.mask(r.mask) : nil, showMissing: r.showMissing,
            consistency: try Self.consistency(transaction: txn, readTime: readTime))
        var out = Google_Firestore_V1_ListDocumentsResponse()
        if r.showMissing {
            let found = result.documents.map { ($0.path, p.proto($0)) }
            let missing = result.missing.map { path -> (ResourcePath, Google_Firestore_V1_Document) in
                var d = Google_Firestore_V1_Document()
                d.name = db.name(of: path)
                return (path, d)
            }
            out.documents = (found + missing).sorted { $0.0 < $1.0 }.map(\.1)
        } else {
            out.documents = result.documents.map(p.proto)
        }
        out.nextPageToken = result.nextPageToken ?? ""
        return out
    }

    func createDocument(_ r: Google_Firestore_V1_CreateDocumentRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_Document {
        let (db, parent) = try Self.resource(r.parent, "parent")
        guard parent.isRoot || parent.isDocument else {
            throw HearthError.invalidArgument("Parent \"\(r.parent)\" must be a document or the database root.")
        }
        guard !r.collectionID.isEmpty else { throw HearthError.invalidArgument("Missing collection_id.") }
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        let fields = try p.fields(r.document.fields, "document.fields")
        let path = parent.appending(r.collectionID).appending(r.documentID.isEmpty ? AutoID.make() : r.documentID)
        try path.validate()
        let result = try await engine.commit(db, [.create(path, fields)], authorizer: try security.authorizer(identity, db))
        guard let written = result.writeResults.first?.document else { throw HearthError(.internal, "Create returned no document.") }
        return p.proto(written.masked(r.hasMask ? try p.mask(r.mask) : nil))
    }

    func updateDocument(_ r: Google_Firestore_V1_UpdateDocumentRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_Document {
        let (db, path) = try Self.document(r.document.name, "document.name")
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        let write = Write(
            path: path, kind: .update(fields: try p.fields(r.document.fields, "document.fields"), mask: r.hasUpdateMask ? try p.mask(r.updateMask) : nil),
            precondition: r.hasCurrentDocument ? try p.precondition(r.currentDocument) : nil)
        let result = try await engine.commit(db, [write], authorizer: try security.authorizer(identity, db))
        guard let written = result.writeResults.first?.document else { throw HearthError(.internal, "Update returned no document.") }
        return p.proto(written.masked(r.hasMask ? try p.mask(r.mask) : nil))
    }

    func deleteDocument(_ r: Google_Firestore_V1_DeleteDocumentRequest, _ call: GRPCCall) async throws -> Google_Protobuf_Empty {
        let (db, path) = try Self.document(r.name, "name")
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        _ = try await engine.commit(
            db, [.delete(path, precondition: r.hasCurrentDocument ? try p.precondition(r.currentDocument) : nil)],
            authorizer: try security.authorizer(identity, db))
        return Google_Protobuf_Empty()
    }

    func batchGetDocuments(_ r: Google_Firestore_V1_BatchGetDocumentsRequest, _ call: GRPCCall, _ sender: GRPCMessageSender) async throws {
        if let handed = try await handOverBatchGet(r, call) {
            for m in handed { try sender.send(m) }
            return
        }
        let db = try Self.database(r.database, "database")
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        var paths: [ResourcePath] = []
        for name in r.documents { paths.append(try db.documentPath(fromName: name)) }
        var txn: Data?, newTxn: Google_Firestore_V1_TransactionOptions?, readTime: Google_Protobuf_Timestamp?
        switch r.consistencySelector {
        case .transaction(let t)?: txn = t
        case .newTransaction(let o)?: newTxn = o
        case .readTime(let t)?: readTime = t
        case nil: break
        }
        let mask = r.hasMask ? try p.mask(r.mask) : nil
        let (consistency, begun) = try consistency(transaction: txn, newTransaction: newTxn, readTime: readTime, p, db)
        let result = try await engine.batchGet(db, paths, consistency: consistency)
        try await security.checkGets(identity, db, Array(zip(paths, result.documents)))
        let readTimeProto = FirestoreProto.timestamp(result.readTime)
        if let begun {
            var first = Google_Firestore_V1_BatchGetDocumentsResponse()
            first.transaction = Data(begun.bytes)
            try sender.send(first)
        }
        for (path, doc) in zip(paths, result.documents) {
            var m = Google_Firestore_V1_BatchGetDocumentsResponse()
            if let doc { m.found = p.proto(doc.masked(mask)) } else { m.missing = db.name(of: path) }
            m.readTime = readTimeProto
            try sender.send(m)
        }
    }

    func beginTransaction(_ r: Google_Firestore_V1_BeginTransactionRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_BeginTransactionResponse {
        if let handed = try await handOverBegin(r, call) { return handed }
        let db = try Self.database(r.database, "database")
        _ = try await identity(call)
        let p = FirestoreProto(database: db)
        let id = try begin(r.hasOptions ? try p.transactionOptions(r.options) : .readWrite(retry: nil), db)
        var out = Google_Firestore_V1_BeginTransactionResponse()
        out.transaction = Data(id.bytes)
        return out
    }

    func commit(_ r: Google_Firestore_V1_CommitRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_CommitResponse {
        if let handed = try await handOverCommit(r, call) { return handed }
        let db = try Self.database(r.database, "database")
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        let writes = try Self.writes(r.writes, p)
        let authorizer = try await authorizer(identity, db, verify: FirestoreProto.verifyIndexes(r.writes))
        let result = try await engine.commit(db, writes, transaction: Self.transactionID(r.transaction), authorizer: authorizer)
        var out = Google_Firestore_V1_CommitResponse()
        out.writeResults = result.writeResults.map(p.proto)
        out.commitTime = FirestoreProto.timestamp(result.commitTime)
        return out
    }

    func rollback(_ r: Google_Firestore_V1_RollbackRequest, _ call: GRPCCall) async throws -> Google_Protobuf_Empty {
        if try await handOverRollback(r, call) { return Google_Protobuf_Empty() }
        let db = try Self.database(r.database, "database")
        _ = try await identity(call)
        guard let id = Self.transactionID(r.transaction) else { throw HearthError.invalidArgument("Missing transaction.") }
        try engine.rollback(db, id)
        return Google_Protobuf_Empty()
    }

    func batchWrite(_ r: Google_Firestore_V1_BatchWriteRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_BatchWriteResponse {
        let db = try Self.database(r.database, "database")
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        if r.writes.count > DocumentLimits.maxWritesPerCommit {
            throw HearthError.invalidArgument("A maximum of 500 entities can be modified in a commit.")
        }
        // A write that cannot even be parsed fails on its own, as batchWrite is not atomic.
        var parsed: [Result<Write, HearthError>] = []
        for (i, w) in r.writes.enumerated() {
            do throws(HearthError) { parsed.append(.success(try p.write(w, "writes[\(i)]"))) } catch { parsed.append(.failure(error)) }
        }
        let valid = parsed.compactMap { try? $0.get() }
        let (outcomes, _) = try await engine.batchWrite(db, valid, authorizer: try security.authorizer(identity, db))
        var out = Google_Firestore_V1_BatchWriteResponse()
        var next = outcomes.makeIterator()
        for item in parsed {
            let outcome: BatchWriteOutcome
            switch item {
            case .failure(let e): outcome = .failure(e)
            case .success: outcome = next.next()!
            }
            switch outcome {
            case .success(let result):
                out.writeResults.append(p.proto(result))
                out.status.append(Google_Rpc_Status())
            case .failure(let e):
                out.writeResults.append(Google_Firestore_V1_WriteResult())
                out.status.append(FirestoreProto.status(e))
            }
        }
        return out
    }
}
