import Foundation
import HearthFirestoreProto

/// Whether the data came from the server or the local cache, and whether it holds local writes.
public struct SnapshotMetadata: Sendable, Equatable {
    public let hasPendingWrites: Bool
    public let isFromCache: Bool
}

/// A document as read: its data if it exists.
public class DocumentSnapshot: @unchecked Sendable {
    public let reference: DocumentReference
    let document: Google_Firestore_V1_Document?
    public let metadata: SnapshotMetadata

    init(reference: DocumentReference, document: Google_Firestore_V1_Document?) {
        self.reference = reference
        self.document = document
        metadata = SnapshotMetadata(hasPendingWrites: false, isFromCache: false)
    }

    public var exists: Bool { document != nil }
    public var documentID: String { reference.documentID }

    /// The fields, or nil for a missing document.
    public func data() -> [String: Any]? {
        document.map { reference.client.writer.convert($0.fields) }
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
        guard let data = data() else {
            if let optional = type as? any ExpressibleByNilLiteral.Type, let none = optional.init(nilLiteral: ()) as? T { return none }
            throw FirestoreErrorCode.notFound.error("Failed to decode \(T.self): document \(reference.path) does not exist.")
        }
        return try decoder.decode(type, from: data, in: reference)
    }
}

/// A document in a query's result (it always exists).
public final class QueryDocumentSnapshot: DocumentSnapshot, @unchecked Sendable {
    public override func data() -> [String: Any] { super.data() ?? [:] }
}

public struct QuerySnapshot: @unchecked Sendable {
    public let query: Query
    public let documents: [QueryDocumentSnapshot]
    /// What changed since the listener's previous snapshot (everything is `added` in the first).
    public var documentChanges: [DocumentChange] = []
    public var count: Int { documents.count }
    public var isEmpty: Bool { documents.isEmpty }
    public var metadata: SnapshotMetadata { SnapshotMetadata(hasPendingWrites: false, isFromCache: false) }
}
