import Foundation
import Synchronization
import Testing

import HearthClientAuth
import HearthClientCore
import HearthFirestoreProto
import SwiftProtobuf
@testable import HearthClientFirestore

/// `hearth serve --emulator` as a child process (the `hearth` binary built beside the tests, or
/// `$HEARTH_BIN`) that can be killed with SIGKILL and started again on the same ports and data.
final class RestartableServer: @unchecked Sendable {
    let directory: URL
    private(set) var ports: [String: Int] = [:]
    private var process: Process?
    private var restartAttempts = 0

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-offline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    static var binary: URL {
        if let bin = ProcessInfo.processInfo.environment["HEARTH_BIN"], !bin.isEmpty { return URL(fileURLWithPath: bin) }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // On Apple platforms the tests run inside an .xctest bundle.
        while dir.path.contains(".xctest") { dir = dir.deletingLastPathComponent() }
        return dir.appendingPathComponent("hearth")
    }

    func start() async throws {
        let ready = directory.appendingPathComponent("ready.json")
        try? FileManager.default.removeItem(at: ready)
        let process = Process()
        process.executableURL = Self.binary
        var arguments = [
            "serve", "--emulator", "--data-dir", directory.appendingPathComponent("data").path, "--project", "demo-hearth",
            "--host", "127.0.0.1", "--ready-file", ready.path,
        ]
        for service in ["firestore", "storage", "s3", "database", "auth", "api", "console"] {
            arguments += ["--\(service)-port", String(ports[service] ?? 0)]
        }
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let data = try? Data(contentsOf: ready),
                let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any], json["firestore"] != nil {
                for (key, value) in json {
                    if let port = value as? Int { ports[key] = port } else if let text = value as? String, let port = Int(text) { ports[key] = port }
                }
                return
            }
            guard process.isRunning else {
                // A restart on the killed server's ports can find one still held for a moment
                // (the kernel closing its connections): the server exits; try again shortly.
                guard !ports.isEmpty, restartAttempts < 20 else { throw CocoaError(.executableLoad) }
                restartAttempts += 1
                try await Task.sleep(for: .milliseconds(500))
                return try await start()
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CocoaError(.executableLoad)
    }

    /// Kills the server outright (SIGKILL), as a crash or a pulled plug would.
    func stop() async {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        self.process = nil
    }

    deinit {
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Snapshots a listener has seen, for waiting on.
final class SnapshotLog<T: Sendable>: Sendable {
    let items = Mutex<[T]>([])
    let errors = Mutex<[any Error]>([])
    func append(_ item: T?, _ error: (any Error)?) {
        if let item { items.withLock { $0.append(item) } }
        if let error { errors.withLock { $0.append(error) } }
    }
    var all: [T] { items.withLock { $0 } }

    /// Waits until a snapshot satisfies `condition` (and returns it), failing after `seconds`.
    func wait(_ what: String, after: Int = 0, seconds: Double = 20, _ condition: (T) -> Bool) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let found = all.dropFirst(after).last(where: condition) { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out waiting for \(what)")
        throw CancellationError()
    }
}

func offlineFirestore(ports: [String: Int], cacheDirectory: URL?, memory: Bool = false) -> Firestore {
    var options = HearthOptions(projectID: "demo-hearth")
    options.authPort = ports["auth"]!
    options.firestorePort = ports["firestore"]!
    let name = "offline-\(UUID().uuidString)"
    HearthApp.configure(name: name, options: options)
    let db = Firestore.firestore(app: HearthApp.app(name: name)!)
    let settings = db.settings
    if memory { settings.cacheSettings = MemoryCacheSettings() }
    settings.cacheDirectory = cacheDirectory
    db.settings = settings
    return db
}

func temporaryDirectory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("hearth-cache-\(UUID().uuidString)")
}

@Suite(.serialized) struct FirestoreOfflineTests {
    func names(_ s: QuerySnapshot) -> [String] { s.documents.map(\.documentID) }

    @Test func queuedWritesSurviveTheServerAndTheAppGoingAwayAndArriveOnceInOrder() async throws {
        let server = try RestartableServer()
        try await server.start()
        let cacheDirectory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cacheDirectory) }

        // Online: a write goes out over the Write stream; the listener gets the server's snapshot.
        let db1 = offlineFirestore(ports: server.ports, cacheDirectory: cacheDirectory)
        let tasks1 = db1.collection("tasks")
        try await tasks1.document("seed").setData(["n": 0])
        let log1 = SnapshotLog<QuerySnapshot>()
        let registration1 = tasks1.order(by: "n").addSnapshotListener(includeMetadataChanges: true) { log1.append($0, $1) }
        _ = try await log1.wait("the server's snapshot") { !$0.metadata.isFromCache && names($0) == ["seed"] }

        // The server goes away: listeners fall back to the cache.
        let seen = log1.all.count
        await server.stop()
        _ = try await log1.wait("a snapshot from the cache", after: seen) { $0.metadata.isFromCache }

        // Offline writes apply locally at once and wait for the server.
        let acknowledged = Mutex<[String]>([])
        for i in 1...5 {
            tasks1.document("q\(i)").setData(["n": i, "at": FieldValue.serverTimestamp()]) { error in
                acknowledged.withLock { $0.append(error == nil ? "q\(i)" : "q\(i) failed: \(error!)") }
            }
        }
        for _ in 1...3 {
            db1.document("counters/c").setData(["hits": FieldValue.increment(Int64(1))], merge: true) { error in
                acknowledged.withLock { $0.append(error == nil ? "hit" : "hit failed: \(error!)") }
            }
        }
        let pending = try await log1.wait("the pending writes") { names($0) == ["seed", "q1", "q2", "q3", "q4", "q5"] }
        #expect(pending.metadata.hasPendingWrites && pending.metadata.isFromCache)
        #expect(pending.documents[1].metadata.hasPendingWrites && !pending.documents[0].metadata.hasPendingWrites)
        #expect(pending.documents[1].data()["at"] is NSNull, "a pending server timestamp reads as null by default")
        #expect(pending.documents[1].data(with: .estimate)["at"] is Timestamp, "…and as the local time when estimated")

        // Reads offline: the cache answers; server-only reads fail.
        let cached = try await tasks1.document("q3").getDocument(source: .cache)
        #expect(cached.exists && cached.metadata.hasPendingWrites && cached.metadata.isFromCache)
        let seed = try await tasks1.document("seed").getDocument()
        #expect(seed.exists && seed.metadata.isFromCache && seed.get("n") as? Int64 == 0)
        let counter = try await db1.document("counters/c").getDocument(source: .cache)
        #expect(counter.get("hits") as? Int64 == 3, "increments apply locally")
        let offlineQuery = try await tasks1.whereField("n", isGreaterThanOrEqualTo: 2).getDocuments()
        #expect(offlineQuery.metadata.isFromCache && names(offlineQuery) == ["q2", "q3", "q4", "q5"])
        await #expect(throws: (any Error).self) { try await tasks1.document("seed").getDocument(source: .server) }
        await #expect(throws: (any Error).self) { try await tasks1.document("never").getDocument(source: .cache) }
        #expect(acknowledged.withLock { $0 }.isEmpty, "nothing is acknowledged offline")

        // The app goes away with its writes queued; a new instance opens the same cache file.
        registration1.remove()
        await db1.terminate()
        let db2 = offlineFirestore(ports: server.ports, cacheDirectory: cacheDirectory)
        let log2 = SnapshotLog<QuerySnapshot>()
        let registration2 = db2.collection("tasks").order(by: "n").addSnapshotListener(includeMetadataChanges: true) { log2.append($0, $1) }
        let restored = try await log2.wait("the queued writes from the cache") { names($0).count == 6 }
        #expect(restored.metadata.hasPendingWrites && restored.metadata.isFromCache)

        // The server comes back: the queue drains; listeners see the committed state.
        try await server.start()
        let committed = try await log2.wait("the committed state") {
            !$0.metadata.hasPendingWrites && !$0.metadata.isFromCache && names($0).count == 6
        }
        #expect(committed.documents[1].data()["at"] is Timestamp, "the server's timestamp replaced the pending one")
        try await db2.waitForPendingWrites()
        registration2.remove()
        #expect(acknowledged.withLock { $0 }.isEmpty, "the first instance's callbacks went with it")

        // On the server: every write once, in queue order.
        let checker = offlineFirestore(ports: server.ports, cacheDirectory: nil, memory: true)
        var created: [Google_Protobuf_Timestamp] = []
        for i in 1...5 {
            let snapshot = try await checker.document("tasks/q\(i)").getDocument(source: .server)
            #expect(snapshot.get("n") as? Int64 == Int64(i))
            created.append(try #require(snapshot.document?.createTime))
        }
        for (a, b) in zip(created, created.dropFirst()) {
            // Batches queued together may share one commit (RemoteWriteStream.group): same time, never earlier.
            #expect(ValueOrder.compareTimestamps(a, b) <= 0, "committed in queue order")
        }
        let hits = try await checker.document("counters/c").getDocument(source: .server)
        #expect(hits.get("hits") as? Int64 == 3, "each queued increment arrived exactly once")
        await db2.terminate()
        await checker.terminate()
        await server.stop()
    }

    @Test func aNewInstanceShowsTheCachedTargetAtOnceThenResumesIt() async throws {
        try await LiveServer.with { ports in
            let cacheDirectory = temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: cacheDirectory) }
            let db1 = offlineFirestore(ports: ports, cacheDirectory: cacheDirectory)
            for (id, n) in [("a", 1), ("b", 2), ("c", 3)] { try await db1.document("notes/\(id)").setData(["n": n]) }
            let log1 = SnapshotLog<QuerySnapshot>()
            let registration1 = db1.collection("notes").whereField("n", isLessThan: 10).addSnapshotListener(includeMetadataChanges: true) {
                log1.append($0, $1)
            }
            _ = try await log1.wait("the server's snapshot") { !$0.metadata.isFromCache && $0.count == 3 }
            registration1.remove()
            await db1.terminate()

            // Meanwhile another client changes one note, adds one and removes one.
            let other = offlineFirestore(ports: ports, cacheDirectory: nil, memory: true)
            try await other.document("notes/a").setData(["n": 5])
            try await other.document("notes/d").setData(["n": 4])
            try await other.document("notes/c").delete()
            await other.terminate()

            let db2 = offlineFirestore(ports: ports, cacheDirectory: cacheDirectory)
            let log2 = SnapshotLog<QuerySnapshot>()
            let registration2 = db2.collection("notes").whereField("n", isLessThan: 10).addSnapshotListener(includeMetadataChanges: true) {
                log2.append($0, $1)
            }
            let first = try await log2.wait("the cached snapshot") { _ in true }
            #expect(first.metadata.isFromCache && first.documents.map(\.documentID) == ["a", "b", "c"], "the cache answers first")
            let current = try await log2.wait("the resumed target") { !$0.metadata.isFromCache }
            #expect(current.documents.map(\.documentID) == ["b", "d", "a"], "ordered by n: b 2, d 4, a 5")
            #expect(current.documents.last?.get("n") as? Int64 == 5)
            let cachedB = try await db2.document("notes/b").getDocument(source: .cache)
            #expect(cachedB.get("n") as? Int64 == 2, "an unchanged document stays cached with its data")
            registration2.remove()
            await db2.terminate()
        }
    }

    @Test func aServerThatNeverAnswersCountsAsOfflineAfterTenSeconds() async throws {
        // A socket that accepts connections (in the kernel's backlog) and never says a word.
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let fd = socket(AF_INET, stream, 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        #expect(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let db = offlineFirestore(ports: ["auth": port, "firestore": port], cacheDirectory: nil, memory: true)
        let log = SnapshotLog<QuerySnapshot>()
        let started = ContinuousClock.now
        let registration = db.collection("silent").addSnapshotListener { log.append($0, $1) }
        let first = try await log.wait("the offline snapshot", seconds: 30) { _ in true }
        let elapsed = ContinuousClock.now - started
        #expect(first.metadata.isFromCache && first.isEmpty)
        #expect(elapsed >= .seconds(9) && elapsed < .seconds(25), "offline after the 10 s timer: \(elapsed)")
        registration.remove()
    }

    @Test func disablingTheNetworkQueuesWritesAndServesTheCacheUntilItIsEnabled() async throws {
        try await LiveServer.with { ports in
            let db = offlineFirestore(ports: ports, cacheDirectory: nil, memory: true)
            let items = db.collection("items")
            try await items.document("a").setData(["n": 1])
            let log = SnapshotLog<QuerySnapshot>()
            let registration = items.order(by: "n").addSnapshotListener(includeMetadataChanges: true) { log.append($0, $1) }
            _ = try await log.wait("the server's snapshot") { !$0.metadata.isFromCache }
            let seen = log.all.count
            try await db.disableNetwork()
            _ = try await log.wait("the cache", after: seen) { $0.metadata.isFromCache }
            let acknowledged = Mutex(false)
            let failure = Mutex<String?>(nil)
            items.document("b").setData(["n": 2]) { error in
                acknowledged.withLock { $0 = error == nil }
                failure.withLock { $0 = error.map { "\($0)" } }
            }
            let pending = try await log.wait("the pending write") { $0.count == 2 }
            #expect(pending.metadata.hasPendingWrites && pending.metadata.isFromCache)
            let read = try await items.document("a").getDocument()
            #expect(read.metadata.isFromCache, "reads come from the cache while the network is disabled")
            await #expect(throws: (any Error).self) { try await items.getDocuments(source: .server) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(!acknowledged.withLock { $0 }, "nothing goes out while disabled")
            // On the server: still only a.
            let checker = offlineFirestore(ports: ports, cacheDirectory: nil, memory: true)
            #expect(try await checker.collection("items").getDocuments(source: .server).count == 1)

            try await db.enableNetwork()
            let committed = try await log.wait("the committed state") { !$0.metadata.isFromCache && !$0.metadata.hasPendingWrites && $0.count == 2 }
            #expect(committed.documents.map(\.documentID) == ["a", "b"])
            try await db.waitForPendingWrites()
            #expect(acknowledged.withLock { $0 }, "the write's completion: \(failure.withLock { $0 } ?? "not called")")
            #expect(try await checker.collection("items").getDocuments(source: .server).count == 2)
            registration.remove()
            await checker.terminate()
            await db.terminate()
        }
    }

    @Test func aRejectedWriteFailsItsCallerAndItsLocalEffectIsUndone() async throws {
        try await LiveServer.with { ports in
            let db = offlineFirestore(ports: ports, cacheDirectory: nil, memory: true)
            let ref = db.document("items/missing")
            let log = SnapshotLog<DocumentSnapshot>()
            let registration = ref.addSnapshotListener(includeMetadataChanges: true) { log.append($0, $1) }
            _ = try await log.wait("the server's answer") { !$0.metadata.isFromCache && !$0.exists }
            // updateData of a missing document: locally nothing to update; the server refuses it.
            await #expect(throws: (any Error).self) { try await ref.updateData(["x": 1]) }
            try await ref.setData(["x": 1])
            let written = try await log.wait("the set") { $0.exists && !$0.metadata.hasPendingWrites }
            #expect(written.get("x") as? Int64 == 1)
            #expect(log.all.contains { $0.exists && $0.metadata.hasPendingWrites }, "the set was visible while pending")
            registration.remove()
            await db.terminate()
        }
    }

    @Test func batchesQueuedOfflineGoOutTogetherAndOnlyTheRefusedOneFails() async throws {
        try await LiveServer.with { ports in
            let db = offlineFirestore(ports: ports, cacheDirectory: nil, memory: true)
            try await db.disableNetwork()
            let outcomes = Mutex<[Int: Bool]>([:])
            for i in 0..<30 {
                let ref = db.collection("grouped").document("d\(i)")
                let done: @Sendable ((any Error)?) -> Void = { error in outcomes.withLock { $0[i] = error == nil } }
                // d17 does not exist: the server refuses the update (and so the request it shares).
                if i == 17 { ref.updateData(["n": i], completion: done) } else { ref.setData(["n": i], completion: done) }
            }
            try await db.enableNetwork()
            try await db.waitForPendingWrites()
            let deadline = ContinuousClock.now + .seconds(20)
            while outcomes.withLock({ $0.count }) < 30 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let seen = outcomes.withLock { $0 }
            #expect(seen.count == 30)
            #expect(seen.filter { !$0.value }.map(\.key) == [17], "only the update of a missing document fails")
            let checker = offlineFirestore(ports: ports, cacheDirectory: nil, memory: true)
            let stored = try await checker.collection("grouped").getDocuments(source: .server)
            #expect(stored.count == 29)
            #expect(!stored.documents.contains { $0.documentID == "d17" })
            await checker.terminate()
            await db.terminate()
        }
    }

    @Test func aDamagedCacheFileIsRebuilt() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("cache.sqlite")
        try Data(repeating: 0x5A, count: 8192).write(to: file)
        let cache = try LocalCache(fileURL: file)
        #expect(cache.rebuilt)
        _ = try cache.enqueue(uid: "", writes: [Google_Firestore_V1_Write()], localWriteTime: Google_Protobuf_Timestamp())
        let reopened = try LocalCache(fileURL: file)
        #expect(!reopened.rebuilt)
        #expect(try reopened.batches(uid: "").count == 1, "the rebuilt file works and persists")
    }

    /// A file with a damaged page past its header: opening works (the check is not on the app's
    /// path), the background check finds the damage and marks the file, the next open rebuilds it.
    func damagedCache(_ directory: URL) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("cache.sqlite")
        do {
            let cache = try LocalCache(fileURL: file)
            try cache.database.write { db in
                for i in 0..<2_000 {
                    var d = Google_Firestore_V1_Document()
                    d.name = "projects/demo-hearth/databases/(default)/documents/c/d\(i)"
                    var v = Google_Firestore_V1_Value()
                    v.stringValue = "document number \(i), long enough to fill a few pages"
                    d.fields = ["v": v]
                    try LocalCache.putRemote(db, [("c/d\(i)", d)], sequence: 1)
                }
            }
            try cache.database.close()  // folds the WAL into the file
        }
        // Overwrite a leaf page of the documents table (b-tree page type 13) in the middle of the
        // file: the header, the schema, the queue and the indexes that opening reads stay intact.
        var bytes = try Data(contentsOf: file)
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let leaves = (1..<(bytes.count / pageSize)).filter { bytes[$0 * pageSize] == 13 }
        try #require(leaves.count > 10)
        let page = leaves[leaves.count / 2]
        bytes.replaceSubrange(page * pageSize..<(page + 1) * pageSize, with: Data(repeating: 0xA5, count: pageSize))
        try bytes.write(to: file)
        return file
    }

    @Test func damageFoundAfterOpeningIsMarkedAndRebuiltAtTheNextOpen() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try damagedCache(directory)
        let marker = LocalCache.damageMarker(file)
        let cache = try LocalCache(fileURL: file)
        #expect(!cache.rebuilt, "opening does not read the whole file")
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        #expect(!cache.checkIntegrity(), "the check finds the damaged page")
        #expect(FileManager.default.fileExists(atPath: marker.path))
        let reopened = try LocalCache(fileURL: file)
        #expect(reopened.rebuilt)
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        #expect(reopened.checkIntegrity())
        #expect(try reopened.remote(collectionPath: "c", collectionID: "c").isEmpty)
        _ = try reopened.enqueue(uid: "", writes: [Google_Firestore_V1_Write()], localWriteTime: Google_Protobuf_Timestamp())
        #expect(try LocalCache(fileURL: file).batches(uid: "").count == 1, "the rebuilt file works and persists")
    }

    @Test func anAppOnADamagedCacheChecksItInTheBackgroundAndTheNextLaunchRebuildsIt() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try damagedCache(directory)
        // No server: the listener reads what it can from the cache; nothing crashes.
        let db = offlineFirestore(ports: ["auth": 1, "firestore": 1], cacheDirectory: directory)
        let log = SnapshotLog<QuerySnapshot>()
        let registration = db.collection("c").addSnapshotListener { snapshot, error in log.append(snapshot, error) }
        #expect(!db.engine.cache.rebuilt)
        let deadline = ContinuousClock.now + .seconds(20)
        while db.engine.integrity.withLock({ $0.intact }) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(db.engine.integrity.withLock { $0.intact } == false, "the check ran by itself after opening and found the damage")
        registration.remove()
        await db.terminate()
        let next = offlineFirestore(ports: ["auth": 1, "firestore": 1], cacheDirectory: directory)
        #expect(next.engine.cache.rebuilt, "the next launch starts from an empty file")
        await next.terminate()
    }

    @Test func garbageCollectionRemovesLeastRecentlyUsedDocumentsOutsideActiveTargetsAndPendingWrites() throws {
        let cache = try LocalCache(fileURL: nil)
        func doc(_ path: String) -> (path: String, document: Google_Firestore_V1_Document?) {
            var d = Google_Firestore_V1_Document()
            d.name = "projects/p/databases/(default)/documents/\(path)"
            var v = Google_Firestore_V1_Value()
            v.stringValue = String(repeating: "x", count: 1000)
            d.fields = ["blob": v]
            return (path, d)
        }
        try cache.database.write { db in
            for i in 0..<10 { try LocalCache.putRemote(db, [doc("c/d\(i)")], sequence: Int64(i)) }
            try LocalCache.putTarget(db, key: "active", state: .init(resumeToken: Data([1]), readTime: nil, paths: ["c/d0"]), sequence: 1)
            try LocalCache.putTarget(db, key: "old", state: .init(resumeToken: Data([2]), readTime: nil, paths: ["c/d2"]), sequence: 1)
        }
        let perDocument = try cache.byteSize() / 10
        let removed = try cache.collectGarbage(thresholdBytes: perDocument * 5, activeTargets: ["active"], pinned: ["c/d1"])
        #expect(removed == 5)
        let left = try cache.remote(collectionPath: "c", collectionID: "c").keys.sorted()
        #expect(left == ["c/d0", "c/d1", "c/d7", "c/d8", "c/d9"], "the active target's and the pending write's documents stay; the oldest others go")
        #expect(try cache.target("old") == nil, "an inactive target that lost a document is dropped")
        #expect(try cache.target("active") != nil)
        #expect(try cache.collectGarbage(thresholdBytes: perDocument * 5, activeTargets: ["active"], pinned: []) == 0, "under the limit: nothing")
    }

    @Test func targetsWriteOnlyTheDifferenceOnceWritten() throws {
        let cache = try LocalCache(fileURL: nil)
        try cache.database.write { db in
            try LocalCache.putTarget(db, key: "t", state: .init(resumeToken: Data([1]), readTime: nil, paths: ["c/a", "c/b"]), sequence: 1)
            try LocalCache.putTarget(
                db, key: "t", state: .init(resumeToken: Data([2]), readTime: nil, paths: ["c/b", "c/c"]), sequence: 2, previousPaths: ["c/a", "c/b"])
        }
        let target = try #require(try cache.target("t"))
        #expect(target.paths.sorted() == ["c/b", "c/c"])
        #expect(target.resumeToken == Data([2]))
    }

    @Test func oneInstancePerAppAndDatabaseSoOneQueueDrainsEachCacheFile() {
        let name = "named-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: HearthOptions(projectID: "demo-hearth"))
        let app = HearthApp.app(name: name)!
        #expect(Firestore.firestore(app: app, database: "other") === Firestore.firestore(app: app, database: "other"))
        #expect(Firestore.firestore(app: app, database: "(default)") === Firestore.firestore(app: app))
        #expect(Firestore.firestore(app: app, database: "other") !== Firestore.firestore(app: app))
    }

    @Test func streamsBackOffOneSecondTimesOneAndAHalfUpToAMinuteWithJitter() {
        var backoff = StreamBackoff()
        #expect(backoff.next() == 0, "the first retry after a good response is immediate")
        var base = 1.0
        for _ in 0..<20 {
            let delay = backoff.next()
            #expect(delay >= base * 0.5 && delay <= base * 1.5, "\(delay) within ±50% of \(base)")
            base = min(base * 1.5, 60)
        }
        #expect(base == 60)
        backoff.reset()
        _ = backoff.next()
        let exhausted = backoff.next(resourceExhausted: true)
        #expect(exhausted >= 30 && exhausted <= 90, "RESOURCE_EXHAUSTED waits the maximum")
    }

    @Test func anAcknowledgementThatDoesNotMatchTheBatchIsRefused() throws {
        let engine = try LocalSyncEngine(cache: LocalCache(fileURL: nil), databaseName: "projects/p/databases/(default)", uid: "", sizeBytes: -1)
        var write = Google_Firestore_V1_Write()
        write.delete = "projects/p/databases/(default)/documents/c/d"
        engine.enqueue([write]) { _ in }
        let batch = try #require(engine.pendingBatches(after: 0, limit: 10).first)
        #expect(throws: MalformedResponse.self) {
            try engine.acknowledge(batchID: batch.batchID, results: [], commitTime: Google_Protobuf_Timestamp())
        }
        #expect(throws: MalformedResponse.self) {
            try engine.acknowledge(batchID: batch.batchID + 1, results: [Google_Firestore_V1_WriteResult()], commitTime: Google_Protobuf_Timestamp())
        }
        try engine.acknowledge(batchID: batch.batchID, results: [Google_Firestore_V1_WriteResult()], commitTime: Google_Protobuf_Timestamp())
        #expect(!engine.hasPendingBatches)
    }
}

/// The local query engine over the wire form: every filter, the order, cursors and limits.
@Suite struct LocalQueryEngineTests {
    typealias Value = Google_Firestore_V1_Value
    typealias SQ = Google_Firestore_V1_StructuredQuery
    static let root = "projects/p/databases/(default)/documents"

    func int(_ i: Int64) -> Value { var v = Value(); v.integerValue = i; return v }
    func double(_ d: Double) -> Value { var v = Value(); v.doubleValue = d; return v }
    func string(_ s: String) -> Value { var v = Value(); v.stringValue = s; return v }
    func null() -> Value { var v = Value(); v.nullValue = .nullValue; return v }
    func array(_ values: [Value]) -> Value { var v = Value(); v.arrayValue.values = values; return v }

    func field(_ path: String, _ op: SQ.FieldFilter.Operator, _ value: Value) -> SQ.Filter {
        var f = SQ.Filter()
        f.fieldFilter.field.fieldPath = path
        f.fieldFilter.op = op
        f.fieldFilter.value = value
        return f
    }

    func unary(_ path: String, _ op: SQ.UnaryFilter.Operator) -> SQ.Filter {
        var f = SQ.Filter()
        f.unaryFilter.field.fieldPath = path
        f.unaryFilter.op = op
        return f
    }

    func composite(_ op: SQ.CompositeFilter.Operator, _ filters: [SQ.Filter]) -> SQ.Filter {
        var f = SQ.Filter()
        f.compositeFilter.op = op
        f.compositeFilter.filters = filters
        return f
    }

    func order(_ path: String, _ descending: Bool = false) -> SQ.Order {
        var o = SQ.Order()
        o.field.fieldPath = path
        o.direction = descending ? .descending : .ascending
        return o
    }

    var documents: [(path: String, fields: [String: Value])] {
        [
            ("c/a", ["n": int(1), "tags": array([string("x")]), "s": string("b")]),
            ("c/b", ["n": double(2.5), "tags": array([string("y"), string("z")]), "s": null()]),
            ("c/c", ["n": int(3), "s": string("a")]),
            ("c/d", ["n": double(.nan)]),
            ("c/e", ["other": int(1)]),
            ("other/f", ["n": int(1)]),
            ("c/a/sub/g", ["n": int(1)]),
        ]
    }

    func run(_ filter: SQ.Filter?, orders: [SQ.Order] = [], limit: Int32? = nil, start: Google_Firestore_V1_Cursor? = nil,
             end: Google_Firestore_V1_Cursor? = nil, limitToLast: Bool = false) -> [String] {
        var q = SQ()
        var from = SQ.CollectionSelector()
        from.collectionID = "c"
        q.from = [from]
        if let filter { q.where = filter }
        q.orderBy = orders
        if let limit { q.limit = Google_Protobuf_Int32Value(limit) }
        if let start { q.startAt = start }
        if let end { q.endAt = end }
        let engine = LocalQueryEngine(documentsRoot: Self.root, parentPath: "", query: q, limitToLast: limitToLast)
        return engine.run(documents).map(\.path)
    }

    @Test func fieldFiltersOfEveryOperator() {
        #expect(run(field("n", .equal, double(1.0))) == ["c/a"], "1 == 1.0")
        #expect(run(field("n", .notEqual, int(1))) == ["c/d", "c/b", "c/c"], "existing, non-null, ordered by n (NaN first)")
        #expect(run(field("n", .lessThan, int(3))) == ["c/a", "c/b"], "NaN never compares")
        #expect(run(field("n", .lessThanOrEqual, int(3))) == ["c/a", "c/b", "c/c"])
        #expect(run(field("n", .greaterThan, int(1))) == ["c/b", "c/c"])
        #expect(run(field("n", .greaterThanOrEqual, double(2.5))) == ["c/b", "c/c"])
        #expect(run(field("s", .greaterThan, string("a"))) == ["c/a"], "only strings compare with strings")
        #expect(run(field("tags", .arrayContains, string("z"))) == ["c/b"])
        #expect(run(field("tags", .arrayContainsAny, array([string("x"), string("z")]))) == ["c/a", "c/b"])
        #expect(run(field("n", .in, array([int(3), double(2.5)]))) == ["c/b", "c/c"])
        #expect(run(field("n", .notIn, array([int(3), double(2.5)]))) == ["c/d", "c/a"])
        #expect(run(field("__name__", .equal, { var v = Value(); v.referenceValue = "\(Self.root)/c/c"; return v }())) == ["c/c"])
    }

    @Test func unaryAndCompositeFilters() {
        #expect(run(unary("n", .isNan)) == ["c/d"])
        #expect(run(unary("s", .isNull)) == ["c/b"])
        #expect(run(unary("s", .isNotNull)) == ["c/c", "c/a"], "ordered by s")
        #expect(run(unary("n", .isNotNan)) == ["c/a", "c/b", "c/c"])
        #expect(run(composite(.and, [field("n", .greaterThan, int(1)), field("s", .equal, string("a"))])) == ["c/c"])
        #expect(run(composite(.or, [field("n", .equal, int(1)), field("other", .equal, int(1))])) == ["c/a", "c/e"])
        #expect(run(composite(.or, [field("s", .equal, string("a")), composite(.and, [field("n", .greaterThan, int(0)), field("n", .lessThan, int(2))])]))
            == ["c/a", "c/c"])
    }

    @Test func orderCursorsAndLimits() {
        let byN = [order("n", true)]
        #expect(run(nil, orders: byN) == ["c/c", "c/b", "c/a", "c/d"], "documents without the field are left out; NaN last descending")
        #expect(run(nil, orders: byN, limit: 2) == ["c/c", "c/b"])
        var at = Google_Firestore_V1_Cursor()
        at.values = [double(2.5)]
        at.before = true
        #expect(run(nil, orders: byN, start: at) == ["c/b", "c/a", "c/d"], "startAt includes")
        at.before = false
        #expect(run(nil, orders: byN, start: at) == ["c/a", "c/d"], "startAfter excludes")
        #expect(run(nil, orders: byN, end: at) == ["c/c", "c/b"], "endAt includes")
        at.before = true
        #expect(run(nil, orders: byN, end: at) == ["c/c"], "endBefore excludes")
        // limit(toLast: 2) of ascending n: the wire form orders descending with limit 2; the app sees it reversed.
        #expect(run(nil, orders: byN, limit: 2, limitToLast: true) == ["c/b", "c/c"])
        var name = Google_Firestore_V1_Cursor()
        name.values = [{ var v = Value(); v.referenceValue = "\(Self.root)/c/b"; return v }()]
        name.before = true
        #expect(run(nil, start: name) == ["c/b", "c/c", "c/d", "c/e"], "__name__ order and cursor")
    }

    @Test func collectionGroupsSelectByCollectionID() {
        var q = SQ()
        var from = SQ.CollectionSelector()
        from.collectionID = "sub"
        from.allDescendants = true
        q.from = [from]
        let engine = LocalQueryEngine(documentsRoot: Self.root, parentPath: "", query: q)
        #expect(engine.run(documents).map(\.path) == ["c/a/sub/g"])
        let scoped = LocalQueryEngine(documentsRoot: Self.root, parentPath: "c/b", query: q)
        #expect(scoped.run(documents).isEmpty)
    }

    @Test func writesApplyLocallyWithEstimatedTransforms() {
        var write = Google_Firestore_V1_Write()
        write.update.name = "\(Self.root)/c/a"
        write.update.fields = ["m": { var v = Value(); v.mapValue.fields = ["k": int(1)]; return v }()]
        write.updateMask.fieldPaths = ["m.k"]
        var inc = Google_Firestore_V1_DocumentTransform.FieldTransform()
        inc.fieldPath = "n"
        inc.increment = double(0.5)
        var union = Google_Firestore_V1_DocumentTransform.FieldTransform()
        union.fieldPath = "tags"
        union.appendMissingElements.values = [string("x"), string("y")]
        var now = Google_Firestore_V1_DocumentTransform.FieldTransform()
        now.fieldPath = "at"
        now.setToServerValue = .requestTime
        write.updateTransforms = [inc, union, now]
        var base = Google_Firestore_V1_Document()
        base.fields = ["n": int(1), "tags": array([string("x")]), "keep": int(7), "at": string("before")]
        var time = Google_Protobuf_Timestamp()
        time.seconds = 42
        let applied = LocalWriteApplier.apply(write, to: base, name: write.update.name, localWriteTime: time)
        let fields = applied?.fields ?? [:]
        #expect(fields["keep"] == int(7), "a masked write keeps other fields")
        #expect(LocalQueryEngine.field(fields, "m.k") == int(1))
        #expect(fields["n"] == double(1.5))
        #expect(fields["tags"] == array([string("x"), string("y")]))
        let writer = UserDataWriter(databaseName: "projects/p/databases/(default)")
        #expect(writer.convert(fields)["at"] is NSNull)
        var estimate = writer
        estimate.serverTimestampBehavior = .estimate
        #expect((estimate.convert(fields)["at"] as? Timestamp)?.seconds == 42)
        var previous = writer
        previous.serverTimestampBehavior = .previous
        #expect(previous.convert(fields)["at"] as? String == "before")
        // A precondition that fails locally leaves the document as it was.
        var mustExist = write
        mustExist.currentDocument.exists = true
        #expect(LocalWriteApplier.apply(mustExist, to: nil, name: write.update.name, localWriteTime: time) == nil)
    }
}

/// Watch can report a state older than a write the server has already acknowledged (its stream
/// lags the commit): the engine keeps each cached document's version and ignores older news, so a
/// listener never flickers back to what the write replaced (the Apple SDK's rule).
@Suite struct FirestoreStaleWatchTests {
    static let database = "projects/p/databases/(default)"
    static let root = "\(database)/documents"
    typealias Doc = Google_Firestore_V1_Document

    final class Seen: Sendable {
        let snapshots = Mutex<[ViewSnapshot]>([])
    }

    func stamp(_ seconds: Int64) -> Google_Protobuf_Timestamp {
        var t = Google_Protobuf_Timestamp()
        t.seconds = seconds
        return t
    }

    func fields(rank: Int64) -> [String: Google_Firestore_V1_Value] {
        var v = Google_Firestore_V1_Value()
        v.integerValue = rank
        return ["rank": v]
    }

    /// The server's version of a document.
    func remote(_ path: String, rank: Int64, at seconds: Int64) -> Doc {
        var d = Doc()
        d.name = "\(Self.root)/\(path)"
        d.fields = fields(rank: rank)
        d.createTime = stamp(1)
        d.updateTime = stamp(seconds)
        return d
    }

    func set(_ path: String, rank: Int64) -> Google_Firestore_V1_Write {
        var d = Doc()
        d.name = "\(Self.root)/\(path)"
        d.fields = fields(rank: rank)
        var w = Google_Firestore_V1_Write()
        w.update = d
        return w
    }

    func delete(_ path: String) -> Google_Firestore_V1_Write {
        var w = Google_Firestore_V1_Write()
        w.delete = "\(Self.root)/\(path)"
        return w
    }

    func result(at seconds: Int64?) -> Google_Firestore_V1_WriteResult {
        var r = Google_Firestore_V1_WriteResult()
        if let seconds { r.updateTime = stamp(seconds) }
        return r
    }

    /// An engine over an in-memory cache with one view of collection `c` ordered by rank.
    func engineWithView() throws -> (LocalSyncEngine, Int, Seen) {
        let engine = try LocalSyncEngine(cache: LocalCache(fileURL: nil), databaseName: Self.database, uid: "", sizeBytes: -1)
        var query = Google_Firestore_V1_StructuredQuery()
        var from = Google_Firestore_V1_StructuredQuery.CollectionSelector()
        from.collectionID = "c"
        query.from = [from]
        var order = Google_Firestore_V1_StructuredQuery.Order()
        order.field.fieldPath = "rank"
        order.direction = .ascending
        query.orderBy = [order]
        let local = LocalQueryEngine(documentsRoot: Self.root, parentPath: "", query: query)
        let seen = Seen()
        let id = engine.addView(kind: .query(local, collectionPath: "c", collectionID: "c"), targetKey: "q|c", includeMetadataChanges: false) { s in
            seen.snapshots.withLock { $0.append(s) }
        }
        return (engine, id, seen)
    }

    func shown(_ engine: LocalSyncEngine, _ seen: Seen) -> [[String]] {
        engine.callbacks.sync {}
        return seen.snapshots.withLock { $0.map { $0.documents.map(\.path) } }
    }

    func acknowledgeHead(_ engine: LocalSyncEngine, at seconds: Int64, updateTime: Bool) throws {
        let batch = try #require(engine.pendingBatches(after: 0, limit: 1).first)
        try engine.acknowledge(batchID: batch.batchID, results: [result(at: updateTime ? seconds : nil)], commitTime: stamp(seconds))
    }

    @Test func aDeleteAcknowledgedBeforeWatchReportsItDoesNotComeBack() throws {
        let (engine, id, seen) = try engineWithView()
        let a = remote("c/a", rank: 2, at: 1)
        engine.remoteSnapshot(id, documents: [a.name: a], resumeToken: Data([1]), readTime: stamp(1))
        engine.enqueue([set("c/b", rank: 1)]) { _ in }
        try acknowledgeHead(engine, at: 2, updateTime: true)
        engine.enqueue([delete("c/b")]) { _ in }
        try acknowledgeHead(engine, at: 3, updateTime: false)
        #expect(shown(engine, seen) == [["c/a"], ["c/b", "c/a"], ["c/a"]])

        // Watch now reports b's creation (version 2), older than the acknowledged delete (3).
        let b = remote("c/b", rank: 1, at: 2)
        engine.remoteSnapshot(
            id, documents: [a.name: a, b.name: b], changed: [b.name], resumeToken: Data([2]), readTime: stamp(2))
        #expect(shown(engine, seen) == [["c/a"], ["c/b", "c/a"], ["c/a"]], "the stale b does not come back")
        #expect(try engine.cachedDocument("c/b").map { $0.document == nil } == true, "the cache keeps the delete")

        // Then the delete itself.
        engine.remoteSnapshot(id, documents: [a.name: a], changed: [b.name], resumeToken: Data([3]), readTime: stamp(3))
        #expect(shown(engine, seen) == [["c/a"], ["c/b", "c/a"], ["c/a"]])

        // A newer version than the delete is news: b was created again by someone else.
        let again = remote("c/b", rank: 0, at: 4)
        engine.remoteSnapshot(
            id, documents: [a.name: a, again.name: again], changed: [again.name], resumeToken: Data([4]), readTime: stamp(4))
        #expect(shown(engine, seen).last == ["c/b", "c/a"])
    }

    @Test func aCreationAcknowledgedBeforeWatchReportsItDoesNotVanish() throws {
        let (engine, id, seen) = try engineWithView()
        let a = remote("c/a", rank: 2, at: 1)
        engine.remoteSnapshot(id, documents: [a.name: a], resumeToken: Data([1]), readTime: stamp(1))
        engine.enqueue([set("c/c", rank: 3)]) { _ in }
        try acknowledgeHead(engine, at: 3, updateTime: true)
        #expect(shown(engine, seen) == [["c/a"], ["c/a", "c/c"]])

        // A consistent point from before the commit (a changed, c not yet listed).
        let a2 = remote("c/a", rank: 1, at: 2)
        engine.remoteSnapshot(id, documents: [a2.name: a2], changed: [a2.name], resumeToken: Data([2]), readTime: stamp(2))
        #expect(shown(engine, seen).last == ["c/a", "c/c"], "c stays while Watch catches up")
        #expect(shown(engine, seen).dropFirst().allSatisfy { $0.contains("c/c") }, "no snapshot without c")

        let c = remote("c/c", rank: 3, at: 3)
        engine.remoteSnapshot(id, documents: [a2.name: a2, c.name: c], changed: [c.name], resumeToken: Data([3]), readTime: stamp(3))
        #expect(shown(engine, seen).count == 3, "nothing new to show once Watch agrees")
    }

    @Test func watchNewsIsShownBeforeItIsStoredAndStoredInOrder() throws {
        let (engine, id, seen) = try engineWithView()
        let gate = DispatchSemaphore(value: 0)
        engine.persister.async { gate.wait() }  // the file is busy
        let a = remote("c/a", rank: 1, at: 1)
        let b = remote("c/b", rank: 2, at: 1)
        engine.remoteSnapshot(id, documents: [a.name: a, b.name: b], resumeToken: Data([1]), readTime: stamp(1))
        #expect(shown(engine, seen) == [["c/a", "c/b"]], "the view shows Watch's documents before the file has them")
        #expect(try engine.cache.remote("c/a") == nil)
        #expect(try engine.cachedDocument("c/a")?.document?.fields == a.fields, "reads see them too")
        // b goes, and an older report of a (Watch lagging) is ignored, while the first store waits.
        let olderA = remote("c/a", rank: 9, at: 0)
        engine.remoteSnapshot(id, documents: [a.name: olderA], changed: [a.name, b.name], resumeToken: Data([2]), readTime: stamp(2))
        #expect(shown(engine, seen) == [["c/a", "c/b"], ["c/a"]])
        #expect(try engine.cachedDocument("c/a")?.document?.fields == a.fields)
        gate.signal()
        engine.flush()
        #expect(engine.unpersisted.withLock { $0.entries.isEmpty }, "stored entries leave memory")
        #expect((try engine.cache.remote("c/a") ?? nil)?.fields == a.fields, "the file has the newer a")
        #expect(try engine.cache.remote("c/b") == nil, "and not b")
        let target = try #require(try engine.cache.target("q|c"))
        #expect(target.resumeToken == Data([2]))
        #expect(target.paths == ["c/a"])
    }

    @Test func aStoreIsQueuedBeforeTheAppSeesItsSnapshot() throws {
        // An app that terminates from its callback (flush) must find the store of what it saw.
        let engine = try LocalSyncEngine(cache: LocalCache(fileURL: nil), databaseName: Self.database, uid: "", sizeBytes: -1)
        let tokens = Mutex<[Data?]>([])
        _ = engine.addView(kind: .document(path: "c/d"), targetKey: "d|c/d", includeMetadataChanges: false) { [engine] _ in
            engine.flush()
            tokens.withLock { $0.append(try? engine.cache.target("d|c/d")?.resumeToken) }
        }
        let view = try #require(engine.state.withLock { $0.views.keys.first })
        for i in 1...20 {
            let d = remote("c/d", rank: Int64(i), at: Int64(i))
            engine.remoteSnapshot(view, documents: [d.name: d], resumeToken: Data([UInt8(i)]), readTime: stamp(Int64(i)))
        }
        engine.callbacks.sync {}
        let seen = tokens.withLock { $0 }
        #expect(seen.count == 20)
        let found = seen.map { $0?.first.map(Int.init) ?? 0 }
        #expect(found.enumerated().allSatisfy { i, token in token >= i + 1 }, "each callback found its store queued: \(found)")
    }

    @Test func aVersionOneCacheGainsVersionsAndKeepsItsQueue() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cache.sqlite")
        let doc = remote("c/a", rank: 1, at: 5)
        do {
            // Schema version 1: no version columns.
            let cache = try LocalCache(fileURL: file)
            _ = try cache.enqueue(uid: "", writes: [delete("c/z")], localWriteTime: stamp(1))
            try cache.database.write { db in
                try db.execute(sql: """
                    DROP TABLE remote_documents;
                    CREATE TABLE remote_documents (path TEXT PRIMARY KEY NOT NULL, collection_path TEXT NOT NULL,
                        collection_id TEXT NOT NULL, document BLOB, size INTEGER NOT NULL, sequence INTEGER NOT NULL);
                    DROP TABLE targets;
                    CREATE TABLE targets (target_key TEXT PRIMARY KEY NOT NULL, resume_token BLOB NOT NULL, read_time BLOB,
                        sequence INTEGER NOT NULL);
                    INSERT INTO targets VALUES ('q|c', x'01', NULL, 1);
                    PRAGMA user_version = 1;
                    """)
                try db.execute(
                    sql: "INSERT INTO remote_documents VALUES ('c/a', 'c', 'c', ?, 10, 1)", arguments: [try doc.serializedBytes() as Data])
            }
        }
        let cache = try LocalCache(fileURL: file)
        #expect(!cache.rebuilt)
        #expect(try cache.batches(uid: "").count == 1, "the queue survives the migration")
        let older = remote("c/a", rank: 9, at: 4)
        let (before, ignored, stored, after) = try cache.database.write { db throws in
            (
                try LocalCache.version(db, "c/a"), try LocalCache.putRemote(db, [("c/a", older)], sequence: 2),
                try LocalCache.putRemote(db, [("c/a", nil)], sequence: 2, missingVersion: stamp(6)), try LocalCache.version(db, "c/a")
            )
        }
        #expect(before == stamp(5), "an old row's version comes from its document")
        #expect(ignored.isEmpty, "older news is ignored")
        #expect(stored == ["c/a"])
        #expect(after == stamp(6), "a tombstone keeps its version")
        #expect(try cache.target("q|c")?.resumeToken == Data([1]), "targets survive, gaining result columns")
        #expect(try cache.storedResult("q|c") == nil)
    }

    @Test func aDocumentViewKeepsAnAcknowledgedWriteOverAnOlderMissingReport() throws {
        let engine = try LocalSyncEngine(cache: LocalCache(fileURL: nil), databaseName: Self.database, uid: "", sizeBytes: -1)
        let seen = Seen()
        let id = engine.addView(kind: .document(path: "c/d"), targetKey: "d|c/d", includeMetadataChanges: true) { s in
            seen.snapshots.withLock { $0.append(s) }
        }
        engine.remoteSnapshot(id, documents: [:], resumeToken: Data([1]), readTime: stamp(1))
        engine.enqueue([set("c/d", rank: 7)]) { _ in }
        try acknowledgeHead(engine, at: 3, updateTime: true)
        // Watch's consistent point at 2 still says missing.
        engine.remoteSnapshot(id, documents: [:], changed: [], resumeToken: Data([2]), readTime: stamp(2))
        engine.callbacks.sync {}
        let pending = seen.snapshots.withLock { $0.map { $0.documents.first?.hasPendingWrites } }
        #expect(pending == [nil, true, false], "missing, then the pending write, then the committed write; never missing again")
    }
}

/// The Write stream sends consecutive queued batches in one request (issue 16's drain rate).
@Suite struct WriteStreamGroupingTests {
    static let root = "projects/p/databases/(default)/documents"

    func batch(_ id: Int64, _ paths: [String]) -> LocalCache.Batch {
        let writes = paths.map { path -> Google_Firestore_V1_Write in
            var w = Google_Firestore_V1_Write()
            w.delete = "\(Self.root)/\(path)"
            return w
        }
        return LocalCache.Batch(batchID: id, writes: writes, localWriteTime: Google_Protobuf_Timestamp())
    }

    func ids(_ batches: [LocalCache.Batch]) -> [Int64] { batches.map(\.batchID) }

    @Test func consecutiveBatchesShareARequestUpToTheLimit() {
        let queue = (1...8).map { batch(Int64($0), ["c/d\($0)", "c/e\($0)"]) }
        #expect(ids(RemoteWriteStream.group(queue)) == Array(1...8))
        #expect(ids(RemoteWriteStream.group(queue, maxWrites: 7)) == [1, 2, 3], "three batches of two writes fit in seven")
        #expect(ids(RemoteWriteStream.group([batch(1, (0..<600).map { "c/d\($0)" })] + queue)) == [1], "a batch over the limit goes alone")
        #expect(RemoteWriteStream.group([]).isEmpty)
    }

    @Test func aSecondWriteToADocumentStartsANewRequest() {
        let queue = [batch(1, ["c/a"]), batch(2, ["c/b"]), batch(3, ["c/a"]), batch(4, ["c/c"])]
        #expect(ids(RemoteWriteStream.group(queue)) == [1, 2])
        #expect(ids(RemoteWriteStream.group(Array(queue.dropFirst(2)))) == [3, 4])
        #expect(ids(RemoteWriteStream.group([batch(1, ["c/a", "c/a"]), batch(2, ["c/b"])])) == [1], "a batch that writes a document twice stays alone")
        #expect(ids(RemoteWriteStream.group([batch(1, ["c/a"]), batch(2, ["c/b", "c/b"])])) == [1])
    }

    @Test func batchesMarkedAloneGoOneByOne() {
        let queue = (1...5).map { batch(Int64($0), ["c/d\($0)"]) }
        #expect(ids(RemoteWriteStream.group(queue) { $0 <= 3 }) == [1])
        #expect(ids(RemoteWriteStream.group(Array(queue.dropFirst(2))) { $0 <= 3 }) == [3])
        #expect(ids(RemoteWriteStream.group(Array(queue.dropFirst(3))) { $0 <= 3 }) == [4, 5])
    }
}

/// `LocalQueryEngine.inCollection` without allocations: the same answers as splitting the path.
@Suite struct LocalQueryEngineSelectionTests {
    func engine(_ collectionID: String, parent: String = "", group: Bool = false) -> LocalQueryEngine {
        var q = Google_Firestore_V1_StructuredQuery()
        var from = Google_Firestore_V1_StructuredQuery.CollectionSelector()
        from.collectionID = collectionID
        from.allDescendants = group
        q.from = [from]
        return LocalQueryEngine(documentsRoot: "projects/p/databases/(default)/documents", parentPath: parent, query: q)
    }

    @Test func collectionsAndGroupsSelectTheirDocumentsOnly() {
        #expect(engine("c").inCollection("c/a"))
        #expect(!engine("c").inCollection("c"), "a collection is not a document")
        #expect(!engine("c").inCollection("c/a/sub/b"), "a subcollection's document")
        #expect(!engine("c").inCollection("cc/a"))
        #expect(!engine("c").inCollection("c//a"), "an empty segment")
        #expect(!engine("c").inCollection("/c/a"))
        #expect(!engine("c").inCollection("c/a/"))
        #expect(engine("sub", parent: "c/a").inCollection("c/a/sub/b"))
        #expect(!engine("sub", parent: "c/a").inCollection("c/x/sub/b"))
        #expect(!engine("sub", parent: "c/a").inCollection("sub/b"))
        #expect(engine("sub", group: true).inCollection("sub/b"))
        #expect(engine("sub", group: true).inCollection("c/a/sub/b"))
        #expect(engine("sub", parent: "c/a", group: true).inCollection("c/a/x/y/sub/b"))
        #expect(!engine("sub", parent: "c/a", group: true).inCollection("c/ab/sub/b"), "a parent that only shares a prefix")
        #expect(!engine("sub", group: true).inCollection("c/a/subs/b"))
        #expect(engine("é", group: true).inCollection("c/ü/é/d"))
    }
}

/// A new instance's first snapshot of a query starts from what the target last showed (no query
/// run, documents decoded when read), unless something in the collection may have changed since.
@Suite struct FirestoreStoredResultTests {
    let watch = FirestoreStaleWatchTests()
    typealias Doc = Google_Firestore_V1_Document

    func query() -> LocalSyncEngine.ViewKind {
        var query = Google_Firestore_V1_StructuredQuery()
        var from = Google_Firestore_V1_StructuredQuery.CollectionSelector()
        from.collectionID = "c"
        query.from = [from]
        var order = Google_Firestore_V1_StructuredQuery.Order()
        order.field.fieldPath = "rank"
        query.orderBy = [order]
        return .query(LocalQueryEngine(documentsRoot: FirestoreStaleWatchTests.root, parentPath: "", query: query), collectionPath: "c", collectionID: "c")
    }

    func engine(_ file: URL) throws -> LocalSyncEngine {
        try LocalSyncEngine(cache: LocalCache(fileURL: file), databaseName: FirestoreStaleWatchTests.database, uid: "", sizeBytes: -1)
    }

    /// A first instance shows b (rank 1) and a (rank 2) from the server; `between` changes the file
    /// before the second instance's first snapshot, which is returned.
    func secondFirstSnapshot(_ between: (LocalSyncEngine) throws -> Void = { _ in }) throws -> ViewSnapshot {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cache.sqlite")
        do {
            let first = try engine(file)
            let seen = FirestoreStaleWatchTests.Seen()
            let id = first.addView(kind: query(), targetKey: "q|c", includeMetadataChanges: false) { s in seen.snapshots.withLock { $0.append(s) } }
            let a = watch.remote("c/a", rank: 2, at: 1), b = watch.remote("c/b", rank: 1, at: 1)
            first.remoteSnapshot(id, documents: [a.name: a, b.name: b], resumeToken: Data([1]), readTime: watch.stamp(1))
            #expect(watch.shown(first, seen) == [["c/b", "c/a"]])
            first.close()
        }
        let second = try engine(file)
        try between(second)
        let seen = FirestoreStaleWatchTests.Seen()
        _ = second.addView(kind: query(), targetKey: "q|c", includeMetadataChanges: false) { s in seen.snapshots.withLock { $0.append(s) } }
        second.callbacks.sync {}
        second.close()
        return try #require(seen.snapshots.withLock { $0.first })
    }

    func isCached(_ d: ViewDocument) -> Bool { if case .cached = d.content { true } else { false } }

    @Test func anUnchangedResultIsShownWithoutRunningTheQuery() throws {
        let snapshot = try secondFirstSnapshot()
        #expect(snapshot.documents.map(\.path) == ["c/b", "c/a"])
        #expect(snapshot.metadata.isFromCache)
        #expect(snapshot.documents.allSatisfy(isCached), "taken from the stored result, not decoded")
        #expect(snapshot.documents.map { $0.document.fields } == [watch.fields(rank: 1), watch.fields(rank: 2)], "decoded when read")
    }

    @Test func aDocumentWrittenSinceIsPlacedByTheQuery() throws {
        let snapshot = try secondFirstSnapshot { engine in
            try engine.cache.database.write { db in
                let document: Doc? = watch.remote("c/c", rank: 0, at: 2)
                _ = try LocalCache.putRemote(db, [(path: "c/c", document: document)], sequence: 100)
            }
        }
        #expect(snapshot.documents.map(\.path) == ["c/c", "c/b", "c/a"])
    }

    @Test func aStoredDocumentAtAnotherVersionIsPlacedByTheQuery() throws {
        let snapshot = try secondFirstSnapshot { engine in
            try engine.cache.database.write { db in
                let document: Doc? = watch.remote("c/a", rank: 0, at: 2)
                _ = try LocalCache.putRemote(db, [(path: "c/a", document: document)], sequence: 100)
            }
        }
        #expect(snapshot.documents.map(\.path) == ["c/a", "c/b"])
        #expect(snapshot.documents.first?.document.fields == watch.fields(rank: 0))
    }

    @Test func aDocumentThatLeftOrAPendingDeleteDropsOut() throws {
        let gone = try secondFirstSnapshot { engine in
            try engine.cache.database.write { db in try LocalCache.removeRemote(db, ["c/a"]) }
        }
        #expect(gone.documents.map(\.path) == ["c/b"])
        let deleted = try secondFirstSnapshot { engine in
            engine.enqueue([watch.delete("c/b")]) { _ in }
        }
        #expect(deleted.documents.map(\.path) == ["c/a"])
        #expect(!deleted.metadata.hasPendingWrites)
    }

    @Test func aPendingWriteThatMatchesIsPlacedByTheQuery() throws {
        let snapshot = try secondFirstSnapshot { engine in
            engine.enqueue([watch.set("c/z", rank: 0)]) { _ in }
        }
        #expect(snapshot.documents.map(\.path) == ["c/z", "c/b", "c/a"])
        #expect(snapshot.metadata.hasPendingWrites)
    }

    @Test func aStoredResultRoundTrips() {
        var version = Google_Protobuf_Timestamp()
        version.seconds = 1_700_000_000
        version.nanos = 123
        let result = LocalCache.StoredResult(
            entries: [.init(path: "c/ä b/é", version: version), .init(path: "c/x", version: nil)], sequence: 42)
        #expect(LocalCache.StoredResult(encoded: result.encoded(), sequence: 42) == result)
        #expect(LocalCache.StoredResult(encoded: Data([1, 2, 3]), sequence: 1) == nil, "not such a list")
    }
}
