public import HearthCore
public import HearthDocuments
public import HearthStorage
public import Foundation
public import Logging

/// The app backend's file registry: presigned uploads to S3, a `files/{fileId}` record per
/// file with an explicit status, validation of what was uploaded, presigned downloads,
/// listing and deletion. Records are written only here, through the document engine's write
/// path (with server timestamps); objects only through the object store. No HTTP.
public struct FileRegistry: Sendable {
    public let documents: DocumentEngine
    public let database: DatabaseName
    public let objects: any FileObjects
    /// The bucket every upload goes to (the server chooses it, never the client).
    public let bucket: String
    public let policy: FileUploadPolicy
    /// Signs URLs for the S3 endpoint clients upload to (resolved late: the port may be 0).
    let presigner: @Sendable () throws -> S3Presigner
    let now: @Sendable () -> Timestamp
    let logger: Logger

    public init(
        documents: DocumentEngine, database: DatabaseName, objects: any FileObjects, bucket: String, policy: FileUploadPolicy,
        presigner: @escaping @Sendable () throws -> S3Presigner, now: @escaping @Sendable () -> Timestamp = FileRegistry.systemNow,
        logger: Logger
    ) {
        self.documents = documents
        self.database = database
        self.objects = objects
        self.bucket = bucket
        self.policy = policy
        self.presigner = presigner
        self.now = now
        self.logger = logger
    }

    public static func systemNow() -> Timestamp {
        let seconds = Date().timeIntervalSince1970
        return Timestamp(microseconds: Int64(seconds * 1_000_000))
    }

    /// The composite indexes the registry's queries use (declared at startup so they also work
    /// with `--strict-indexes`).
    public func declareIndexes() async throws {
        let definitions: [[IndexDefinition.Field]] = [
            [.init(FieldPath(["ownerUid"]), .ascending), .init(FieldPath(["createdAt"]), .descending)],
            [.init(FieldPath(["status"]), .ascending), .init(FieldPath(["createdAt"]), .ascending)],
        ]
        for fields in definitions {
            try await documents.createIndex(
                IndexDefinition(
                    id: 0, database: database.database, collectionGroup: FileRecord.collection, groupScope: false, fields: fields,
                    automatic: false))
        }
    }

    // MARK: Upload

    /// How a client uploads: a presigned PUT (send `headers` unchanged) or a presigned POST form
    /// (send `fields`, then the file).
    public enum Upload: Sendable {
        case put(url: URL, headers: [String: String])
        case post(url: URL, fields: [String: String])
    }

    public struct PresignedUpload: Sendable {
        public var record: FileRecord
        public var upload: Upload
        public var expiresInSeconds: Int
    }

    /// Validates the request, records the file as `pending` and presigns its upload to
    /// `users/<uid>/uploads/<fileId>.<ext>` in the registry's bucket.
    public func presignUpload(owner: String, contentType: String, fileExtension: String, declaredSize: Int64?) async throws -> PresignedUpload {
        let (type, ext) = try policy.validate(contentType: contentType, fileExtension: fileExtension, declaredSize: declaredSize)
        try FileUploadPolicy.validateKeySegment(uid: owner)
        let fileId = ULID.make(now: now()).text
        let key = "users/\(owner)/uploads/\(fileId).\(ext)"
        let signer = try presigner()
        let expires = policy.presignExpiresSeconds
        let upload: Upload
        if policy.strictUploads {
            let form = try signer.presignedPost(
                bucket: bucket, key: key, expires: expires, fields: ["Content-Type": type],
                conditions: [.equals("Content-Type", type), .contentLengthRange(0, policy.maxUploadBytes)])
            upload = .post(url: form.url, fields: form.fields)
        } else {
            let url = try signer.presignedURL(method: "PUT", bucket: bucket, key: key, expires: expires, headers: ["Content-Type": type])
            upload = .put(url: url, headers: ["Content-Type": type])
        }
        let fields: [String: Value] = [
            "ownerUid": .string(owner), "bucket": .string(bucket), "key": .string(key), "contentType": .string(type),
            "status": .string(FileRecord.Status.pending.rawValue),
        ]
        var write = Write.create(FileRecord.path(fileId), fields)
        write.transforms = [
            FieldTransform(field: FieldPath(["createdAt"]), operation: .serverTimestamp),
            FieldTransform(field: FieldPath(["updatedAt"]), operation: .serverTimestamp),
        ]
        let result = try await documents.commit(database, [write])
        guard let document = result.writeResults.first?.document, let record = FileRecord(document) else {
            throw HearthError(.internal, "The file record was not written.")
        }
        return PresignedUpload(record: record, upload: upload, expiresInSeconds: expires)
    }

    // MARK: Records

    /// The caller's record: fileNotFound for an unknown (or malformed) id, notOwner for another user's.
    public func record(_ fileId: String, owner: String) async throws -> FileRecord {
        guard ULID(parsing: fileId) != nil else { throw FileRegistryError(.fileNotFound, "File not found") }
        let (document, _) = try await documents.get(database, FileRecord.path(fileId))
        guard let document, let record = FileRecord(document) else { throw FileRegistryError(.fileNotFound, "File not found") }
        guard record.ownerUid == owner else { throw FileRegistryError(.notOwner, "Not your file") }
        return record
    }

    /// Applies a change to a record if it is still the version read (`record.version`); nil if
    /// another request changed it first.
    func update(_ record: FileRecord, _ fields: [String: Value]) async throws -> FileRecord? {
        let write = Write(
            path: FileRecord.path(record.fileId), kind: .update(fields: fields, mask: fields.keys.map { FieldPath([$0]) }),
            transforms: [FieldTransform(field: FieldPath(["updatedAt"]), operation: .serverTimestamp)],
            precondition: .updateTime(record.version))
        do {
            let result = try await documents.commit(database, [write])
            return result.writeResults.first?.document.flatMap(FileRecord.init)
        } catch let error as HearthError where error.code == .failedPrecondition || error.code == .notFound {
            return nil
        }
    }

    // MARK: Complete

    /// Checks the uploaded object and marks the file `ready` with its size. A missing object
    /// leaves it `pending` (objectMissing); one outside the policy is deleted and the file
    /// marked `failed` (sizeNotAllowed / contentMismatch). Repeating a completed call answers
    /// the same; concurrent calls agree on one outcome.
    public func complete(owner: String, fileId: String) async throws -> FileRecord {
        var record = try await self.record(fileId, owner: owner)
        for _ in 0..<8 {
            switch record.status {
            case .ready: return record
            case .failed: throw FileRegistryError(.alreadyFailed, "File upload failed: \(record.failureReason ?? "rejected")")
            case .pending: break
            }
            guard let object = try await objects.fileObject(bucket: record.bucket, key: record.key) else {
                throw FileRegistryError(.objectMissing, "Uploaded object not found; upload the file before completing it")
            }
            let refusal: FileRegistryError?
            do {
                refusal = try await self.refusal(of: object, record: record)
            } catch let error as HearthError where error.code == .notFound {
                // Deleted while being read (a concurrent refusal): judge again from the new state.
                record = try await self.record(fileId, owner: owner)
                continue
            }
            if let refusal {
                try await deleteObject(record)
                if try await update(record, ["status": .string(FileRecord.Status.failed.rawValue), "failureReason": .string(refusal.message)]) != nil {
                    logger.info("file upload refused", metadata: ["fileId": "\(fileId)", "reason": "\(refusal.message)"])
                    throw refusal
                }
            } else if let ready = try await update(
                record,
                [
                    "status": .string(FileRecord.Status.ready.rawValue), "sizeBytes": .integer(object.size),
                    "objectGeneration": .integer(object.generation),
                ])
            {
                return ready
            }
            // Another request changed the record first: judge again from its new state.
            record = try await self.record(fileId, owner: owner)
        }
        throw HearthError(.aborted, "Too much contention on file \(fileId).")
    }

    /// Why an uploaded object breaks the policy, or nil if it fits.
    func refusal(of object: FileObjectInfo, record: FileRecord) async throws -> FileRegistryError? {
        if object.size > policy.maxUploadBytes {
            return FileRegistryError(.sizeNotAllowed, "File is larger than the limit of \(policy.maxUploadBytes) bytes")
        }
        let stored = object.contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        if stored != record.contentType {
            return FileRegistryError(.contentMismatch, "Uploaded content type \(FileUploadPolicy.quoted(stored)) is not \(record.contentType)")
        }
        var head: [UInt8] = []
        if object.size > 0 {
            head = try await objects.firstBytes(of: object, bucket: record.bucket, key: record.key, count: Int64(ContentSniffer.headLength))
        }
        if !ContentSniffer.matches(record.contentType, head: head) {
            return FileRegistryError(.contentMismatch, "File content does not match content type \(record.contentType)")
        }
        return nil
    }

    func deleteObject(_ record: FileRecord) async throws {
        try await objects.deleteFileObject(bucket: record.bucket, key: record.key)
    }

    // MARK: Download, list, delete

    /// A presigned GET for a `ready` file.
    public func presignDownload(owner: String, fileId: String) async throws -> (url: URL, expiresInSeconds: Int) {
        let record = try await self.record(fileId, owner: owner)
        guard record.status == .ready else { throw FileRegistryError(.notReady, "File is not ready (status: \(record.status.rawValue))") }
        // The upload URL may outlive `complete`: bytes written after the check were never checked.
        let object = try await objects.fileObject(bucket: record.bucket, key: record.key)
        if object == nil || object?.generation != record.objectGeneration {
            let reason = "The object changed after the upload was completed"
            if object != nil { try await deleteObject(record) }
            _ = try await update(record, ["status": .string(FileRecord.Status.failed.rawValue), "failureReason": .string(reason)])
            throw FileRegistryError(.objectChanged, reason)
        }
        let url = try presigner().presignedURL(method: "GET", bucket: record.bucket, key: record.key, expires: policy.presignExpiresSeconds)
        return (url, policy.presignExpiresSeconds)
    }

    public struct Page: Sendable {
        public var files: [FileRecord]
        public var nextPageToken: String?
    }

    public static let maxPageSize = 100

    /// The owner's files, newest first; `pageToken` continues after the previous page.
    public func list(owner: String, pageSize: Int, pageToken: String?) async throws -> Page {
        guard (1...Self.maxPageSize).contains(pageSize) else {
            throw FileRegistryError(.invalidPage, "pageSize must be between 1 and \(Self.maxPageSize)")
        }
        var start: Query.Cursor?
        if let pageToken {
            guard let cursor = PageToken(text: pageToken) else { throw FileRegistryError(.invalidPage, "Invalid pageToken") }
            start = Query.Cursor(
                values: [.timestamp(cursor.createdAt), .reference(database.name(of: FileRecord.path(cursor.fileId)))], before: false)
        }
        let query = Query(
            collectionId: FileRecord.collection, filter: .field(FieldPath(["ownerUid"]), .equal, .string(owner)),
            orderBy: [Query.Order(FieldPath(["createdAt"]), descending: true), Query.Order(.documentName, descending: true)],
            startAt: start, limit: pageSize + 1)
        let result = try await documents.runQuery(database, query)
        var files = result.documents.compactMap(FileRecord.init)
        var next: String?
        if files.count > pageSize {
            files.removeLast(files.count - pageSize)
            next = files.last.map { PageToken(createdAt: $0.createdAt, fileId: $0.fileId).text }
        }
        return Page(files: files, nextPageToken: next)
    }

    /// Deletes the object (if any) and the record.
    public func delete(owner: String, fileId: String) async throws {
        let record = try await self.record(fileId, owner: owner)
        try await deleteObject(record)
        _ = try await documents.commit(database, [.delete(FileRecord.path(fileId))])
    }

    // MARK: Expiry

    /// Marks `pending` files older than the policy's timeout `failed` and deletes their
    /// objects, at most `limit` of them; returns how many it expired.
    public func expirePending(limit: Int = 100) async throws -> Int {
        let cutoff = now().microseconds - Int64(policy.pendingTimeoutSeconds) * 1_000_000
        let query = Query(
            collectionId: FileRecord.collection,
            filter: .and([
                .field(FieldPath(["status"]), .equal, .string(FileRecord.Status.pending.rawValue)),
                .field(FieldPath(["createdAt"]), .lessThan, .timestamp(Timestamp(microseconds: cutoff))),
            ]),
            orderBy: [Query.Order(FieldPath(["createdAt"]))], limit: limit)
        var expired = 0
        for record in try await documents.runQuery(database, query).documents.compactMap(FileRecord.init) where record.status == .pending {
            try await deleteObject(record)
            let reason = "Upload not completed within \(policy.pendingTimeoutSeconds) seconds"
            if try await update(record, ["status": .string(FileRecord.Status.failed.rawValue), "failureReason": .string(reason)]) != nil {
                expired += 1
            }
        }
        if expired > 0 { logger.notice("expired unfinished uploads", metadata: ["count": "\(expired)"]) }
        return expired
    }
}

/// A listing cursor: the last file's creation time and id, as opaque base64url text.
struct PageToken: Equatable {
    var createdAt: Timestamp
    var fileId: String

    init(createdAt: Timestamp, fileId: String) {
        self.createdAt = createdAt
        self.fileId = fileId
    }

    init?(text: String) {
        guard text.utf8.count <= 128, let bytes = Base64.urlDecode(text), let decoded = String(validating: bytes, as: UTF8.self) else { return nil }
        let parts = decoded.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let micros = Int64(parts[0]), micros >= 0, ULID(parsing: parts[1]) != nil else { return nil }
        createdAt = Timestamp(microseconds: micros)
        fileId = String(parts[1])
    }

    var text: String { Base64.urlEncode(Array("\(createdAt.microseconds).\(fileId)".utf8)) }
}
