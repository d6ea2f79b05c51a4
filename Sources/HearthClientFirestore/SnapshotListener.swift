import Foundation
import HearthFirestoreProto
import GRPCCore
import GRPCNIOTransportHTTP2
import SwiftProtobuf
import Synchronization

/// What `addSnapshotListener` returns: `remove()` stops the listener.
public protocol ListenerRegistration: Sendable {
    func remove()
}

/// How a document changed between two query snapshots.
public struct DocumentChange: Sendable {
    public enum ChangeType: Sendable { case added, modified, removed }
    public let type: ChangeType
    public let document: QueryDocumentSnapshot
    /// Position in the previous snapshot (`NSNotFound` for added documents).
    public let oldIndex: UInt
    /// Position in this snapshot (`NSNotFound` for removed documents).
    public let newIndex: UInt
}

final class StreamRegistration: ListenerRegistration {
    let task: Mutex<Task<Void, Never>?> = Mutex(nil)
    let removed = Mutex(false)
    let onRemove: Mutex<(@Sendable () -> Void)?> = Mutex(nil)
    func remove() {
        task.withLock { $0 }?.cancel()
        onRemove.withLock { r in
            defer { r = nil }
            return r
        }?()
    }
}

/// One Listen stream for one target, kept open (reconnecting with its resume token and backoff)
/// until removed. Changes are applied per Firestore's rules; at each consistent point (a target
/// change with no target ids and a read time, once the target is current) the whole result goes
/// to the local engine, which caches it and shows it merged with pending writes.
struct ListenLoop: Sendable {
    let firestore: Firestore
    let target: Google_Firestore_V1_Target
    let targetID: Int32 = 2
    /// What the cache held for the target (the resume token covers these documents).
    let initialResumeToken: Data
    let initialDocuments: [String: Google_Firestore_V1_Document]
    let onMessage: @Sendable () -> Void
    let onFailure: @Sendable () -> Void
    /// At a consistent point: every document of the target, the names changed since the last one, the resume token, the read time.
    let deliver: @Sendable ([String: Google_Firestore_V1_Document], Set<String>, Data, Google_Protobuf_Timestamp?) -> Void
    let fail: @Sendable (any Error) -> Void

    func run() async {
        var resumeToken = initialResumeToken
        var documents = initialDocuments
        var backoff = StreamBackoff()
        let prefix = firestore.databaseName + "/documents/"
        while !Task.isCancelled {
            let delivered = Mutex(false)
            do {
                var request = Google_Firestore_V1_ListenRequest()
                request.database = firestore.databaseName
                var t = target
                t.targetID = targetID
                if !resumeToken.isEmpty { t.resumeToken = resumeToken }
                request.addTarget = t
                let first = request
                let md = try await firestore.metadata()
                let stub = try firestore.stub()
                let box = AttemptState(resume: resumeToken, docs: documents)
                // Offline after 10 s without a message, even if the connection neither fails nor answers.
                try await OnlineTimer(onOffline: onFailure).run(box) {
                try await stub.listen(metadata: md, requestProducer: { writer in
                    try await writer.write(first)
                    // Keep the request side open until the listener is removed.
                    while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
                }) { response in
                    for try await message in response.messages {
                        box.heard.withLock { $0 = true }
                        onMessage()
                        let snapshot: ([String: Google_Firestore_V1_Document], Set<String>, Data, Google_Protobuf_Timestamp, Set<String>)? = try box.state.withLock { s in
                            switch message.responseType {
                            case .documentChange(let change):
                                guard change.document.name.hasPrefix(prefix) else {
                                    throw MalformedResponse("a document change for \"\(change.document.name)\", outside this database")
                                }
                                if change.targetIds.contains(targetID) { s.docs[change.document.name] = change.document }
                                else if change.removedTargetIds.contains(targetID) { s.docs.removeValue(forKey: change.document.name) }
                                s.changed.insert(change.document.name)
                                s.dropped.remove(change.document.name)
                            case .documentDelete(let delete):
                                guard delete.document.hasPrefix(prefix) else { throw MalformedResponse("a document delete outside this database") }
                                s.docs.removeValue(forKey: delete.document)
                                s.changed.insert(delete.document)
                                s.dropped.remove(delete.document)
                            case .documentRemove(let remove):
                                guard remove.document.hasPrefix(prefix) else { throw MalformedResponse("a document remove outside this database") }
                                s.docs.removeValue(forKey: remove.document)
                                s.changed.insert(remove.document)
                                s.dropped.remove(remove.document)
                            case .filter(let filter):
                                if filter.targetID == targetID && Int(filter.count) != s.docs.count {
                                    // The server's count disagrees: start over without the token.
                                    s.resume = Data()
                                    throw ListenReset()
                                }
                            case .targetChange(let change):
                                switch change.targetChangeType {
                                case .current: if change.targetIds.isEmpty || change.targetIds.contains(targetID) { s.current = true }
                                case .reset:
                                    // Watch re-sends what still matches, then CURRENT: until then the
                                    // target is not current and no snapshot is shown (as the other SDKs
                                    // reset a target), so a global snapshot between the RESET and the
                                    // re-adds cannot drop documents that never left.
                                    s.changed.formUnion(s.docs.keys)
                                    s.dropped.formUnion(s.docs.keys)
                                    s.docs = [:]
                                    if change.targetIds.isEmpty || change.targetIds.contains(targetID) { s.current = false }
                                case .remove:
                                    let status = change.cause
                                    throw (FirestoreErrorCode(rawValue: Int(status.code)) ?? .unknown).error(status.message)
                                default: break
                                }
                                if !change.resumeToken.isEmpty, change.targetIds.isEmpty || change.targetIds.contains(targetID) { s.resume = change.resumeToken }
                                if change.targetIds.isEmpty, change.hasReadTime, s.current {
                                    defer { s.changed = []; s.dropped = [] }
                                    return (s.docs, s.changed, s.resume, change.readTime, s.dropped.subtracting(s.docs.keys))
                                }
                            case nil: break
                            }
                            return nil
                        }
                        if var snapshot {
                            if !snapshot.4.isEmpty {
                                // Documents a RESET took out and Watch did not send again: Google's
                                // emulator sends a RESET after a resumed target's documents, so this
                                // may mean nothing left. Look them up (as the other SDKs resolve
                                // limbo documents) before showing the target without them: those
                                // that exist stay members, with their current contents, and the
                                // local query decides whether they still match.
                                let found = try await Self.lookUp(snapshot.4, stub: stub, metadata: md, database: firestore.databaseName)
                                box.state.withLock { s in
                                    for (name, document) in found where s.docs[name] == nil { s.docs[name] = document }
                                }
                                for (name, document) in found where snapshot.0[name] == nil { snapshot.0[name] = document }
                            }
                            delivered.withLock { $0 = true }
                            deliver(snapshot.0, snapshot.1, snapshot.2, snapshot.3)
                        }
                    }
                }
                }
                let s = box.state.withLock { $0 }
                resumeToken = s.resume
                documents = s.docs
            } catch is ListenReset {
                resumeToken = Data()
                documents = [:]
                continue
            } catch is CancellationError {
                return
            } catch let malformed as MalformedResponse {
                fail(malformed.error)
                return
            } catch let error as NSError where error.domain == FirestoreErrorDomain
                && ![FirestoreErrorCode.unavailable.rawValue, FirestoreErrorCode.unknown.rawValue, FirestoreErrorCode.internal.rawValue,
                     FirestoreErrorCode.deadlineExceeded.rawValue, FirestoreErrorCode.resourceExhausted.rawValue].contains(error.code) {
                fail(error)
                return
            } catch let error as RPCError where ![.unavailable, .unknown, .internalError, .deadlineExceeded, .resourceExhausted, .cancelled].contains(error.code) {
                if Task.isCancelled { return }
                fail((FirestoreErrorCode(rawValue: error.code.rawValue) ?? .unknown).error(error.message))
                return
            } catch {
                if Task.isCancelled { return }
            }
            if Task.isCancelled { return }
            // Transient: offline until a message arrives; back off (1 s × 1.5 up to 60 s, ±50%
            // jitter; from the start again after a good snapshot) and resume with the token.
            onFailure()
            if delivered.withLock({ $0 }) { backoff.reset() }
            let delay = max(backoff.next(), delivered.withLock({ $0 }) ? 0 : 0.05)
            try? await Task.sleep(for: .seconds(delay))
        }
    }

    struct ListenReset: Error {}

    /// The documents of `names` that exist now (BatchGetDocuments), by name.
    static func lookUp(
        _ names: Set<String>, stub: Google_Firestore_V1_Firestore.Client<HTTP2ClientTransport.Posix>, metadata: Metadata, database: String
    ) async throws -> [String: Google_Firestore_V1_Document] {
        var request = Google_Firestore_V1_BatchGetDocumentsRequest()
        request.database = database
        request.documents = names.sorted()
        return try await stub.batchGetDocuments(request, metadata: metadata) { response in
            var found: [String: Google_Firestore_V1_Document] = [:]
            for try await message in response.messages {
                if case .found(let document) = message.result { found[document.name] = document }
            }
            return found
        }
    }

    /// One attempt's state, shared with the response handler.
    final class AttemptState: Sendable {
        /// `dropped`: documents a RESET took out that Watch has not sent again since (see `confirm`).
        let state: Mutex<(resume: Data, docs: [String: Google_Firestore_V1_Document], current: Bool, changed: Set<String>, dropped: Set<String>)>
        let heard: Mutex<Bool> = Mutex(false)
        init(resume: Data, docs: [String: Google_Firestore_V1_Document]) {
            state = Mutex((resume: resume, docs: docs, current: false, changed: [], dropped: []))
        }
    }

    /// The Apple SDK's online-state timer: an attempt that has heard nothing for 10 s counts as
    /// offline (listeners then show the cache) while it goes on trying.
    struct OnlineTimer: Sendable {
        static let timeout: Duration = .seconds(10)
        let onOffline: @Sendable () -> Void

        func run(_ box: AttemptState, _ attempt: @escaping @Sendable () async throws -> Void) async throws {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await attempt()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: Self.timeout)
                    if !box.heard.withLock({ $0 }) { onOffline() }
                    try await Task.sleep(for: .seconds(365 * 86_400))
                    return false
                }
                defer { group.cancelAll() }
                while let finished = try await group.next() {
                    if finished { return }
                }
            }
        }
    }
}

extension LocalSyncEngine {
    /// Starts a view and its Listen stream; the registration removes both.
    func listen(
        firestore: Firestore, target: Google_Firestore_V1_Target, kind: ViewKind, targetKey: String, includeMetadataChanges: Bool,
        deliver: @escaping @Sendable (ViewSnapshot) -> Void, fail: @escaping @Sendable (any Error) -> Void
    ) -> any ListenerRegistration {
        let registration = StreamRegistration()
        let id = addView(
            kind: kind, targetKey: targetKey, includeMetadataChanges: includeMetadataChanges,
            deliver: { snapshot in if !registration.removed.withLock({ $0 }) { deliver(snapshot) } })
        registration.onRemove.withLock {
            $0 = { [self] in
                registration.removed.withLock { $0 = true }
                removeView(id)
            }
        }
        // The stream runs while the network is enabled; each start resumes from the cached target.
        setListenSwitch(id) { [self] enabled in
            registration.task.withLock { task in
                task?.cancel()
                task = nil
                guard enabled, !registration.removed.withLock({ $0 }) else { return }
                let (token, documents) = resumeState(targetKey)
                let loop = ListenLoop(
                    firestore: firestore, target: target, initialResumeToken: token, initialDocuments: documents,
                    onMessage: { [self] in listenMessageReceived() },
                    onFailure: { [self] in listenFailed(id) },
                    deliver: { [self] docs, changed, token, readTime in
                        remoteSnapshot(id, documents: docs, changed: changed, resumeToken: token, readTime: readTime)
                    },
                    fail: { [self] error in
                        removeView(id)
                        callbacks.async { if !registration.removed.withLock({ $0 }) { fail(error) } }
                    })
                task = Task { await loop.run() }
            }
        }
        return registration
    }
}

extension DocumentReference {
    /// Calls `listener` with the document now and at every change.
    @discardableResult
    public func addSnapshotListener(_ listener: @escaping @Sendable (DocumentSnapshot?, (any Error)?) -> Void) -> any ListenerRegistration {
        addSnapshotListener(includeMetadataChanges: false, listener: listener)
    }

    @discardableResult
    public func addSnapshotListener(
        includeMetadataChanges: Bool, listener: @escaping @Sendable (DocumentSnapshot?, (any Error)?) -> Void
    ) -> any ListenerRegistration {
        var target = Google_Firestore_V1_Target()
        var docs = Google_Firestore_V1_Target.DocumentsTarget()
        docs.documents = [client.documentName(path)]
        target.documents = docs
        return client.engine.listen(
            firestore: client, target: target, kind: .document(path: path), targetKey: "d|\(path)",
            includeMetadataChanges: includeMetadataChanges,
            deliver: { [self] snapshot in
                let doc = snapshot.documents.first
                let metadata = SnapshotMetadata(hasPendingWrites: doc?.hasPendingWrites ?? false, isFromCache: snapshot.metadata.isFromCache)
                listener(DocumentSnapshot(reference: self, document: doc?.document, metadata: metadata), nil)
            },
            fail: { error in listener(nil, error) })
    }

    /// The document's snapshots as an `AsyncSequence` (the listener is removed when iteration ends).
    public var snapshots: AsyncThrowingStream<DocumentSnapshot, any Error> { snapshots(includeMetadataChanges: false) }

    public func snapshots(includeMetadataChanges: Bool) -> AsyncThrowingStream<DocumentSnapshot, any Error> {
        AsyncThrowingStream { continuation in
            let registration = addSnapshotListener(includeMetadataChanges: includeMetadataChanges) { snapshot, error in
                if let snapshot { continuation.yield(snapshot) } else { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in registration.remove() }
        }
    }
}

extension Query {
    /// Calls `listener` with the query's results now and at every change.
    @discardableResult
    public func addSnapshotListener(_ listener: @escaping @Sendable (QuerySnapshot?, (any Error)?) -> Void) -> any ListenerRegistration {
        addSnapshotListener(includeMetadataChanges: false, listener: listener)
    }

    @discardableResult
    public func addSnapshotListener(
        includeMetadataChanges: Bool, listener: @escaping @Sendable (QuerySnapshot?, (any Error)?) -> Void
    ) -> any ListenerRegistration {
        if let executionError {
            listener(nil, executionError)
            return StreamRegistration()
        }
        var target = Google_Firestore_V1_Target()
        var q = Google_Firestore_V1_Target.QueryTarget()
        q.parent = parentPath.isEmpty ? "\(firestore.databaseName)/documents" : firestore.documentName(parentPath)
        q.structuredQuery = structuredQuery
        target.query = q
        return firestore.engine.listen(
            firestore: firestore, target: target, kind: localKind, targetKey: targetKey, includeMetadataChanges: includeMetadataChanges,
            deliver: { [self] snapshot in listener(querySnapshot(snapshot), nil) },
            fail: { error in listener(nil, error) })
    }

    /// The query's snapshots as an `AsyncSequence` (the listener is removed when iteration ends).
    public var snapshots: AsyncThrowingStream<QuerySnapshot, any Error> { snapshots(includeMetadataChanges: false) }

    public func snapshots(includeMetadataChanges: Bool) -> AsyncThrowingStream<QuerySnapshot, any Error> {
        AsyncThrowingStream { continuation in
            let registration = addSnapshotListener(includeMetadataChanges: includeMetadataChanges) { snapshot, error in
                if let snapshot { continuation.yield(snapshot) } else { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in registration.remove() }
        }
    }

    /// The local engine for this query's wire form (with `limit(toLast:)`'s reversal).
    var localEngine: LocalQueryEngine {
        LocalQueryEngine(documentsRoot: "\(firestore.databaseName)/documents", parentPath: parentPath, query: structuredQuery, limitToLast: limitToLast)
    }

    var localKind: LocalSyncEngine.ViewKind {
        .query(
            localEngine, collectionPath: allDescendants ? nil : (parentPath.isEmpty ? collectionIDValue : "\(parentPath)/\(collectionIDValue)"),
            collectionID: collectionIDValue)
    }

    /// Identifies the target in the cache (its resume token and documents).
    var targetKey: String {
        "q|\(parentPath)|\(limitToLast)|" + structuredQuery.textFormatString()
    }

    func querySnapshot(_ snapshot: ViewSnapshot) -> QuerySnapshot {
        QuerySnapshot(query: self, view: snapshot, separateMetadataChanges: true)
    }
}

