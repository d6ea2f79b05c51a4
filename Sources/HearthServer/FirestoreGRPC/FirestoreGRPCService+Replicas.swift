import HearthCore
import HearthFirestoreProto
import Foundation
import HTTPTypes
import NIOCore
import SwiftProtobuf

/// Transactions across replicas over gRPC, by the rule REST follows (docs/postgres.md,
/// "Transactions across replicas"): a call naming a transaction another replica began is served
/// by that replica; a read-write transaction begins on the replica ordering them, so that one lock
/// manager orders every transaction on the database whichever replica a client's channel reached.
/// The call is handed over as the REST request it is — the message's proto3 JSON is the REST body
/// (`database` and `parent` go to the path) — and the REST answer is read back as the reply, an
/// error keeping its code and message. The replica serving it authenticates the caller itself.
extension FirestoreGRPCService {
    /// Where a transactional call is served: nil here. `transaction` names one (its replica, or
    /// ABORTED when that replica is gone); `retry` is a retried transaction's id (begun afresh here
    /// when its replica is gone); `beginsReadWrite` goes to the replica ordering transactions.
    func replica(transaction: Data?, retry: Data? = nil, beginsReadWrite: Bool) async throws -> ReplicaRecord? {
        guard let replicas else { return nil }
        for (id, isRetry) in [(transaction, false), (retry, true)] {
            guard let id, let owner = ReplicaDirectory.owner(ofTransaction: [UInt8](id)), owner != replicas.id else { continue }
            if let record = try await replicas.replica(owner) { return record }
            if isRetry { break }
            throw HearthError(.aborted, "The referenced transaction has expired or is no longer valid (the replica that began it stopped).")
        }
        guard beginsReadWrite else { return nil }
        return try await replicas.coordinator()
    }

    /// `message` handed to `replica` as the REST call `method path`: the reply's JSON, or the
    /// replica's error. A replica that cannot be reached is UNAVAILABLE when the call begins a
    /// transaction (the caller begins it here instead), ABORTED when it names one.
    func overREST(
        _ replica: ReplicaRecord, _ method: HTTPRequest.Method, _ path: String, _ message: (any SwiftProtobuf.Message)?, _ call: GRPCCall
    ) async throws -> ByteBuffer {
        guard let replicas else { throw HearthError(.internal, "No other replicas.") }
        var headers: [(String, String)] = []
        for name in ["authorization", "x-firebase-appcheck"] { if let value = call[name] { headers.append((name, value)) } }
        let body = try message.map { ByteBuffer(string: try $0.jsonString()) }
        logger.debug("handing a transaction's gRPC call to its replica", metadata: ["path": "\(path)", "replica": "\(replica.id)"])
        let (status, answer) = try await replicas.call(method, path, headers: headers, body: body, to: replica, service: "firestore")
        guard status == 200 else { throw Self.restError(status, answer) }
        return answer
    }

    /// The REST error body (`{"error": {"code", "message", "status"}}`) as the error it reports.
    static func restError(_ status: Int, _ body: ByteBuffer) -> HearthError {
        let error = (try? JSON.parse(body.readableBytesView))?["error"]
        let name = error?["status"]?.stringValue
        let code = ErrorCode.allCases.first { $0.statusName == name } ?? (status == 404 ? .notFound : .unavailable)
        return HearthError(code, error?["message"]?.stringValue ?? "The replica holding the transaction answered HTTP \(status).")
    }

    static let jsonOptions: JSONDecodingOptions = {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        return options
    }()

    static func decode<M: SwiftProtobuf.Message>(_ type: M.Type, _ body: ByteBuffer) throws -> M {
        try M(jsonUTF8Bytes: Array(body.readableBytesView), options: jsonOptions)
    }

    /// The messages of a streamed REST answer (a JSON array).
    static func decodeArray<M: SwiftProtobuf.Message>(_ type: M.Type, _ body: ByteBuffer) throws -> [M] {
        guard let items = try JSON.parse(body.readableBytesView).arrayValue else {
            throw HearthError(.internal, "The replica holding the transaction answered something other than a stream of messages.")
        }
        return try items.map { try M(jsonString: $0.serialized(), options: jsonOptions) }
    }

    /// `/v1/<name>` with the name's segments percent-encoded as REST clients send them.
    static func restPath(_ name: String, _ verb: String? = nil) -> String {
        let encoded = name.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: restSegment) ?? String($0) }.joined(separator: "/")
        return "/v1/" + encoded + (verb.map { ":" + $0 } ?? "")
    }

    static let restSegment: CharacterSet = {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~()")
        return allowed
    }()

    // MARK: The calls

    func handOverBegin(_ r: Google_Firestore_V1_BeginTransactionRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_BeginTransactionResponse? {
        let readOnly = r.hasOptions && r.options.mode.map { if case .readOnly = $0 { true } else { false } } == true
        let retry: Data? = if case .readWrite(let rw)? = r.options.mode, !rw.retryTransaction.isEmpty { rw.retryTransaction } else { nil }
        guard let target = try await replica(transaction: nil, retry: retry, beginsReadWrite: !readOnly) else { return nil }
        var body = r
        body.database = ""
        return try await aborting(begins: retry == nil) {
            try Self.decode(
                Google_Firestore_V1_BeginTransactionResponse.self, try await overREST(target, .post, Self.restPath(r.database + "/documents", "beginTransaction"), body, call))
        }
    }

    func handOverCommit(_ r: Google_Firestore_V1_CommitRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_CommitResponse? {
        guard !r.transaction.isEmpty, let target = try await replica(transaction: r.transaction, beginsReadWrite: false) else { return nil }
        var body = r
        body.database = ""
        return try await aborting {
            try Self.decode(Google_Firestore_V1_CommitResponse.self, try await overREST(target, .post, Self.restPath(r.database + "/documents", "commit"), body, call))
        }
    }

    /// Whether a rollback was handed over (a rollback of a transaction whose replica is gone is harmless).
    func handOverRollback(_ r: Google_Firestore_V1_RollbackRequest, _ call: GRPCCall) async throws -> Bool {
        do {
            guard let target = try await replica(transaction: r.transaction, beginsReadWrite: false) else { return false }
            var body = r
            body.database = ""
            _ = try await overREST(target, .post, Self.restPath(r.database + "/documents", "rollback"), body, call)
        } catch let e as HearthError where e.code == .aborted {
        } catch is ReplicaUnreachable {}
        return true
    }

    func handOverGet(_ r: Google_Firestore_V1_GetDocumentRequest, _ call: GRPCCall) async throws -> Google_Firestore_V1_Document? {
        guard case .transaction(let t)? = r.consistencySelector, let target = try await replica(transaction: t, beginsReadWrite: false) else {
            return nil
        }
        var path = Self.restPath(r.name) + "?transaction=" + (t.base64EncodedString().addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        for field in r.mask.fieldPaths {
            path += "&mask.fieldPaths=" + (field.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? field)
        }
        return try await aborting { try Self.decode(Google_Firestore_V1_Document.self, try await overREST(target, .get, path, nil, call)) }
    }

    func handOverBatchGet(_ r: Google_Firestore_V1_BatchGetDocumentsRequest, _ call: GRPCCall) async throws -> [Google_Firestore_V1_BatchGetDocumentsResponse]? {
        let selector = r.consistencySelector.map(Selector.init)
        guard let target = try await replica(for: selector) else { return nil }
        var body = r
        body.database = ""
        return try await aborting(begins: Self.begins(selector)) {
            try Self.decodeArray(
                Google_Firestore_V1_BatchGetDocumentsResponse.self, try await overREST(target, .post, Self.restPath(r.database + "/documents", "batchGet"), body, call))
        }
    }

    func handOverRunQuery(_ r: Google_Firestore_V1_RunQueryRequest, _ call: GRPCCall) async throws -> [Google_Firestore_V1_RunQueryResponse]? {
        let selector = r.consistencySelector.map(Selector.init)
        guard let target = try await replica(for: selector) else { return nil }
        var body = r
        body.parent = ""
        return try await aborting(begins: Self.begins(selector)) {
            try Self.decodeArray(Google_Firestore_V1_RunQueryResponse.self, try await overREST(target, .post, Self.restPath(r.parent, "runQuery"), body, call))
        }
    }

    func handOverRunAggregation(
        _ r: Google_Firestore_V1_RunAggregationQueryRequest, _ call: GRPCCall
    ) async throws -> [Google_Firestore_V1_RunAggregationQueryResponse]? {
        let selector = r.consistencySelector.map(Selector.init)
        guard let target = try await replica(for: selector) else { return nil }
        var body = r
        body.parent = ""
        return try await aborting(begins: Self.begins(selector)) {
            try Self.decodeArray(
                Google_Firestore_V1_RunAggregationQueryResponse.self, try await overREST(target, .post, Self.restPath(r.parent, "runAggregationQuery"), body, call))
        }
    }

    /// A read's consistency, as far as the hand-over rule cares.
    enum Selector {
        case transaction(Data)
        case newTransaction(Google_Firestore_V1_TransactionOptions)
        case other

        init(_ s: Google_Firestore_V1_BatchGetDocumentsRequest.OneOf_ConsistencySelector) {
            switch s {
            case .transaction(let t): self = .transaction(t)
            case .newTransaction(let o): self = .newTransaction(o)
            default: self = .other
            }
        }

        init(_ s: Google_Firestore_V1_RunQueryRequest.OneOf_ConsistencySelector) {
            switch s {
            case .transaction(let t): self = .transaction(t)
            case .newTransaction(let o): self = .newTransaction(o)
            default: self = .other
            }
        }

        init(_ s: Google_Firestore_V1_RunAggregationQueryRequest.OneOf_ConsistencySelector) {
            switch s {
            case .transaction(let t): self = .transaction(t)
            case .newTransaction(let o): self = .newTransaction(o)
            default: self = .other
            }
        }
    }

    func replica(for selector: Selector?) async throws -> ReplicaRecord? {
        switch selector {
        case .transaction(let t)?: return try await replica(transaction: t, beginsReadWrite: false)
        case .newTransaction(let o)?:
            if case .readOnly? = o.mode { return nil }
            let retry: Data? = if case .readWrite(let rw)? = o.mode, !rw.retryTransaction.isEmpty { rw.retryTransaction } else { nil }
            return try await replica(transaction: nil, retry: retry, beginsReadWrite: true)
        default: return nil
        }
    }

    /// A replica that cannot be reached: a named transaction's is ABORTED, as REST answers; the
    /// replica ordering transactions (`begins`) lets the transaction begin here (nil).
    func aborting<T>(begins: Bool = false, _ body: () async throws -> T) async throws -> T? {
        do {
            return try await body()
        } catch let gone as ReplicaUnreachable {
            if begins {
                logger.notice("the replica ordering transactions could not be reached; beginning here", metadata: ["error": "\(gone)"])
                return nil
            }
            logger.notice("the replica of a transaction is gone", metadata: ["error": "\(gone.reason)"])
            throw HearthError(.aborted, "The referenced transaction has expired or is no longer valid (the replica that began it stopped).")
        }
    }

    static func begins(_ selector: Selector?) -> Bool {
        if case .newTransaction? = selector { return true }
        return false
    }
}
