import Foundation
import HearthFirestoreProto

/// Whether the data came from the server or the local cache, and whether it holds local writes.
public struct SnapshotMetadata: Sendable, Equatable {
    /// The data includes local writes the server has not acknowledged yet.
    public let hasPendingWrites: Bool
    /// The data came from the cache (offline, or the server has not caught up yet).
    public let isFromCache: Bool
}

/// How a server timestamp that is still pending locally reads: null (the default), the local
/// estimate (the time of the write), or the value before the write.
public enum ServerTimestampBehavior: Sendable {
    case none, estimate, previous
}

/// A document as read: its data if it exists.
public class DocumentSnapshot: @unchecked Sendable {
    public let reference: DocumentReference
    let document: Google_Firestore_V1_Document?
    public let metadata: SnapshotMetadata

    init(
        reference: DocumentReference, document: Google_Firestore_V1_Document?,
        metadata: SnapshotMetadata = SnapshotMetadata(hasPendingWrites: false, isFromCache: false)
    ) {
        self.reference = reference
        self.document = document
        self.metadata = metadata
    }

    public var exists: Bool { document != nil }
    public var documentID: String { reference.documentID }

    /// The fields, or nil for a missing document.
    public func data() -> [String: Any]? { data(with: .none) }

    /// The fields, reading pending server timestamps per `serverTimestampBehavior`.
    public func data(with serverTimestampBehavior: ServerTimestampBehavior) -> [String: Any]? {
        guard let document else { return nil }
        var writer = reference.client.writer
        writer.serverTimestampBehavior = serverTimestampBehavior
        return writer.convert(document.fields)
    }

    /// One field by dotted path or `FieldPath`.
    public func get(_ field: Any) -> Any? {
        let path: FieldPath? = (field as? FieldPath) ?? (field as? String).flatMap { try? FieldPath.parse(dotted: $0) }
        guard let path, var level: Any = data() else { return nil }
        for segment in path.segments {
            guard let map = level as? [String: Any], let next = map[segment] else { return nil }
            level = next
        }
        return level
    }

    /// Decodes the document (a missing one throws; ask for `T?` to get nil instead).
    public func data<T: Decodable>(as type: T.Type, decoder: Firestore.Decoder = Firestore.Decoder()) throws -> T {
        try data(as: type, with: .none, decoder: decoder)
    }

    public func data<T: Decodable>(as type: T.Type, with serverTimestampBehavior: ServerTimestampBehavior, decoder: Firestore.Decoder = Firestore.Decoder()) throws -> T {
        guard let data = data(with: serverTimestampBehavior) else {
            if let optional = type as? any ExpressibleByNilLiteral.Type, let none = optional.init(nilLiteral: ()) as? T { return none }
            throw FirestoreErrorCode.notFound.error("Failed to decode \(T.self): document \(reference.path) does not exist.")
        }
        return try decoder.decode(type, from: data, in: reference)
    }
}

/// A document in a query's result (it always exists).
public final class QueryDocumentSnapshot: DocumentSnapshot, @unchecked Sendable {
    public override func data() -> [String: Any] { super.data() ?? [:] }
    public override func data(with serverTimestampBehavior: ServerTimestampBehavior) -> [String: Any] {
        super.data(with: serverTimestampBehavior) ?? [:]
    }
}

public struct QuerySnapshot: @unchecked Sendable {
    public let query: Query
    public let documents: [QueryDocumentSnapshot]
    /// What changed since the listener's previous snapshot (everything is `added` in the first).
    public var documentChanges: [DocumentChange] = []
    public var metadata = SnapshotMetadata(hasPendingWrites: false, isFromCache: false)
    /// With metadata changes: also documents whose `hasPendingWrites` flipped (as `modified`).
    var metadataDocumentChanges: [DocumentChange]?
    public var count: Int { documents.count }
    public var isEmpty: Bool { documents.isEmpty }

    public func documentChanges(includeMetadataChanges: Bool) -> [DocumentChange] {
        includeMetadataChanges ? (metadataDocumentChanges ?? documentChanges) : documentChanges
    }
}
