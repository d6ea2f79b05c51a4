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
    let content: DocumentContent
    let hasPendingWrites: Bool

    init(path: String, document: Google_Firestore_V1_Document, hasPendingWrites: Bool) {
        self.path = path
        content = .decoded(document)
        self.hasPendingWrites = hasPendingWrites
    }

    init(path: String, cached: CachedDocument) {
        self.path = path
        content = .cached(cached)
        hasPendingWrites = false
    }

    var document: Google_Firestore_V1_Document { content.document }

    /// The server's version it shows; nil with pending writes (or none known).
    var version: Google_Protobuf_Timestamp? { hasPendingWrites ? nil : content.version }
}

/// A document decoded, or still the cache's bytes (decoded when first read).
enum DocumentContent: Sendable {
    case decoded(Google_Firestore_V1_Document)
    case cached(CachedDocument)

    var document: Google_Firestore_V1_Document {
        switch self {
        case .decoded(let document): document
        case .cached(let cached): cached.document
        }
    }

    var version: Google_Protobuf_Timestamp? {
        switch self {
        case .decoded(let document): document.hasUpdateTime ? document.updateTime : nil
        case .cached(let cached): cached.version
        }
    }
}

/// A cached document's bytes, decoded once, when the app (or a comparison) first reads it.
final class CachedDocument: Sendable {
    let documentsRoot: String
    let path: String
    let bytes: Data
    let version: Google_Protobuf_Timestamp?
    let decoded = Mutex<Google_Firestore_V1_Document?>(nil)

    init(documentsRoot: String, path: String, bytes: Data, version: Google_Protobuf_Timestamp?) {
        self.documentsRoot = documentsRoot
        self.path = path
        self.bytes = bytes
        self.version = version
    }

    /// Bytes SQLite returned but protobuf cannot read (damage the file's checks missed) read
    /// as a document with no fields.
    var document: Google_Firestore_V1_Document {
        if let document = decoded.withLock({ $0 }) { return document }
        let document = (try? Google_Firestore_V1_Document(serializedBytes: bytes)) ?? {
            var empty = Google_Firestore_V1_Document()
            empty.name = "\(documentsRoot)/\(path)"
            return empty
        }()
        decoded.withLock { $0 = document }
        return document
    }
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
///
/// What Watch sends is shown before it is stored: a consistent point's documents go into
/// `unpersisted` (read before the file), the views recompute and their snapshots are on their
/// way, and the SQLite transaction (with any WAL checkpoint it triggers) runs afterwards on the
/// `persister` queue, which then forgets those entries. Work that only keeps the cache tidy (the
/// LRU touch, garbage collection) runs there too. The queue of writes is not deferred: a write
/// is stored before the app hears of it, and an acknowledgement waits for the stores before it.
final class LocalSyncEngine: Sendable {
    typealias Document = Google_Firestore_V1_Document

    /// A document Watch reported that is not in the file yet.
    enum RemoteEntry: Sendable {
        case document(Document)
        /// Known missing (at this version).
        case missing(Google_Protobuf_Timestamp?)
        /// No longer cached.
        case forgotten
    }

    /// Watch's news not yet stored, by path; each entry goes when the store that wrote it (its
    /// generation) is done.
    struct Unpersisted: Sendable {
        var entries: [String: (entry: RemoteEntry, generation: Int)] = [:]
        var generation = 0
    }

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
        /// A query target's result as a previous instance last showed it (for the first snapshot).
        var stored: LocalCache.StoredResult?
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
    /// Stores Watch's news and tidies the cache, in order, off the snapshot path.
    let persister = DispatchQueue(label: "hearth.firestore.persist")
    let unpersisted = Mutex(Unpersisted())
    /// The cache file's integrity check: nil until it ran; false when it found damage (the file is
    /// marked and rebuilt at the next launch).
    let integrity = Mutex<(started: Bool, intact: Bool?, closed: Bool)>((false, nil, false))
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
        // Collection at start, and the integrity check, wait until the first snapshot is out.
        let pinned = Set(pendingWrites(initial).keys)
        persister.asyncAfter(deadline: .now() + 1) { [self] in if !isClosed { collectGarbage(active: [], pinned: pinned) } }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 1) { [self] in startIntegrityCheck() }
    }

    /// Runs the cache file's integrity check once, in the background.
    func startIntegrityCheck() {
        let start = integrity.withLock { i -> Bool in
            guard !i.started, !i.closed else { return false }
            i.started = true
            return true
        }
        guard start else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            guard !integrity.withLock({ $0.closed }) else { return }
            let intact = cache.checkIntegrity()
            integrity.withLock { $0.intact = intact }
        }
    }

    /// Waits until what Watch sent so far is in the file (and the tidying queued before it is done).
    func flush() { persister.sync {} }

    /// `terminate()` was called: the delayed tidying and the integrity check are left to the next instance.
    var isClosed: Bool { integrity.withLock { $0.closed } }

    /// The instance is going away: stores what is pending; no integrity check starts any more.
    func close() {
        integrity.withLock { $0.closed = true }
        flush()
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
            // Watch's news first (the versions below compare with it); nothing is added to
            // `unpersisted` while this lock is held, so afterwards the file has it all.
            flush()
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
            let cached = try remoteDocument(path)
            let writes = pending[path] ?? []
            let local = overlay(cached ?? nil, path: path, writes: writes)
            let docs = local.map { [ViewDocument(path: path, document: $0, hasPendingWrites: !writes.isEmpty)] } ?? []
            return (docs, cached != nil || !writes.isEmpty || view.synced)
        case .query(let engine, let collectionPath, let collectionID):
            if !view.synced, view.last == nil, let stored = view.stored,
                let docs = try firstFromStoredResult(engine, collectionPath: collectionPath, collectionID: collectionID, stored: stored, pending: pending)
            {
                return (docs, true)
            }
            // Synced: what the server says matches, plus what the view showed (a write acknowledged
            // before Watch reports it stays visible); else every cached document of the collection.
            var remote = try view.synced
                ? remoteDocuments(paths: Array(view.targetPaths.union(view.last?.map(\.path) ?? [])))
                : remoteDocuments(collectionPath: collectionPath, collectionID: collectionID)
            // The cached documents with the pending writes laid over them (a write may delete).
            var local = remote
            for (path, writes) in pending where engine.inCollection(path) {
                if remote[path] == nil, case .some(.some(let d)) = try remoteDocument(path) { remote[path] = d }
                local[path] = overlay(remote[path], path: path, writes: writes)
            }
            var candidates: [(path: String, fields: [String: Google_Firestore_V1_Value])] = []
            candidates.reserveCapacity(local.count)
            for (path, doc) in local { candidates.append((path, doc.fields)) }
            let result = engine.run(candidates)
            return (result.map { ViewDocument(path: $0.path, document: local[$0.path]!, hasPendingWrites: pending[$0.path] != nil) }, true)
        }
    }

    /// A query view's first snapshot from what the target last showed, without decoding or
    /// sorting: every document of the stored result that is still cached at the same version, with
    /// no pending write, is still in the result at the same place among the others. Other
    /// documents of the collection that may have changed since (written after the result, or a
    /// stored one at another version, or with pending writes) are decoded and matched: if one
    /// now matches, or the query has a limit and a stored one went, nil (the query runs in full).
    func firstFromStoredResult(
        _ engine: LocalQueryEngine, collectionPath: String?, collectionID: String, stored: LocalCache.StoredResult,
        pending: [String: [(write: Google_Firestore_V1_Write, time: Google_Protobuf_Timestamp)]]
    ) throws -> [ViewDocument]? {
        guard unpersisted.withLock({ $0.entries.isEmpty }) else { return nil }
        let rows = try cache.remoteRows(collectionPath: collectionPath, collectionID: collectionID)
        var index: [String: Int] = [:]
        index.reserveCapacity(rows.count)
        for (i, row) in rows.enumerated() { index[row.path] = i }
        let limited = engine.query.hasLimit
        /// Whether a document that may have changed matches the query now.
        func matchesNow(_ path: String) throws -> Bool {
            let base = try index[path].map { try Google_Firestore_V1_Document(serializedBytes: rows[$0].bytes) }
            let document = pending[path].map { overlay(base, path: path, writes: $0) } ?? base
            return document.map { engine.matches(path: path, fields: $0.fields) } ?? false
        }
        let root = documentsRoot
        var kept: [ViewDocument] = []
        kept.reserveCapacity(stored.entries.count)
        var inResult = Set<String>()
        inResult.reserveCapacity(stored.entries.count)
        for entry in stored.entries {
            inResult.insert(entry.path)
            if pending[entry.path] == nil, let i = index[entry.path], let version = entry.version, let now = rows[i].version,
                ValueOrder.compareTimestamps(version, now) == 0
            {
                kept.append(ViewDocument(path: entry.path, cached: CachedDocument(documentsRoot: root, path: entry.path, bytes: rows[i].bytes, version: now)))
                continue
            }
            // Changed, gone or pending: it may have moved (then run the query) or left.
            if try limited || matchesNow(entry.path) { return nil }
        }
        for row in rows where !inResult.contains(row.path) && (row.sequence > stored.sequence || row.version == nil) {
            if try matchesNow(row.path) { return nil }
        }
        for path in pending.keys where !inResult.contains(path) && engine.inCollection(path) {
            if try matchesNow(path) { return nil }
        }
        return kept
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

    /// Whether two views of a document show the same data. One still in the cache's bytes is
    /// compared by version (a document's update time changes with every change of its contents),
    /// so it need not be decoded; others by their fields.
    static func sameContent(_ a: ViewDocument, _ b: ViewDocument) -> Bool {
        var lazy = false
        if case .cached = a.content { lazy = true }
        if case .cached = b.content { lazy = true }
        if lazy, let x = a.version, let y = b.version { return ValueOrder.compareTimestamps(x, y) == 0 }
        return a.document.fields == b.document.fields
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
                let modified = !Self.sameContent(before, doc)
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
            var view = View(kind: kind, targetKey: targetKey, includeMetadataChanges: includeMetadataChanges, deliver: deliver)
            if case .query = kind { view.stored = try? cache.storedResult(targetKey) }
            s.views[id] = view
            recompute(id, &s)
            s.views[id]?.stored = nil
            // After the first snapshot is on its way, in the background: marking a large target's
            // documents used rewrites every row, which the app need not wait for; nor for the
            // integrity check.
            s.sequence += 1
            let sequence = s.sequence
            persister.asyncAfter(deadline: .now() + 1) { [self] in if !isClosed { try? cache.touchTarget(targetKey, sequence: sequence) } }
            callbacks.async { [self] in
                DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 0.2) { [self] in startIntegrityCheck() }
            }
            return id
        }
    }

    /// What the cache knows of a target, to resume Listen with: its resume token, and the names of
    /// its documents (placeholders: what the server does not change is already cached) — only
    /// when every document the token covers is still cached.
    /// (It reads the file as the stores have left it: a target's token and documents are stored
    /// together, so an older pair is a consistent point to resume from too.)
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
        state.withLock { s in
            guard var view = s.views[id] else { return }
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
            let stale = Array(view.targetPaths.union(view.last?.map(\.path) ?? []).union(gone).subtracting(paths).subtracting(held))
            s.sequence += 1
            let sequence = s.sequence
            // What Watch says as of `readTime`, with the file's rules (older than what is cached, e.g.
            // an acknowledged write's version, is ignored): first in memory, for the views.
            let generation = unpersisted.withLock { u in
                u.generation += 1
                return u.generation
            }
            var touched: [String] = []
            for (path, document) in puts {
                let version: Google_Protobuf_Timestamp? = if let document { document.hasUpdateTime ? document.updateTime : nil } else { readTime }
                if let version, let cached = try? remoteVersion(path), ValueOrder.compareTimestamps(cached, version) > 0 { continue }
                let entry: RemoteEntry = document.map { .document($0) } ?? .missing(version)
                unpersisted.withLock { $0.entries[path] = (entry, generation) }
                touched.append(path)
            }
            for path in stale {
                if let readTime, let cached = try? remoteVersion(path), ValueOrder.compareTimestamps(cached, readTime) > 0 { continue }
                unpersisted.withLock { $0.entries[path] = (.forgotten, generation) }
                touched.append(path)
            }
            let target = LocalCache.TargetState(resumeToken: resumeToken, readTime: readTime, paths: Array(paths))
            let previousPaths = view.wroteTarget ? view.targetPaths : nil
            view.wroteTarget = true
            view.synced = true
            view.targetPaths = paths
            s.views[id] = view
            s.online = .online
            // The snapshots are computed and dispatched now, but run only once the store below is
            // queued: an app that calls `terminate()` (or anything that flushes) from its callback
            // must find the store of what it was shown.
            callbacks.suspend()
            defer { callbacks.resume() }
            recomputeAll(&s)
            // Then in the file, beside the snapshots on their way.
            let key = view.targetKey
            // What a query view now shows, for the next instance's first snapshot.
            var shown: [ViewDocument]?
            if case .query = view.kind { shown = s.views[id]?.last }
            var collect: (active: Set<String>, pinned: Set<String>)?
            if ContinuousClock.now - s.lastCollection > .seconds(60) {
                s.lastCollection = .now
                collect = (Set(s.views.values.map(\.targetKey)), Set(pendingWrites(s).keys))
            }
            persister.async { [self, puts, stale, touched, collect, shown] in
                try? cache.database.write { db in
                    try LocalCache.putRemote(db, puts, sequence: sequence, missingVersion: readTime)
                    try LocalCache.removeRemote(db, stale, unlessNewerThan: readTime)
                    try LocalCache.putTarget(db, key: key, state: target, sequence: sequence, previousPaths: previousPaths)
                    if let shown {
                        let entries = shown.map { LocalCache.StoredResult.Entry(path: $0.path, version: $0.version) }
                        try LocalCache.putResult(db, key: key, result: LocalCache.StoredResult(entries: entries, sequence: sequence))
                    }
                }
                unpersisted.withLock { u in
                    for path in touched where u.entries[path]?.generation == generation { u.entries.removeValue(forKey: path) }
                }
                if let collect { collectGarbage(active: collect.active, pinned: collect.pinned) }
            }
        }
    }

    /// A remote document as the views see it: Watch's unstored news, else the file.
    /// `.some(nil)` when known missing, nil when not cached. (Callers hold the state lock, so
    /// nothing is added to `unpersisted` meanwhile; it is read before the file, which only moves on.)
    func remoteDocument(_ path: String) throws -> Document?? {
        if let entry = unpersisted.withLock({ $0.entries[path]?.entry }) {
            switch entry {
            case .document(let document): return .some(document)
            case .missing: return .some(nil)
            case .forgotten: return nil
            }
        }
        return try cache.remote(path)
    }

    /// The version of what is cached for a path, unstored news first (see `LocalCache.version`).
    func remoteVersion(_ path: String) throws -> Google_Protobuf_Timestamp? {
        if let entry = unpersisted.withLock({ $0.entries[path]?.entry }) {
            switch entry {
            case .document(let document): return document.hasUpdateTime ? document.updateTime : nil
            case .missing(let version): return version
            case .forgotten: return nil
            }
        }
        return try cache.database.read { db in try LocalCache.version(db, path) }
    }

    func remoteDocuments(paths: [String]) throws -> [String: Document] {
        let news = unpersisted.withLock { $0.entries }
        var out = try cache.remote(paths: news.isEmpty ? paths : paths.filter { news[$0] == nil })
        for path in paths { if case .document(let document)? = news[path]?.entry { out[path] = document } }
        return out
    }

    func remoteDocuments(collectionPath: String?, collectionID: String) throws -> [String: Document] {
        let news = unpersisted.withLock { $0.entries }
        var out = try cache.remote(collectionPath: collectionPath, collectionID: collectionID)
        for (path, news) in news {
            let (parent, id) = LocalCache.collectionPath(path)
            guard collectionPath.map({ $0 == parent }) ?? (id == collectionID) else { continue }
            if case .document(let document) = news.entry { out[path] = document } else { out.removeValue(forKey: path) }
        }
        return out
    }

    // MARK: Reads

    /// A document from the cache with pending writes applied; nil when the cache knows nothing of it.
    func cachedDocument(_ path: String) throws -> (document: Document?, pending: Bool)? {
        try state.withLock { s in
            let writes = pendingWrites(s)[path] ?? []
            let cached = try remoteDocument(path)
            if cached == nil && writes.isEmpty { return nil }
            return (overlay(cached ?? nil, path: path, writes: writes), !writes.isEmpty)
        }
    }

    /// Caches documents the server returned to a one-time read (nil: missing as of `readTime`).
    func cacheServerDocuments(_ documents: [(path: String, document: Document?)], readTime: Google_Protobuf_Timestamp? = nil) {
        state.withLock { s in
            s.sequence += 1
            let sequence = s.sequence
            flush()  // after Watch's news, which the versions compare with
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
    /// cache is over its size (the Apple SDK's LRU collector; run at start and then at most once a
    /// minute, on the persister queue).
    @discardableResult
    func collectGarbage(active: Set<String>, pinned: Set<String>) -> Int {
        guard sizeBytes >= 0 else { return 0 }
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
