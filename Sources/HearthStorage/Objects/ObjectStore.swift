public import HearthCore
public import GRDB
import Synchronization
public import Foundation

/// Buckets and objects: metadata in SQLite (GRDB), bytes in a ``BlobStore``. Knows nothing
/// of HTTP. An object changes atomically: its new bytes are finished (durable, immutable)
/// before the metadata row points at them, and a replaced blob is deleted only after the
/// new row is committed and no other object shares it — so a reader sees the old object or
/// the new one, never a mixture, and a crash at any point loses nothing acknowledged.
public final class ObjectStore: Sendable {
    public let writer: any DatabaseWriter
    public let blobs: any BlobStore
    /// Access keys read in the last second (every signed S3 request needs its key; the CLI
    /// may revoke one from another process, so entries are trusted for one second only).
    let accessKeyCache = Mutex<[String: (key: S3AccessKey?, read: ContinuousClock.Instant)]>([:])
    /// Object rows for reads (see ``ObjectMetadataCache`` for why a read never sees a row
    /// older than the last acknowledged write).
    let metadataCache: ObjectMetadataCache
    /// Deletes replaced and deleted objects' bytes after the write has answered.
    let reclaimer: BlobReclaimer

    /// `metadataCacheSize` bounds the rows kept for reads (0 turns the cache off).
    public init(writer: any DatabaseWriter, blobs: any BlobStore, metadataCacheSize: Int = 16_384) throws {
        self.writer = writer
        self.blobs = blobs
        self.metadataCache = ObjectMetadataCache(capacity: metadataCacheSize)
        self.reclaimer = BlobReclaimer(blobs: blobs)
        try Self.migrator.migrate(writer)
    }

    /// The store under a data directory: `storage.sqlite` for metadata, `objects/` for bytes.
    /// With `s3`, the bytes live in that external bucket instead (spooled under `objects/`).
    public static func open(directory: URL, s3: S3BlobStore.Configuration? = nil) throws -> ObjectStore {
        let objects = directory.appendingPathComponent("objects")
        let blobs: any BlobStore = try s3.map { try S3BlobStore(configuration: $0, spool: objects) } ?? FilesystemBlobStore(root: objects)
        return try ObjectStore(writer: try DatabasePool(path: directory.appendingPathComponent("storage.sqlite").path), blobs: blobs)
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("hearth-storage-v1") { db in
            try db.execute(sql: """
                CREATE TABLE storage_buckets(
                    name TEXT PRIMARY KEY NOT NULL,
                    created_us INTEGER NOT NULL);
                CREATE TABLE storage_objects(
                    bucket TEXT NOT NULL,
                    name TEXT NOT NULL,
                    generation INTEGER NOT NULL,
                    metageneration INTEGER NOT NULL,
                    size INTEGER NOT NULL,
                    content_type TEXT NOT NULL,
                    md5 BLOB NOT NULL,
                    crc32c INTEGER NOT NULL,
                    etag TEXT NOT NULL,
                    created_us INTEGER NOT NULL,
                    updated_us INTEGER NOT NULL,
                    cache_control TEXT,
                    content_disposition TEXT,
                    content_encoding TEXT,
                    content_language TEXT,
                    custom TEXT NOT NULL,
                    download_tokens TEXT NOT NULL,
                    blob_id TEXT NOT NULL,
                    PRIMARY KEY(bucket, name)) WITHOUT ROWID;
                CREATE INDEX storage_objects_blob ON storage_objects(blob_id);
                """)
        }
        m.registerMigration("hearth-storage-v2-s3") { db in
            try db.execute(sql: """
                CREATE TABLE storage_s3_keys(
                    id TEXT PRIMARY KEY NOT NULL,
                    secret TEXT NOT NULL,
                    buckets TEXT NOT NULL,
                    created_us INTEGER NOT NULL,
                    revoked INTEGER NOT NULL,
                    note TEXT);
                CREATE TABLE storage_multipart(
                    upload_id TEXT PRIMARY KEY NOT NULL,
                    bucket TEXT NOT NULL,
                    name TEXT NOT NULL,
                    attributes TEXT NOT NULL,
                    created_us INTEGER NOT NULL);
                CREATE TABLE storage_parts(
                    upload_id TEXT NOT NULL,
                    part_number INTEGER NOT NULL,
                    size INTEGER NOT NULL,
                    md5 BLOB NOT NULL,
                    blob_id TEXT NOT NULL,
                    modified_us INTEGER NOT NULL,
                    PRIMARY KEY(upload_id, part_number)) WITHOUT ROWID;
                CREATE INDEX storage_parts_blob ON storage_parts(blob_id);
                """)
        }
        return m
    }

    static func now() -> Timestamp {
        Timestamp(microseconds: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down)))
    }

    // MARK: Buckets

    public struct Bucket: Sendable, Hashable {
        public var name: String
        public var created: Timestamp
    }

    /// Creates a bucket; ALREADY_EXISTS if it exists (unless `ifMissing`).
    @discardableResult
    public func createBucket(_ name: String, ifMissing: Bool = false) async throws -> Bucket {
        try StorageNames.validateBucket(name)
        let created = Self.now()
        return try await writer.write { db in
            if let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT created_us FROM storage_buckets WHERE name = ?"), arguments: [name]) {
                if ifMissing { return Bucket(name: name, created: Timestamp(microseconds: row[0])) }
                throw HearthError(.alreadyExists, "The bucket \(name) already exists.")
            }
            try db.execute(sql: "INSERT INTO storage_buckets(name, created_us) VALUES (?, ?)", arguments: [name, created.microseconds])
            return Bucket(name: name, created: created)
        }
    }

    public func bucket(_ name: String) async throws -> Bucket? {
        try await writer.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT created_us FROM storage_buckets WHERE name = ?"), arguments: [name])
                .map { Bucket(name: name, created: Timestamp(microseconds: $0[0])) }
        }
    }

    public func buckets() async throws -> [Bucket] {
        try await writer.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT name, created_us FROM storage_buckets ORDER BY name")).map {
                Bucket(name: $0[0], created: Timestamp(microseconds: $0[1]))
            }
        }
    }

    /// Deletes an empty bucket: NOT_FOUND if missing, FAILED_PRECONDITION if it holds objects.
    public func deleteBucket(_ name: String) async throws {
        try await writer.write { db in
            guard try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_buckets WHERE name = ?"), arguments: [name]) != nil else {
                throw HearthError(.notFound, "The bucket \(name) does not exist.")
            }
            if try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_objects WHERE bucket = ? LIMIT 1"), arguments: [name]) != nil {
                throw HearthError(.failedPrecondition, "The bucket \(name) is not empty.")
            }
            try db.execute(sql: "DELETE FROM storage_buckets WHERE name = ?", arguments: [name])
        }
    }

    func requireBucket(_ db: Database, _ name: String) throws {
        guard try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_buckets WHERE name = ?"), arguments: [name]) != nil else {
            throw HearthError(.notFound, "The bucket \(name) does not exist.")
        }
    }

    // MARK: Objects

    public func object(_ bucket: String, _ name: String) async throws -> StorageObject? {
        if let cached = metadataCache.object(bucket, name) { return cached }
        let epoch = metadataCache.epoch
        let object = try await writer.read { db in try Self.fetch(db, bucket, name) }
        if let object { metadataCache.insert(object, readAt: epoch) }
        return object
    }

    /// Runs a write transaction that may change the object `bucket`/`name`, then drops that
    /// object's cached row — also when the transaction failed (it may have been cancelled
    /// after committing) — before the caller acts on the result.
    func writeObject<T: Sendable>(_ bucket: String, _ name: String, _ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let result: T
        do {
            result = try await writer.write(updates)
        } catch {
            metadataCache.invalidate(bucket, name)
            throw error
        }
        metadataCache.invalidate(bucket, name)
        return result
    }

    static func fetch(_ db: Database, _ bucket: String, _ name: String) throws -> StorageObject? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(objectColumns) FROM storage_objects WHERE bucket = ? AND name = ?"), arguments: [bucket, name]).map(decode)
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
        let result: (StorageObject, String?)
        do {
            result = try await writeObject(bucket, name) { db in
                try self.requireBucket(db, bucket)
                let current = try Self.fetch(db, bucket, name)
                try preconditions.check(current)
                let object = StorageObject(
                    bucket: bucket, name: name, generation: max(time.microseconds, (current?.generation ?? 0) + 1), metageneration: 1,
                    size: info.size, contentType: attributes.contentType ?? "application/octet-stream", md5: info.md5, crc32c: info.crc32c,
                    etag: etag ?? StorageObject.hex(info.md5), created: time, updated: time, cacheControl: attributes.cacheControl,
                    contentDisposition: attributes.contentDisposition, contentEncoding: attributes.contentEncoding,
                    contentLanguage: attributes.contentLanguage, custom: attributes.custom, downloadTokens: attributes.downloadTokens ?? [],
                    blobID: info.id)
                try Self.save(db, object)
                return (object, try current.flatMap { try Self.unreferenced(db, $0.blobID) })
            }
        } catch {
            try? await blobs.delete(info.id)
            throw error
        }
        reclaimer.reclaim(result.1.map { [$0] } ?? [])
        return result.0
    }

    /// The blob id if no object refers to it any more (checked inside the write transaction).
    static func unreferenced(_ db: Database, _ blobID: String) throws -> String? {
        if try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_objects WHERE blob_id = ? LIMIT 1"), arguments: [blobID]) != nil { return nil }
        if try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_parts WHERE blob_id = ? LIMIT 1"), arguments: [blobID]) != nil { return nil }
        return blobID
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
        return try await writeObject(bucket, name) { db in
            try self.requireBucket(db, bucket)
            guard var o = try Self.fetch(db, bucket, name) else { throw HearthError(.notFound, "No such object: \(bucket)/\(name)") }
            try preconditions.check(o)
            o = patch.applied(to: o)
            o.metageneration += 1
            o.updated = time
            try Self.save(db, o)
            return o
        }
    }

    /// Deletes an object: NOT_FOUND if it does not exist.
    public func delete(_ bucket: String, _ name: String, preconditions: ObjectPreconditions = .none) async throws {
        let orphan: String? = try await writeObject(bucket, name) { db in
            try self.requireBucket(db, bucket)
            guard let o = try Self.fetch(db, bucket, name) else { throw HearthError(.notFound, "No such object: \(bucket)/\(name)") }
            try preconditions.check(o)
            try db.execute(sql: "DELETE FROM storage_objects WHERE bucket = ? AND name = ?", arguments: [bucket, name])
            return try Self.unreferenced(db, o.blobID)
        }
        reclaimer.reclaim(orphan.map { [$0] } ?? [])
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
        let result: Result<(deleted: [String], orphans: [String]), any Error>
        do {
            result = .success(
                try await writer.write { db in
                    try self.requireBucket(db, bucket)
                    var deleted: [String] = []
                    var blobIDs: [String] = []
                    let select = try db.cachedStatement(sql: "SELECT blob_id FROM storage_objects WHERE bucket = ? AND name = ?")
                    let delete = try db.cachedStatement(sql: "DELETE FROM storage_objects WHERE bucket = ? AND name = ?")
                    for name in names {
                        guard let blobID = try String.fetchOne(select, arguments: [bucket, name]) else { continue }
                        try delete.execute(arguments: [bucket, name])
                        deleted.append(name)
                        blobIDs.append(blobID)
                    }
                    // Checked after every row is gone: copies share blobs, and two deleted
                    // objects may share one.
                    var orphans: [String] = []
                    var seen = Set<String>()
                    for id in blobIDs where seen.insert(id).inserted {
                        if let orphan = try Self.unreferenced(db, id) { orphans.append(orphan) }
                    }
                    return (deleted, orphans)
                })
        } catch {
            result = .failure(error)
        }
        // Also on failure: the transaction may have committed before being cancelled.
        for name in names { metadataCache.invalidate(bucket, name) }
        let done = try result.get()
        reclaimer.reclaim(done.orphans)
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
        let result: (StorageObject, String?) = try await writeObject(destination.bucket, destination.name) { db in
            try self.requireBucket(db, source.bucket)
            try self.requireBucket(db, destination.bucket)
            guard let src = try Self.fetch(db, source.bucket, source.name) else {
                throw HearthError(.notFound, "No such object: \(source.bucket)/\(source.name)")
            }
            try sourcePreconditions.check(src)
            let current = try Self.fetch(db, destination.bucket, destination.name)
            try preconditions.check(current)
            var o = src
            o.bucket = destination.bucket
            o.name = destination.name
            o.generation = max(time.microseconds, (current?.generation ?? 0) + 1)
            o.metageneration = 1
            o.created = time
            o.updated = time
            if let a = attributes {
                o.contentType = a.contentType ?? "application/octet-stream"
                o.cacheControl = a.cacheControl
                o.contentDisposition = a.contentDisposition
                o.contentEncoding = a.contentEncoding
                o.contentLanguage = a.contentLanguage
                o.custom = a.custom
                o.downloadTokens = a.downloadTokens ?? []
            }
            try Self.save(db, o)
            let orphan = try current.flatMap { $0.blobID == o.blobID ? nil : try Self.unreferenced(db, $0.blobID) }
            return (o, orphan)
        }
        reclaimer.reclaim(result.1.map { [$0] } ?? [])
        return result.0
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
        let orphans: [String] = try await writer.read { db in
            try ids.filter { try Self.unreferenced(db, $0) != nil }
        }
        for id in orphans { try? await blobs.delete(id) }
        return orphans.count
    }

    // MARK: Rows

    static func save(_ db: Database, _ o: StorageObject) throws {
        let custom = JSON.object(o.custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).serialized()
        let tokens = JSON.array(o.downloadTokens.map { .string($0) }).serialized()
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO storage_objects(bucket, name, generation, metageneration, size, content_type, md5, crc32c,
                    etag, created_us, updated_us, cache_control, content_disposition, content_encoding, content_language, custom,
                    download_tokens, blob_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                o.bucket, o.name, o.generation, o.metageneration, o.size, o.contentType, Data(o.md5), Int64(o.crc32c), o.etag,
                o.created.microseconds, o.updated.microseconds, o.cacheControl, o.contentDisposition, o.contentEncoding,
                o.contentLanguage, custom, tokens, o.blobID,
            ])
    }

    /// The columns ``decode(_:)`` reads, by position (name lookups cost more than the query).
    static let objectColumns = """
        bucket, name, generation, metageneration, size, content_type, md5, crc32c, etag, created_us, updated_us, \
        cache_control, content_disposition, content_encoding, content_language, custom, download_tokens, blob_id
        """

    /// A row of ``objectColumns``.
    static func decode(_ row: Row) -> StorageObject {
        var custom: [String: String] = [:]
        let customText: String = row[15]
        if customText != "{}", let json = try? JSON.parse(Array(customText.utf8)) {
            for (k, v) in json.objectValue ?? [] { custom[k] = v.stringValue }
        }
        let tokensText: String = row[16]
        let tokens = tokensText == "[]" ? [] : (try? JSON.parse(Array(tokensText.utf8)))?.arrayValue?.compactMap(\.stringValue) ?? []
        let md5: Data = row[6]
        let crc: Int64 = row[7]
        return StorageObject(
            bucket: row[0], name: row[1], generation: row[2], metageneration: row[3],
            size: row[4], contentType: row[5], md5: Array(md5), crc32c: UInt32(truncatingIfNeeded: crc),
            etag: row[8], created: Timestamp(microseconds: row[9]), updated: Timestamp(microseconds: row[10]),
            cacheControl: row[11], contentDisposition: row[12], contentEncoding: row[13],
            contentLanguage: row[14], custom: custom, downloadTokens: tokens, blobID: row[17])
    }
}
