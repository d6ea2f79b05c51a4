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

    /// Replaces the document (creating it if needed). Listeners see the write at once; this
    /// returns when the server acknowledges it (offline: once back online).
    public func setData(_ documentData: [String: Any]) async throws {
        try await client.enqueue([client.reader.parseSet(documentData).write(name: client.documentName(path))])
    }

    /// `merge: true` writes only the given fields.
    public func setData(_ documentData: [String: Any], merge: Bool) async throws {
        try await client.enqueue([parsedSet(documentData, merge: merge)])
    }

    /// Writes only the listed fields (`String` dotted paths or `FieldPath`s).
    public func setData(_ documentData: [String: Any], mergeFields: [Any]) async throws {
        try await client.enqueue([parsedSet(documentData, mergeFields: mergeFields)])
    }

    /// Updates fields of an existing document (`notFound` otherwise).
    public func updateData(_ fields: [AnyHashable: Any]) async throws {
        try await client.enqueue([client.reader.parseUpdate(fields).write(name: client.documentName(path))])
    }

    public func delete() async throws {
        try await client.enqueue([deleteWrite()])
    }

    /// Encodes `value` with `encoder` and writes it, resuming when the server acknowledges it.
    public func setData<T: Encodable>(from value: T, merge: Bool = false, encoder: Firestore.Encoder = Firestore.Encoder()) async throws {
        try await setData(try encoder.encode(value), merge: merge)
    }

    // MARK: Completion forms (the write is queued before they return; `completion` runs on the server's answer)

    public func setData(_ documentData: [String: Any], completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        setData(documentData, merge: false, completion: completion)
    }

    public func setData(_ documentData: [String: Any], merge: Bool, completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        queue(completion) { try parsedSet(documentData, merge: merge) }
    }

    public func setData(_ documentData: [String: Any], mergeFields: [Any], completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        queue(completion) { try parsedSet(documentData, mergeFields: mergeFields) }
    }

    public func updateData(_ fields: [AnyHashable: Any], completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        queue(completion) { try client.reader.parseUpdate(fields).write(name: client.documentName(path)) }
    }

    public func delete(completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        queue(completion) { deleteWrite() }
    }

    /// The Apple SDK's synchronous Codable write: encodes (throwing on failure), queues, returns.
    public func setData<T: Encodable>(
        from value: T, merge: Bool = false, encoder: Firestore.Encoder = Firestore.Encoder(), completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) throws {
        client.enqueue([try parsedSet(try encoder.encode(value), merge: merge)], completion: completion)
    }

    func queue(_ completion: (@Sendable ((any Error)?) -> Void)?, _ make: () throws -> Google_Firestore_V1_Write) {
        do {
            client.enqueue([try make()], completion: completion)
        } catch {
            client.engine.callbacks.async { completion?(error) }
        }
    }

    func parsedSet(_ data: [String: Any], merge: Bool) throws -> Google_Firestore_V1_Write {
        try (merge ? client.reader.parseMergeSet(data) : client.reader.parseSet(data)).write(name: client.documentName(path))
    }

    func parsedSet(_ data: [String: Any], mergeFields: [Any]) throws -> Google_Firestore_V1_Write {
        let fields = try mergeFields.map { f -> FieldPath in
            if let p = f as? FieldPath { return p }
            if let s = f as? String { return try FieldPath.parse(dotted: s) }
            throw FirestoreErrorCode.invalidArgument.error("Merge fields must be Strings or FieldPaths.")
        }
        return try client.reader.parseMergeSet(data, mergeFields: fields).write(name: client.documentName(path))
    }

    func deleteWrite() -> Google_Firestore_V1_Write {
        var w = Google_Firestore_V1_Write()
        w.delete = client.documentName(path)
        return w
    }

    // MARK: Reads

    /// The document from the server, or from the cache when offline (`.default`).
    public func getDocument() async throws -> DocumentSnapshot { try await getDocument(source: .default) }

    /// `.server`: only the server (an error offline); `.cache`: only the cache (an error if it
    /// holds nothing about the document); `.default`: the server, else the cache.
    public func getDocument(source: FirestoreSource) async throws -> DocumentSnapshot {
        let engine = client.engine
        if source == .server && !engine.networkEnabled {
            throw FirestoreErrorCode.unavailable.error("Failed to get document from server. (The network is disabled.)")
        }
        if source != .cache && engine.networkEnabled {
            do {
                let (found, readTime) = try await serverDocument()
                engine.cacheServerDocuments([(path: path, document: found)], readTime: readTime)
                let local = try engine.cachedDocument(path)
                return DocumentSnapshot(
                    reference: self, document: local.map { $0.document } ?? found,
                    metadata: SnapshotMetadata(hasPendingWrites: local?.pending ?? false, isFromCache: false))
            } catch let error as NSError where source == .default && Self.isOffline(error) {
                // Offline: fall through to the cache.
            }
        }
        guard let local = try engine.cachedDocument(path) else {
            if source == .cache {
                throw FirestoreErrorCode.unavailable.error(
                    "Failed to get document from cache. (However, this document may exist on the server. Run again without setting source to FirestoreSourceCache to attempt to retrieve the document from the server.)")
            }
            throw FirestoreErrorCode.unavailable.error("Failed to get document because the client is offline.")
        }
        return DocumentSnapshot(reference: self, document: local.document, metadata: SnapshotMetadata(hasPendingWrites: local.pending, isFromCache: true))
    }

    /// Errors that mean the server could not be reached (reads then fall back to the cache).
    static func isOffline(_ error: NSError) -> Bool {
        error.domain == FirestoreErrorDomain
            && [FirestoreErrorCode.unavailable.rawValue, FirestoreErrorCode.deadlineExceeded.rawValue, FirestoreErrorCode.unknown.rawValue]
                .contains(error.code)
    }

    /// The document from `BatchGetDocuments` (nil: missing) and the read time it answered at.
    func serverDocument() async throws -> (Google_Firestore_V1_Document?, Google_Protobuf_Timestamp?) {
        var request = Google_Firestore_V1_BatchGetDocumentsRequest()
        request.database = client.databaseName
        request.documents = [client.documentName(path)]
        return try await client.call { stub, md in
            try await stub.batchGetDocuments(request, metadata: md) { response in
                var document: Google_Firestore_V1_Document?
                var readTime: Google_Protobuf_Timestamp?
                for try await message in response.messages {
                    if case .found(let d) = message.result { document = d }
                    if message.hasReadTime { readTime = message.readTime }
                }
                return (document, readTime)
            }
        }
    }

    public func getDocument<T: Decodable>(as type: T.Type, decoder: Firestore.Decoder = Firestore.Decoder()) async throws -> T {
        try await getDocument().data(as: type, decoder: decoder)
    }

    public func getDocument<T: Decodable>(
        as type: T.Type, with serverTimestampBehavior: ServerTimestampBehavior = .none, decoder: Firestore.Decoder = Firestore.Decoder(),
        source: FirestoreSource
    ) async throws -> T {
        try await getDocument(source: source).data(as: type, with: serverTimestampBehavior, decoder: decoder)
    }
}

/// Where a read comes from (the Apple SDK's `FirestoreSource`).
public enum FirestoreSource: Sendable {
    case `default`, server, cache
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

    /// Queues the new document and returns its reference at once; `completion` runs on the server's answer.
    @discardableResult
    public func addDocument(data: [String: Any], completion: (@Sendable ((any Error)?) -> Void)? = nil) -> DocumentReference {
        let ref = document()
        ref.setData(data, completion: completion)
        return ref
    }

    /// The Apple SDK's synchronous Codable add: encodes (throwing on failure), queues, returns the reference.
    @discardableResult
    public func addDocument<T: Encodable>(
        from value: T, encoder: Firestore.Encoder = Firestore.Encoder(), completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) throws -> DocumentReference {
        let ref = document()
        try ref.setData(from: value, encoder: encoder, completion: completion)
        return ref
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

    /// Queues the batch (listeners see it at once) and resumes when the server acknowledges it.
    public func commit() async throws {
        try await firestore.enqueue(writes)
    }

    /// Queues the batch; `completion` runs on the server's answer.
    public func commit(completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        firestore.enqueue(writes, completion: completion)
    }
}
