import HearthCore
import HearthDocuments
import Hummingbird
import Foundation

/// One handler per Firestore REST method.
extension FirestoreRESTResponder {
    typealias Params = [(String, String)]

    static func values(_ params: Params, _ key: String) -> [String] { params.filter { $0.0 == key }.map(\.1) }
    static func value(_ params: Params, _ key: String) -> String? { params.last { $0.0 == key }?.1 }

    static let knownParams: Set<String> = [
        "mask.fieldPaths", "updateMask.fieldPaths", "currentDocument.exists", "currentDocument.updateTime", "documentId",
        "pageSize", "pageToken", "orderBy", "showMissing", "transaction", "readTime", "$alt", "alt", "key", "prettyPrint",
        "$prettyPrint", "collectionId",
    ]

    static func checkParams(_ params: Params) throws(HearthError) {
        for (k, _) in params where !knownParams.contains(k) {
            throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(k)\": Cannot bind query parameter.")
        }
    }

    static func mask(_ params: Params, _ key: String) throws(HearthError) -> [FieldPath]? {
        let raw = values(params, key)
        if raw.isEmpty { return nil }
        var out: [FieldPath] = []
        for r in raw { out.append(try FieldPath(parsing: r)) }
        return out
    }

    static func timestamp(_ s: String, _ name: String) throws(HearthError) -> Timestamp {
        guard let t = Timestamp(rfc3339: s), t.isValid else {
            throw .invalidArgument("Invalid value at '\(name)' (type.googleapis.com/google.protobuf.Timestamp), Field '\(name)', Invalid time format: Failed to parse input")
        }
        return t
    }

    static func transactionId(_ s: String, _ name: String) throws(HearthError) -> TransactionID {
        guard let b = ProtoObject.base64(s), !b.isEmpty else {
            throw .invalidArgument("Invalid value at '\(name)' (TYPE_BYTES), Base64 decoding failed for \"\(s)\"")
        }
        return TransactionID(bytes: b)
    }

    /// The read consistency from `transaction` / `readTime` query parameters.
    static func consistency(_ params: Params) throws(HearthError) -> ReadConsistency {
        let txn = value(params, "transaction"), rt = value(params, "readTime")
        if txn != nil && rt != nil { throw .invalidArgument("Only one of transaction and readTime may be set.") }
        if let txn { return .transaction(try transactionId(txn, "transaction")) }
        if let rt { return .readTime(try timestamp(rt, "readTime")) }
        return .latest
    }

    /// The read consistency of a request body: `transaction`, `newTransaction` or `readTime`.
    func consistency(_ o: ProtoObject, _ json: FirestoreJSON, _ db: DatabaseName) throws(HearthError) -> (ReadConsistency, TransactionID?) {
        let set = ["transaction", "newTransaction", "readTime"].filter { o[$0] != nil }
        if set.count > 1 { throw .invalidArgument("Only one of transaction, newTransaction and readTime may be set.") }
        if let t = try o.bytes("transaction") { return (.transaction(TransactionID(bytes: t)), nil) }
        if let rt = try o.timestamp("readTime") { return (.readTime(rt), nil) }
        if let options = try json.transactionOptions(o["newTransaction"], "newTransaction") {
            let id = try begin(options, db)
            return (.transaction(id), id)
        }
        return (.latest, nil)
    }

    func begin(_ options: FirestoreJSON.TransactionOptions, _ db: DatabaseName) throws(HearthError) -> TransactionID {
        switch options {
        case .readOnly(let t): return try engine.beginTransaction(db, readOnly: true, readTime: t)
        case .readWrite(let retry): return try engine.beginTransaction(db, readOnly: false, retrying: retry)
        }
    }

    static func base64(_ id: TransactionID) -> JSON { .string(Data(id.bytes).base64EncodedString()) }

    // MARK: Documents

    func getDocument(_ t: Target, _ params: Params, _ json: FirestoreJSON) async throws -> Response {
        try Self.checkParams(params)
        let mask = try Self.mask(params, "mask.fieldPaths")
        let (stored, _) = try await engine.get(t.database, t.path, consistency: try Self.consistency(params))
        try await security.checkGet(t.identity, t.database, t.path, stored)
        guard let doc = stored?.masked(mask) else { throw HearthError(.notFound, "Document \"\(t.database.name(of: t.path))\" not found.") }
        return HTTPSupport.json(json.document(doc))
    }

    func listDocuments(_ t: Target, _ params: Params, _ json: FirestoreJSON) async throws -> Response {
        try Self.checkParams(params)
        guard t.path.isCollection else { throw HearthError(.notFound, "Not found: \(t.database.name(of: t.path))") }
        var pageSize: Int?
        if let s = Self.value(params, "pageSize") {
            guard let n = Int32(s) else { throw HearthError.invalidArgument("Invalid value at 'page_size' (TYPE_INT32), \"\(s)\"") }
            pageSize = Int(n)
        }
        var orderBy: [Query.Order] = []
        if let o = Self.value(params, "orderBy"), !o.isEmpty {
            for part in o.split(separator: ",") {
                let words = part.split(separator: " ").map(String.init)
                guard (1...2).contains(words.count), words.count == 1 || ["asc", "desc"].contains(words[1].lowercased()) else {
                    throw HearthError.invalidArgument("Invalid order_by \"\(o)\".")
                }
                let path = words[0] == "name" ? FieldPath.documentName : try FieldPath(parsing: words[0])
                orderBy.append(Query.Order(path, descending: words.count == 2 && words[1].lowercased() == "desc"))
            }
        }
        let showMissing: Bool
        switch Self.value(params, "showMissing") {
        case nil, "false": showMissing = false
        case "true": showMissing = true
        case let other?: throw HearthError.invalidArgument("Invalid value at 'show_missing' (TYPE_BOOL), \"\(other)\"")
        }
        try await security.checkQuery(
            t.identity, t.database, Query(parent: t.path.parent, collectionId: t.path.lastSegment, orderBy: orderBy, limit: pageSize))
        let result = try await engine.listDocuments(
            t.database, parent: t.path.parent, collectionId: t.path.lastSegment, pageSize: pageSize,
            pageToken: Self.value(params, "pageToken"), orderBy: orderBy, mask: try Self.mask(params, "mask.fieldPaths"),
            showMissing: showMissing, consistency: try Self.consistency(params))
        var docs = result.documents.map(json.document)
        if showMissing {
            docs = (result.documents.map { ($0.path, json.document($0)) } + result.missing.map { ($0, JSON.object([("name", .string(t.database.name(of: $0)))])) })
                .sorted { $0.0 < $1.0 }.map(\.1)
        }
        var members: [(String, JSON)] = []
        if !docs.isEmpty { members.append(("documents", .array(docs))) }
        if let next = result.nextPageToken { members.append(("nextPageToken", .string(next))) }
        return HTTPSupport.json(.object(members))
    }

    static func precondition(_ params: Params) throws(HearthError) -> Precondition? {
        let exists = value(params, "currentDocument.exists"), time = value(params, "currentDocument.updateTime")
        if exists != nil && time != nil { throw .invalidArgument("Only one of currentDocument.exists and currentDocument.updateTime may be set.") }
        if let exists {
            guard exists == "true" || exists == "false" else {
                throw .invalidArgument("Invalid value at 'current_document.exists' (TYPE_BOOL), \"\(exists)\"")
            }
            return .exists(exists == "true")
        }
        if let time { return .updateTime(try timestamp(time, "current_document.update_time")) }
        return nil
    }

    func createDocument(_ t: Target, _ params: Params, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        try Self.checkParams(params)
        let doc = try json.documentBody(body, "document")
        let id = Self.value(params, "documentId").flatMap { $0.isEmpty ? nil : $0 } ?? AutoID.make()
        let path = t.path.appending(id)
        try path.validate()
        let result = try await engine.commit(
            t.database, [.create(path, doc.fields)], authorizer: try security.authorizer(t.identity, t.database))
        guard let written = result.writeResults.first?.document else { throw HearthError(.internal, "Create returned no document.") }
        return HTTPSupport.json(json.document(written.masked(try Self.mask(params, "mask.fieldPaths"))))
    }

    func updateDocument(_ t: Target, _ params: Params, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        try Self.checkParams(params)
        let doc = try json.documentBody(body, "document")
        if let name = doc.name, !name.isEmpty, try t.database.documentPath(fromName: name) != t.path {
            throw HearthError.invalidArgument("The document name in the body does not match the request URL.")
        }
        let write = Write(
            path: t.path, kind: .update(fields: doc.fields, mask: try Self.mask(params, "updateMask.fieldPaths")),
            precondition: try Self.precondition(params))
        let result = try await engine.commit(t.database, [write], authorizer: try security.authorizer(t.identity, t.database))
        guard let written = result.writeResults.first?.document else { throw HearthError(.internal, "Update returned no document.") }
        return HTTPSupport.json(json.document(written.masked(try Self.mask(params, "mask.fieldPaths"))))
    }

    func deleteDocument(_ t: Target, _ params: Params, _ json: FirestoreJSON) async throws -> Response {
        try Self.checkParams(params)
        _ = try await engine.commit(
            t.database, [.delete(t.path, precondition: try Self.precondition(params))],
            authorizer: try security.authorizer(t.identity, t.database))
        return HTTPSupport.json(.object([]))
    }

    // MARK: Batch and transactions

    func batchGet(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(body, "", allowed: ["database", "documents", "mask", "transaction", "newTransaction", "readTime"])
        var paths: [ResourcePath] = []
        for (i, d) in try o.array("documents").enumerated() {
            guard case .string(let name) = d else { throw HearthError.invalidArgument("Invalid value at 'documents[\(i)]' (TYPE_STRING)") }
            paths.append(try t.database.documentPath(fromName: name))
        }
        let (consistency, newTxn) = try consistency(o, json, t.database)
        let mask = try json.mask(o["mask"], "mask")
        let result = try await engine.batchGet(t.database, paths, consistency: consistency)
        try await security.checkGets(t.identity, t.database, Array(zip(paths, result.documents)))
        var out: [JSON] = []
        if let newTxn { out.append(.object([("transaction", Self.base64(newTxn))])) }
        for (p, d) in zip(paths, result.documents) {
            let item: (String, JSON) = d.map { ("found", json.document($0.masked(mask))) } ?? ("missing", .string(t.database.name(of: p)))
            out.append(.object([item, ("readTime", .string(result.readTime.rfc3339))]))
        }
        return HTTPSupport.json(.array(out))
    }

    func beginTransaction(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(body, "", allowed: ["database", "options"])
        let options = try json.transactionOptions(o["options"], "options") ?? .readWrite(retry: nil)
        let id = try begin(options, t.database)
        return HTTPSupport.json(.object([("transaction", Self.base64(id))]))
    }

    func commit(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(body, "", allowed: ["database", "writes", "transaction"])
        let rawWrites = try o.array("writes")
        if rawWrites.count > DocumentLimits.maxWritesPerCommit {
            throw HearthError.invalidArgument("A maximum of 500 entities can be modified in a commit.")
        }
        var writes: [Write] = []
        for (i, w) in rawWrites.enumerated() { writes.append(try json.write(w, "writes[\(i)]")) }
        let txn = try o.bytes("transaction").map(TransactionID.init(bytes:))
        let authorizer = try await security.authorizer(t.identity, t.database)
        let result = try await engine.commit(t.database, writes, transaction: txn, authorizer: authorizer)
        var members: [(String, JSON)] = []
        if !result.writeResults.isEmpty { members.append(("writeResults", .array(result.writeResults.map(json.writeResult)))) }
        members.append(("commitTime", .string(result.commitTime.rfc3339)))
        return HTTPSupport.json(.object(members))
    }

    func rollback(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(body, "", allowed: ["database", "transaction"])
        guard let id = try o.bytes("transaction"), !id.isEmpty else { throw HearthError.invalidArgument("Missing transaction.") }
        try engine.rollback(t.database, TransactionID(bytes: id))
        return HTTPSupport.json(.object([]))
    }

    func batchWrite(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(body, "", allowed: ["database", "writes", "labels"])
        let rawWrites = try o.array("writes")
        if rawWrites.count > DocumentLimits.maxWritesPerCommit {
            throw HearthError.invalidArgument("A maximum of 500 entities can be modified in a commit.")
        }
        // A write that cannot even be parsed fails on its own, as batchWrite is not atomic.
        var parsed: [Result<Write, HearthError>] = []
        for (i, w) in rawWrites.enumerated() {
            do throws(HearthError) { parsed.append(.success(try json.write(w, "writes[\(i)]"))) } catch { parsed.append(.failure(error)) }
        }
        let valid = parsed.compactMap { try? $0.get() }
        let (outcomes, _) = try await engine.batchWrite(t.database, valid, authorizer: try security.authorizer(t.identity, t.database))
        var results: [JSON] = []
        var statuses: [JSON] = []
        var next = outcomes.makeIterator()
        for p in parsed {
            switch p {
            case .failure(let e):
                results.append(.object([]))
                statuses.append(FirestoreJSON.status(e))
            case .success:
                switch next.next()! {
                case .success(let r):
                    results.append(json.writeResult(r))
                    statuses.append(.object([]))
                case .failure(let e):
                    results.append(.object([]))
                    statuses.append(FirestoreJSON.status(e))
                }
            }
        }
        return HTTPSupport.json(.object([("writeResults", .array(results)), ("status", .array(statuses))]))
    }

    // MARK: Queries

    func runQuery(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(body, "", allowed: ["parent", "structuredQuery", "transaction", "newTransaction", "readTime", "explainOptions"])
        guard let sq = o["structuredQuery"] else { throw HearthError.invalidArgument("Missing structuredQuery.") }
        let query = try json.query(sq, parent: t.path, "structured_query")
        try await security.checkQuery(t.identity, t.database, query)
        let (consistency, newTxn) = try consistency(o, json, t.database)
        let result = try await engine.runQuery(t.database, query, consistency: consistency)
        let readTime = JSON.string(result.readTime.rfc3339)
        var out: [JSON] = []
        for (i, d) in result.documents.enumerated() {
            var members: [(String, JSON)] = []
            if i == 0, let newTxn { members.append(("transaction", Self.base64(newTxn))) }
            members.append(("document", json.document(d)))
            members.append(("readTime", readTime))
            if i == 0 && result.skippedResults > 0 { members.append(("skippedResults", .number(result.skippedResults))) }
            out.append(.object(members))
        }
        if out.isEmpty {
            var members: [(String, JSON)] = []
            if let newTxn { members.append(("transaction", Self.base64(newTxn))) }
            members.append(("readTime", readTime))
            if result.skippedResults > 0 { members.append(("skippedResults", .number(result.skippedResults))) }
            out.append(.object(members))
        }
        return HTTPSupport.json(.array(out))
    }

    func runAggregationQuery(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(
            body, "", allowed: ["parent", "structuredAggregationQuery", "transaction", "newTransaction", "readTime", "explainOptions"])
        guard let saq = try o.object("structuredAggregationQuery", allowed: ["structuredQuery", "aggregations"]),
              let sq = saq["structuredQuery"]
        else { throw HearthError.invalidArgument("Missing structuredAggregationQuery.structuredQuery.") }
        let query = try json.query(sq, parent: t.path, "structured_aggregation_query.structured_query")
        let aggregations = try json.aggregations(try saq.array("aggregations"), "structured_aggregation_query.aggregations")
        try await security.checkQuery(t.identity, t.database, query)
        let (consistency, newTxn) = try consistency(o, json, t.database)
        let result = try await engine.runAggregation(t.database, query, aggregations, consistency: consistency)
        var members: [(String, JSON)] = []
        if let newTxn { members.append(("transaction", Self.base64(newTxn))) }
        members.append(("result", .object([("aggregateFields", .object(result.values.map { ($0.alias, json.json($0.value)) }))])))
        members.append(("readTime", .string(result.readTime.rfc3339)))
        return HTTPSupport.json(.array([.object(members)]))
    }

    func listCollectionIds(_ t: Target, _ body: JSON, _ json: FirestoreJSON) async throws -> Response {
        let o = try ProtoObject(body, "", allowed: ["parent", "pageSize", "pageToken", "readTime"])
        let pageSize = Int(try o.int32("pageSize") ?? 0)
        if pageSize < 0 { throw HearthError.invalidArgument("page_size must be non-negative.") }
        let consistency: ReadConsistency = try o.timestamp("readTime").map { .readTime($0) } ?? .latest
        try await security.checkListCollectionIds(t.identity, t.database)
        let ids = try await engine.listCollectionIds(t.database, parent: t.path, consistency: consistency)
        var start = 0
        if let token = try o.string("pageToken"), !token.isEmpty {
            guard let data = Data(base64Encoded: token), let after = String(data: data, encoding: .utf8) else {
                throw HearthError.invalidArgument("Invalid page token.")
            }
            start = ids.firstIndex { ValueOrdering.compareUTF8($0, after) > 0 } ?? ids.count
        }
        let size = pageSize == 0 ? ids.count : pageSize
        let page = Array(ids[start..<min(ids.count, start + size)])
        var members: [(String, JSON)] = []
        if !page.isEmpty { members.append(("collectionIds", .array(page.map { .string($0) }))) }
        if start + size < ids.count, let last = page.last {
            members.append(("nextPageToken", .string(Data(last.utf8).base64EncodedString())))
        }
        return HTTPSupport.json(.object(members))
    }
}

