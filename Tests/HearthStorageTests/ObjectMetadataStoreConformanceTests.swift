import Foundation
import HearthCore
import HearthSQLite
import HearthStoreConformance
import Testing

@testable import HearthStorage

/// Every ``ObjectMetadataStore`` runs the same scenarios (`HearthStoreConformance`;
/// HearthPostgresTests runs them on PostgreSQL).
enum MetadataStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, sqlite

    var testDescription: String { rawValue }

    /// A new, empty store; `directory` holds its files (if it has any).
    func make(in directory: URL) throws -> any ObjectMetadataStore {
        switch self {
        case .memory: return InMemoryObjectMetadataStore()
        case .sqlite: return try SQLiteObjectMetadataStore(path: directory.appendingPathComponent("storage.sqlite").path)
        }
    }

    func make() throws -> any ObjectMetadataStore {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-metadata-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return try make(in: dir)
    }
}

func time(_ microseconds: Int64) -> Timestamp { ObjectMetadataStoreConformance.time(microseconds) }

func row(_ bucket: String, _ name: String, blob: String, generation: Int64 = 1_000, custom: [String: String] = [:]) -> StorageObject {
    ObjectMetadataStoreConformance.row(bucket, name, blob: blob, generation: generation, custom: custom)
}

@Suite struct ObjectMetadataStoreConformanceTests {
    @Test(arguments: MetadataStoreKind.allCases, ObjectMetadataStoreConformance.all)
    func conformance(_ kind: MetadataStoreKind, _ scenario: ObjectMetadataStoreConformance.Case) async throws {
        try await scenario.run { try kind.make() }
    }
}

/// What only a store on disk promises: a reopened store has what an earlier one wrote.
@Suite struct SQLiteObjectMetadataStoreTests {
    @Test func aReopenedStoreHasEverything() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-metadata-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("storage.sqlite").path
        let upload = ObjectStore.MultipartUpload(id: "u-1", bucket: "b-1", key: "k", attributes: .init(), created: time(3))
        let key = S3AccessKey(id: "HRTHAAAA", secret: "s", buckets: ["b-1"], created: time(4), revoked: false, note: "n")
        let stored: StorageObject
        do {
            let store = try SQLiteObjectMetadataStore(path: path)
            _ = try await store.createBucket("b-1", created: time(1), ifMissing: false)
            stored = try await store.putObject(row("b-1", "k", blob: "blob-1"), preconditions: .none).object
            try await store.createMultipartUpload(upload)
            try await store.addAccessKey(key)
        }
        let reopened = try SQLiteObjectMetadataStore(path: path)
        #expect(try await reopened.buckets() == [ObjectStore.Bucket(name: "b-1", created: time(1))])
        #expect(try await reopened.object("b-1", "k") == stored)
        #expect(try await reopened.multipartUpload("u-1", bucket: "b-1", key: "k") == upload)
        #expect(try await reopened.accessKeys() == [key])
    }

    /// `Fixtures/storage-before-seam.sqlite` was written by the server before object metadata moved
    /// to HearthSQLite (`hearth serve` at 43eb018, through boto3: a bucket, an object with metadata,
    /// a copy of it, a multipart upload with one part, an access key; the secrets blanked): the same
    /// tables and migration names, so it opens unchanged, reads back, and takes writes.
    @Test func aStoreWrittenBeforeTheMoveOpensUnchanged() async throws {
        let fixture = try #require(Bundle.module.url(forResource: "Fixtures/storage-before-seam", withExtension: "sqlite"))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-metadata-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("storage.sqlite")
        try FileManager.default.copyItem(at: fixture, to: path)
        let store = try SQLiteObjectMetadataStore(path: path.path)

        #expect(try await store.buckets().map(\.name) == ["demo-fixture.appspot.com", "fixture-bucket"])
        let a = try #require(try await store.object("fixture-bucket", "dir/a.txt"))
        #expect(a.size == 5 && a.etag == "2c1743a391305fbf367df8e4f069f9f9" && StorageObject.hex(a.md5) == a.etag)
        #expect(a.contentType == "text/plain" && a.cacheControl == "no-cache" && a.custom == ["k": "v"] && a.downloadTokens.isEmpty)
        #expect(a.generation == 1_795_654_492_433_782 && a.metageneration == 1 && a.blobID == "iaglkspjlqn83m5pdj1d3jcnde")
        let copy = try #require(try await store.object("fixture-bucket", "copy.txt"))
        #expect(copy.blobID == a.blobID && copy.generation == 1_795_654_492_438_840)
        let page = try await store.list("fixture-bucket", .init(delimiter: "/"))
        #expect(page.objects.map(\.name) == ["copy.txt"] && page.prefixes == ["dir/"] && page.next == nil)

        let uploadID = "1a0e7fe56fe945be9c58f1c262859cd7l37oc9gdc0k170nlk355kcb9v5"
        let upload = try #require(try await store.multipartUpload(uploadID, bucket: "fixture-bucket", key: "multi.bin"))
        #expect(upload.attributes == ObjectAttributes(contentType: "application/x-test", custom: ["m": "1"]))
        let parts = try await store.parts(uploadID: uploadID)
        #expect(parts.map(\.number) == [1] && parts.map(\.size) == [8] && parts.map(\.blobID) == ["q9co6nvkinjifla4lo1f4as2ea"])
        #expect(try await store.unreferencedBlobs([a.blobID, "q9co6nvkinjifla4lo1f4as2ea", "gone"]) == ["gone"])

        let key = try #require(try await store.accessKey("HRTHZQJN25AXXUNUDJ3K"))
        #expect(key.buckets == ["fixture-bucket"] && key.note == "fixture" && !key.revoked)
        #expect(try await store.accessKeys().count == 2)

        // And it keeps working: a replacement frees nothing while the copy shares the blob.
        let next = try await store.putObject(row("fixture-bucket", "dir/a.txt", blob: "blob-new", generation: 10), preconditions: .init(ifGenerationMatch: a.generation))
        #expect(next.object.generation == a.generation + 1 && next.unreferenced == nil)
    }
}
