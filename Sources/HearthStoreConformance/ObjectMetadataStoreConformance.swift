public import HearthCore
public import HearthStorage
public import Testing

/// The scenarios every ``ObjectMetadataStore`` passes — in-memory, SQLite, PostgreSQL — run by
/// each backend's test target with a factory for a fresh, empty store.
public enum ObjectMetadataStoreConformance {
    /// One scenario, named for the test report.
    public typealias Case = StoreConformanceCase<any ObjectMetadataStore>
    public typealias MakeStore = Case.MakeStore

    public static let all: [Case] = [
        Case(name: "bucketsAreCreatedOnceListedInByteOrderAndDeletedOnlyWhenEmpty", body: bucketsAreCreatedOnceListedInByteOrderAndDeletedOnlyWhenEmpty),
        Case(name: "putChecksPreconditionsInTheStoreAndGenerationsOnlyGrow", body: putChecksPreconditionsInTheStoreAndGenerationsOnlyGrow),
        Case(name: "updatesPatchMetadataAndBumpOnlyTheMetageneration", body: updatesPatchMetadataAndBumpOnlyTheMetageneration),
        Case(name: "copiesShareBlobsAndABlobIsFreeOnlyWhenNothingRefersToIt", body: copiesShareBlobsAndABlobIsFreeOnlyWhenNothingRefersToIt),
        Case(name: "deletingManySkipsMissingNamesAndFreesEachBlobOnce", body: deletingManySkipsMissingNamesAndFreesEachBlobOnce),
        Case(name: "multipartPartsAreReplacedByNumberAndHoldTheirBlobs", body: multipartPartsAreReplacedByNumberAndHoldTheirBlobs),
        Case(name: "accessKeysRoundTripAndRevoke", body: accessKeysRoundTripAndRevoke),
        Case(name: "uploadSessionsGrowOnlyAtTheirEndAndEndOnce", body: uploadSessionsGrowOnlyAtTheirEndAndEndOnce),
        Case(name: "staleUploadSessionsAreForgottenWithTheirParts", body: staleUploadSessionsAreForgottenWithTheirParts),
        Case(name: "listingMatchesABruteForceModel", body: listingMatchesABruteForceModel),
        Case(name: "namesWithANULCharacterFindNothingAndNeverFail", body: namesWithANULCharacterFindNothingAndNeverFail),
    ]

    /// Every scenario in turn, each on a fresh store.
    public static func runAll(make: MakeStore) async throws { try await Case.runAll(all, make: make) }

    /// Fails unless `body` throws a ``HearthError`` with `code`.
    public static func expectError<T>(_ code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T) async {
        do {
            _ = try await body()
            Issue.record("expected \(code.statusName), nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as HearthError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected a HearthError \(code.statusName), got \(error)", sourceLocation: sourceLocation)
        }
    }

    public static func time(_ microseconds: Int64) -> Timestamp { Timestamp(microseconds: microseconds) }

    /// A row as ``ObjectStore`` makes one for new bytes.
    public static func row(_ bucket: String, _ name: String, blob: String, generation: Int64 = 1_000, custom: [String: String] = [:]) -> StorageObject {
        StorageObject(
            bucket: bucket, name: name, generation: generation, metageneration: 1, size: 3, contentType: "text/plain",
            md5: Array(repeating: 7, count: 16), crc32c: 0xDEAD_BEEF, etag: "etag-\(blob)", created: time(generation), updated: time(generation),
            cacheControl: "no-cache", custom: custom, downloadTokens: ["t1"], blobID: blob)
    }

    /// A name holding U+0000 (which S3 keys and GCS names may carry on the wire, and PostgreSQL's
    /// text cannot hold) is looked up like any missing name: nothing found, nothing deleted, no
    /// server error — inside a write too (a failed statement must not spoil its transaction).
    /// Storing one may be refused (INVALID_ARGUMENT), never answered INTERNAL.
    static func namesWithANULCharacterFindNothingAndNeverFail(_ make: MakeStore) async throws {
        let store = try await make()
        _ = try await store.createBucket("b", created: time(1), ifMissing: false)
        _ = try await store.putObject(row("b", "ab", blob: "blob-1"), preconditions: .none)
        #expect(try await store.object("b", "a\u{0}b") == nil)
        #expect(try await store.bucket("b\u{0}") == nil)
        await expectError(.notFound) { try await store.deleteObject("b", "a\u{0}b", preconditions: .none) }
        let many = try await store.deleteObjects("b", ["a\u{0}b", "ab"])
        #expect(many.deleted == ["ab"])
        #expect(try await store.multipartUpload("u", bucket: "b", key: "k\u{0}") == nil)
        do {
            _ = try await store.putObject(row("b", "n\u{0}ul", blob: "blob-2"), preconditions: .none)
            #expect(try await store.object("b", "n\u{0}ul")?.blobID == "blob-2", "a backend that stores it finds it again")
        } catch let error as HearthError {
            #expect(error.code == .invalidArgument, "\(error)")
        }
        #expect(try await store.object("b", "ab") == nil)
    }

    static func session(_ id: String, used: Int64 = 1) -> ObjectStore.UploadSession {
        ObjectStore.UploadSession(id: id, bucket: "b", name: "up/\(id)", descriptor: "{\"who\":\"\(id)\"}", lastUsed: time(used))
    }

    static func chunk(_ blob: String, size: Int64, at modified: Int64) -> ObjectStore.UploadedPart {
        ObjectStore.UploadedPart(number: 0, size: size, md5: Array(repeating: UInt8(size), count: 16), modified: time(modified), blobID: blob)
    }

    /// A resumable upload session takes a chunk only where its stored bytes end (a chunk read
    /// against an older state — a client's resend racing its first try — changes nothing), its
    /// parts hold their blobs until it ends, and it ends once: the ending returns the parts'
    /// blobs, and a second ending, or a chunk after it, is refused.
    static func uploadSessionsGrowOnlyAtTheirEndAndEndOnce(_ make: MakeStore) async throws {
        let store = try await make()
        await expectError(.notFound) { try await store.createUploadSession(session("s1")) }
        _ = try await store.createBucket("b", created: time(1), ifMissing: false)
        try await store.createUploadSession(session("s1"))
        try await store.createUploadSession(session("s2"))
        #expect(try await store.uploadSession("s1") == session("s1"))
        #expect(try await store.uploadSession("missing") == nil)
        #expect(try await store.appendUploadPart("s1", at: 0, chunk("p1", size: 3, at: 10)))
        #expect(try await store.appendUploadPart("s1", at: 0, chunk("p1-again", size: 3, at: 11)) == false, "bytes 0-2 are stored already")
        #expect(try await store.appendUploadPart("s1", at: 5, chunk("p-gap", size: 3, at: 11)) == false, "a gap")
        #expect(try await store.appendUploadPart("s1", at: 3, chunk("p2", size: 4, at: 12)))
        #expect(try await store.appendUploadPart("missing", at: 0, chunk("p-none", size: 1, at: 12)) == false)
        let grown = try #require(try await store.uploadSession("s1"))
        #expect(grown.received == 7)
        #expect(grown.partCount == 2)
        #expect(grown.lastUsed == time(12))
        #expect(grown.state == .active)
        #expect(grown.descriptor == session("s1").descriptor)
        let parts = try await store.parts(uploadID: "s1")
        #expect(parts.map(\.number) == [1, 2])
        #expect(parts.map(\.blobID) == ["p1", "p2"])
        #expect(parts.map(\.size) == [3, 4])
        #expect(try await store.unreferencedBlobs(["p1", "p2", "p1-again"]) == ["p1-again"], "a session's parts hold their blobs")

        let ended = try #require(try await store.endUploadSession("s1", .finished("the object"), at: time(20)))
        #expect(Set(ended) == ["p1", "p2"])
        let finished = try #require(try await store.uploadSession("s1"))
        #expect(finished.state == .finished("the object"))
        #expect(finished.lastUsed == time(20))
        #expect(try await store.parts(uploadID: "s1").isEmpty)
        #expect(try await store.unreferencedBlobs(["p1", "p2"]) == ["p1", "p2"])
        #expect(try await store.endUploadSession("s1", .cancelled, at: time(21)) == nil, "it ended already")
        #expect(try await store.uploadSession("s1")?.state == .finished("the object"))
        #expect(try await store.appendUploadPart("s1", at: 7, chunk("p3", size: 1, at: 22)) == false, "no chunk after the end")

        #expect(try await store.endUploadSession("s2", .cancelled, at: time(23)) == [])
        #expect(try await store.uploadSession("s2")?.state == .cancelled)
        #expect(try await store.endUploadSession("missing", .cancelled, at: time(23)) == nil)
    }

    /// Sessions unused since the cutoff are forgotten with their parts (whose blobs come back
    /// to be deleted); a session used since is kept whole — a chunk counts as use.
    static func staleUploadSessionsAreForgottenWithTheirParts(_ make: MakeStore) async throws {
        let store = try await make()
        _ = try await store.createBucket("b", created: time(1), ifMissing: false)
        try await store.createUploadSession(session("old", used: 100))
        try await store.createUploadSession(session("revived", used: 100))
        try await store.createUploadSession(session("new", used: 1_000))
        #expect(try await store.appendUploadPart("old", at: 0, chunk("old-1", size: 2, at: 150)))
        #expect(try await store.appendUploadPart("revived", at: 0, chunk("revived-1", size: 2, at: 600)))
        #expect(try await store.appendUploadPart("new", at: 0, chunk("new-1", size: 2, at: 1_100)))
        #expect(try await store.expireUploadSessions(unusedSince: time(500)) == ["old-1"])
        #expect(try await store.uploadSession("old") == nil)
        #expect(try await store.parts(uploadID: "old").isEmpty)
        #expect(try await store.uploadSession("revived")?.received == 2)
        #expect(try await store.parts(uploadID: "new").map(\.blobID) == ["new-1"])
        #expect(try await store.unreferencedBlobs(["old-1", "revived-1", "new-1"]) == ["old-1"])
        #expect(try await store.expireUploadSessions(unusedSince: time(500)) == [])
    }

    static func bucketsAreCreatedOnceListedInByteOrderAndDeletedOnlyWhenEmpty(_ make: MakeStore) async throws {
        let store = try await make()
        let first = try await store.createBucket("b-2", created: time(5), ifMissing: false)
        #expect(first == ObjectStore.Bucket(name: "b-2", created: time(5)))
        await expectError(.alreadyExists) { try await store.createBucket("b-2", created: time(6), ifMissing: false) }
        #expect(try await store.createBucket("b-2", created: time(7), ifMissing: true).created == time(5), "the existing record")
        _ = try await store.createBucket("b-10", created: time(8), ifMissing: true)
        _ = try await store.createBucket("a.b", created: time(9), ifMissing: false)
        #expect(try await store.buckets().map(\.name) == ["a.b", "b-10", "b-2"])
        #expect(try await store.bucket("b-10")?.created == time(8))
        #expect(try await store.bucket("nope") == nil)

        _ = try await store.putObject(row("b-2", "k", blob: "blob-1"), preconditions: .none)
        await expectError(.failedPrecondition) { try await store.deleteBucket("b-2") }
        await expectError(.notFound) { try await store.deleteBucket("nope") }
        _ = try await store.deleteObject("b-2", "k", preconditions: .none)
        try await store.deleteBucket("b-2")
        #expect(try await store.bucket("b-2") == nil)
        #expect(try await store.buckets().map(\.name) == ["a.b", "b-10"])
    }

    static func putChecksPreconditionsInTheStoreAndGenerationsOnlyGrow(_ make: MakeStore) async throws {
        let store = try await make()
        await expectError(.notFound) { try await store.putObject(row("b-1", "k", blob: "blob-0"), preconditions: .none) }
        _ = try await store.createBucket("b-1", created: time(1), ifMissing: false)

        let first = try await store.putObject(row("b-1", "k", blob: "blob-1", generation: 1_000), preconditions: .init(ifGenerationMatch: 0))
        #expect(first.object == row("b-1", "k", blob: "blob-1", generation: 1_000))
        #expect(first.unreferenced == nil)
        #expect(try await store.object("b-1", "k") == first.object)

        // Preconditions are judged against the stored row; a failure changes nothing.
        await expectError(.failedPrecondition) { try await store.putObject(row("b-1", "k", blob: "blob-x"), preconditions: .init(ifGenerationMatch: 0)) }
        await expectError(.failedPrecondition) { try await store.putObject(row("b-1", "k", blob: "blob-x"), preconditions: .init(ifGenerationMatch: 999)) }
        await expectError(.failedPrecondition) { try await store.putObject(row("b-1", "k", blob: "blob-x"), preconditions: .init(ifGenerationNotMatch: 1_000)) }
        await expectError(.failedPrecondition) { try await store.putObject(row("b-1", "k", blob: "blob-x"), preconditions: .init(ifMetagenerationMatch: 2)) }
        #expect(try await store.object("b-1", "k") == first.object)
        #expect(try await store.unreferencedBlobs(["blob-x"]) == ["blob-x"])

        // A clock behind the stored generation still yields a newer generation; the old bytes are free.
        let second = try await store.putObject(
            row("b-1", "k", blob: "blob-2", generation: 10), preconditions: .init(ifGenerationMatch: 1_000, ifMetagenerationMatch: 1))
        #expect(second.object.generation == 1_001)
        #expect(second.unreferenced == "blob-1")
        #expect(try await store.object("b-1", "k") == second.object)
        let third = try await store.putObject(row("b-1", "k", blob: "blob-3", generation: 5_000), preconditions: .none)
        #expect(third.object.generation == 5_000)
        #expect(try await store.object("b-1", "other") == nil)
        #expect(try await store.object("b-2", "k") == nil)
    }

    static func updatesPatchMetadataAndBumpOnlyTheMetageneration(_ make: MakeStore) async throws {
        let store = try await make()
        _ = try await store.createBucket("b-1", created: time(1), ifMissing: false)
        let stored = try await store.putObject(row("b-1", "k", blob: "blob-1", custom: ["a": "1", "b": "2"]), preconditions: .none).object
        var patch = ObjectPatch()
        patch.contentType = .set("image/png")
        patch.cacheControl = .clear
        patch.custom = ["a": nil, "c": "3"]
        let updated = try await store.updateObject("b-1", "k", patch: patch, preconditions: .init(ifMetagenerationMatch: 1), at: time(2_000))
        var expected = stored
        expected.contentType = "image/png"
        expected.cacheControl = nil
        expected.custom = ["b": "2", "c": "3"]
        expected.metageneration = 2
        expected.updated = time(2_000)
        #expect(updated == expected)
        #expect(try await store.object("b-1", "k") == expected)

        await expectError(.failedPrecondition) { try await store.updateObject("b-1", "k", patch: patch, preconditions: .init(ifMetagenerationMatch: 1), at: time(3_000)) }
        await expectError(.notFound) { try await store.updateObject("b-1", "missing", patch: patch, preconditions: .none, at: time(3_000)) }
        await expectError(.notFound) { try await store.updateObject("b-9", "k", patch: patch, preconditions: .none, at: time(3_000)) }
        #expect(try await store.object("b-1", "k") == expected)
    }

    static func copiesShareBlobsAndABlobIsFreeOnlyWhenNothingRefersToIt(_ make: MakeStore) async throws {
        let store = try await make()
        _ = try await store.createBucket("b-1", created: time(1), ifMissing: false)
        _ = try await store.createBucket("b-2", created: time(1), ifMissing: false)
        let source = try await store.putObject(row("b-1", "src", blob: "blob-s", custom: ["k": "v"]), preconditions: .none).object
        _ = try await store.putObject(row("b-2", "dst", blob: "blob-d"), preconditions: .none)

        await expectError(.notFound) {
            try await store.copyObject(
                from: ("b-1", "missing"), to: ("b-2", "x"), attributes: nil, sourcePreconditions: .none, preconditions: .none, at: time(2_000))
        }
        await expectError(.notFound) {
            try await store.copyObject(
                from: ("b-1", "src"), to: ("b-9", "x"), attributes: nil, sourcePreconditions: .none, preconditions: .none, at: time(2_000))
        }
        await expectError(.failedPrecondition) {
            try await store.copyObject(
                from: ("b-1", "src"), to: ("b-2", "dst"), attributes: nil, sourcePreconditions: .init(ifGenerationMatch: 7),
                preconditions: .none, at: time(2_000))
        }
        await expectError(.failedPrecondition) {
            try await store.copyObject(
                from: ("b-1", "src"), to: ("b-2", "dst"), attributes: nil, sourcePreconditions: .none, preconditions: .init(ifGenerationMatch: 0),
                at: time(2_000))
        }

        // Over an existing object: its bytes are free; the metadata is the source's.
        let copy = try await store.copyObject(
            from: ("b-1", "src"), to: ("b-2", "dst"), attributes: nil, sourcePreconditions: .init(ifGenerationMatch: source.generation),
            preconditions: .init(ifGenerationMatch: 1_000), at: time(2_000))
        #expect(copy.unreferenced == "blob-d")
        #expect(copy.object == source.copied(to: ("b-2", "dst"), attributes: nil, at: time(2_000)))
        #expect(copy.object.blobID == "blob-s" && copy.object.custom == ["k": "v"] && copy.object.generation == 2_000)
        // Attributes replace the metadata; the generation follows the replaced row's.
        let again = try await store.copyObject(
            from: ("b-1", "src"), to: ("b-2", "dst"), attributes: ObjectAttributes(contentType: "a/b"), sourcePreconditions: .none,
            preconditions: .none, at: time(1_500))
        #expect(again.unreferenced == nil, "the replaced row shared the copy's blob")
        #expect(again.object.generation == 2_001 && again.object.contentType == "a/b" && again.object.custom.isEmpty)
        #expect(again.object.downloadTokens.isEmpty && again.object.cacheControl == nil)

        // The shared blob is free once the last of its rows is gone.
        #expect(try await store.deleteObject("b-1", "src", preconditions: .none) == nil)
        #expect(try await store.unreferencedBlobs(["blob-s", "blob-d", "blob-never"]) == ["blob-d", "blob-never"])
        await expectError(.failedPrecondition) { try await store.deleteObject("b-2", "dst", preconditions: .init(ifMetagenerationMatch: 5)) }
        await expectError(.notFound) { try await store.deleteObject("b-2", "missing", preconditions: .none) }
        await expectError(.notFound) { try await store.deleteObject("b-9", "dst", preconditions: .none) }
        #expect(try await store.deleteObject("b-2", "dst", preconditions: .init(ifGenerationMatch: 2_001)) == "blob-s")
        #expect(try await store.object("b-2", "dst") == nil)
    }

    static func deletingManySkipsMissingNamesAndFreesEachBlobOnce(_ make: MakeStore) async throws {
        let store = try await make()
        _ = try await store.createBucket("b-1", created: time(1), ifMissing: false)
        for i in 0..<5 { _ = try await store.putObject(row("b-1", "o\(i)", blob: "blob-\(i)"), preconditions: .none) }
        // o0 and c0 share blob-0; keep shares blob-1 and survives.
        _ = try await store.copyObject(from: ("b-1", "o0"), to: ("b-1", "c0"), attributes: nil, sourcePreconditions: .none, preconditions: .none, at: time(9))
        _ = try await store.copyObject(from: ("b-1", "o1"), to: ("b-1", "keep"), attributes: nil, sourcePreconditions: .none, preconditions: .none, at: time(9))
        let result = try await store.deleteObjects("b-1", ["o3", "missing", "o0", "c0", "o1", "o3"])
        #expect(result.deleted == ["o3", "o0", "c0", "o1"])
        #expect(Set(result.unreferenced) == ["blob-3", "blob-0"] && result.unreferenced.count == 2)
        #expect(try await store.object("b-1", "o0") == nil)
        #expect(try await store.object("b-1", "keep") != nil)
        #expect(try await store.object("b-1", "o2") != nil)
        let again = try await store.deleteObjects("b-1", ["o0"])
        #expect(again.deleted.isEmpty && again.unreferenced.isEmpty)
        await expectError(.notFound) { try await store.deleteObjects("b-9", ["o2"]) }
    }

    static func multipartPartsAreReplacedByNumberAndHoldTheirBlobs(_ make: MakeStore) async throws {
        let store = try await make()
        let upload = ObjectStore.MultipartUpload(
            id: "u-1", bucket: "b-1", key: "big", attributes: ObjectAttributes(contentType: "video/mp4", contentLanguage: "en", custom: ["x": "y"]),
            created: time(10))
        await expectError(.notFound) { try await store.createMultipartUpload(upload) }
        _ = try await store.createBucket("b-1", created: time(1), ifMissing: false)
        try await store.createMultipartUpload(upload)
        #expect(try await store.multipartUpload("u-1", bucket: "b-1", key: "big") == upload)
        #expect(try await store.multipartUpload("u-1", bucket: "b-1", key: "other") == nil)
        #expect(try await store.multipartUpload("u-2", bucket: "b-1", key: "big") == nil)

        func part(_ number: Int, _ blob: String) -> ObjectStore.UploadedPart {
            ObjectStore.UploadedPart(number: number, size: Int64(number * 10), md5: Array(repeating: UInt8(number), count: 16), modified: time(20), blobID: blob)
        }
        await expectError(.notFound) { try await store.putPart(part(1, "p-x"), uploadID: "u-2") }
        #expect(try await store.putPart(part(2, "p-2"), uploadID: "u-1") == nil)
        #expect(try await store.putPart(part(1, "p-1"), uploadID: "u-1") == nil)
        #expect(try await store.putPart(part(2, "p-2b"), uploadID: "u-1") == "p-2")
        #expect(try await store.parts(uploadID: "u-1") == [part(1, "p-1"), part(2, "p-2b")])
        #expect(try await store.parts(uploadID: "u-2").isEmpty)
        #expect(try await store.unreferencedBlobs(["p-1", "p-2", "p-2b"]) == ["p-2"], "parts hold their blobs")

        #expect(try await store.removeMultipartUpload("u-1") == ["p-1", "p-2b"])
        #expect(try await store.multipartUpload("u-1", bucket: "b-1", key: "big") == nil)
        #expect(try await store.parts(uploadID: "u-1").isEmpty)
        #expect(try await store.removeMultipartUpload("u-1").isEmpty)
        await expectError(.notFound) { try await store.putPart(part(3, "p-3"), uploadID: "u-1") }
    }

    static func accessKeysRoundTripAndRevoke(_ make: MakeStore) async throws {
        let store = try await make()
        let a = S3AccessKey(id: "HRTHAAAA", secret: "s+/1", buckets: [], created: time(1), revoked: false, note: nil)
        let b = S3AccessKey(id: "HRTHBBBB", secret: "s2", buckets: ["b-1", "b.2"], created: time(2), revoked: false, note: "ci uploads")
        try await store.addAccessKey(b)
        try await store.addAccessKey(a)
        #expect(try await store.accessKeys() == [a, b])
        #expect(try await store.accessKey("HRTHBBBB") == b)
        #expect(try await store.accessKey("HRTHCCCC") == nil)
        #expect(try await store.revokeAccessKey("HRTHAAAA"))
        #expect(try await store.revokeAccessKey("HRTHCCCC") == false)
        var revoked = a
        revoked.revoked = true
        #expect(try await store.accessKey("HRTHAAAA") == revoked)
        #expect(try await store.accessKeys() == [revoked, b])
    }

    static func listingMatchesABruteForceModel(_ make: MakeStore) async throws {
        let store = try await make()
        _ = try await store.createBucket("b-1", created: time(1), ifMissing: false)
        await expectError(.notFound) { try await store.list("b-9", .init()) }
        #expect(try await store.list("b-1", .init()).objects.isEmpty)
        var rng = SystemRandomNumberGenerator()
        let parts = ["a", "b", "img", "x.y", "é", "z", "Z", "~", "\u{10FFFF}"]
        var names = Set<String>()
        while names.count < 200 {
            let depth = Int.random(in: 1...3, using: &rng)
            names.insert((0..<depth).map { _ in parts.randomElement(using: &rng)! }.joined(separator: "/") + "\(Int.random(in: 0..<4, using: &rng))")
        }
        for (i, n) in names.enumerated() { _ = try await store.putObject(row("b-1", n, blob: "blob-\(i)"), preconditions: .none) }
        _ = try await store.createBucket("b-0", created: time(1), ifMissing: false)
        _ = try await store.putObject(row("b-0", "a/0", blob: "other"), preconditions: .none)
        let sorted = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for prefix in ["", "a/", "img/", "é", "z/z", "\u{10FFFF}"] {
            for delimiter in [nil, "/", "y"] as [String?] {
                for (startOffset, endOffset) in [(nil, nil), ("b", "x"), ("a/b", nil)] as [(String?, String?)] {
                    for page in [1, 7, 1000] {
                        var expectedObjects: [String] = []
                        var expectedPrefixes: [String] = []
                        for n in sorted where n.hasPrefix(prefix) {
                            if let s = startOffset, n < s { continue }
                            if let e = endOffset, n >= e { continue }
                            if let d = delimiter, let r = n.utf8.dropFirst(prefix.utf8.count).firstRange(of: d.utf8) {
                                let p = String(decoding: n.utf8[..<r.upperBound], as: UTF8.self)
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
                            let r = try await store.list(
                                "b-1", .init(prefix: prefix, delimiter: delimiter, after: after, startOffset: startOffset, endOffset: endOffset, maxResults: page))
                            #expect(r.objects.count + r.prefixes.count <= page)
                            #expect(r.objects.allSatisfy { $0.bucket == "b-1" })
                            objects += r.objects.map(\.name)
                            prefixes += r.prefixes
                            after = r.next
                            pages += 1
                        } while after != nil && pages < 1000
                        let context = "prefix \(prefix) delimiter \(delimiter ?? "-") offsets \(startOffset ?? "-")…\(endOffset ?? "-") page \(page)"
                        #expect(objects == expectedObjects, "\(context)")
                        #expect(prefixes == expectedPrefixes, "\(context)")
                    }
                }
            }
        }
    }
}
