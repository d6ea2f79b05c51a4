public import HearthCore
public import HearthStorage
import Foundation

/// An uploaded object as the file registry judges it.
public struct FileObjectInfo: Sendable {
    public var size: Int64
    public var contentType: String
    /// Changes whenever the object is written again: the object store's generation, or for an
    /// external S3 a fingerprint of its ETag and Last-Modified.
    public var generation: Int64
    /// What pins a read to this version (the object store's row; an S3 ETag for `If-Match`).
    let version: Version

    enum Version: Sendable {
        case stored(StorageObject)
        case etag(String)
    }
}

/// Where the registry's objects live: Hearth's own object store (its S3 port), or an external
/// S3 bucket the presigned URLs point at. The registry only looks objects up, reads their
/// first bytes and deletes them.
public protocol FileObjects: Sendable {
    /// The object, or nil if there is none.
    func fileObject(bucket: String, key: String) async throws -> FileObjectInfo?
    /// The first bytes of exactly that version (NOT_FOUND if it was replaced or removed since).
    func firstBytes(of object: FileObjectInfo, bucket: String, key: String, count: Int64) async throws -> [UInt8]
    /// Deletes the object; a missing one is fine.
    func deleteFileObject(bucket: String, key: String) async throws
}

extension ObjectStore: FileObjects {
    public func fileObject(bucket: String, key: String) async throws -> FileObjectInfo? {
        try await object(bucket, key).map { FileObjectInfo(size: $0.size, contentType: $0.contentType, generation: $0.generation, version: .stored($0)) }
    }

    public func firstBytes(of object: FileObjectInfo, bucket: String, key: String, count: Int64) async throws -> [UInt8] {
        guard case .stored(let stored) = object.version else { throw HearthError(.notFound, "No such object.") }
        return try await contents(stored, range: 0..<min(stored.size, count))
    }

    public func deleteFileObject(bucket: String, key: String) async throws {
        do {
            try await delete(bucket, key)
        } catch let error as HearthError where error.code == .notFound {
            // Already gone.
        }
    }
}

/// The registry's objects in an external S3 bucket (`externalS3` in the api config): HEAD,
/// a ranged GET pinned with `If-Match`, DELETE — SigV4-signed with the server's credentials.
public struct ExternalS3FileObjects: FileObjects {
    let client: S3BlobStore

    /// `client` is an ``S3BlobStore`` on the bucket with no key prefix (its blob ids are the keys).
    public init(client: S3BlobStore) { self.client = client }

    public func fileObject(bucket: String, key: String) async throws -> FileObjectInfo? {
        guard let head = try await client.head(key) else { return nil }
        let digest = SigV4.sha256Hex(Array("\(head.etag)\n\(head.lastModified)".utf8))
        let generation = Int64(bitPattern: UInt64(digest.prefix(16), radix: 16) ?? 0) & Int64.max
        return FileObjectInfo(size: head.size, contentType: head.contentType, generation: generation, version: .etag(head.etag))
    }

    public func firstBytes(of object: FileObjectInfo, bucket: String, key: String, count: Int64) async throws -> [UInt8] {
        guard case .etag(let etag) = object.version else { throw HearthError(.notFound, "No such object.") }
        return try await client.firstBytes(key, count: min(object.size, count), ifMatch: etag)
    }

    public func deleteFileObject(bucket: String, key: String) async throws {
        try await client.delete(key)
    }
}
