import HearthCore
public import HearthDocuments
import HearthFirestoreProto
public import Logging
import Foundation

/// Firestore's gRPC service (`google.firestore.v1.Firestore`) over the document engine:
/// translates messages into the same engine calls, rules checks and validation the REST
/// transport makes. One file per group of methods; `Listen` lives in its own file.
public struct FirestoreGRPCService: Sendable {
    public static let serviceName = "google.firestore.v1.Firestore"

    let engine: DocumentEngine
    let authenticator: Authenticator
    let security: FirestoreSecurity
    let logger: Logger
    /// The other replicas over one PostgreSQL (nil: one server): transactional calls are handed
    /// to the replica holding the transaction, read-write begins to the one ordering them.
    let replicas: ReplicaDirectory?

    public init(
        engine: DocumentEngine, authenticator: Authenticator, security: FirestoreSecurity, replicas: ReplicaDirectory? = nil, logger: Logger
    ) {
        self.replicas = replicas
        self.engine = engine
        self.authenticator = authenticator
        self.security = security
        self.logger = logger
    }

    /// Every served method by name. Unknown names (and `ExecutePipeline`) answer UNIMPLEMENTED.
    public var methods: [String: GRPCHandler] {
        [
            "GetDocument": GRPCMethod.unary(getDocument),
            "ListDocuments": GRPCMethod.unary(listDocuments),
            "CreateDocument": GRPCMethod.unary(createDocument),
            "UpdateDocument": GRPCMethod.unary(updateDocument),
            "DeleteDocument": GRPCMethod.unary(deleteDocument),
            "BatchGetDocuments": GRPCMethod.serverStreaming(batchGetDocuments),
            "BeginTransaction": GRPCMethod.unary(beginTransaction),
            "Commit": GRPCMethod.unary(commit),
            "Rollback": GRPCMethod.unary(rollback),
            "RunQuery": GRPCMethod.serverStreaming(runQuery),
            "RunAggregationQuery": GRPCMethod.serverStreaming(runAggregationQuery),
            "PartitionQuery": GRPCMethod.unary(partitionQuery),
            "ListCollectionIds": GRPCMethod.unary(listCollectionIds),
            "BatchWrite": GRPCMethod.unary(batchWrite),
            "Write": { call, reader, sender in try await self.write(call, &reader, sender) },
            "Listen": { call, reader, sender in try await self.listen(call, &reader, sender) },
        ]
    }

    /// The service's gRPC responder; messages over `maxMessageSize` end the call with RESOURCE_EXHAUSTED.
    public func responder(logger: Logger, maxMessageSize: Int = GRPCFraming.defaultMaxMessageSize) -> GRPCResponder {
        GRPCResponder(service: Self.serviceName, methods: methods, maxMessageSize: maxMessageSize, logger: logger)
    }

    // MARK: Shared helpers

    /// Who is calling: the `authorization` metadata, exactly as REST reads the header.
    func identity(_ call: GRPCCall) async throws(HearthError) -> Identity {
        let identity = try await authenticator.identify(authorization: call["authorization"])
        try await authenticator.checkAppCheck("firestore", token: call["x-firebase-appcheck"], identity: identity)
        return identity
    }

    /// `projects/{p}/databases/{d}`, validated as REST validates the URL.
    static func database(_ text: String, _ field: String) throws(HearthError) -> DatabaseName {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "projects", parts[2] == "databases" else {
            throw .invalidArgument("Invalid \(field) \"\(text)\": expected projects/{project_id}/databases/{database_id}.")
        }
        let db = DatabaseName(project: String(parts[1]), database: String(parts[3]))
        try FirestoreRESTResponder.validateDatabaseId(db)
        return db
    }

    /// A resource name under `…/documents`: the database and the path after `documents`.
    static func resource(_ name: String, _ field: String) throws(HearthError) -> (DatabaseName, ResourcePath) {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 5, parts[0] == "projects", parts[2] == "databases", parts[4] == "documents" else {
            throw .invalidArgument("Invalid \(field) \"\(name)\": expected projects/{project_id}/databases/{database_id}/documents[/...].")
        }
        let db = DatabaseName(project: String(parts[1]), database: String(parts[3]))
        try FirestoreRESTResponder.validateDatabaseId(db)
        return (db, try db.path(fromName: name))
    }

    static func document(_ name: String, _ field: String) throws(HearthError) -> (DatabaseName, ResourcePath) {
        let (db, path) = try resource(name, field)
        guard path.isDocument else {
            throw .invalidArgument("Document name \"\(name)\" has odd number of segments, expected a document path.")
        }
        return (db, path)
    }

    func begin(_ options: FirestoreJSON.TransactionOptions, _ db: DatabaseName) throws(HearthError) -> TransactionID {
        switch options {
        case .readOnly(let t): return try engine.beginTransaction(db, readOnly: true, readTime: t)
        case .readWrite(let retry): return try engine.beginTransaction(db, readOnly: false, retrying: retry)
        }
    }

    /// The rules authorizer for a commit, with `verify` writes (reads, already judged) left out.
    func authorizer(_ identity: Identity, _ db: DatabaseName, verify: Set<Int>) async throws(HearthError) -> (any WriteAuthorizer)? {
        guard let base = try await security.authorizer(identity, db) else { return nil }
        return verify.isEmpty ? base : VerifySkippingAuthorizer(base: base, verify: verify)
    }

    /// Parses a commit's writes (≤ 500), as REST does.
    static func writes(_ raw: [Google_Firestore_V1_Write], _ p: FirestoreProto) throws(HearthError) -> [Write] {
        if raw.count > DocumentLimits.maxWritesPerCommit {
            throw .invalidArgument("A maximum of 500 entities can be modified in a commit.")
        }
        var out: [Write] = []
        out.reserveCapacity(raw.count)
        for (i, w) in raw.enumerated() { out.append(try p.write(w, "writes[\(i)]")) }
        return out
    }

    static func transactionID(_ data: Data) -> TransactionID? {
        data.isEmpty ? nil : TransactionID(bytes: [UInt8](data))
    }
}

/// Rules judge the writes of a commit but not its `verify` writes, which change nothing.
struct VerifySkippingAuthorizer: WriteAuthorizer {
    let base: any WriteAuthorizer
    let verify: Set<Int>

    func authorize(_ changes: [DocumentChange], database: DatabaseName, time: Timestamp, documents: any DocumentPeek) async throws(HearthError) {
        let judged = changes.filter { !verify.contains($0.index) }
        if judged.isEmpty { return }
        try await base.authorize(judged, database: database, time: time, documents: documents)
    }
}
