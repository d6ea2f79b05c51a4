import Foundation
import Synchronization
import Testing

import HearthFirestoreProto
import SwiftProtobuf
@testable import HearthClientFirestore

/// Issue 16's offline figures, printed (docs/performance.md records them): cold start to the first
/// snapshot from a 10k-document cache, and queued writes drained per second after reconnecting.
@Suite(.serialized) struct FirestoreOfflineBenchmarks {
    @Test func coldStartToTheFirstSnapshotFromATenThousandDocumentCache() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let count = 10_000
        do {
            let cache = try LocalCache(fileURL: directory.appendingPathComponent("cache.sqlite"))
            try await cache.database.write { db in
                for i in 0..<count {
                    var d = Google_Firestore_V1_Document()
                    d.name = "projects/demo-hearth/databases/(default)/documents/items/i\(i)"
                    var n = Google_Firestore_V1_Value()
                    n.integerValue = Int64(i)
                    var title = Google_Firestore_V1_Value()
                    title.stringValue = "Item number \(i) with a title of ordinary length"
                    d.fields = ["n": n, "title": title, "done": { var v = Google_Firestore_V1_Value(); v.booleanValue = i % 2 == 0; return v }()]
                    try LocalCache.putRemote(db, [("items/i\(i)", d)], sequence: 1)
                }
            }
        }
        do {
            // The parts, for the record: reading the collection from SQLite, and the query over it.
            let clock = ContinuousClock()
            let cache = try LocalCache(fileURL: directory.appendingPathComponent("cache.sqlite"))
            var docs: [String: Google_Firestore_V1_Document] = [:]
            let read = try clock.measure { docs = try cache.remote(collectionPath: "items", collectionID: "items") }
            var q = Google_Firestore_V1_StructuredQuery()
            var from = Google_Firestore_V1_StructuredQuery.CollectionSelector()
            from.collectionID = "items"
            q.from = [from]
            var o = Google_Firestore_V1_StructuredQuery.Order()
            o.field.fieldPath = "n"
            q.orderBy = [o]
            let engine = LocalQueryEngine(documentsRoot: "projects/demo-hearth/databases/(default)/documents", parentPath: "", query: q)
            let candidates = docs.map { (path: $0.key, fields: $0.value.fields) }
            let run = clock.measure { _ = engine.run(candidates) }
            print("offline-bench cold-start-parts read-ms=\(read.components.attoseconds / 1_000_000_000_000_000 + read.components.seconds * 1000) query-ms=\(run.components.attoseconds / 1_000_000_000_000_000 + run.components.seconds * 1000)")
        }
        // A new app on that file, with no server: the first snapshot comes from the cache.
        let start = ContinuousClock.now
        let db = offlineFirestore(ports: ["auth": 1, "firestore": 1], cacheDirectory: directory)
        let first = Mutex<(Duration, Int)?>(nil)
        let registration = db.collection("items").order(by: "n").addSnapshotListener { snapshot, _ in
            guard let snapshot else { return }
            first.withLock { f in if f == nil { f = (ContinuousClock.now - start, snapshot.count) } }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while first.withLock({ $0 }) == nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        registration.remove()
        await db.terminate()
        let (elapsed, documents) = try #require(first.withLock { $0 })
        #expect(documents == count)
        print("offline-bench cold-start-first-snapshot documents=\(count) ms=\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)")
    }

    @Test func queuedWritesDrainedPerSecond() async throws {
        let server = try RestartableServer()
        try await server.start()
        await server.stop()
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = offlineFirestore(ports: server.ports, cacheDirectory: directory)
        let count = 1000
        let acks = Mutex<[ContinuousClock.Instant]>([])
        for i in 0..<count {
            db.collection("drain").document("d\(i)").setData(["n": i]) { error in
                if error == nil { acks.withLock { $0.append(.now) } }
            }
        }
        let restarted = ContinuousClock.now
        try await server.start()
        try await db.waitForPendingWrites()
        let times = acks.withLock { $0 }
        #expect(times.count == count)
        let total = ContinuousClock.now - restarted
        let draining = times.last! - times.first!
        let perSecond = Double(count - 1) / (Double(draining.components.attoseconds) / 1e18 + Double(draining.components.seconds))
        print("offline-bench drain writes=\(count) first-to-last-ack-per-second=\(Int(perSecond)) total-with-reconnect-ms=\(total.components.seconds * 1000 + total.components.attoseconds / 1_000_000_000_000_000)")
        await db.terminate()
        await server.stop()
    }
}
