public import HearthCore

/// Where ``ObjectStore`` keeps everything but bytes: buckets, object rows, multipart uploads
/// with their parts, and S3 access keys. `HearthSQLite` implements it over `storage.sqlite`
/// (`SQLiteObjectMetadataStore`); ``InMemoryObjectMetadataStore`` keeps it in memory. Every
/// implementation runs the same suite (`Sources/HearthStoreConformance/ObjectMetadataStoreConformance.swift`).
///
/// Rules every implementation keeps:
/// 1. **Each call is one atomic step in the store.** What a write depends on — the bucket's
///    existence, the current row, the preconditions, whether a blob is still referred to — is
///    checked inside the same transaction that changes it, so a store can run each call as one
///    database transaction (one `withTransaction` in postgres-nio) without holding a lock across
///    an `await`, and without callbacks into the caller. The shared pure pieces (``ObjectPreconditions/check(_:)``,
///    ``ObjectPatch/applied(to:)``, ``StorageObject/copied(to:attributes:at:)``, ``ObjectListing``)
///    live in this module so every store computes the same rows.
/// 2. **A write that fails changes nothing** and throws a ``HearthError``: NOT_FOUND for a missing
///    bucket, object or upload, FAILED_PRECONDITION for a precondition that does not hold (the
///    texts of ``HearthError/noSuchBucket(_:)`` and its siblings, which the transports render).
/// 3. **Blobs are reclaimed by the caller**, never by the store: a write returns the blob ids
///    it left unreferenced (no object row and no part refers to them once it committed), and
///    ``ObjectStore`` deletes those after answering.
/// 4. **Names compare as UTF-8 bytes** (`memcmp`), in listings and in bounds.
public protocol ObjectMetadataStore: Sendable {
    // MARK: Buckets

    /// Creates a bucket created at `created`. If it exists: its existing record when `ifMissing`,
    /// else ALREADY_EXISTS.
    func createBucket(_ name: String, created: Timestamp, ifMissing: Bool) async throws -> ObjectStore.Bucket
    func bucket(_ name: String) async throws -> ObjectStore.Bucket?
    /// Every bucket, by name.
    func buckets() async throws -> [ObjectStore.Bucket]
    /// Deletes an empty bucket: NOT_FOUND if missing, FAILED_PRECONDITION if it holds objects.
    func deleteBucket(_ name: String) async throws

    // MARK: Objects

    func object(_ bucket: String, _ name: String) async throws -> StorageObject?
    /// One page of a listing, read in one snapshot: the store runs ``ObjectListing`` to its end,
    /// answering each of its ``ObjectListing/scan`` requests. NOT_FOUND if the bucket is missing.
    func list(_ bucket: String, _ request: ObjectStore.ListRequest) async throws -> ObjectStore.ListResult
    /// Stores `object` as the row of `object.bucket`/`object.name` if the bucket exists and
    /// `preconditions` hold for the current row (nil if there is none). The stored generation is
    /// `max(object.generation, current generation + 1)`, so generations of one name only grow.
    /// Returns the stored row and the replaced row's blob if nothing refers to it any more.
    func putObject(_ object: StorageObject, preconditions: ObjectPreconditions) async throws -> (object: StorageObject, unreferenced: String?)
    /// Applies `patch` to the current row (NOT_FOUND if none) if `preconditions` hold: one more
    /// metageneration, `updated` = `time`; bytes, generation and `created` stay.
    func updateObject(
        _ bucket: String, _ name: String, patch: ObjectPatch, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> StorageObject
    /// Copies the source row (NOT_FOUND if missing; `sourcePreconditions` checked on it) to the
    /// destination (`preconditions` checked on its current row) as
    /// ``StorageObject/copied(to:attributes:at:)`` makes it, sharing the bytes; the generation
    /// follows ``putObject(_:preconditions:)``. Both buckets must exist (source first).
    func copyObject(
        from source: (bucket: String, name: String), to destination: (bucket: String, name: String), attributes: ObjectAttributes?,
        sourcePreconditions: ObjectPreconditions, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> (object: StorageObject, unreferenced: String?)
    /// Deletes the row (NOT_FOUND if none) if `preconditions` hold; returns its blob if nothing
    /// refers to it any more.
    func deleteObject(_ bucket: String, _ name: String, preconditions: ObjectPreconditions) async throws -> String?
    /// Deletes the rows of `names` that exist, in one transaction (NOT_FOUND if the bucket is
    /// missing). Returns the names deleted, in the order given, and the blobs no longer referred
    /// to (each once).
    func deleteObjects(_ bucket: String, _ names: [String]) async throws -> (deleted: [String], unreferenced: [String])
    /// The ids among `blobIDs` that no object and no part refers to (for the start-up sweep).
    func unreferencedBlobs(_ blobIDs: [String]) async throws -> [String]

    // MARK: Multipart uploads (S3)

    /// Records a new upload; NOT_FOUND if its bucket is missing.
    func createMultipartUpload(_ upload: ObjectStore.MultipartUpload) async throws
    /// The upload with this id, if it is for `bucket`/`key`.
    func multipartUpload(_ id: String, bucket: String, key: String) async throws -> ObjectStore.MultipartUpload?
    /// Stores a part of an upload (NOT_FOUND if the upload does not exist), replacing the part with
    /// the same number; returns the replaced part's blob.
    func putPart(_ part: ObjectStore.UploadedPart, uploadID: String) async throws -> String?
    /// The upload's parts by number.
    func parts(uploadID: String) async throws -> [ObjectStore.UploadedPart]
    /// Forgets an upload and its parts (nothing if it does not exist); returns the parts' blobs.
    func removeMultipartUpload(_ id: String) async throws -> [String]

    // MARK: Resumable upload sessions

    /// Records a new session; NOT_FOUND if its bucket is missing.
    func createUploadSession(_ session: ObjectStore.UploadSession) async throws
    func uploadSession(_ id: String) async throws -> ObjectStore.UploadSession?
    /// Records `part` as the session's next part (its number is the store's: one past the last)
    /// and marks the session used at `part.modified` — only if the session is active and has
    /// received exactly `offset` bytes; false (nothing changed) otherwise. The parts are read with
    /// ``parts(uploadID:)``.
    func appendUploadPart(_ id: String, at offset: Int64, _ part: ObjectStore.UploadedPart) async throws -> Bool
    /// Ends an active session as `state` (finished or cancelled), forgetting its parts: returns
    /// their blobs, or nil if the session is missing or no longer active.
    func endUploadSession(_ id: String, _ state: ObjectStore.UploadSession.State, at time: Timestamp) async throws -> [String]?
    /// Forgets every session last used before `cutoff`, and its parts; returns their blobs.
    func expireUploadSessions(unusedSince cutoff: Timestamp) async throws -> [String]

    // MARK: S3 access keys

    func addAccessKey(_ key: S3AccessKey) async throws
    /// Every key, oldest first.
    func accessKeys() async throws -> [S3AccessKey]
    func accessKey(_ id: String) async throws -> S3AccessKey?
    /// Marks the key revoked; false if there is no such key.
    func revokeAccessKey(_ id: String) async throws -> Bool
}

/// Storage's typed error reasons, named as S3 names them (the S3 transport renders them as codes).
extension HearthError.Reason {
    public static let noSuchBucket = Self("NoSuchBucket")
    public static let bucketNotEmpty = Self("BucketNotEmpty")
    /// A generation / metageneration / ETag precondition did not hold (HTTP 412).
    public static let preconditionFailed = Self("PreconditionFailed")
    public static let invalidBucketName = Self("InvalidBucketName")
    public static let invalidPart = Self("InvalidPart")
    public static let invalidPartOrder = Self("InvalidPartOrder")
    public static let entityTooSmall = Self("EntityTooSmall")
}

extension HearthError {
    package static func noSuchBucket(_ name: String) -> HearthError {
        HearthError(.notFound, "The bucket \(name) does not exist.", reason: .noSuchBucket)
    }
    package static func bucketExists(_ name: String) -> HearthError { HearthError(.alreadyExists, "The bucket \(name) already exists.") }
    package static func bucketNotEmpty(_ name: String) -> HearthError {
        HearthError(.failedPrecondition, "The bucket \(name) is not empty.", reason: .bucketNotEmpty)
    }
    package static func noSuchObject(_ bucket: String, _ name: String) -> HearthError { HearthError(.notFound, "No such object: \(bucket)/\(name)") }
    package static var noSuchUpload: HearthError { HearthError(.notFound, "The specified multipart upload does not exist.") }
}

extension StorageObject {
    /// A copy of this row as the new object `destination` created at `time` (generation `time`,
    /// metageneration 1), with the same bytes; `attributes` replace the metadata (nil keeps it).
    package func copied(to destination: (bucket: String, name: String), attributes: ObjectAttributes?, at time: Timestamp) -> StorageObject {
        var o = self
        o.bucket = destination.bucket
        o.name = destination.name
        o.generation = time.microseconds
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
        return o
    }

    /// Names order as their UTF-8 bytes (what SQLite's BINARY collation does).
    package static func nameOrder(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
}
