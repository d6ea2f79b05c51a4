import Foundation
import HearthFirestoreProto
import SwiftProtobuf

extension Query {
    /// `.server`: `RunQuery` (an error offline); `.cache`: the local engine over the cache;
    /// `.default`: the server, else the cache. Pending writes are applied either way.
    public func getDocuments(source: FirestoreSource) async throws -> QuerySnapshot {
        if let executionError { throw executionError }
        let engine = firestore.engine
        let local = localEngine
        if source == .server && !engine.networkEnabled {
            throw FirestoreErrorCode.unavailable.error("Failed to get documents from server. (The network is disabled.)")
        }
        if source != .cache && engine.networkEnabled {
            do {
                let found = try await serverDocuments()
                let prefix = "\(firestore.databaseName)/documents/"
                var byPath: [String: Google_Firestore_V1_Document] = [:]
                for d in found where d.name.hasPrefix(prefix) { byPath[String(d.name.dropFirst(prefix.count))] = d }
                engine.cacheServerDocuments(byPath.map { (path: $0.key, document: Optional($0.value)) })
                let docs = try engine.runQuery(local, collectionPath: nil, collectionID: collectionIDValue, serverDocuments: byPath)
                return snapshot(docs, fromCache: false)
            } catch let error as NSError where source == .default && DocumentReference.isOffline(error) {
                // Offline: the cache answers.
            }
        }
        guard case .query(_, let collectionPath, let collectionID) = localKind else { return snapshot([], fromCache: true) }
        let docs = try engine.runQuery(local, collectionPath: collectionPath, collectionID: collectionID, serverDocuments: nil)
        return snapshot(docs, fromCache: true)
    }

    func snapshot(_ docs: [ViewDocument], fromCache: Bool) -> QuerySnapshot {
        let metadata = SnapshotMetadata(hasPendingWrites: docs.contains { $0.hasPendingWrites }, isFromCache: fromCache)
        let view = ViewSnapshot(
            documents: docs, metadata: metadata,
            changes: docs.enumerated().map { ViewChange(type: .added, document: $1, oldIndex: nil, newIndex: $0) },
            metadataChanges: [], known: true)
        return QuerySnapshot(query: self, view: view, separateMetadataChanges: false)
    }

    /// `RunQuery` with the wire form.
    func serverDocuments() async throws -> [Google_Firestore_V1_Document] {
        var request = Google_Firestore_V1_RunQueryRequest()
        request.parent = parentName
        request.structuredQuery = structuredQuery
        return try await firestore.call { stub, md in
            try await stub.runQuery(request, metadata: md) { response in
                var docs: [Google_Firestore_V1_Document] = []
                for try await message in response.messages where message.hasDocument { docs.append(message.document) }
                return docs
            }
        }
    }
}
