public import HearthCore
import Foundation

/// Resumable uploads (Firebase's `X-Goog-Upload-Protocol: resumable` and the GCS JSON API's
/// `uploadType=resumable`), kept in the metadata store so that any server on it can take the
/// next chunk — replicas over one PostgreSQL, or one server after a restart. Each chunk that
/// arrives becomes a finished blob recorded as the session's next part (in the table S3's
/// multipart parts use, so the blob sweeps leave it alone); finalizing concatenates the parts
/// into the object's blob. An upload sent whole in its finalizing request is never split:
/// its bytes go straight to the object's blob.
extension ObjectStore {
    public struct UploadSession: Sendable, Hashable {
        public enum State: Sendable, Hashable {
            case active
            /// Finalized: the transport's record of the object it answered with (answered again to
            /// a repeated finalize).
            case finished(String)
            case cancelled
        }

        public var id: String
        public var bucket: String
        public var name: String
        /// What the transport needs to finish the upload (metadata, uploader, declared size,
        /// checksums), in its own encoding; the store keeps it verbatim.
        public var descriptor: String
        /// Bytes stored so far: the sum of the parts' sizes.
        public var received: Int64
        public var partCount: Int
        public var state: State
        public var lastUsed: Timestamp

        package init(
            id: String, bucket: String, name: String, descriptor: String, received: Int64 = 0, partCount: Int = 0, state: State = .active,
            lastUsed: Timestamp
        ) {
            self.id = id
            self.bucket = bucket
            self.name = name
            self.descriptor = descriptor
            self.received = received
            self.partCount = partCount
            self.state = state
            self.lastUsed = lastUsed
        }
    }

    /// How long a session unused stays resumable (and a finished one answers a repeated finalize).
    public static let uploadSessionLifetime: Int64 = 7 * 24 * 3600 * 1_000_000

    /// Opens a session for `bucket`/`name` (NOT_FOUND without the bucket); once an hour, forgets
    /// sessions unused for ``uploadSessionLifetime`` on the way, with their parts' bytes.
    public func createUploadSession(bucket: String, name: String, descriptor: String) async throws -> UploadSession {
        try StorageNames.validateObject(name)
        let now = Self.now()
        let session = UploadSession(
            id: UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") + FilesystemBlobStore.newID(), bucket: bucket, name: name,
            descriptor: descriptor, lastUsed: now)
        try await metadata.createUploadSession(session)
        let due = uploadSessionSweep.withLock { last in
            guard now.microseconds - last >= 3600 * 1_000_000 else { return false }
            last = now.microseconds
            return true
        }
        guard due else { return session }
        let stale = try await metadata.expireUploadSessions(unusedSince: Timestamp(microseconds: now.microseconds - Self.uploadSessionLifetime))
        await reclaimer.reclaim(stale)
        return session
    }

    public func uploadSession(_ id: String) async throws -> UploadSession? {
        if StoredObjectFields.holdsNUL(id) { return nil }
        return try await metadata.uploadSession(id)
    }

    /// Stores `writer`'s bytes as the part of `session` that starts at byte `offset` (its
    /// `received` when the chunk was read). If another request stored bytes there first (a
    /// client resending a chunk whose answer it lost), these are dropped. Returns the session
    /// as it now is (NOT_FOUND if it is gone).
    public func appendUploadPart(_ session: UploadSession, at offset: Int64, writer: any BlobWriter) async throws -> UploadSession {
        if writer.size > 0 {
            let info = try await writer.finish()
            let part = UploadedPart(number: 0, size: info.size, md5: info.md5, modified: Self.now(), blobID: info.id)
            let stored: Bool
            do {
                stored = try await metadata.appendUploadPart(session.id, at: offset, part)
            } catch {
                try? await blobs.delete(info.id)
                throw error
            }
            if !stored { try? await blobs.delete(info.id) }
        } else {
            writer.abort()
        }
        guard let now = try await metadata.uploadSession(session.id) else { throw HearthError(.notFound, "No upload session \(session.id).") }
        return now
    }

    /// A writer holding the session's stored bytes in order, to finish as the object.
    public func composeUpload(_ session: UploadSession) async throws -> any BlobWriter {
        let out = try beginUpload()
        do {
            for part in try await metadata.parts(uploadID: session.id) {
                for try await chunk in blobs.read(part.blobID, range: nil, chunkSize: 1 << 20) { try out.write(chunk) }
            }
        } catch {
            out.abort()
            throw error
        }
        return out
    }

    /// Ends an active session as `state` and deletes its parts' bytes; false if the session was
    /// no longer active (another request ended it).
    @discardableResult
    public func endUploadSession(_ session: UploadSession, _ state: UploadSession.State) async throws -> Bool {
        guard let blobs = try await metadata.endUploadSession(session.id, state, at: Self.now()) else { return false }
        await reclaimer.reclaim(blobs)
        return true
    }
}

extension StoredObjectFields {
    /// A session state as the stores keep it: a name, and a finished session's record.
    package static func encodeSessionState(_ state: ObjectStore.UploadSession.State) -> (name: String, result: String?) {
        switch state {
        case .active: ("active", nil)
        case .finished(let record): ("finished", record)
        case .cancelled: ("cancelled", nil)
        }
    }

    package static func decodeSessionState(_ name: String, _ result: String?) -> ObjectStore.UploadSession.State {
        switch name {
        case "active": .active
        case "finished": .finished(result ?? "")
        default: .cancelled
        }
    }

    /// An object row as one JSON text (a finished upload session's record of its object).
    package static func encodeObject(_ o: StorageObject) -> String {
        var members: [(String, JSON)] = [
            ("bucket", .string(o.bucket)), ("name", .string(o.name)), ("generation", .string(String(o.generation))),
            ("metageneration", .string(String(o.metageneration))), ("size", .string(String(o.size))), ("contentType", .string(o.contentType)),
            ("md5", .string(o.md5Base64)), ("crc32c", .string(String(o.crc32c))), ("etag", .string(o.etag)),
            ("created", .string(String(o.created.microseconds))), ("updated", .string(String(o.updated.microseconds))),
        ]
        func put(_ key: String, _ value: String?) { if let value { members.append((key, .string(value))) } }
        put("cacheControl", o.cacheControl)
        put("contentDisposition", o.contentDisposition)
        put("contentEncoding", o.contentEncoding)
        put("contentLanguage", o.contentLanguage)
        members.append(("custom", .object(o.custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        members.append(("downloadTokens", .array(o.downloadTokens.map { .string($0) })))
        members.append(("blobID", .string(o.blobID)))
        return JSON.object(members).serialized()
    }

    /// The object ``encodeObject(_:)`` wrote; nil for any other text.
    package static func decodeObject(_ text: String) -> StorageObject? {
        guard let json = try? JSON.parse(Array(text.utf8)) else { return nil }
        func s(_ k: String) -> String? { json[k]?.stringValue }
        func n(_ k: String) -> Int64? { s(k).flatMap { Int64($0) } }
        guard let bucket = s("bucket"), let name = s("name"), let generation = n("generation"), let metageneration = n("metageneration"),
            let size = n("size"), let contentType = s("contentType"), let md5 = s("md5").flatMap({ Data(base64Encoded: $0) }),
            let crc = s("crc32c").flatMap({ UInt32($0) }), let etag = s("etag"), let created = n("created"), let updated = n("updated"),
            let blobID = s("blobID")
        else { return nil }
        var custom: [String: String] = [:]
        for (k, v) in json["custom"]?.objectValue ?? [] { custom[k] = v.stringValue }
        return StorageObject(
            bucket: bucket, name: name, generation: generation, metageneration: metageneration, size: size, contentType: contentType,
            md5: Array(md5), crc32c: crc, etag: etag, created: Timestamp(microseconds: created), updated: Timestamp(microseconds: updated),
            cacheControl: s("cacheControl"), contentDisposition: s("contentDisposition"), contentEncoding: s("contentEncoding"),
            contentLanguage: s("contentLanguage"), custom: custom, downloadTokens: json["downloadTokens"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            blobID: blobID)
    }
}
