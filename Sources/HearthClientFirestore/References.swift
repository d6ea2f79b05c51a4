import Foundation
import HearthFirestoreProto
import SwiftProtobuf

extension DocumentReference {
    var client: Firestore {
        guard let firestore else { preconditionFailure("This DocumentReference was not made by a Firestore instance.") }
        return firestore
    }

    public var parent: CollectionReference {
        CollectionReference(firestore: client, path: path.split(separator: "/").dropLast().joined(separator: "/"))
    }

    public func collection(_ collectionPath: String) -> CollectionReference {
        CollectionReference(firestore: client, path: "\(path)/\(Firestore.normalize(collectionPath))")
    }

    /// Replaces the document (creating it if needed).
    public func setData(_ documentData: [String: Any]) async throws {
        try await client.commit([client.reader.parseSet(documentData).write(name: client.documentName(path))])
    }

    /// `merge: true` writes only the given fields.
    public func setData(_ documentData: [String: Any], merge: Bool) async throws {
        guard merge else { return try await setData(documentData) }
        try await client.commit([client.reader.parseMergeSet(documentData).write(name: client.documentName(path))])
    }

    /// Writes only the listed fields (`String` dotted paths or `FieldPath`s).
    public func setData(_ documentData: [String: Any], mergeFields: [Any]) async throws {
        let fields = try mergeFields.map { f -> FieldPath in
            if let p = f as? FieldPath { return p }
            if let s = f as? String { return try FieldPath.parse(dotted: s) }
            throw FirestoreErrorCode.invalidArgument.error("Merge fields must be Strings or FieldPaths.")
        }
        try await client.commit([client.reader.parseMergeSet(documentData, mergeFields: fields).write(name: client.documentName(path))])
    }

    /// Updates fields of an existing document (`notFound` otherwise).
    public func updateData(_ fields: [AnyHashable: Any]) async throws {
        try await client.commit([client.reader.parseUpdate(fields).write(name: client.documentName(path))])
    }

    public func delete() async throws {
        var w = Google_Firestore_V1_Write()
        w.delete = client.documentName(path)
        try await client.commit([w])
    }

    /// Encodes `value` with `encoder` and writes it. (Synchronous in the Apple SDK; here it awaits the server.)
    public func setData<T: Encodable>(from value: T, merge: Bool = false, encoder: Firestore.Encoder = Firestore.Encoder()) async throws {
        try await setData(try encoder.encode(value), merge: merge)
    }

    public func getDocument() async throws -> DocumentSnapshot {
        var request = Google_Firestore_V1_BatchGetDocumentsRequest()
        request.database = client.databaseName
        request.documents = [client.documentName(path)]
        let found: Google_Firestore_V1_Document? = try await client.call { stub, md in
            try await stub.batchGetDocuments(request, metadata: md) { response in
                var document: Google_Firestore_V1_Document?
                for try await message in response.messages {
                    if case .found(let d) = message.result { document = d }
                }
                return document
            }
        }
        return DocumentSnapshot(reference: self, document: found)
    }

    public func getDocument<T: Decodable>(as type: T.Type, decoder: Firestore.Decoder = Firestore.Decoder()) async throws -> T {
        try await getDocument().data(as: type, decoder: decoder)
    }
}

/// A collection: a query over its documents, and the place to add new ones.
public final class CollectionReference: Query, @unchecked Sendable {
    public let path: String

    init(firestore: Firestore, path: String) {
        self.path = path
        let parts = path.split(separator: "/")
        super.init(firestore: firestore, parent: parts.dropLast().joined(separator: "/"), collectionID: String(parts.last ?? ""), allDescendants: false)
    }

    public var collectionID: String { collectionIDValue }

    public var parent: DocumentReference? {
        parentPath.isEmpty ? nil : DocumentReference(path: parentPath, firestore: firestore)
    }

    /// A new document with a 20-character automatic id.
    public func document() -> DocumentReference { document(Self.autoID()) }

    public func document(_ documentPath: String) -> DocumentReference {
        DocumentReference(path: "\(path)/\(Firestore.normalize(documentPath))", firestore: firestore)
    }

    @discardableResult
    public func addDocument(data: [String: Any]) async throws -> DocumentReference {
        let ref = document()
        try await ref.setData(data)
        return ref
    }

    @discardableResult
    public func addDocument<T: Encodable>(from value: T, encoder: Firestore.Encoder = Firestore.Encoder()) async throws -> DocumentReference {
        try await addDocument(data: try encoder.encode(value))
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    /// 20 characters from 62, uniformly (no modulo bias), as Firebase's SDKs make them.
    static func autoID() -> String {
        var rng = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] })
    }
}

/// Writes committed together, atomically.
public final class WriteBatch: @unchecked Sendable {
    let firestore: Firestore
    var writes: [Google_Firestore_V1_Write] = []

    init(firestore: Firestore) { self.firestore = firestore }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference) throws -> WriteBatch {
        writes.append(try firestore.reader.parseSet(data).write(name: firestore.documentName(document.path)))
        return self
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference, merge: Bool) throws -> WriteBatch {
        guard merge else { return try setData(data, forDocument: document) }
        writes.append(try firestore.reader.parseMergeSet(data).write(name: firestore.documentName(document.path)))
        return self
    }

    @discardableResult
    public func updateData(_ fields: [AnyHashable: Any], forDocument document: DocumentReference) throws -> WriteBatch {
        writes.append(try firestore.reader.parseUpdate(fields).write(name: firestore.documentName(document.path)))
        return self
    }

    @discardableResult
    public func deleteDocument(_ document: DocumentReference) -> WriteBatch {
        var w = Google_Firestore_V1_Write()
        w.delete = firestore.documentName(document.path)
        writes.append(w)
        return self
    }

    public func commit() async throws {
        try await firestore.commit(writes)
    }
}
