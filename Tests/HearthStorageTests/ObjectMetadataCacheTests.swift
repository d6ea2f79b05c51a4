import Crypto
import Foundation
import HearthCore
import Testing

@testable import HearthStorage

/// Reads served from the metadata cache must never be older than the last acknowledged write:
/// overwrite, metadata update, delete, copy onto, multipart completion — each is visible to
/// the very next read, and a slow reader cannot put an old row back.
struct ObjectMetadataCacheTests {
    @Test func overwriteIsVisibleToTheNextRead() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        let a = try await t.store.put("b-1", "k", [1, 2, 3])
        #expect(try await t.store.object("b-1", "k") == a)
        #expect(t.store.metadataCache.object("b-1", "k") == a, "the read filled the cache")
        let b = try await t.store.put("b-1", "k", [4, 5])
        let seen = try #require(try await t.store.object("b-1", "k"))
        #expect(seen == b && seen.generation > a.generation)
        #expect(try await t.store.bytes(seen) == [4, 5])
    }

    @Test func metadataUpdateIsVisibleToTheNextRead() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        _ = try await t.store.put("b-1", "k", [1])
        _ = try await t.store.object("b-1", "k")
        var patch = ObjectPatch()
        patch.contentType = .set("text/plain")
        patch.custom = ["owner": "alice"]
        patch.downloadTokens = ["t-2"]
        let u = try await t.store.update("b-1", "k", patch)
        let seen = try #require(try await t.store.object("b-1", "k"))
        #expect(seen == u)
        #expect(seen.metageneration == 2 && seen.contentType == "text/plain" && seen.custom == ["owner": "alice"] && seen.downloadTokens == ["t-2"])
    }

    @Test func deleteIsVisibleToTheNextRead() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        _ = try await t.store.put("b-1", "k", [1])
        #expect(try await t.store.object("b-1", "k") != nil)
        try await t.store.delete("b-1", "k")
        #expect(try await t.store.object("b-1", "k") == nil)
        #expect(t.store.metadataCache.object("b-1", "k") == nil)
    }

    @Test func copyOntoACachedObjectIsVisible() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        _ = try await t.store.put("b-1", "src", Array("new".utf8), attributes: .init(contentType: "text/plain"))
        _ = try await t.store.put("b-1", "dst", Array("old".utf8))
        _ = try await t.store.object("b-1", "dst")
        let c = try await t.store.copy(from: ("b-1", "src"), to: ("b-1", "dst"))
        let seen = try #require(try await t.store.object("b-1", "dst"))
        #expect(seen == c)
        #expect(try await t.store.bytes(seen) == Array("new".utf8))
    }

    @Test func failedConditionalWriteKeepsServingTheCurrentRow() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        let a = try await t.store.put("b-1", "k", [1])
        _ = try await t.store.object("b-1", "k")
        await #expect(throws: HearthError.self) { try await t.store.put("b-1", "k", [2], preconditions: .init(ifGenerationMatch: 0)) }
        #expect(try await t.store.object("b-1", "k") == a)
    }

    @Test func multipartCompletionIsVisible() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        _ = try await t.store.put("b-1", "k", [9])
        _ = try await t.store.object("b-1", "k")
        let upload = try await t.store.createMultipartUpload(bucket: "b-1", key: "k", attributes: .init(contentType: "text/plain"))
        let w = try t.store.beginUpload()
        try w.write(Array("multi".utf8))
        let part = try await t.store.commitPart(upload, number: 1, writer: w)
        let o = try await t.store.completeMultipartUpload(upload, parts: [(1, part.etag)])
        let seen = try #require(try await t.store.object("b-1", "k"))
        #expect(seen == o && seen.etag.hasSuffix("-1"))
        #expect(try await t.store.bytes(seen) == Array("multi".utf8))
    }

    @Test func aReaderThatStartedBeforeAnInvalidationCannotStoreItsRow() {
        let cache = ObjectMetadataCache(capacity: 8)
        let old = StorageObject.sample(generation: 1)
        let epoch = cache.epoch
        // A writer commits and invalidates while the reader still holds the old row…
        cache.invalidate(old.bucket, old.name)
        cache.insert(old, readAt: epoch)
        #expect(cache.object(old.bucket, old.name) == nil, "the stale row was not stored")
        // …while a reader that started afterwards may store what it read.
        let fresh = StorageObject.sample(generation: 2)
        cache.insert(fresh, readAt: cache.epoch)
        #expect(cache.object(fresh.bucket, fresh.name) == fresh)
    }

    @Test func boundedAndCanBeTurnedOff() {
        let cache = ObjectMetadataCache(capacity: 4)
        for i in 0..<10 { cache.insert(StorageObject.sample(name: "o\(i)"), readAt: cache.epoch) }
        #expect(cache.count <= 4)
        let off = ObjectMetadataCache(capacity: 0)
        off.insert(StorageObject.sample(), readAt: off.epoch)
        #expect(off.object("b-1", "k") == nil)
    }

    @Test func concurrentWritersAndReadersNeverReadBehindAnAcknowledgedWrite() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        _ = try await t.store.put("b-1", "k", [0])
        let store = t.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Background readers keep the cache busy (filling it with whatever they read).
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<200 { _ = try await store.object("b-1", "k") }
                }
            }
            // After each acknowledged write, a read sees at least that generation.
            group.addTask {
                for i in 1...40 {
                    let w = try await store.put("b-1", "k", [UInt8(i)])
                    let r = try #require(try await store.object("b-1", "k"))
                    #expect(r.generation >= w.generation)
                }
            }
            try await group.waitForAll()
        }
        let last = try #require(try await t.store.object("b-1", "k"))
        #expect(try await t.store.bytes(last) == [40])
    }
}

extension StorageObject {
    static func sample(name: String = "k", generation: Int64 = 1) -> StorageObject {
        StorageObject(
            bucket: "b-1", name: name, generation: generation, metageneration: 1, size: 1, contentType: "text/plain", md5: [UInt8](repeating: 0, count: 16),
            crc32c: 0, etag: "e", created: Timestamp(microseconds: 0), updated: Timestamp(microseconds: 0), cacheControl: nil,
            contentDisposition: nil, contentEncoding: nil, contentLanguage: nil, custom: [:], downloadTokens: [], blobID: "0123456789abcdefghijklmnop")
    }
}
