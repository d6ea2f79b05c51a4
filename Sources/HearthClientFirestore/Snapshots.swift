import Foundation
import HearthFirestoreProto
import Synchronization

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

/// A query's results. Its document snapshots and changes are made when the app first asks for
/// them (a first snapshot of 10,000 cached documents need not build 10,000 objects to be counted).
public struct QuerySnapshot: @unchecked Sendable {
    public let query: Query
    let contents: QuerySnapshotContents
    public var metadata: SnapshotMetadata

    init(query: Query, view: ViewSnapshot, separateMetadataChanges: Bool) {
        self.query = query
        contents = QuerySnapshotContents(query: query, view: view, separateMetadataChanges: separateMetadataChanges)
        metadata = view.metadata
    }

    public var documents: [QueryDocumentSnapshot] { contents.documents() }
    /// What changed since the listener's previous snapshot (everything is `added` in the first).
    public var documentChanges: [DocumentChange] { contents.changes(includeMetadataChanges: false) }
    public var count: Int { contents.view.documents.count }
    public var isEmpty: Bool { contents.view.documents.isEmpty }

    /// With metadata changes: also documents whose `hasPendingWrites` flipped (as `modified`).
    public func documentChanges(includeMetadataChanges: Bool) -> [DocumentChange] {
        contents.changes(includeMetadataChanges: includeMetadataChanges)
    }
}

/// The view's documents and changes, turned into snapshots once, when first read.
final class QuerySnapshotContents: Sendable {
    let query: Query
    let view: ViewSnapshot
    /// A listener's snapshot keeps the metadata-only changes apart; a one-time read has none.
    let separateMetadataChanges: Bool
    let built = Mutex<(documents: [QueryDocumentSnapshot]?, changes: [DocumentChange]?, metadataChanges: [DocumentChange]?)>((nil, nil, nil))

    init(query: Query, view: ViewSnapshot, separateMetadataChanges: Bool) {
        self.query = query
        self.view = view
        self.separateMetadataChanges = separateMetadataChanges
    }

    func snapshot(_ d: ViewDocument) -> QueryDocumentSnapshot {
        QueryDocumentSnapshot(
            reference: DocumentReference(path: d.path, firestore: query.firestore), document: d.document,
            metadata: SnapshotMetadata(hasPendingWrites: d.hasPendingWrites, isFromCache: view.metadata.isFromCache))
    }

    func documents() -> [QueryDocumentSnapshot] {
        if let made = built.withLock({ $0.documents }) { return made }
        let made = view.documents.map(snapshot)
        return built.withLock { b in
            if b.documents == nil { b.documents = made }
            return b.documents!
        }
    }

    func changes(includeMetadataChanges: Bool) -> [DocumentChange] {
        let metadata = includeMetadataChanges && separateMetadataChanges
        if let made = built.withLock({ metadata ? $0.metadataChanges : $0.changes }) { return made }
        let documents = documents()
        // A change's document is the snapshot in `documents` at its new index (the same object).
        let made = (metadata ? view.metadataChanges : view.changes).map { c in
            let document = c.newIndex.flatMap { i in i < documents.count && documents[i].reference.path == c.document.path ? documents[i] : nil }
            return DocumentChange(
                type: c.type, document: document ?? snapshot(c.document), oldIndex: c.oldIndex.map(UInt.init) ?? UInt(NSNotFound),
                newIndex: c.newIndex.map(UInt.init) ?? UInt(NSNotFound))
        }
        return built.withLock { b in
            if metadata {
                if b.metadataChanges == nil { b.metadataChanges = made }
                return b.metadataChanges!
            }
            if b.changes == nil { b.changes = made }
            return b.changes!
        }
    }
}
