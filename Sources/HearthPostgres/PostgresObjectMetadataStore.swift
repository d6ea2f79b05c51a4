public import HearthCore
public import HearthStorage
import PostgresNIO

/// HearthStorage's ``ObjectMetadataStore`` over PostgreSQL, with the tables of
/// `SQLiteObjectMetadataStore` (migration 2 of ``PostgresSchema``). Each call is one transaction:
/// writes SERIALIZABLE (so the bucket's existence, the preconditions on the current row and
/// whether a blob is still referred to are judged in the transaction that writes, across every
/// server on the database), reads one snapshot. Names are `text COLLATE "C"`: byte order.
public struct PostgresObjectMetadataStore: ObjectMetadataStore {
    let backend: PostgresBackend

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    // MARK: Buckets

    public func createBucket(_ name: String, created: Timestamp, ifMissing: Bool) async throws -> ObjectStore.Bucket {
        try StoredObjectFields.refuseNUL(name)
        return try await backend.write { session in
            if let existing = try await session.value("SELECT created_us FROM storage_buckets WHERE name = \(name)", as: Int64.self) {
                if ifMissing { return ObjectStore.Bucket(name: name, created: Timestamp(microseconds: existing)) }
                throw HearthError.bucketExists(name)
            }
            try await session.execute("INSERT INTO storage_buckets (name, created_us) VALUES (\(name), \(created.microseconds))")
            return ObjectStore.Bucket(name: name, created: created)
        }
    }

    public func bucket(_ name: String) async throws -> ObjectStore.Bucket? {
        if Self.holdsNUL(name) { return nil }
        return try await backend.read { session in
            try await session.value("SELECT created_us FROM storage_buckets WHERE name = \(name)", as: Int64.self)
                .map { ObjectStore.Bucket(name: name, created: Timestamp(microseconds: $0)) }
        }
    }

    public func buckets() async throws -> [ObjectStore.Bucket] {
        try await backend.read { session in
            try await session.rows("SELECT name, created_us FROM storage_buckets ORDER BY name").map { row in
                let (name, created) = try row.decode((String, Int64).self)
                return ObjectStore.Bucket(name: name, created: Timestamp(microseconds: created))
            }
        }
    }

    public func deleteBucket(_ name: String) async throws {
        try await backend.write { session in
            try await Self.requireBucket(session, name)
            if try await session.exists("SELECT 1 FROM storage_objects WHERE bucket = \(name) LIMIT 1") {
                throw HearthError.bucketNotEmpty(name)
            }
            try await session.execute("DELETE FROM storage_buckets WHERE name = \(name)")
        }
    }

    static func requireBucket(_ session: PostgresSession, _ name: String) async throws {
        guard !holdsNUL(name), try await session.exists("SELECT 1 FROM storage_buckets WHERE name = \(name)") else { throw HearthError.noSuchBucket(name) }
    }

    // MARK: Objects

    /// A name with U+0000 is in no row (``StoredObjectFields/holdsNUL(_:)``): lookups find nothing.
    static func holdsNUL(_ text: String) -> Bool { StoredObjectFields.holdsNUL(text) }

    public func object(_ bucket: String, _ name: String) async throws -> StorageObject? {
        if Self.holdsNUL(bucket) || Self.holdsNUL(name) { return nil }
        return try await backend.read { session in try await Self.fetch(session, bucket, name) }
    }

    public func list(_ bucket: String, _ request: ObjectStore.ListRequest) async throws -> ObjectStore.ListResult {
        try await backend.snapshot { session in
            try await Self.requireBucket(session, bucket)
            var listing = ObjectListing(request)
            while true {
                if let result = listing.result { return result }
                let scan = listing.scan
                let limit = Int64(scan.limit)
                let rows: [PostgresRow]
                switch (scan.inclusive, scan.upper) {
                case (true, let upper?):
                    rows = try await session.rows(
                        """
                        SELECT \(unescaped: Self.objectColumns) FROM storage_objects
                        WHERE bucket = \(bucket) AND name >= \(scan.lower) AND name < \(upper) ORDER BY name LIMIT \(limit)
                        """)
                case (false, let upper?):
                    rows = try await session.rows(
                        """
                        SELECT \(unescaped: Self.objectColumns) FROM storage_objects
                        WHERE bucket = \(bucket) AND name > \(scan.lower) AND name < \(upper) ORDER BY name LIMIT \(limit)
                        """)
                case (true, nil):
                    rows = try await session.rows(
                        """
                        SELECT \(unescaped: Self.objectColumns) FROM storage_objects
                        WHERE bucket = \(bucket) AND name >= \(scan.lower) ORDER BY name LIMIT \(limit)
                        """)
                case (false, nil):
                    rows = try await session.rows(
                        """
                        SELECT \(unescaped: Self.objectColumns) FROM storage_objects
                        WHERE bucket = \(bucket) AND name > \(scan.lower) ORDER BY name LIMIT \(limit)
                        """)
                }
                listing.receive(try rows.map(Self.decode))
            }
        }
    }

    public func putObject(
        _ object: StorageObject, preconditions: ObjectPreconditions
    ) async throws -> (object: StorageObject, unreferenced: String?) {
        let saved = try await backend.write { session in
            try await Self.requireBucket(session, object.bucket)
            let current = try await Self.fetch(session, object.bucket, object.name)
            try preconditions.check(current)
            return try await Self.save(session, object, replacing: current)
        }
        return (saved.object, saved.unreferenced)
    }

    public func updateObject(
        _ bucket: String, _ name: String, patch: ObjectPatch, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> StorageObject {
        try await backend.write { session in
            try await Self.requireBucket(session, bucket)
            guard var object = try await Self.fetch(session, bucket, name) else { throw HearthError.noSuchObject(bucket, name) }
            try preconditions.check(object)
            object = patch.applied(to: object)
            object.metageneration += 1
            object.updated = time
            try await Self.write(session, object)
            return object
        }
    }

    public func copyObject(
        from source: (bucket: String, name: String), to destination: (bucket: String, name: String), attributes: ObjectAttributes?,
        sourcePreconditions: ObjectPreconditions, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> (object: StorageObject, unreferenced: String?) {
        let (sourceBucket, sourceName) = source
        let (destinationBucket, destinationName) = destination
        let saved = try await backend.write { session in
            try await Self.requireBucket(session, sourceBucket)
            try await Self.requireBucket(session, destinationBucket)
            guard let sourceRow = try await Self.fetch(session, sourceBucket, sourceName) else {
                throw HearthError.noSuchObject(sourceBucket, sourceName)
            }
            try sourcePreconditions.check(sourceRow)
            let current = try await Self.fetch(session, destinationBucket, destinationName)
            try preconditions.check(current)
            let copy = sourceRow.copied(to: (destinationBucket, destinationName), attributes: attributes, at: time)
            return try await Self.save(session, copy, replacing: current)
        }
        return (saved.object, saved.unreferenced)
    }

    public func deleteObject(_ bucket: String, _ name: String, preconditions: ObjectPreconditions) async throws -> String? {
        try await backend.write { session in
            try await Self.requireBucket(session, bucket)
            guard let object = try await Self.fetch(session, bucket, name) else { throw HearthError.noSuchObject(bucket, name) }
            try preconditions.check(object)
            try await session.execute("DELETE FROM storage_objects WHERE bucket = \(bucket) AND name = \(name)")
            return try await Self.unreferenced(session, object.blobID)
        }
    }

    public func deleteObjects(_ bucket: String, _ names: [String]) async throws -> (deleted: [String], unreferenced: [String]) {
        let result = try await backend.write { session in
            try await Self.requireBucket(session, bucket)
            var deleted: [String] = []
            var blobIDs: [String] = []
            for name in names where !Self.holdsNUL(name) {
                let rows = try await session.rows("DELETE FROM storage_objects WHERE bucket = \(bucket) AND name = \(name) RETURNING blob_id")
                guard let row = rows.first else { continue }
                deleted.append(name)
                blobIDs.append(try row.decode(String.self))
            }
            // Checked after every row is gone: copies share blobs, and two deleted objects may share one.
            var orphans: [String] = []
            var seen = Set<String>()
            for id in blobIDs where seen.insert(id).inserted {
                if let orphan = try await Self.unreferenced(session, id) { orphans.append(orphan) }
            }
            return DeleteResult(deleted: deleted, unreferenced: orphans)
        }
        return (result.deleted, result.unreferenced)
    }

    struct DeleteResult: Sendable {
        var deleted: [String]
        var unreferenced: [String]
    }

    public func unreferencedBlobs(_ blobIDs: [String]) async throws -> [String] {
        guard !blobIDs.isEmpty else { return [] }
        let referenced = try await backend.snapshot { session in
            let rows = try await session.rows(
                """
                SELECT blob_id FROM storage_objects WHERE blob_id = ANY(\(blobIDs))
                UNION SELECT blob_id FROM storage_parts WHERE blob_id = ANY(\(blobIDs))
                """)
            return Set(try rows.map { try $0.decode(String.self) })
        }
        return blobIDs.filter { !referenced.contains($0) }
    }

    /// The blob id if no object or part refers to it (checked inside the caller's transaction).
    static func unreferenced(_ session: PostgresSession, _ blobID: String) async throws -> String? {
        if try await session.exists("SELECT 1 FROM storage_objects WHERE blob_id = \(blobID) LIMIT 1") { return nil }
        if try await session.exists("SELECT 1 FROM storage_parts WHERE blob_id = \(blobID) LIMIT 1") { return nil }
        return blobID
    }

    // MARK: Multipart uploads

    public func createMultipartUpload(_ upload: ObjectStore.MultipartUpload) async throws {
        let encoded = StoredObjectFields.encodeAttributes(upload.attributes)
        try await backend.write { session in
            try await Self.requireBucket(session, upload.bucket)
            try await session.execute(
                """
                INSERT INTO storage_multipart (upload_id, bucket, name, attributes, created_us)
                VALUES (\(upload.id), \(upload.bucket), \(upload.key), \(encoded), \(upload.created.microseconds))
                """)
        }
    }

    public func multipartUpload(_ id: String, bucket: String, key: String) async throws -> ObjectStore.MultipartUpload? {
        if Self.holdsNUL(id) || Self.holdsNUL(bucket) || Self.holdsNUL(key) { return nil }
        return try await backend.read { session in
            try await session.rows(
                "SELECT attributes, created_us FROM storage_multipart WHERE upload_id = \(id) AND bucket = \(bucket) AND name = \(key)"
            ).first.map { row in
                let (attributes, created) = try row.decode((String, Int64).self)
                return ObjectStore.MultipartUpload(
                    id: id, bucket: bucket, key: key, attributes: StoredObjectFields.decodeAttributes(attributes),
                    created: Timestamp(microseconds: created))
            }
        }
    }

    public func putPart(_ part: ObjectStore.UploadedPart, uploadID: String) async throws -> String? {
        try await backend.write { session in
            guard try await session.exists("SELECT 1 FROM storage_multipart WHERE upload_id = \(uploadID)") else {
                throw HearthError.noSuchUpload
            }
            let number = Int64(part.number)
            let previous = try await session.value(
                "SELECT blob_id FROM storage_parts WHERE upload_id = \(uploadID) AND part_number = \(number)", as: String.self)
            try await session.execute(
                """
                INSERT INTO storage_parts (upload_id, part_number, size, md5, blob_id, modified_us)
                VALUES (\(uploadID), \(number), \(part.size), \(ByteBuffer(bytes: part.md5)), \(part.blobID), \(part.modified.microseconds))
                ON CONFLICT (upload_id, part_number) DO UPDATE SET
                    size = excluded.size, md5 = excluded.md5, blob_id = excluded.blob_id, modified_us = excluded.modified_us
                """)
            return previous
        }
    }

    public func parts(uploadID: String) async throws -> [ObjectStore.UploadedPart] {
        try await backend.read { session in
            try await session.rows(
                "SELECT part_number, size, md5, modified_us, blob_id FROM storage_parts WHERE upload_id = \(uploadID) ORDER BY part_number"
            ).map { row in
                let (number, size, md5, modified, blobID) = try row.decode((Int64, Int64, ByteBuffer, Int64, String).self)
                return ObjectStore.UploadedPart(
                    number: Int(number), size: size, md5: Array(md5.readableBytesView), modified: Timestamp(microseconds: modified), blobID: blobID)
            }
        }
    }

    public func removeMultipartUpload(_ id: String) async throws -> [String] {
        try await backend.write { session in
            let ids = try await session.rows("SELECT blob_id FROM storage_parts WHERE upload_id = \(id) ORDER BY part_number")
                .map { try $0.decode(String.self) }
            try await session.execute("DELETE FROM storage_parts WHERE upload_id = \(id)")
            try await session.execute("DELETE FROM storage_multipart WHERE upload_id = \(id)")
            return ids
        }
    }

    // MARK: Resumable upload sessions

    public func createUploadSession(_ session: ObjectStore.UploadSession) async throws {
        try StoredObjectFields.refuseNUL(session.id, session.name)
        let (state, result) = StoredObjectFields.encodeSessionState(session.state)
        try await backend.write { db in
            try await Self.requireBucket(db, session.bucket)
            try await db.execute(
                """
                INSERT INTO storage_upload_sessions (upload_id, bucket, name, descriptor, received, part_count, state, result, last_used_us)
                VALUES (\(session.id), \(session.bucket), \(session.name), \(session.descriptor), \(session.received),
                        \(Int64(session.partCount)), \(state), \(result), \(session.lastUsed.microseconds))
                """)
        }
    }

    public func uploadSession(_ id: String) async throws -> ObjectStore.UploadSession? {
        try await backend.read { db in try await Self.uploadSession(db, id) }
    }

    static func uploadSession(_ db: PostgresSession, _ id: String) async throws -> ObjectStore.UploadSession? {
        try await db.rows(
            """
            SELECT bucket, name, descriptor, received, part_count, state, result, last_used_us
            FROM storage_upload_sessions WHERE upload_id = \(id)
            """
        ).first.map { row in
            let (bucket, name, descriptor, received, parts, state, result, used) = try row.decode(
                (String, String, String, Int64, Int64, String, String?, Int64).self)
            return ObjectStore.UploadSession(
                id: id, bucket: bucket, name: name, descriptor: descriptor, received: received, partCount: Int(parts),
                state: StoredObjectFields.decodeSessionState(state, result), lastUsed: Timestamp(microseconds: used))
        }
    }

    public func appendUploadPart(_ id: String, at offset: Int64, _ part: ObjectStore.UploadedPart) async throws -> Bool {
        try await backend.write { db in
            guard let session = try await Self.uploadSession(db, id), session.state == .active, session.received == offset else { return false }
            let number = Int64(session.partCount + 1)
            try await db.execute(
                """
                INSERT INTO storage_parts (upload_id, part_number, size, md5, blob_id, modified_us)
                VALUES (\(id), \(number), \(part.size), \(ByteBuffer(bytes: part.md5)), \(part.blobID), \(part.modified.microseconds))
                """)
            try await db.execute(
                """
                UPDATE storage_upload_sessions SET received = \(session.received + part.size), part_count = \(number),
                    last_used_us = \(part.modified.microseconds)
                WHERE upload_id = \(id)
                """)
            return true
        }
    }

    public func endUploadSession(_ id: String, _ state: ObjectStore.UploadSession.State, at time: Timestamp) async throws -> [String]? {
        let (name, result) = StoredObjectFields.encodeSessionState(state)
        return try await backend.write { db in
            guard let session = try await Self.uploadSession(db, id), session.state == .active else { return nil }
            let blobs = try await db.rows("SELECT blob_id FROM storage_parts WHERE upload_id = \(id) ORDER BY part_number")
                .map { try $0.decode(String.self) }
            try await db.execute("DELETE FROM storage_parts WHERE upload_id = \(id)")
            try await db.execute(
                "UPDATE storage_upload_sessions SET state = \(name), result = \(result), last_used_us = \(time.microseconds) WHERE upload_id = \(id)")
            return blobs
        }
    }

    public func expireUploadSessions(unusedSince cutoff: Timestamp) async throws -> [String] {
        try await backend.write { db in
            let blobs = try await db.rows(
                """
                DELETE FROM storage_parts WHERE upload_id IN
                    (SELECT upload_id FROM storage_upload_sessions WHERE last_used_us < \(cutoff.microseconds))
                RETURNING blob_id
                """
            ).map { try $0.decode(String.self) }
            try await db.execute("DELETE FROM storage_upload_sessions WHERE last_used_us < \(cutoff.microseconds)")
            return blobs
        }
    }

    // MARK: S3 access keys

    public func addAccessKey(_ key: S3AccessKey) async throws {
        try await backend.write { session in
            try await session.execute(
                """
                INSERT INTO storage_s3_keys (id, secret, buckets, created_us, revoked, note)
                VALUES (\(key.id), \(key.secret), \(key.buckets.joined(separator: ",")), \(key.created.microseconds), \(key.revoked), \(key.note))
                """)
        }
    }

    public func accessKeys() async throws -> [S3AccessKey] {
        try await backend.read { session in
            try await session.rows(#"SELECT \#(unescaped: Self.keyColumns) FROM storage_s3_keys ORDER BY created_us, id COLLATE "C""#)
                .map(Self.decodeKey)
        }
    }

    public func accessKey(_ id: String) async throws -> S3AccessKey? {
        try await backend.read { session in
            try await session.rows("SELECT \(unescaped: Self.keyColumns) FROM storage_s3_keys WHERE id = \(id)").first.map(Self.decodeKey)
        }
    }

    public func revokeAccessKey(_ id: String) async throws -> Bool {
        try await backend.write { session in
            try await session.exists("UPDATE storage_s3_keys SET revoked = true WHERE id = \(id) RETURNING 1")
        }
    }

    static let keyColumns = "id, secret, buckets, created_us, revoked, note"

    static func decodeKey(_ row: PostgresRow) throws -> S3AccessKey {
        let (id, secret, buckets, created, revoked, note) = try row.decode((String, String, String, Int64, Bool, String?).self)
        return S3AccessKey(
            id: id, secret: secret, buckets: buckets.isEmpty ? [] : buckets.split(separator: ",").map(String.init),
            created: Timestamp(microseconds: created), revoked: revoked, note: note)
    }

    // MARK: Rows

    struct Saved: Sendable {
        var object: StorageObject
        var unreferenced: String?
    }

    static func fetch(_ session: PostgresSession, _ bucket: String, _ name: String) async throws -> StorageObject? {
        // A statement that fails aborts the caller's transaction: a name no row can hold is not looked up.
        if holdsNUL(bucket) || holdsNUL(name) { return nil }
        return try await session.rows("SELECT \(unescaped: objectColumns) FROM storage_objects WHERE bucket = \(bucket) AND name = \(name)")
            .first.map(decode)
    }

    /// Writes `object` over `current` with the generation after it; the replaced blob if nothing refers to it now.
    static func save(_ session: PostgresSession, _ object: StorageObject, replacing current: StorageObject?) async throws -> Saved {
        var stored = object
        stored.generation = max(object.generation, (current?.generation ?? 0) + 1)
        try await write(session, stored)
        guard let current, current.blobID != stored.blobID else { return Saved(object: stored, unreferenced: nil) }
        return Saved(object: stored, unreferenced: try await unreferenced(session, current.blobID))
    }

    static func write(_ session: PostgresSession, _ o: StorageObject) async throws {
        try StoredObjectFields.refuseNUL(o.bucket, o.name)
        let custom = StoredObjectFields.encodeCustom(o.custom)
        let tokens = StoredObjectFields.encodeTokens(o.downloadTokens)
        let md5 = ByteBuffer(bytes: o.md5)
        let crc = Int64(o.crc32c)
        try await session.execute(
            """
            INSERT INTO storage_objects (bucket, name, generation, metageneration, size, content_type, md5, crc32c,
                etag, created_us, updated_us, cache_control, content_disposition, content_encoding, content_language, custom,
                download_tokens, blob_id)
            VALUES (\(o.bucket), \(o.name), \(o.generation), \(o.metageneration), \(o.size), \(o.contentType), \(md5), \(crc), \(o.etag),
                \(o.created.microseconds), \(o.updated.microseconds), \(o.cacheControl), \(o.contentDisposition), \(o.contentEncoding),
                \(o.contentLanguage), \(custom), \(tokens), \(o.blobID))
            ON CONFLICT (bucket, name) DO UPDATE SET
                generation = excluded.generation, metageneration = excluded.metageneration, size = excluded.size,
                content_type = excluded.content_type, md5 = excluded.md5, crc32c = excluded.crc32c, etag = excluded.etag,
                created_us = excluded.created_us, updated_us = excluded.updated_us, cache_control = excluded.cache_control,
                content_disposition = excluded.content_disposition, content_encoding = excluded.content_encoding,
                content_language = excluded.content_language, custom = excluded.custom,
                download_tokens = excluded.download_tokens, blob_id = excluded.blob_id
            """)
    }

    /// The columns ``decode(_:)`` reads, by position.
    static let objectColumns = """
        bucket, name, generation, metageneration, size, content_type, md5, crc32c, etag, created_us, updated_us, \
        cache_control, content_disposition, content_encoding, content_language, custom, download_tokens, blob_id
        """

    /// A row of ``objectColumns``.
    static func decode(_ row: PostgresRow) throws -> StorageObject {
        let columns = try row.decode(
            (String, String, Int64, Int64, Int64, String, ByteBuffer, Int64, String, Int64, Int64, String?, String?, String?, String?, String,
                String, String).self)
        return StorageObject(
            bucket: columns.0, name: columns.1, generation: columns.2, metageneration: columns.3, size: columns.4,
            contentType: columns.5, md5: Array(columns.6.readableBytesView), crc32c: UInt32(truncatingIfNeeded: columns.7), etag: columns.8,
            created: Timestamp(microseconds: columns.9), updated: Timestamp(microseconds: columns.10), cacheControl: columns.11,
            contentDisposition: columns.12, contentEncoding: columns.13, contentLanguage: columns.14,
            custom: StoredObjectFields.decodeCustom(columns.15), downloadTokens: StoredObjectFields.decodeTokens(columns.16), blobID: columns.17)
    }
}
