import Foundation
import GRPCCore
import HearthFirestoreProto
import SwiftProtobuf

/// A test implementation of the generated service: each RPC answers from its request in a way a test can check
/// (names echoed, one result per write, one ADD per added target), enough to drive every streaming kind through
/// the generated client and server code over the in-process transport.
struct ProbeFirestore: Google_Firestore_V1_Firestore.SimpleServiceProtocol {
    typealias Document = Google_Firestore_V1_Document

    func getDocument(request: Google_Firestore_V1_GetDocumentRequest, context: ServerContext) async throws -> Document {
        var document = Document()
        document.name = request.name
        return document
    }

    func listDocuments(
        request: Google_Firestore_V1_ListDocumentsRequest, context: ServerContext
    ) async throws -> Google_Firestore_V1_ListDocumentsResponse {
        var response = Google_Firestore_V1_ListDocumentsResponse()
        response.nextPageToken = request.pageToken
        return response
    }

    func updateDocument(
        request: Google_Firestore_V1_UpdateDocumentRequest, context: ServerContext
    ) async throws -> Document {
        request.document
    }

    func deleteDocument(
        request: Google_Firestore_V1_DeleteDocumentRequest, context: ServerContext
    ) async throws -> Google_Protobuf_Empty {
        Google_Protobuf_Empty()
    }

    func batchGetDocuments(
        request: Google_Firestore_V1_BatchGetDocumentsRequest,
        response: RPCWriter<Google_Firestore_V1_BatchGetDocumentsResponse>,
        context: ServerContext
    ) async throws {
        for name in request.documents {
            var item = Google_Firestore_V1_BatchGetDocumentsResponse()
            item.missing = name
            try await response.write(item)
        }
    }

    func beginTransaction(
        request: Google_Firestore_V1_BeginTransactionRequest, context: ServerContext
    ) async throws -> Google_Firestore_V1_BeginTransactionResponse {
        var response = Google_Firestore_V1_BeginTransactionResponse()
        response.transaction = Data(request.database.utf8)
        return response
    }

    func commit(
        request: Google_Firestore_V1_CommitRequest, context: ServerContext
    ) async throws -> Google_Firestore_V1_CommitResponse {
        var response = Google_Firestore_V1_CommitResponse()
        response.writeResults = request.writes.map { _ in Google_Firestore_V1_WriteResult() }
        return response
    }

    func rollback(
        request: Google_Firestore_V1_RollbackRequest, context: ServerContext
    ) async throws -> Google_Protobuf_Empty {
        Google_Protobuf_Empty()
    }

    func runQuery(
        request: Google_Firestore_V1_RunQueryRequest,
        response: RPCWriter<Google_Firestore_V1_RunQueryResponse>,
        context: ServerContext
    ) async throws {
        for collection in request.structuredQuery.from {
            var item = Google_Firestore_V1_RunQueryResponse()
            item.document.name = request.parent + "/" + collection.collectionID
            try await response.write(item)
        }
    }

    func executePipeline(
        request: Google_Firestore_V1_ExecutePipelineRequest,
        response: RPCWriter<Google_Firestore_V1_ExecutePipelineResponse>,
        context: ServerContext
    ) async throws {
        var item = Google_Firestore_V1_ExecutePipelineResponse()
        item.transaction = Data(request.database.utf8)
        try await response.write(item)
    }

    func runAggregationQuery(
        request: Google_Firestore_V1_RunAggregationQueryRequest,
        response: RPCWriter<Google_Firestore_V1_RunAggregationQueryResponse>,
        context: ServerContext
    ) async throws {
        try await response.write(Google_Firestore_V1_RunAggregationQueryResponse())
    }

    func partitionQuery(
        request: Google_Firestore_V1_PartitionQueryRequest, context: ServerContext
    ) async throws -> Google_Firestore_V1_PartitionQueryResponse {
        Google_Firestore_V1_PartitionQueryResponse()
    }

    func write(
        request: RPCAsyncSequence<Google_Firestore_V1_WriteRequest, any Error>,
        response: RPCWriter<Google_Firestore_V1_WriteResponse>,
        context: ServerContext
    ) async throws {
        var count = 0
        for try await message in request {
            count += 1
            var reply = Google_Firestore_V1_WriteResponse()
            reply.streamID = message.streamID.isEmpty ? "probe-stream" : message.streamID
            reply.streamToken = Data([UInt8(truncatingIfNeeded: count)])
            reply.writeResults = message.writes.map { _ in Google_Firestore_V1_WriteResult() }
            try await response.write(reply)
        }
    }

    func listen(
        request: RPCAsyncSequence<Google_Firestore_V1_ListenRequest, any Error>,
        response: RPCWriter<Google_Firestore_V1_ListenResponse>,
        context: ServerContext
    ) async throws {
        for try await message in request {
            var change = Google_Firestore_V1_TargetChange()
            switch message.targetChange {
            case .addTarget(let target):
                change.targetChangeType = .add
                change.targetIds = [target.targetID]
            case .removeTarget(let id):
                change.targetChangeType = .remove
                change.targetIds = [id]
            case nil:
                continue
            }
            var reply = Google_Firestore_V1_ListenResponse()
            reply.targetChange = change
            try await response.write(reply)
        }
    }

    func listCollectionIds(
        request: Google_Firestore_V1_ListCollectionIdsRequest, context: ServerContext
    ) async throws -> Google_Firestore_V1_ListCollectionIdsResponse {
        var response = Google_Firestore_V1_ListCollectionIdsResponse()
        response.collectionIds = [request.parent]
        return response
    }

    func batchWrite(
        request: Google_Firestore_V1_BatchWriteRequest, context: ServerContext
    ) async throws -> Google_Firestore_V1_BatchWriteResponse {
        var response = Google_Firestore_V1_BatchWriteResponse()
        response.writeResults = request.writes.map { _ in Google_Firestore_V1_WriteResult() }
        return response
    }

    func createDocument(
        request: Google_Firestore_V1_CreateDocumentRequest, context: ServerContext
    ) async throws -> Document {
        var document = request.document
        document.name = request.parent + "/" + request.collectionID + "/" + request.documentID
        return document
    }
}
