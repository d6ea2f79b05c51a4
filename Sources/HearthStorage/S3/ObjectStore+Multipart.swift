public import HearthCore
import Crypto
import Foundation

/// S3 multipart uploads: parts are finished blobs; completing concatenates the chosen parts
/// into one new blob (streamed) and commits it as the object, with S3's ETag
/// `md5(part md5s)-N`. Until then nothing is visible; aborting deletes the parts.
extension ObjectStore {
    public struct MultipartUpload: Sendable, Hashable {
        public var id: String
        public var bucket: String
        public var key: String
        public var attributes: ObjectAttributes
        public var created: Timestamp

        package init(id: String, bucket: String, key: String, attributes: ObjectAttributes, created: Timestamp) {
            self.id = id
            self.bucket = bucket
            self.key = key
            self.attributes = attributes
            self.created = created
        }
    }

    public struct UploadedPart: Sendable, Hashable {
        public var number: Int
        public var size: Int64
        public var md5: [UInt8]
        public var etag: String { StorageObject.hex(md5) }
        public var modified: Timestamp
        package var blobID: String

        package init(number: Int, size: Int64, md5: [UInt8], modified: Timestamp, blobID: String) {
            self.number = number
            self.size = size
            self.md5 = md5
            self.modified = modified
            self.blobID = blobID
        }
    }

    public static let minPartSize: Int64 = 5 * 1024 * 1024
    public static let maxPartNumber = 10_000

    public func createMultipartUpload(bucket: String, key: String, attributes: ObjectAttributes) async throws -> MultipartUpload {
        try StorageNames.validateObject(key)
        let id = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") + FilesystemBlobStore.newID()
        let created = Self.now()
        let upload = MultipartUpload(id: id, bucket: bucket, key: key, attributes: attributes, created: created)
        try await metadata.createMultipartUpload(upload)
        return upload
    }

    public func multipartUpload(_ id: String, bucket: String, key: String) async throws -> MultipartUpload? {
        try await metadata.multipartUpload(id, bucket: bucket, key: key)
    }

    /// Stores a finished part (replacing an earlier upload of the same number).
    public func commitPart(_ upload: MultipartUpload, number: Int, writer part: any BlobWriter) async throws -> UploadedPart {
        guard (1...Self.maxPartNumber).contains(number) else {
            part.abort()
            throw HearthError.invalidArgument("Part number must be an integer between 1 and 10000, inclusive.")
        }
        let info = try await part.finish()
        let now = Self.now()
        let uploaded = UploadedPart(number: number, size: info.size, md5: info.md5, modified: now, blobID: info.id)
        let old: String?
        do {
            old = try await metadata.putPart(uploaded, uploadID: upload.id)
        } catch {
            try? await blobs.delete(info.id)
            throw error
        }
        await reclaimer.reclaim(old.map { [$0] } ?? [])
        return uploaded
    }

    public func parts(_ upload: MultipartUpload) async throws -> [UploadedPart] {
        try await metadata.parts(uploadID: upload.id)
    }

    /// Completes an upload with the listed parts (ascending numbers, ETags matching, every part
    /// but the last at least 5 MiB), as S3 requires.
    public func completeMultipartUpload(_ upload: MultipartUpload, parts chosen: [(number: Int, etag: String)]) async throws -> StorageObject {
        guard !chosen.isEmpty else { throw HearthError.invalidArgument("You must specify at least one part.") }
        let stored = Dictionary(uniqueKeysWithValues: try await parts(upload).map { ($0.number, $0) })
        var selected: [UploadedPart] = []
        var last = 0
        for (number, etag) in chosen {
            guard number > last else { throw HearthError(.invalidArgument, "The list of parts was not in ascending order.", reason: .invalidPartOrder) }
            last = number
            let clean = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            guard let p = stored[number], p.etag == clean else {
                throw HearthError(
                    .invalidArgument, "One or more of the specified parts could not be found or its ETag did not match.", reason: .invalidPart)
            }
            selected.append(p)
        }
        for p in selected.dropLast() where p.size < Self.minPartSize {
            throw HearthError(.invalidArgument, "Your proposed upload is smaller than the minimum allowed size.", reason: .entityTooSmall)
        }
        let out = try beginUpload()
        do {
            for p in selected {
                for try await chunk in blobs.read(p.blobID, range: nil, chunkSize: 1 << 20) { try out.write(chunk) }
            }
        } catch {
            out.abort()
            throw error
        }
        var md5s: [UInt8] = []
        for p in selected { md5s += p.md5 }
        let etag = StorageObject.hex(Array(Insecure.MD5.hash(data: md5s))) + "-\(selected.count)"
        let info = try await out.finish()
        let object = try await install(info, bucket: upload.bucket, name: upload.key, attributes: upload.attributes, etag: etag)
        try await removeUpload(upload)
        return object
    }

    public func abortMultipartUpload(_ upload: MultipartUpload) async throws { try await removeUpload(upload) }

    func removeUpload(_ upload: MultipartUpload) async throws {
        let unreferenced = try await metadata.removeMultipartUpload(upload.id)
        await reclaimer.reclaim(unreferenced)
    }
}
