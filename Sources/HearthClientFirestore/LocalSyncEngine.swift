import Foundation
import HearthFirestoreProto
import SwiftProtobuf
import Synchronization

/// Whether the client believes it can reach the backend (the Apple SDK's online-state tracker):
/// unknown until the first Listen message (online) or failed Listen attempt (offline).
enum OnlineState: Sendable { case unknown, online, offline }

/// A document as a view shows it: the server's version with the pending writes applied.
struct ViewDocument: Sendable {
    let path: String
    let document: Google_Firestore_V1_Document
    let hasPendingWrites: Bool
}

/// What a listener is given: the documents in order, the metadata, and the changes since its last snapshot.
struct ViewSnapshot: Sendable {
    let documents: [ViewDocument]
    let metadata: SnapshotMetadata
    /// Changes of data since the last snapshot.
    let changes: [ViewChange]
    /// The same plus documents whose `hasPendingWrites` flipped (as modified).
    let metadataChanges: [ViewChange]
    /// Only for document views: whether the document is known (cached or written locally).
    let known: Bool
}

struct ViewChange: Sendable {
    let type: DocumentChange.ChangeType
    let document: ViewDocument
    let oldIndex: Int?
    let newIndex: Int?
}

/// The local half of the client, between the app and the streams: the cache, the queue of writes,
/// the overlays they make (latency compensation), and the views of active listeners. Every change
/// of state happens under one lock and recomputes the views it can affect; their snapshots are
/// delivered in order on one serial queue.
final class LocalSyncEngine: Sendable {
    typealias Document = Google_Firestore_V1_Document

    enum ViewKind: Sendable {
        case query(LocalQueryEngine, collectionPath: String?, collectionID: String)
        case document(path: String)
    }

    struct View: Sendable {
        let kind: ViewKind
        let targetKey: String
        let includeMetadataChanges: Bool
        let deliver: @Sendable (ViewSnapshot) -> Void
        /// The target is current on the server in this session.
        var synced = false
        /// The paths the server last said match the target.
        var targetPaths: Set<String> = []
        /// The target's documents were written to the cache in this session (later snapshots write differences).
        var wroteTarget = false
        var last: [ViewDocument]?
        var lastMetadata: SnapshotMetadata?
    }

    struct State: Sendable {
        var batches: [LocalCache.Batch] = []
        var completions: [Int64: @Sendable ((any Error)?) -> Void] = [:]
        var views: [Int: View] = [:]
        var nextViewID = 1
        var online: OnlineState = .unknown
        var sequence: Int64 = 0
        var lastCollection = ContinuousClock.now
        /// Sends what is queued on the open Write stream, if one is open.
        var writePump: (@Sendable () -> Void)?
        var writeWaiters: [(upTo: Int64, resume: @Sendable () -> Void)] = []
        /// `disableNetwork()` turns this off: no streams, reads from the cache.
        var networkEnabled = true
        /// Per view: stops (false) or starts (true) its Listen stream.
        var listenSwitches: [Int: @Sendable (Bool) -> Void] = [:]
        /// Ends the open Write stream's request side.
        var closeWriteStream: (@Sendable () -> Void)?
    }

    let cache: LocalCache
    let databaseName: String
    let uid: String
    /// `FirestoreCacheSizeUnlimited` (-1) disables collection.
    let sizeBytes: Int64
    let state: Mutex<State>
    let callbacks = DispatchQueue(label: "hearth.firestore.callbacks")
    let wake: AsyncStream<Void>.Continuation
    let wakes: AsyncStream<Void>

    init(cache: LocalCache, databaseName: String, uid: String, sizeBytes: Int64) throws {
        self.cache = cache
        self.databaseName = databaseName
        self.uid = uid
        self.sizeBytes = sizeBytes
        var initial = State()
        initial.batches = try cache.batches(uid: uid)
        initial.sequence = try cache.highestSequence()
        state = Mutex(initial)
        let pair = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        wakes = pair.stream
        wake = pair.continuation
        collectGarbageIfNeeded()
    }

    var documentsRoot: String { "\(databaseName)/documents" }
    func name(_ path: String) -> String { "\(documentsRoot)/\(path)" }
    func relativePath(_ name: String) -> String? {
        name.hasPrefix(documentsRoot + "/") ? String(name.dropFirst(documentsRoot.count + 1)) : nil
    }

    static func target(of write: Google_Firestore_V1_Write) -> String {
        switch write.operation {
        case .update(let d): d.name
        case .delete(let name): name
        case .transform(let t): t.document
        default: ""
        }
    }

    static func now() -> Google_Protobuf_Timestamp {
        let t = Timestamp()
        var p = Google_Protobuf_Timestamp()
        p.seconds = t.seconds
        p.nanos = t.nanoseconds
        return p
    }

    // MARK: Writes

    /// Queues a batch durably, shows it to listeners at once, and calls `completion` when the
    /// server acknowledges or rejects it (never while offline).
    func enqueue(_ writes: [Google_Firestore_V1_Write], completion: @escaping @Sendable ((any Error)?) -> Void) {
        let pump: (@Sendable () -> Void)?
        do {
            pump = try state.withLock { s in
                let batch = try cache.enqueue(uid: uid, writes: writes, localWriteTime: Self.now())
                s.batches.append(batch)
                s.completions[batch.batchID] = completion
                recomputeAll(&s)
                return s.writePump
            }
        } catch {
            callbacks.async { completion(FirestoreErrorCode.internal.error("The local cache could not queue the write: \(error)")) }
            return
        }
        wake.yield()
        pump?()
    }

    func enqueue(_ writes: [Google_Firestore_V1_Write]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enqueue(writes) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Resumes once every batch queued now is acknowledged or rejected — through the callback
    /// queue even when nothing is pending, so that the completions of batches that were just
    /// acknowledged (already queued there) have run first, as in the Apple SDK.
    func waitForPendingWrites() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                guard let last = s.batches.last?.batchID else { return true }
                s.writeWaiters.append((last, { continuation.resume() }))
                return false
            }
            if done { callbacks.async { continuation.resume() } }
        }
    }

    func pendingBatches(after batchID: Int64, limit: Int) -> [LocalCache.Batch] {
        state.withLock { s in Array(s.batches.lazy.filter { $0.batchID > batchID }.prefix(limit)) }
    }

    var hasPendingBatches: Bool { state.withLock { !$0.batches.isEmpty } }

    func setWritePump(_ pump: (@Sendable () -> Void)?) { state.withLock { $0.writePump = pump } }

    /// The server committed the head batch: its results become the cached documents at the
    /// commit's version (a delete a missing document at that version; unless Watch already
    /// delivered something newer) and the batch leaves the queue, in one transaction. Watch news
    /// older than that version is ignored afterwards, so the listener never sees the state the
    /// write replaced again (see `LocalCache.putRemote`).
    func acknowledge(batchID: Int64, results: [Google_Firestore_V1_WriteResult], commitTime: Google_Protobuf_Timestamp) throws {
        let (completion, resumed) = try state.withLock { s -> ((@Sendable ((any Error)?) -> Void)?, [@Sendable () -> Void]) in
            guard let batch = s.batches.first, batch.batchID == batchID else {
                throw MalformedResponse("a write result for a batch that is not at the head of the queue")
            }
            guard results.count == batch.writes.count else {
                throw MalformedResponse("\(results.count) write results for a batch of \(batch.writes.count) writes")
            }
            s.sequence += 1
            let sequence = s.sequence
            try cache.database.write { db in
                for (write, result) in zip(batch.writes, results) {
                    let name = Self.target(of: write)
                    guard let path = relativePath(name) else { continue }
                    let cached = try LocalCache.remote(db, path)
                    let version = result.hasUpdateTime ? result.updateTime : commitTime
                    if let existing = try LocalCache.version(db, path), ValueOrder.compareTimestamps(existing, version) >= 0 {
                        continue  // Watch already has a version at least as new (a document or a delete)
                    }
                    let isPatch = write.hasUpdateMask || write.hasCurrentDocument || !write.updateTransforms.isEmpty
                    if cached == nil, isPatch, case .update = write.operation { continue }  // unknown base: wait for Watch
                    let base: Document? = cached ?? nil
                    let applied = LocalWriteApplier.apply(
                        write, to: base, name: name, localWriteTime: batch.localWriteTime,
                        transformResults: result.transformResults, commitTime: version)
                    try LocalCache.putRemote(db, [(path, applied)], sequence: sequence, missingVersion: version)
                }
                try LocalCache.removeBatch(db, batchID)
            }
            s.batches.removeFirst()
            let completion = s.completions.removeValue(forKey: batchID)
            let resumed = takeWaiters(&s)
            recomputeAll(&s)
            return (completion, resumed)
        }
        callbacks.async {
            completion?(nil)
            for r in resumed { r() }
        }
    }

    /// The server refused the head batch for good: it leaves the queue and its overlay goes.
    func reject(batchID: Int64, error: any Error) {
        let (completion, resumed) = state.withLock { s -> ((@Sendable ((any Error)?) -> Void)?, [@Sendable () -> Void]) in
            guard let index = s.batches.firstIndex(where: { $0.batchID == batchID }) else { return (nil, []) }
            try? cache.database.write { db in try LocalCache.removeBatch(db, batchID) }
            s.batches.remove(at: index)
            let completion = s.completions.removeValue(forKey: batchID)
            let resumed = takeWaiters(&s)
            recomputeAll(&s)
            return (completion, resumed)
        }
        callbacks.async {
            completion?(error)
            for r in resumed { r() }
        }
    }

    func takeWaiters(_ s: inout State) -> [@Sendable () -> Void] {
        let head = s.batches.first?.batchID ?? Int64.max
        let ready = s.writeWaiters.filter { $0.upTo < head }
        s.writeWaiters.removeAll { $0.upTo < head }
        return ready.map(\.resume)
    }

    // MARK: Local documents

    /// Pending writes per document path, in queue order.
    func pendingWrites(_ s: State) -> [String: [(write: Google_Firestore_V1_Write, time: Google_Protobuf_Timestamp)]] {
        var out: [String: [(write: Google_Firestore_V1_Write, time: Google_Protobuf_Timestamp)]] = [:]
        for batch in s.batches {
            for write in batch.writes {
                if let path = relativePath(Self.target(of: write)) { out[path, default: []].append((write, batch.localWriteTime)) }
            }
        }
        return out
    }

    func overlay(_ remote: Document?, path: String, writes: [(write: Google_Firestore_V1_Write, time: Google_Protobuf_Timestamp)]) -> Document? {
        var doc = remote
        for (write, time) in writes { doc = LocalWriteApplier.apply(write, to: doc, name: name(path), localWriteTime: time) }
        return doc
    }

    /// The documents a view shows now.
    func compute(_ view: View, _ s: State) throws -> (docs: [ViewDocument], known: Bool) {
        let pending = pendingWrites(s)
        switch view.kind {
        case .document(let path):
            let cached = try cache.remote(path)
            let writes = pending[path] ?? []
            let local = overlay(cached ?? nil, path: path, writes: writes)
            let docs = local.map { [ViewDocument(path: path, document: $0, hasPendingWrites: !writes.isEmpty)] } ?? []
            return (docs, cached != nil || !writes.isEmpty || view.synced)
        case .query(let engine, let collectionPath, let collectionID):
            // Synced: what the server says matches, plus what the view showed (a write acknowledged
            // before Watch reports it stays visible); else every cached document of the collection.
            var remote = try view.synced
                ? cache.remote(paths: Array(view.targetPaths.union(view.last?.map(\.path) ?? [])))
                : cache.remote(collectionPath: collectionPath, collectionID: collectionID)
            // The cached documents with the pending writes laid over them (a write may delete).
            var local = remote
            for (path, writes) in pending where engine.inCollection(path) {
                if remote[path] == nil, case .some(.some(let d)) = try cache.remote(path) { remote[path] = d }
                local[path] = overlay(remote[path], path: path, writes: writes)
            }
            var candidates: [(path: String, fields: [String: Google_Firestore_V1_Value])] = []
            candidates.reserveCapacity(local.count)
            for (path, doc) in local { candidates.append((path, doc.fields)) }
            let result = engine.run(candidates)
            return (result.map { ViewDocument(path: $0.path, document: local[$0.path]!, hasPendingWrites: pending[$0.path] != nil) }, true)
        }
    }

    func recomputeAll(_ s: inout State) {
        for id in Array(s.views.keys) { recompute(id, &s) }
    }

    /// Delivers the view's snapshot if something the listener asked to see changed.
    func recompute(_ id: Int, _ s: inout State) {
        guard var view = s.views[id] else { return }
        guard let computed = try? compute(view, s) else { return }
        let docs = computed.docs, known = computed.known
        let fromCache = !(view.synced && s.online == .online)
        let metadata = SnapshotMetadata(hasPendingWrites: docs.contains { $0.hasPendingWrites }, isFromCache: fromCache)
        var changes: [ViewChange] = []
        var metadataChanges: [ViewChange] = []
        if let last = view.last {
            changes = Self.changes(from: last, to: docs, includeMetadataChanges: false)
            metadataChanges = Self.changes(from: last, to: docs, includeMetadataChanges: true)
            let dataChanged = !changes.isEmpty || last.map(\.path) != docs.map(\.path)
            let metadataChanged = metadata != view.lastMetadata || metadataChanges.count != changes.count
            guard dataChanged || (view.includeMetadataChanges && metadataChanged) else { return }
        } else {
            // The first snapshot: from the server, or from the cache when it has something or we are offline.
            if case .document = view.kind {
                guard !fromCache || known || s.online == .offline else { return }
            } else {
                guard !fromCache || !docs.isEmpty || s.online == .offline else { return }
            }
            changes = docs.enumerated().map { ViewChange(type: .added, document: $1, oldIndex: nil, newIndex: $0) }
            metadataChanges = changes
        }
        view.last = docs
        view.lastMetadata = metadata
        s.views[id] = view
        let snapshot = ViewSnapshot(documents: docs, metadata: metadata, changes: changes, metadataChanges: metadataChanges, known: known)
        let deliver = view.deliver
        callbacks.async { deliver(snapshot) }
    }

    static func changes(from old: [ViewDocument], to new: [ViewDocument], includeMetadataChanges: Bool) -> [ViewChange] {
        let oldIndex = Dictionary(old.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { a, _ in a })
        let newIndex = Dictionary(new.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { a, _ in a })
        var out: [ViewChange] = []
        for (i, doc) in old.enumerated() where newIndex[doc.path] == nil {
            out.append(ViewChange(type: .removed, document: doc, oldIndex: i, newIndex: nil))
        }
        for (i, doc) in new.enumerated() {
            if let j = oldIndex[doc.path] {
                let before = old[j]
                let modified = before.document.fields != doc.document.fields
                    || (includeMetadataChanges && before.hasPendingWrites != doc.hasPendingWrites)
                if modified { out.append(ViewChange(type: .modified, document: doc, oldIndex: j, newIndex: i)) }
            } else {
                out.append(ViewChange(type: .added, document: doc, oldIndex: nil, newIndex: i))
            }
        }
        return out
    }

    // MARK: Views and Watch

    /// Registers a view (delivering what the cache has, if anything) and returns its id.
    func addView(kind: ViewKind, targetKey: String, includeMetadataChanges: Bool, deliver: @escaping @Sendable (ViewSnapshot) -> Void) -> Int {
        state.withLock { s in
            let id = s.nextViewID
            s.nextViewID += 1
            s.views[id] = View(kind: kind, targetKey: targetKey, includeMetadataChanges: includeMetadataChanges, deliver: deliver)
            recompute(id, &s)
            // After the first snapshot is on its way: marking a large target's documents used
            // rewrites every row, which the app need not wait for.
            s.sequence += 1
            try? cache.touchTarget(targetKey, sequence: s.sequence)
            return id
        }
    }

    /// What the cache knows of a target, to resume Listen with: its resume token, and the names of
    /// its documents (placeholders: what the server does not change is already cached) — only
    /// when every document the token covers is still cached.
    func resumeState(_ targetKey: String) -> (resumeToken: Data, documents: [String: Document]) {
        guard let cached = try? cache.target(targetKey), (try? cache.cachedCount(target: targetKey)) == cached.paths.count else {
            return (Data(), [:])
        }
        var documents: [String: Document] = [:]
        for path in cached.paths {
            var placeholder = Document()
            placeholder.name = name(path)
            documents[placeholder.name] = placeholder
        }
        return (cached.resumeToken, documents)
    }

    func removeView(_ id: Int) {
        state.withLock { s in
            s.views.removeValue(forKey: id)
            s.listenSwitches.removeValue(forKey: id)
        }
    }

    /// Registers how to stop and start a view's Listen stream, and starts it if the network is on.
    func setListenSwitch(_ id: Int, _ toggle: @escaping @Sendable (Bool) -> Void) {
        let enabled = state.withLock { s in
            s.listenSwitches[id] = toggle
            return s.networkEnabled
        }
        toggle(enabled)
    }

    var networkEnabled: Bool { state.withLock { $0.networkEnabled } }

    func setCloseWriteStream(_ close: (@Sendable () -> Void)?) { state.withLock { $0.closeWriteStream = close } }

    /// `disableNetwork()`/`enableNetwork()`: streams stop (listeners fall back to the cache, writes
    /// stay queued) or start again.
    func setNetworkEnabled(_ enabled: Bool) {
        let (switches, close) = state.withLock { s -> ([@Sendable (Bool) -> Void], (@Sendable () -> Void)?) in
            guard s.networkEnabled != enabled else { return ([], nil) }
            s.networkEnabled = enabled
            if enabled {
                s.online = .unknown
            } else {
                s.online = .offline
                for id in Array(s.views.keys) { s.views[id]?.synced = false }
                recomputeAll(&s)
            }
            return (Array(s.listenSwitches.values), enabled ? nil : s.closeWriteStream)
        }
        close?()
        for toggle in switches { toggle(enabled) }
        if enabled { wake.yield() }
    }

    /// A Listen message arrived: the backend is reachable.
    func listenMessageReceived() {
        state.withLock { s in
            guard s.online != .online else { return }
            s.online = .online
            recomputeAll(&s)
        }
    }

    /// A Listen attempt failed: offline until a message arrives; views fall back to the cache.
    func listenFailed(_ id: Int) {
        state.withLock { s in
            s.views[id]?.synced = false
            s.online = .offline
            recomputeAll(&s)
        }
    }

    /// Watch reached a consistent point for the view's target: cache what it sent and show it.
    /// `changed` names the documents that changed since the last consistent point (nil: all); the
    /// others are already cached (a resumed stream starts from the cached target's documents).
    func remoteSnapshot(
        _ id: Int, documents: [String: Document], changed: Set<String>? = nil, resumeToken: Data, readTime: Google_Protobuf_Timestamp?
    ) {
        let collect: Bool = state.withLock { s in
            guard var view = s.views[id] else { return false }
            var paths = Set<String>()
            var puts: [(path: String, document: Document?)] = []
            let writeAll = changed == nil
            for (docName, doc) in documents {
                guard let path = relativePath(docName) else { continue }
                paths.insert(path)
                if writeAll || changed?.contains(docName) == true { puts.append((path, doc)) }
            }
            if case .document(let path) = view.kind, paths.isEmpty { puts.append((path, nil)) }
            // Documents that left the target (or that the view showed from the cache and the server
            // does not list) may have changed or gone: drop them unless another view holds them or
            // a pending write builds on them.
            var held = Set(pendingWrites(s).keys).union(puts.map(\.path))
            for (other, v) in s.views where other != id { held.formUnion(v.targetPaths) }
            let gone = Set((changed ?? []).compactMap { relativePath($0) })
            let stale = view.targetPaths.union(view.last?.map(\.path) ?? []).union(gone).subtracting(paths).subtracting(held)
            s.sequence += 1
            let sequence = s.sequence
            try? cache.database.write { db in
                // What Watch says as of `readTime`: older than an acknowledged write's version is ignored.
                try LocalCache.putRemote(db, puts, sequence: sequence, missingVersion: readTime)
                try LocalCache.removeRemote(db, Array(stale), unlessNewerThan: readTime)
                try LocalCache.putTarget(
                    db, key: view.targetKey,
                    state: LocalCache.TargetState(resumeToken: resumeToken, readTime: readTime, paths: Array(paths)), sequence: sequence,
                    previousPaths: view.wroteTarget ? view.targetPaths : nil)
            }
            view.wroteTarget = true
            view.synced = true
            view.targetPaths = paths
            s.views[id] = view
            s.online = .online
            recomputeAll(&s)
            if ContinuousClock.now - s.lastCollection > .seconds(60) {
                s.lastCollection = .now
                return true
            }
            return false
        }
        if collect { collectGarbageIfNeeded() }
    }

    // MARK: Reads

    /// A document from the cache with pending writes applied; nil when the cache knows nothing of it.
    func cachedDocument(_ path: String) throws -> (document: Document?, pending: Bool)? {
        try state.withLock { s in
            let writes = pendingWrites(s)[path] ?? []
            let cached = try cache.remote(path)
            if cached == nil && writes.isEmpty { return nil }
            return (overlay(cached ?? nil, path: path, writes: writes), !writes.isEmpty)
        }
    }

    /// Caches documents the server returned to a one-time read (nil: missing as of `readTime`).
    func cacheServerDocuments(_ documents: [(path: String, document: Document?)], readTime: Google_Protobuf_Timestamp? = nil) {
        state.withLock { s in
            s.sequence += 1
            let sequence = s.sequence
            _ = try? cache.database.write { db in try LocalCache.putRemote(db, documents, sequence: sequence, missingVersion: readTime) }
            recomputeAll(&s)
        }
    }

    /// Runs a query locally: over `serverDocuments` when given (a server read), else over the cache.
    func runQuery(_ engine: LocalQueryEngine, collectionPath: String?, collectionID: String, serverDocuments: [String: Document]?) throws
        -> [ViewDocument]
    {
        try state.withLock { s in
            var view = View(
                kind: .query(engine, collectionPath: collectionPath, collectionID: collectionID), targetKey: "", includeMetadataChanges: false,
                deliver: { _ in })
            if let serverDocuments {
                view.synced = true
                view.targetPaths = Set(serverDocuments.keys)
            }
            return try compute(view, s).docs
        }
    }

    var online: OnlineState { state.withLock { $0.online } }

    // MARK: Garbage collection

    /// Removes least-recently-used documents outside active targets and pending writes while the
    /// cache is over its size (the Apple SDK's LRU collector; run at start and then at most once a minute).
    @discardableResult
    func collectGarbageIfNeeded() -> Int {
        guard sizeBytes >= 0 else { return 0 }
        let (active, pinned) = state.withLock { s in
            (Set(s.views.values.map(\.targetKey)), Set(pendingWrites(s).keys))
        }
        return (try? cache.collectGarbage(thresholdBytes: sizeBytes, activeTargets: active, pinned: pinned)) ?? 0
    }
}

/// A server message that breaks the protocol: the stream ends and the app sees `internal`.
struct MalformedResponse: Error, CustomStringConvertible {
    let detail: String
    init(_ detail: String) { self.detail = detail }
    var description: String { "Malformed response from the server: \(detail)" }
    var error: NSError { FirestoreErrorCode.internal.error(description) }
}
