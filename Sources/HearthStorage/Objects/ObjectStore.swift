public import HearthCore
import Synchronization
public import Foundation

/// Buckets and objects: metadata in an ``ObjectMetadataStore`` (SQLite by default), bytes in a
/// ``BlobStore``. Knows nothing of HTTP or SQL. An object changes atomically: its new bytes are
/// finished (durable, immutable) before the metadata row points at them, and a replaced blob is
/// deleted only after the new row is committed and no other object shares it — so a reader sees
/// the old object or the new one, never a mixture, and a crash at any point loses nothing
/// acknowledged.
public final class ObjectStore: Sendable {
    public let metadata: any ObjectMetadataStore
    public let blobs: any BlobStore
    /// Access keys read in the last second (every signed S3 request needs its key; the CLI
    /// may revoke one from another process, so entries are trusted for one second only).
    let accessKeyCache = Mutex<[String: (key: S3AccessKey?, read: ContinuousClock.Instant)]>([:])
    /// Object rows for reads (see ``ObjectMetadataCache`` for why a read never sees a row
    /// older than the last acknowledged write).
    let metadataCache: ObjectMetadataCache
    /// Deletes replaced and deleted objects' bytes after the write has answered: a `Service`
    /// the server runs in its `ServiceGroup` (without it, deletions happen before the write returns).
    public let reclaimer: BlobReclaimer

    /// When this server last forgot stale upload sessions (microseconds; one sweep an hour).
    let uploadSessionSweep = Mutex<Int64>(0)

    /// Whether access keys are kept for a second (``accessKeyCache``).
    let cachesAccessKeys: Bool

    /// `metadataCacheSize` bounds the rows kept for reads. 0 turns off every cache of stored
    /// rows — the object rows and the access keys: for a store other servers write too
    /// (PostgreSQL shared by replicas), where a deletion or revocation made through another
    /// server must hold here at once.
    public init(metadata: any ObjectMetadataStore, blobs: any BlobStore, metadataCacheSize: Int = 16_384) {
        self.metadata = metadata
        self.blobs = blobs
        self.metadataCache = ObjectMetadataCache(capacity: metadataCacheSize)
        self.cachesAccessKeys = metadataCacheSize > 0
        self.reclaimer = BlobReclaimer(blobs: blobs)
    }

    /// The blob store of a data directory: `objects/` on the filesystem, or with `s3` that
    /// external bucket (spooled under `objects/`). `shared`: other running servers may use the
    /// same directory (replicas over one database), so the start leaves temporary files younger
    /// than an hour alone (another server's uploads in flight).
    public static func blobStore(directory: URL, s3: S3BlobStore.Configuration? = nil, shared: Bool = false) throws -> any BlobStore {
        let objects = directory.appendingPathComponent("objects")
        let keep: TimeInterval? = shared ? 3600 : nil
        return try s3.map { try S3BlobStore(configuration: $0, spool: objects, sharedSpoolKeepingFilesFor: keep) }
            ?? FilesystemBlobStore(root: objects, sharedKeepingTemporaryFilesFor: keep)
    }

    static func now() -> Timestamp {
        Timestamp(microseconds: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down)))
    }

    // MARK: Buckets

    public struct Bucket: Sendable, Hashable {
        public var name: String
        public var created: Timestamp

        package init(name: String, created: Timestamp) {
            self.name = name
            self.created = created
        }
    }

    /// Creates a bucket; ALREADY_EXISTS if it exists (unless `ifMissing`).
    @discardableResult
    public func createBucket(_ name: String, ifMissing: Bool = false) async throws -> Bucket {
        try StorageNames.validateBucket(name)
        return try await metadata.createBucket(name, created: Self.now(), ifMissing: ifMissing)
    }

    public func bucket(_ name: String) async throws -> Bucket? {
        try await metadata.bucket(name)
    }

    public func buckets() async throws -> [Bucket] {
        try await metadata.buckets()
    }

    /// Deletes an empty bucket: NOT_FOUND if missing, FAILED_PRECONDITION if it holds objects.
    public func deleteBucket(_ name: String) async throws {
        try await metadata.deleteBucket(name)
    }

    // MARK: Objects

    public func object(_ bucket: String, _ name: String) async throws -> StorageObject? {
        if let cached = metadataCache.object(bucket, name) { return cached }
        let epoch = metadataCache.epoch
        let object = try await metadata.object(bucket, name)
        if let object { metadataCache.insert(object, readAt: epoch) }
        return object
    }

    /// Runs a store write that may change the object `bucket`/`name`, then drops that object's
    /// cached row — also when the write failed (it may have been cancelled after committing) —
    /// before the caller acts on the result.
    func writeObject<T: Sendable>(_ bucket: String, _ name: String, _ write: () async throws -> T) async throws -> T {
        let result: T
        do {
            result = try await write()
        } catch {
            metadataCache.invalidate(bucket, name)
            throw error
        }
        metadataCache.invalidate(bucket, name)
        return result
    }

    /// Starts writing new bytes; hand the finished writer to ``commit(_:bucket:name:attributes:preconditions:etag:)``.
    public func beginUpload() throws(HearthError) -> any BlobWriter { try blobs.makeWriter() }

    /// Finishes `upload` and makes it the object's new content (a new generation).
    public func commit(
        _ upload: any BlobWriter, bucket: String, name: String, attributes: ObjectAttributes,
        preconditions: ObjectPreconditions = .none, etag: String? = nil
    ) async throws -> StorageObject {
        do {
            try StorageNames.validateObject(name)
        } catch {
            upload.abort()
            throw error
        }
        let info = try await upload.finish()
        return try await install(info, bucket: bucket, name: name, attributes: attributes, preconditions: preconditions, etag: etag)
    }

    /// Points the object at a finished blob; deletes the blob again if that fails.
    public func install(
        _ info: BlobInfo, bucket: String, name: String, attributes: ObjectAttributes, preconditions: ObjectPreconditions = .none, etag: String? = nil
    ) async throws -> StorageObject {
        let time = Self.now()
        let object = StorageObject(
            bucket: bucket, name: name, generation: time.microseconds, metageneration: 1,
            size: info.size, contentType: attributes.contentType ?? "application/octet-stream", md5: info.md5, crc32c: info.crc32c,
            etag: etag ?? StorageObject.hex(info.md5), created: time, updated: time, cacheControl: attributes.cacheControl,
            contentDisposition: attributes.contentDisposition, contentEncoding: attributes.contentEncoding,
            contentLanguage: attributes.contentLanguage, custom: attributes.custom, downloadTokens: attributes.downloadTokens ?? [],
            blobID: info.id)
        let result: (object: StorageObject, unreferenced: String?)
        do {
            result = try await writeObject(bucket, name) { try await metadata.putObject(object, preconditions: preconditions) }
        } catch {
            try? await blobs.delete(info.id)
            throw error
        }
        await reclaimer.reclaim(result.unreferenced.map { [$0] } ?? [])
        return result.object
    }

    /// Stores bytes held in memory (small objects, tests).
    public func put(
        _ bucket: String, _ name: String, _ bytes: [UInt8], attributes: ObjectAttributes = .init(),
        preconditions: ObjectPreconditions = .none
    ) async throws -> StorageObject {
        let upload = try beginUpload()
        do {
            try upload.write(bytes)
        } catch {
            upload.abort()
            throw error
        }
        return try await commit(upload, bucket: bucket, name: name, attributes: attributes, preconditions: preconditions)
    }

    /// The object's bytes (or a range of them), streamed in chunks.
    public func read(_ object: StorageObject, range: Range<Int64>? = nil, chunkSize: Int = 256 * 1024) -> AsyncThrowingStream<[UInt8], any Error> {
        blobs.read(object.blobID, range: range, chunkSize: chunkSize)
    }

    /// The object's bytes in `range` (nil = all), read into memory at once: for small objects,
    /// where setting up a stream costs more than the read.
    public func contents(_ object: StorageObject, range: Range<Int64>? = nil) async throws -> [UInt8] {
        try await blobs.readAll(object.blobID, range: range ?? 0..<object.size)
    }

    /// Reads a whole object into memory (small objects, tests).
    public func bytes(_ object: StorageObject) async throws -> [UInt8] {
        var out: [UInt8] = []
        for try await chunk in read(object) { out += chunk }
        return out
    }

    /// Changes metadata (a new metageneration; the bytes and generation stay).
    public func update(_ bucket: String, _ name: String, _ patch: ObjectPatch, preconditions: ObjectPreconditions = .none) async throws -> StorageObject {
        let time = Self.now()
        return try await writeObject(bucket, name) {
            try await metadata.updateObject(bucket, name, patch: patch, preconditions: preconditions, at: time)
        }
    }

    /// Deletes an object: NOT_FOUND if it does not exist.
    public func delete(_ bucket: String, _ name: String, preconditions: ObjectPreconditions = .none) async throws {
        let orphan = try await writeObject(bucket, name) { try await metadata.deleteObject(bucket, name, preconditions: preconditions) }
        await reclaimer.reclaim(orphan.map { [$0] } ?? [])
    }

    /// Deletes many objects of one bucket in one transaction (one commit, one fsync, however
    /// many names): the most a caller gets per durable write. Names that do not exist are
    /// skipped (the goal is reached), so a repeated call is harmless. The freed bytes go after
    /// the commit, in one batch (``BlobStore/delete(batch:)``, DeleteObjects requests
    /// for an external S3). NOT_FOUND if the bucket does not exist. Returns the names deleted.
    @discardableResult
    public func deleteMany(_ bucket: String, _ names: some Collection<String>) async throws -> [String] {
        let names = Array(names)
        guard !names.isEmpty else { return [] }
        let result: Result<(deleted: [String], unreferenced: [String]), any Error>
        do {
            result = .success(try await metadata.deleteObjects(bucket, names))
        } catch {
            result = .failure(error)
        }
        // Also on failure: the transaction may have committed before being cancelled.
        for name in names { metadataCache.invalidate(bucket, name) }
        let done = try result.get()
        await reclaimer.reclaim(done.unreferenced)
        return done.deleted
    }

    /// Copies an object (sharing its immutable bytes); `attributes` nil keeps the source's metadata.
    public func copy(
        from source: (bucket: String, name: String), to destination: (bucket: String, name: String),
        attributes: ObjectAttributes? = nil, sourcePreconditions: ObjectPreconditions = .none,
        preconditions: ObjectPreconditions = .none
    ) async throws -> StorageObject {
        try StorageNames.validateObject(destination.name)
        let time = Self.now()
        let result = try await writeObject(destination.bucket, destination.name) {
            try await metadata.copyObject(
                from: source, to: destination, attributes: attributes, sourcePreconditions: sourcePreconditions,
                preconditions: preconditions, at: time)
        }
        await reclaimer.reclaim(result.unreferenced.map { [$0] } ?? [])
        return result.object
    }

    /// Returns once the bytes of every object replaced or deleted so far are deleted too (they
    /// go after the write has answered; see ``BlobReclaimer``).
    public func settleReclaims() async { await reclaimer.settle() }

    /// Removes blobs no object refers to (left by a crash between finishing bytes and
    /// committing metadata). Returns how many were removed.
    @discardableResult
    public func sweep() async throws -> Int {
        let ids = try await blobs.allBlobIDs()
        guard !ids.isEmpty else { return 0 }
        let orphans = try await metadata.unreferencedBlobs(ids)
        for id in orphans { try? await blobs.delete(id) }
        return orphans.count
    }
}
