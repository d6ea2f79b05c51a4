public import GRDB
public import HearthCore
public import HearthStorage
public import Foundation

/// HearthStorage's ``ObjectMetadataStore`` over SQLite: `<data-dir>/storage.sqlite` (WAL), shared
/// by the server and `hearth admin s3-keys`. Each call is one GRDB transaction (reads on the pool's
/// readers, writes on its writer), so every check a write depends on runs in the transaction that
/// makes it. The tables and migration names are those HearthStorage created before this store
/// moved here, so existing data directories open unchanged. Statements bind every value.
public final class SQLiteObjectMetadataStore: ObjectMetadataStore {
    let writer: any DatabaseWriter

    /// Migrates the schema of `writer` to the current version.
    public init(writer: any DatabaseWriter) throws {
        self.writer = writer
        try Self.migrator.migrate(writer)
    }

    /// Opens (creating) the store at `path`.
    public convenience init(path: String) throws {
        try self.init(writer: DatabasePool(path: path))
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("hearth-storage-v1") { db in
            try db.execute(
                sql: """
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
            try db.execute(
                sql: """
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
        // Resumable upload sessions (their parts are rows of storage_parts).
        m.registerMigration("hearth-storage-v3-upload-sessions") { db in
            try db.execute(
                sql: """
                    CREATE TABLE storage_upload_sessions(
                        upload_id TEXT PRIMARY KEY NOT NULL,
                        bucket TEXT NOT NULL,
                        name TEXT NOT NULL,
                        descriptor TEXT NOT NULL,
                        received INTEGER NOT NULL,
                        part_count INTEGER NOT NULL,
                        state TEXT NOT NULL,
                        result TEXT,
                        last_used_us INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE INDEX storage_upload_sessions_used ON storage_upload_sessions(last_used_us);
                    """)
        }
        return m
    }

    // MARK: Buckets

    public func createBucket(_ name: String, created: Timestamp, ifMissing: Bool) async throws -> ObjectStore.Bucket {
        try StoredObjectFields.refuseNUL(name)
        return try await writer.write { db in
            if let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT created_us FROM storage_buckets WHERE name = ?"), arguments: [name]) {
                if ifMissing { return ObjectStore.Bucket(name: name, created: Timestamp(microseconds: row[0])) }
                throw HearthError.bucketExists(name)
            }
            try db.execute(sql: "INSERT INTO storage_buckets(name, created_us) VALUES (?, ?)", arguments: [name, created.microseconds])
            return ObjectStore.Bucket(name: name, created: created)
        }
    }

    public func bucket(_ name: String) async throws -> ObjectStore.Bucket? {
        if StoredObjectFields.holdsNUL(name) { return nil }
        return try await writer.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT created_us FROM storage_buckets WHERE name = ?"), arguments: [name])
                .map { ObjectStore.Bucket(name: name, created: Timestamp(microseconds: $0[0])) }
        }
    }

    public func buckets() async throws -> [ObjectStore.Bucket] {
        try await writer.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT name, created_us FROM storage_buckets ORDER BY name")).map {
                ObjectStore.Bucket(name: $0[0], created: Timestamp(microseconds: $0[1]))
            }
        }
    }

    public func deleteBucket(_ name: String) async throws {
        try await writer.write { db in
            try Self.requireBucket(db, name)
            if try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_objects WHERE bucket = ? LIMIT 1"), arguments: [name]) != nil {
                throw HearthError.bucketNotEmpty(name)
            }
            try db.execute(sql: "DELETE FROM storage_buckets WHERE name = ?", arguments: [name])
        }
    }

    static func requireBucket(_ db: Database, _ name: String) throws {
        guard !StoredObjectFields.holdsNUL(name), try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_buckets WHERE name = ?"), arguments: [name]) != nil else {
            throw HearthError.noSuchBucket(name)
        }
    }

    // MARK: Objects

    public func object(_ bucket: String, _ name: String) async throws -> StorageObject? {
        try await writer.read { db in try Self.fetch(db, bucket, name) }
    }

    public func list(_ bucket: String, _ request: ObjectStore.ListRequest) async throws -> ObjectStore.ListResult {
        try await writer.read { db in
            try Self.requireBucket(db, bucket)
            var listing = ObjectListing(request)
            while true {
                if let result = listing.result { return result }
                let scan = listing.scan
                let op = scan.inclusive ? ">=" : ">"
                let rows: [Row]
                if let upper = scan.upper {
                    rows = try Row.fetchAll(
                        db.cachedStatement(
                            sql: "SELECT \(Self.objectColumns) FROM storage_objects WHERE bucket = ? AND name \(op) ? AND name < ? ORDER BY name LIMIT ?"),
                        arguments: [bucket, scan.lower, upper, scan.limit])
                } else {
                    rows = try Row.fetchAll(
                        db.cachedStatement(sql: "SELECT \(Self.objectColumns) FROM storage_objects WHERE bucket = ? AND name \(op) ? ORDER BY name LIMIT ?"),
                        arguments: [bucket, scan.lower, scan.limit])
                }
                listing.receive(rows.map(Self.decode))
            }
        }
    }

    public func putObject(_ object: StorageObject, preconditions: ObjectPreconditions) async throws -> (object: StorageObject, unreferenced: String?) {
        try await writer.write { db in
            try Self.requireBucket(db, object.bucket)
            let current = try Self.fetch(db, object.bucket, object.name)
            try preconditions.check(current)
            return try Self.save(db, object, replacing: current)
        }
    }

    public func updateObject(
        _ bucket: String, _ name: String, patch: ObjectPatch, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> StorageObject {
        try await writer.write { db in
            try Self.requireBucket(db, bucket)
            guard var o = try Self.fetch(db, bucket, name) else { throw HearthError.noSuchObject(bucket, name) }
            try preconditions.check(o)
            o = patch.applied(to: o)
            o.metageneration += 1
            o.updated = time
            try Self.write(db, o)
            return o
        }
    }

    public func copyObject(
        from source: (bucket: String, name: String), to destination: (bucket: String, name: String), attributes: ObjectAttributes?,
        sourcePreconditions: ObjectPreconditions, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> (object: StorageObject, unreferenced: String?) {
        try await writer.write { db in
            try Self.requireBucket(db, source.bucket)
            try Self.requireBucket(db, destination.bucket)
            guard let src = try Self.fetch(db, source.bucket, source.name) else { throw HearthError.noSuchObject(source.bucket, source.name) }
            try sourcePreconditions.check(src)
            let current = try Self.fetch(db, destination.bucket, destination.name)
            try preconditions.check(current)
            return try Self.save(db, src.copied(to: destination, attributes: attributes, at: time), replacing: current)
        }
    }

    public func deleteObject(_ bucket: String, _ name: String, preconditions: ObjectPreconditions) async throws -> String? {
        try await writer.write { db in
            try Self.requireBucket(db, bucket)
            guard let o = try Self.fetch(db, bucket, name) else { throw HearthError.noSuchObject(bucket, name) }
            try preconditions.check(o)
            try db.execute(sql: "DELETE FROM storage_objects WHERE bucket = ? AND name = ?", arguments: [bucket, name])
            return try Self.unreferenced(db, o.blobID)
        }
    }

    public func deleteObjects(_ bucket: String, _ names: [String]) async throws -> (deleted: [String], unreferenced: [String]) {
        try await writer.write { db in
            try Self.requireBucket(db, bucket)
            var deleted: [String] = []
            var blobIDs: [String] = []
            let select = try db.cachedStatement(sql: "SELECT blob_id FROM storage_objects WHERE bucket = ? AND name = ?")
            let delete = try db.cachedStatement(sql: "DELETE FROM storage_objects WHERE bucket = ? AND name = ?")
            for name in names where !StoredObjectFields.holdsNUL(name) {
                guard let blobID = try String.fetchOne(select, arguments: [bucket, name]) else { continue }
                try delete.execute(arguments: [bucket, name])
                deleted.append(name)
                blobIDs.append(blobID)
            }
            // Checked after every row is gone: copies share blobs, and two deleted objects may share one.
            var orphans: [String] = []
            var seen = Set<String>()
            for id in blobIDs where seen.insert(id).inserted {
                if let orphan = try Self.unreferenced(db, id) { orphans.append(orphan) }
            }
            return (deleted, orphans)
        }
    }

    public func unreferencedBlobs(_ blobIDs: [String]) async throws -> [String] {
        try await writer.read { db in try blobIDs.filter { try Self.unreferenced(db, $0) != nil } }
    }

    /// The blob id if no object or part refers to it (checked inside the caller's transaction).
    static func unreferenced(_ db: Database, _ blobID: String) throws -> String? {
        if try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_objects WHERE blob_id = ? LIMIT 1"), arguments: [blobID]) != nil { return nil }
        if try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_parts WHERE blob_id = ? LIMIT 1"), arguments: [blobID]) != nil { return nil }
        return blobID
    }

    // MARK: Multipart uploads

    public func createMultipartUpload(_ upload: ObjectStore.MultipartUpload) async throws {
        let encoded = StoredObjectFields.encodeAttributes(upload.attributes)
        try StoredObjectFields.refuseNUL(upload.id, upload.key)
        try await writer.write { db in
            try Self.requireBucket(db, upload.bucket)
            try db.execute(
                sql: "INSERT INTO storage_multipart(upload_id, bucket, name, attributes, created_us) VALUES (?, ?, ?, ?, ?)",
                arguments: [upload.id, upload.bucket, upload.key, encoded, upload.created.microseconds])
        }
    }

    public func multipartUpload(_ id: String, bucket: String, key: String) async throws -> ObjectStore.MultipartUpload? {
        if StoredObjectFields.holdsNUL(id) || StoredObjectFields.holdsNUL(bucket) || StoredObjectFields.holdsNUL(key) { return nil }
        return try await writer.read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT attributes, created_us FROM storage_multipart WHERE upload_id = ? AND bucket = ? AND name = ?"),
                arguments: [id, bucket, key]
            ).map { row in
                ObjectStore.MultipartUpload(
                    id: id, bucket: bucket, key: key, attributes: StoredObjectFields.decodeAttributes(row[0]), created: Timestamp(microseconds: row[1]))
            }
        }
    }

    public func putPart(_ part: ObjectStore.UploadedPart, uploadID: String) async throws -> String? {
        try await writer.write { db in
            guard try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_multipart WHERE upload_id = ?"), arguments: [uploadID]) != nil else {
                throw HearthError.noSuchUpload
            }
            let previous = try String.fetchOne(
                db.cachedStatement(sql: "SELECT blob_id FROM storage_parts WHERE upload_id = ? AND part_number = ?"), arguments: [uploadID, part.number])
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO storage_parts(upload_id, part_number, size, md5, blob_id, modified_us)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [uploadID, part.number, part.size, Data(part.md5), part.blobID, part.modified.microseconds])
            return previous
        }
    }

    public func parts(uploadID: String) async throws -> [ObjectStore.UploadedPart] {
        try await writer.read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT part_number, size, md5, modified_us, blob_id FROM storage_parts WHERE upload_id = ? ORDER BY part_number"),
                arguments: [uploadID]
            ).map {
                let md5: Data = $0[2]
                return ObjectStore.UploadedPart(number: $0[0], size: $0[1], md5: Array(md5), modified: Timestamp(microseconds: $0[3]), blobID: $0[4])
            }
        }
    }

    public func removeMultipartUpload(_ id: String) async throws -> [String] {
        try await writer.write { db in
            let ids = try String.fetchAll(db.cachedStatement(sql: "SELECT blob_id FROM storage_parts WHERE upload_id = ? ORDER BY part_number"), arguments: [id])
            try db.execute(sql: "DELETE FROM storage_parts WHERE upload_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM storage_multipart WHERE upload_id = ?", arguments: [id])
            return ids
        }
    }

    // MARK: Resumable upload sessions

    public func createUploadSession(_ session: ObjectStore.UploadSession) async throws {
        try StoredObjectFields.refuseNUL(session.id, session.name)
        let (state, result) = StoredObjectFields.encodeSessionState(session.state)
        try await writer.write { db in
            try Self.requireBucket(db, session.bucket)
            try db.execute(
                sql: """
                    INSERT INTO storage_upload_sessions(upload_id, bucket, name, descriptor, received, part_count, state, result, last_used_us)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    session.id, session.bucket, session.name, session.descriptor, session.received, session.partCount, state, result,
                    session.lastUsed.microseconds,
                ])
        }
    }

    public func uploadSession(_ id: String) async throws -> ObjectStore.UploadSession? {
        try await writer.read { db in try Self.uploadSession(db, id) }
    }

    static func uploadSession(_ db: Database, _ id: String) throws -> ObjectStore.UploadSession? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT bucket, name, descriptor, received, part_count, state, result, last_used_us
                    FROM storage_upload_sessions WHERE upload_id = ?
                    """),
            arguments: [id]
        ).map { row in
            ObjectStore.UploadSession(
                id: id, bucket: row[0], name: row[1], descriptor: row[2], received: row[3], partCount: row[4],
                state: StoredObjectFields.decodeSessionState(row[5], row[6]), lastUsed: Timestamp(microseconds: row[7]))
        }
    }

    public func appendUploadPart(_ id: String, at offset: Int64, _ part: ObjectStore.UploadedPart) async throws -> Bool {
        try await writer.write { db in
            guard let session = try Self.uploadSession(db, id), session.state == .active, session.received == offset else { return false }
            try db.execute(
                sql: "INSERT INTO storage_parts(upload_id, part_number, size, md5, blob_id, modified_us) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [id, session.partCount + 1, part.size, Data(part.md5), part.blobID, part.modified.microseconds])
            try db.execute(
                sql: "UPDATE storage_upload_sessions SET received = ?, part_count = ?, last_used_us = ? WHERE upload_id = ?",
                arguments: [session.received + part.size, session.partCount + 1, part.modified.microseconds, id])
            return true
        }
    }

    public func endUploadSession(_ id: String, _ state: ObjectStore.UploadSession.State, at time: Timestamp) async throws -> [String]? {
        let (name, result) = StoredObjectFields.encodeSessionState(state)
        return try await writer.write { db in
            guard let session = try Self.uploadSession(db, id), session.state == .active else { return nil }
            let blobs = try String.fetchAll(
                db.cachedStatement(sql: "SELECT blob_id FROM storage_parts WHERE upload_id = ? ORDER BY part_number"), arguments: [id])
            try db.execute(sql: "DELETE FROM storage_parts WHERE upload_id = ?", arguments: [id])
            try db.execute(
                sql: "UPDATE storage_upload_sessions SET state = ?, result = ?, last_used_us = ? WHERE upload_id = ?",
                arguments: [name, result, time.microseconds, id])
            return blobs
        }
    }

    public func expireUploadSessions(unusedSince cutoff: Timestamp) async throws -> [String] {
        try await writer.write { db in
            let ids = try String.fetchAll(
                db.cachedStatement(sql: "SELECT upload_id FROM storage_upload_sessions WHERE last_used_us < ?"), arguments: [cutoff.microseconds])
            var blobs: [String] = []
            for id in ids {
                blobs += try String.fetchAll(db.cachedStatement(sql: "SELECT blob_id FROM storage_parts WHERE upload_id = ?"), arguments: [id])
                try db.execute(sql: "DELETE FROM storage_parts WHERE upload_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM storage_upload_sessions WHERE upload_id = ?", arguments: [id])
            }
            return blobs
        }
    }

    // MARK: S3 access keys

    public func addAccessKey(_ key: S3AccessKey) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT INTO storage_s3_keys(id, secret, buckets, created_us, revoked, note) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [key.id, key.secret, key.buckets.joined(separator: ","), key.created.microseconds, key.revoked, key.note])
        }
    }

    public func accessKeys() async throws -> [S3AccessKey] {
        try await writer.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Self.keyColumns) FROM storage_s3_keys ORDER BY created_us, id")).map(Self.decodeKey)
        }
    }

    public func accessKey(_ id: String) async throws -> S3AccessKey? {
        try await writer.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.keyColumns) FROM storage_s3_keys WHERE id = ?"), arguments: [id]).map(Self.decodeKey)
        }
    }

    public func revokeAccessKey(_ id: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "UPDATE storage_s3_keys SET revoked = 1 WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    static let keyColumns = "id, secret, buckets, created_us, revoked, note"

    static func decodeKey(_ row: Row) -> S3AccessKey {
        let buckets: String = row[2]
        return S3AccessKey(
            id: row[0], secret: row[1], buckets: buckets.isEmpty ? [] : buckets.split(separator: ",").map(String.init),
            created: Timestamp(microseconds: row[3]), revoked: row[4], note: row[5])
    }

    /// Every blob an object or a part names, with the object's size (-1 for a part): what a
    /// backup of a `storage.sqlite` snapshot must hold (``DataDirectoryBackup``).
    static func blobReferences(_ db: Database) throws -> [(id: String, size: Int64)] {
        try Row.fetchAll(db, sql: "SELECT blob_id, size FROM storage_objects UNION ALL SELECT blob_id, -1 FROM storage_parts").map { ($0[0], $0[1]) }
    }

    // MARK: Rows

    static func fetch(_ db: Database, _ bucket: String, _ name: String) throws -> StorageObject? {
        if StoredObjectFields.holdsNUL(bucket) || StoredObjectFields.holdsNUL(name) { return nil }
        return try Row.fetchOne(db.cachedStatement(sql: "SELECT \(objectColumns) FROM storage_objects WHERE bucket = ? AND name = ?"), arguments: [bucket, name])
            .map(decode)
    }

    /// Writes `object` over `current` with the generation after it; the replaced blob if nothing refers to it now.
    static func save(_ db: Database, _ object: StorageObject, replacing current: StorageObject?) throws -> (object: StorageObject, unreferenced: String?) {
        var stored = object
        stored.generation = max(object.generation, (current?.generation ?? 0) + 1)
        try write(db, stored)
        return (stored, try current.flatMap { $0.blobID == stored.blobID ? nil : try unreferenced(db, $0.blobID) })
    }

    static func write(_ db: Database, _ o: StorageObject) throws {
        try StoredObjectFields.refuseNUL(o.bucket, o.name)
        let custom = StoredObjectFields.encodeCustom(o.custom)
        let tokens = StoredObjectFields.encodeTokens(o.downloadTokens)
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
        let custom = StoredObjectFields.decodeCustom(row[15])
        let tokens = StoredObjectFields.decodeTokens(row[16])
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

extension ObjectStore {
    /// The object store of a data directory: metadata in `storage.sqlite`, bytes under `objects/`
    /// (or, with `s3`, in that external bucket, spooled under `objects/`).
    public static func open(directory: URL, s3: S3BlobStore.Configuration? = nil) throws -> ObjectStore {
        let blobs = try blobStore(directory: directory, s3: s3)
        let metadata = try SQLiteObjectMetadataStore(path: directory.appendingPathComponent("storage.sqlite").path)
        return ObjectStore(metadata: metadata, blobs: blobs)
    }
}
