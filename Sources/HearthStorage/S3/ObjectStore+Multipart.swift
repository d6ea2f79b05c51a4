public import HearthCore
import GRDB
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
    }

    public struct UploadedPart: Sendable, Hashable {
        public var number: Int
        public var size: Int64
        public var md5: [UInt8]
        public var etag: String { StorageObject.hex(md5) }
        public var modified: Timestamp
        var blobID: String
    }

    public static let minPartSize: Int64 = 5 * 1024 * 1024
    public static let maxPartNumber = 10_000

    public func createMultipartUpload(bucket: String, key: String, attributes: ObjectAttributes) async throws -> MultipartUpload {
        try StorageNames.validateObject(key)
        let id = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") + FilesystemBlobStore.newID()
        let created = Self.now()
        let encoded = Self.encodeAttributes(attributes)
        try await writer.write { db in
            try self.requireBucket(db, bucket)
            try db.execute(
                sql: "INSERT INTO storage_multipart(upload_id, bucket, name, attributes, created_us) VALUES (?, ?, ?, ?, ?)",
                arguments: [id, bucket, key, encoded, created.microseconds])
        }
        return MultipartUpload(id: id, bucket: bucket, key: key, attributes: attributes, created: created)
    }

    public func multipartUpload(_ id: String, bucket: String, key: String) async throws -> MultipartUpload? {
        try await writer.read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM storage_multipart WHERE upload_id = ? AND bucket = ? AND name = ?"), arguments: [id, bucket, key]
            ).map { row in
                MultipartUpload(
                    id: id, bucket: bucket, key: key, attributes: Self.decodeAttributes(row["attributes"]),
                    created: Timestamp(microseconds: row["created_us"]))
            }
        }
    }

    /// Stores a finished part (replacing an earlier upload of the same number).
    public func commitPart(_ upload: MultipartUpload, number: Int, writer part: any BlobWriter) async throws -> UploadedPart {
        guard (1...Self.maxPartNumber).contains(number) else {
            part.abort()
            throw HearthError.invalidArgument("Part number must be an integer between 1 and 10000, inclusive.")
        }
        let info = try await part.finish()
        let now = Self.now()
        let old: String?
        do {
            old = try await self.writer.write { db in
                guard try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM storage_multipart WHERE upload_id = ?"), arguments: [upload.id]) != nil else {
                    throw HearthError(.notFound, "The specified multipart upload does not exist.")
                }
                let previous = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT blob_id FROM storage_parts WHERE upload_id = ? AND part_number = ?"), arguments: [upload.id, number])
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO storage_parts(upload_id, part_number, size, md5, blob_id, modified_us)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [upload.id, number, info.size, Data(info.md5), info.id, now.microseconds])
                return previous
            }
        } catch {
            try? await blobs.delete(info.id)
            throw error
        }
        reclaimer.reclaim(old.map { [$0] } ?? [])
        return UploadedPart(number: number, size: info.size, md5: info.md5, modified: now, blobID: info.id)
    }

    public func parts(_ upload: MultipartUpload) async throws -> [UploadedPart] {
        try await writer.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM storage_parts WHERE upload_id = ? ORDER BY part_number"), arguments: [upload.id]).map {
                let md5: Data = $0["md5"]
                return UploadedPart(
                    number: $0["part_number"], size: $0["size"], md5: Array(md5), modified: Timestamp(microseconds: $0["modified_us"]),
                    blobID: $0["blob_id"])
            }
        }
    }

    /// Completes an upload with the listed parts (ascending numbers, ETags matching, every part
    /// but the last at least 5 MiB), as S3 requires.
    public func completeMultipartUpload(_ upload: MultipartUpload, parts chosen: [(number: Int, etag: String)]) async throws -> StorageObject {
        guard !chosen.isEmpty else { throw HearthError.invalidArgument("You must specify at least one part.") }
        let stored = Dictionary(uniqueKeysWithValues: try await parts(upload).map { ($0.number, $0) })
        var selected: [UploadedPart] = []
        var last = 0
        for (number, etag) in chosen {
            guard number > last else { throw HearthError.invalidArgument("InvalidPartOrder: The list of parts was not in ascending order.") }
            last = number
            let clean = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            guard let p = stored[number], p.etag == clean else {
                throw HearthError.invalidArgument("InvalidPart: One or more of the specified parts could not be found or its ETag did not match.")
            }
            selected.append(p)
        }
        for p in selected.dropLast() where p.size < Self.minPartSize {
            throw HearthError.invalidArgument("EntityTooSmall: Your proposed upload is smaller than the minimum allowed size.")
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
        let blobIDs: [String] = try await writer.write { db in
            let ids = try String.fetchAll(db.cachedStatement(sql: "SELECT blob_id FROM storage_parts WHERE upload_id = ?"), arguments: [upload.id])
            try db.execute(sql: "DELETE FROM storage_parts WHERE upload_id = ?", arguments: [upload.id])
            try db.execute(sql: "DELETE FROM storage_multipart WHERE upload_id = ?", arguments: [upload.id])
            return ids
        }
        reclaimer.reclaim(blobIDs)
    }

    static func encodeAttributes(_ a: ObjectAttributes) -> String {
        var m: [(String, JSON)] = []
        func put(_ k: String, _ v: String?) { if let v { m.append((k, .string(v))) } }
        put("contentType", a.contentType)
        put("cacheControl", a.cacheControl)
        put("contentDisposition", a.contentDisposition)
        put("contentEncoding", a.contentEncoding)
        put("contentLanguage", a.contentLanguage)
        m.append(("custom", .object(a.custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        return JSON.object(m).serialized()
    }

    static func decodeAttributes(_ s: String) -> ObjectAttributes {
        guard let j = try? JSON.parse(Array(s.utf8)) else { return ObjectAttributes() }
        var a = ObjectAttributes(
            contentType: j["contentType"]?.stringValue, cacheControl: j["cacheControl"]?.stringValue,
            contentDisposition: j["contentDisposition"]?.stringValue, contentEncoding: j["contentEncoding"]?.stringValue,
            contentLanguage: j["contentLanguage"]?.stringValue)
        for (k, v) in j["custom"]?.objectValue ?? [] { a.custom[k] = v.stringValue }
        return a
    }
}
