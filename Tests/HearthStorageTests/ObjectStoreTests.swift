import Foundation
import HearthCore
import HearthSQLite
import Testing

@testable import HearthStorage

/// A store on a fresh temporary directory (filesystem blobs; metadata in `storage.sqlite` there, or
/// in memory).
final class TempStore {
    let dir: URL
    let store: ObjectStore
    let blobs: FilesystemBlobStore

    /// `parent` picks the file system (default: the temporary directory); `directIO` as in
    /// ``FilesystemBlobStore/init(root:directIO:)``.
    init(parent: URL = FileManager.default.temporaryDirectory, directIO: Bool = true, metadata: MetadataStoreKind = .sqlite) throws {
        dir = parent.appendingPathComponent("hearth-storage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        blobs = try FilesystemBlobStore(root: dir.appendingPathComponent("objects"), directIO: directIO)
        store = ObjectStore(metadata: try metadata.make(in: dir), blobs: blobs)
    }

    deinit { try? FileManager.default.removeItem(at: dir) }

    func files(_ sub: String) -> [String] {
        let root = dir.appendingPathComponent("objects").appendingPathComponent(sub)
        let e = FileManager.default.enumerator(atPath: root.path)
        var out: [String] = []
        while let f = e?.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.appendingPathComponent(f).path, isDirectory: &isDir), !isDir.boolValue { out.append(f) }
        }
        return out
    }
}

struct ObjectStoreTests {
    @Test(arguments: [
        ("123456789", UInt32(0xE306_9283)),
        ("", UInt32(0)),
        ("The quick brown fox jumps over the lazy dog", UInt32(0x2262_0404)),
    ])
    func crc32cKnownAnswers(text: String, expected: UInt32) {
        #expect(CRC32C.checksum(Array(text.utf8)) == expected)
    }

    @Test func crc32cOfZeroesAndChunkingAgree() {
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)  // RFC 3720 B.4
        var rng = SystemRandomNumberGenerator()
        let data = (0..<10_007).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var c = CRC32C()
        var i = 0
        while i < data.count {
            let n = Int.random(in: 1...333, using: &rng)
            c.update(data[i..<min(data.count, i + n)])
            i += n
        }
        #expect(c.value == CRC32C.checksum(data))
    }

    @Test(arguments: MetadataStoreKind.allCases)
    func putGetReplaceAndChecksums(_ kind: MetadataStoreKind) async throws {
        let t = try TempStore(metadata: kind)
        try await t.store.createBucket("demo.appspot.com")
        let a = try await t.store.put("demo.appspot.com", "users/alice/avatar.png", Array("hello".utf8), attributes: .init(contentType: "image/png", custom: ["k": "v"]))
        #expect(a.size == 5)
        #expect(a.md5Base64 == "XUFAKrxLKna5cZ2REBfFkg==")
        #expect(a.crc32cBase64 == "mnG7TA==")
        #expect(a.contentType == "image/png")
        #expect(a.metageneration == 1)
        let got = try #require(try await t.store.object("demo.appspot.com", "users/alice/avatar.png"))
        #expect(got == a)
        #expect(try await t.store.bytes(got) == Array("hello".utf8))
        let b = try await t.store.put("demo.appspot.com", "users/alice/avatar.png", Array("bye".utf8))
        #expect(b.generation > a.generation)
        #expect(try await t.store.bytes(b) == Array("bye".utf8))
        await t.store.settleReclaims()
        #expect(t.files("blobs").count == 1, "the replaced blob is deleted")
        #expect(t.files("tmp").isEmpty)
    }

    @Test func rangesStreamInChunks() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        let data = (0..<100_000).map { UInt8($0 % 251) }
        let o = try await t.store.put("b-1", "big", data)
        var chunks = 0
        var got: [UInt8] = []
        for try await c in t.store.read(o, range: 10..<90_010, chunkSize: 4096) {
            #expect(c.count <= 4096)
            chunks += 1
            got += c
        }
        #expect(got == Array(data[10..<90_010]))
        #expect(chunks >= 22)
        var tail: [UInt8] = []
        for try await c in t.store.read(o, range: 99_990..<200_000) { tail += c }
        #expect(tail == Array(data[99_990...]))
    }

    @Test(arguments: MetadataStoreKind.allCases)
    func preconditionsAndMetadataUpdates(_ kind: MetadataStoreKind) async throws {
        let t = try TempStore(metadata: kind)
        try await t.store.createBucket("b-1")
        let o = try await t.store.put("b-1", "x", [1], preconditions: .init(ifGenerationMatch: 0))
        await #expect(throws: HearthError.self) { try await t.store.put("b-1", "x", [2], preconditions: .init(ifGenerationMatch: 0)) }
        #expect(try await t.store.bytes(try #require(try await t.store.object("b-1", "x"))) == [1])
        var patch = ObjectPatch()
        patch.contentType = .set("text/plain")
        patch.custom = ["a": "1", "b": nil]
        let u = try await t.store.update("b-1", "x", patch, preconditions: .init(ifMetagenerationMatch: 1))
        #expect(u.metageneration == 2 && u.generation == o.generation && u.contentType == "text/plain" && u.custom == ["a": "1"])
        await #expect(throws: HearthError.self) { try await t.store.update("b-1", "x", patch, preconditions: .init(ifMetagenerationMatch: 1)) }
        await #expect(throws: HearthError.self) { try await t.store.delete("b-1", "missing") }
        await #expect(throws: HearthError.self) { try await t.store.put("no-such-bucket", "x", [1]) }
        #expect(t.files("blobs").count == 1, "a failed upload leaves no blob")
    }

    @Test(arguments: MetadataStoreKind.allCases)
    func copiesShareBytesUntilTheLastReferenceGoes(_ kind: MetadataStoreKind) async throws {
        let t = try TempStore(metadata: kind)
        try await t.store.createBucket("b-1")
        try await t.store.createBucket("b-2")
        _ = try await t.store.put("b-1", "src", Array("data".utf8), attributes: .init(contentType: "text/plain"))
        let c = try await t.store.copy(from: ("b-1", "src"), to: ("b-2", "dst"))
        #expect(c.contentType == "text/plain")
        #expect(t.files("blobs").count == 1)
        try await t.store.delete("b-1", "src")
        #expect(try await t.store.bytes(c) == Array("data".utf8))
        await t.store.settleReclaims()
        #expect(t.files("blobs").count == 1)
        try await t.store.delete("b-2", "dst")
        await t.store.settleReclaims()
        #expect(t.files("blobs").isEmpty)
        await #expect(throws: HearthError.self) { try await t.store.deleteBucket("no-such") }
        try await t.store.deleteBucket("b-2")
    }

    @Test(arguments: MetadataStoreKind.allCases)
    func deleteManyIsOneTransactionAndIdempotent(_ kind: MetadataStoreKind) async throws {
        let t = try TempStore(metadata: kind)
        try await t.store.createBucket("bkt")
        for i in 0..<50 { _ = try await t.store.put("bkt", "x/\(i)", Array("o\(i)".utf8)) }
        // A copy shares its source's bytes: deleting both in one batch frees the blob once,
        // deleting only the source frees nothing.
        _ = try await t.store.copy(from: ("bkt", "x/0"), to: ("bkt", "keep"))
        _ = try await t.store.copy(from: ("bkt", "x/1"), to: ("bkt", "y/copy-of-1"))
        #expect(try await t.store.object("bkt", "x/2") != nil)  // cached row, must be forgotten
        let deleted = try await t.store.deleteMany("bkt", (0..<50).map { "x/\($0)" } + ["y/copy-of-1", "missing", "x/3"])
        #expect(deleted.count == 51)
        #expect(Set(deleted) == Set((0..<50).map { "x/\($0)" } + ["y/copy-of-1"]))
        #expect(try await t.store.object("bkt", "x/2") == nil)
        await t.store.settleReclaims()
        #expect(t.files("blobs").count == 1)  // "keep"'s bytes stay
        let keep = try #require(try await t.store.object("bkt", "keep"))
        #expect(try await t.store.bytes(keep) == Array("o0".utf8))
        // Again: nothing left to delete, no error.
        #expect(try await t.store.deleteMany("bkt", ["x/1", "x/2"]).isEmpty)
        #expect(try await t.store.deleteMany("bkt", []).isEmpty)
        await #expect(throws: HearthError.self) { try await t.store.deleteMany("no-such", ["a"]) }
    }

    @Test(arguments: MetadataStoreKind.allCases)
    func abortedAndAbandonedUploadsLeaveNothing(_ kind: MetadataStoreKind) async throws {
        let t = try TempStore(metadata: kind)
        try await t.store.createBucket("b-1")
        let w = try t.store.beginUpload()
        try w.write([1, 2, 3])
        #expect(t.files("tmp").count == 1)
        w.abort()
        #expect(t.files("tmp").isEmpty)
        do {
            let dropped = try t.store.beginUpload()
            try dropped.write([1])
        }
        #expect(t.files("tmp").isEmpty)
        // A blob finished but never committed (a crash in between) is swept.
        let orphan = try t.store.beginUpload()
        try orphan.write([9])
        _ = try await orphan.finish()
        #expect(t.files("blobs").count == 1)
        #expect(try await t.store.sweep() == 1)
        #expect(t.files("blobs").isEmpty)
    }

    @Test(arguments: ["", "a\u{0}b", "line\nbreak", "..", "a/../b", "./x", String(repeating: "n", count: 1025)])
    func badNamesAreRefused(name: String) async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        await #expect(throws: HearthError.self) { try await t.store.put("b-1", name, [1]) }
        #expect(t.files("blobs").isEmpty && t.files("tmp").isEmpty)
    }

    @Test func namesAreOpaqueKeysNeverPaths() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        for name in ["/etc/passwd", "%2e%2e/%2e%2e/x", "a//b", "ünïcødé/😀", String(repeating: "n", count: 1024)] {
            let o = try await t.store.put("b-1", name, Array(name.utf8))
            #expect(try await t.store.bytes(o) == Array(name.utf8))
        }
        // Every byte lives under the store's own directory, named by random ids.
        #expect(t.files("blobs").allSatisfy { $0.split(separator: "/").last!.count == 26 })
    }

    @Test(arguments: MetadataStoreKind.allCases)
    func listingMatchesABruteForceModel(_ kind: MetadataStoreKind) async throws {
        let t = try TempStore(metadata: kind)
        try await t.store.createBucket("b-1")
        var rng = SystemRandomNumberGenerator()
        let parts = ["a", "b", "img", "x.y", "é", "z"]
        var names = Set<String>()
        while names.count < 300 {
            let depth = Int.random(in: 1...4, using: &rng)
            names.insert((0..<depth).map { _ in parts.randomElement(using: &rng)! }.joined(separator: "/") + "\(Int.random(in: 0..<5, using: &rng))")
        }
        for n in names { _ = try await t.store.put("b-1", n, [1]) }
        let sorted = names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        for prefix in ["", "a/", "img/", "é", "z/z"] {
            for delimiter in [nil, "/"] as [String?] {
                for page in [1, 7, 1000] {
                    // Expected: brute force over the sorted names.
                    var expectedObjects: [String] = []
                    var expectedPrefixes: [String] = []
                    for n in sorted where n.hasPrefix(prefix) {
                        if let d = delimiter, let r = n.dropFirst(prefix.count).range(of: d) {
                            let p = String(n[..<r.upperBound])
                            if expectedPrefixes.last != p { expectedPrefixes.append(p) }
                        } else {
                            expectedObjects.append(n)
                        }
                    }
                    var objects: [String] = []
                    var prefixes: [String] = []
                    var after: String?
                    var pages = 0
                    repeat {
                        let r = try await t.store.list("b-1", .init(prefix: prefix, delimiter: delimiter, after: after, maxResults: page))
                        #expect(r.objects.count + r.prefixes.count <= page)
                        objects += r.objects.map(\.name)
                        prefixes += r.prefixes
                        after = r.next
                        pages += 1
                    } while after != nil && pages < 1000
                    #expect(objects == expectedObjects, "prefix \(prefix) delimiter \(delimiter ?? "-") page \(page)")
                    #expect(prefixes == expectedPrefixes, "prefix \(prefix) delimiter \(delimiter ?? "-") page \(page)")
                }
            }
        }
    }
}

extension ObjectStoreTests {
    @Test("A start on a blob directory other servers share leaves young temporary files (their uploads in flight) and removes old ones; a server of its own removes them all")
    func sharedBlobDirectoryKeepsUploadsInFlight() throws {
        let t = try TempStore()
        let tmp = t.dir.appendingPathComponent("objects/tmp")
        let young = tmp.appendingPathComponent("in-flight"), old = tmp.appendingPathComponent("abandoned")
        for file in [young, old] { try Data([1, 2, 3]).write(to: file) }
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: old.path)
        _ = try FilesystemBlobStore(root: t.dir.appendingPathComponent("objects"), sharedKeepingTemporaryFilesFor: 3600)
        #expect(t.files("tmp") == ["in-flight"])
        _ = try FilesystemBlobStore(root: t.dir.appendingPathComponent("objects"))
        #expect(t.files("tmp").isEmpty)
    }
}
