public import HearthCore
import Synchronization

/// ``ObjectMetadataStore`` in memory, behind one lock (each call is one critical section, so
/// every call is atomic): for tests, and the reference the store conformance suite holds the
/// other implementations to. Nothing survives the process.
public final class InMemoryObjectMetadataStore: ObjectMetadataStore {
    struct Upload {
        var upload: ObjectStore.MultipartUpload
        var parts: [Int: ObjectStore.UploadedPart] = [:]
    }

    struct State {
        var buckets: [String: Timestamp] = [:]
        var objects: [String: [String: StorageObject]] = [:]
        var uploads: [String: Upload] = [:]
        var sessions: [String: (session: ObjectStore.UploadSession, parts: [ObjectStore.UploadedPart])] = [:]
        var keys: [String: S3AccessKey] = [:]

        func requireBucket(_ name: String) throws(HearthError) {
            guard buckets[name] != nil else { throw .noSuchBucket(name) }
        }

        /// The id if no object and no part refers to it.
        func unreferenced(_ blobID: String) -> String? {
            for rows in objects.values where rows.values.contains(where: { $0.blobID == blobID }) { return nil }
            for upload in uploads.values where upload.parts.values.contains(where: { $0.blobID == blobID }) { return nil }
            for entry in sessions.values where entry.parts.contains(where: { $0.blobID == blobID }) { return nil }
            return blobID
        }

        /// Stores `object` with its generation after `current`'s; the replaced blob if now unreferenced.
        mutating func save(_ object: StorageObject, replacing current: StorageObject?) -> (object: StorageObject, unreferenced: String?) {
            var stored = object
            stored.generation = max(object.generation, (current?.generation ?? 0) + 1)
            objects[stored.bucket, default: [:]][stored.name] = stored
            return (stored, current.flatMap { unreferenced($0.blobID) })
        }
    }

    let state = Mutex(State())

    public init() {}

    public func createBucket(_ name: String, created: Timestamp, ifMissing: Bool) async throws -> ObjectStore.Bucket {
        try state.withLock { s throws(HearthError) in
            if let existing = s.buckets[name] {
                if ifMissing { return ObjectStore.Bucket(name: name, created: existing) }
                throw .bucketExists(name)
            }
            s.buckets[name] = created
            return ObjectStore.Bucket(name: name, created: created)
        }
    }

    public func bucket(_ name: String) async throws -> ObjectStore.Bucket? {
        state.withLock { s in s.buckets[name].map { ObjectStore.Bucket(name: name, created: $0) } }
    }

    public func buckets() async throws -> [ObjectStore.Bucket] {
        state.withLock { s in
            s.buckets.sorted { StorageObject.nameOrder($0.key, $1.key) }.map { ObjectStore.Bucket(name: $0.key, created: $0.value) }
        }
    }

    public func deleteBucket(_ name: String) async throws {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(name)
            guard s.objects[name]?.isEmpty ?? true else { throw .bucketNotEmpty(name) }
            s.buckets[name] = nil
            s.objects[name] = nil
        }
    }

    public func object(_ bucket: String, _ name: String) async throws -> StorageObject? {
        state.withLock { $0.objects[bucket]?[name] }
    }

    public func list(_ bucket: String, _ request: ObjectStore.ListRequest) async throws -> ObjectStore.ListResult {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(bucket)
            let sorted = (s.objects[bucket] ?? [:]).values.sorted { StorageObject.nameOrder($0.name, $1.name) }
            var listing = ObjectListing(request)
            while listing.result == nil {
                let scan = listing.scan
                listing.receive(Array(sorted.lazy.filter { scan.contains($0.name) }.prefix(scan.limit)))
            }
            return listing.result!
        }
    }

    public func putObject(_ object: StorageObject, preconditions: ObjectPreconditions) async throws -> (object: StorageObject, unreferenced: String?) {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(object.bucket)
            let current = s.objects[object.bucket]?[object.name]
            try preconditions.check(current)
            return s.save(object, replacing: current)
        }
    }

    public func updateObject(
        _ bucket: String, _ name: String, patch: ObjectPatch, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> StorageObject {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(bucket)
            guard var o = s.objects[bucket]?[name] else { throw .noSuchObject(bucket, name) }
            try preconditions.check(o)
            o = patch.applied(to: o)
            o.metageneration += 1
            o.updated = time
            s.objects[bucket, default: [:]][name] = o
            return o
        }
    }

    public func copyObject(
        from source: (bucket: String, name: String), to destination: (bucket: String, name: String), attributes: ObjectAttributes?,
        sourcePreconditions: ObjectPreconditions, preconditions: ObjectPreconditions, at time: Timestamp
    ) async throws -> (object: StorageObject, unreferenced: String?) {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(source.bucket)
            try s.requireBucket(destination.bucket)
            guard let src = s.objects[source.bucket]?[source.name] else { throw .noSuchObject(source.bucket, source.name) }
            try sourcePreconditions.check(src)
            let current = s.objects[destination.bucket]?[destination.name]
            try preconditions.check(current)
            return s.save(src.copied(to: destination, attributes: attributes, at: time), replacing: current)
        }
    }

    public func deleteObject(_ bucket: String, _ name: String, preconditions: ObjectPreconditions) async throws -> String? {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(bucket)
            guard let o = s.objects[bucket]?[name] else { throw .noSuchObject(bucket, name) }
            try preconditions.check(o)
            s.objects[bucket]?[name] = nil
            return s.unreferenced(o.blobID)
        }
    }

    public func deleteObjects(_ bucket: String, _ names: [String]) async throws -> (deleted: [String], unreferenced: [String]) {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(bucket)
            var deleted: [String] = []
            var blobIDs: [String] = []
            for name in names {
                guard let o = s.objects[bucket]?.removeValue(forKey: name) else { continue }
                deleted.append(name)
                blobIDs.append(o.blobID)
            }
            var seen = Set<String>()
            let orphans = blobIDs.filter { seen.insert($0).inserted && s.unreferenced($0) != nil }
            return (deleted, orphans)
        }
    }

    public func unreferencedBlobs(_ blobIDs: [String]) async throws -> [String] {
        state.withLock { s in blobIDs.filter { s.unreferenced($0) != nil } }
    }

    public func createMultipartUpload(_ upload: ObjectStore.MultipartUpload) async throws {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(upload.bucket)
            s.uploads[upload.id] = Upload(upload: upload)
        }
    }

    public func multipartUpload(_ id: String, bucket: String, key: String) async throws -> ObjectStore.MultipartUpload? {
        state.withLock { s in s.uploads[id].map(\.upload).flatMap { $0.bucket == bucket && $0.key == key ? $0 : nil } }
    }

    public func putPart(_ part: ObjectStore.UploadedPart, uploadID: String) async throws -> String? {
        try state.withLock { s throws(HearthError) in
            guard s.uploads[uploadID] != nil else { throw .noSuchUpload }
            return s.uploads[uploadID]?.parts.updateValue(part, forKey: part.number)?.blobID
        }
    }

    public func parts(uploadID: String) async throws -> [ObjectStore.UploadedPart] {
        state.withLock { s in s.uploads[uploadID].map { $0.parts.values.sorted { $0.number < $1.number } } ?? s.sessions[uploadID]?.parts ?? [] }
    }

    public func removeMultipartUpload(_ id: String) async throws -> [String] {
        state.withLock { s in
            (s.uploads.removeValue(forKey: id)?.parts.values.sorted { $0.number < $1.number } ?? []).map(\.blobID)
        }
    }

    public func createUploadSession(_ session: ObjectStore.UploadSession) async throws {
        try state.withLock { s throws(HearthError) in
            try s.requireBucket(session.bucket)
            s.sessions[session.id] = (session, [])
        }
    }

    public func uploadSession(_ id: String) async throws -> ObjectStore.UploadSession? {
        state.withLock { $0.sessions[id]?.session }
    }

    public func appendUploadPart(_ id: String, at offset: Int64, _ part: ObjectStore.UploadedPart) async throws -> Bool {
        state.withLock { s in
            guard var entry = s.sessions[id], entry.session.state == .active, entry.session.received == offset else { return false }
            var part = part
            part.number = entry.session.partCount + 1
            entry.parts.append(part)
            entry.session.received += part.size
            entry.session.partCount += 1
            entry.session.lastUsed = part.modified
            s.sessions[id] = entry
            return true
        }
    }

    public func endUploadSession(_ id: String, _ end: ObjectStore.UploadSession.State, at time: Timestamp) async throws -> [String]? {
        state.withLock { s in
            guard var entry = s.sessions[id], entry.session.state == .active else { return nil }
            let blobs = entry.parts.map(\.blobID)
            entry.session.state = end
            entry.session.lastUsed = time
            entry.parts = []
            s.sessions[id] = entry
            return blobs
        }
    }

    public func expireUploadSessions(unusedSince cutoff: Timestamp) async throws -> [String] {
        state.withLock { s in
            let stale = s.sessions.values.filter { $0.session.lastUsed.microseconds < cutoff.microseconds }
            for entry in stale { s.sessions[entry.session.id] = nil }
            return stale.flatMap { $0.parts.map(\.blobID) }
        }
    }

    public func addAccessKey(_ key: S3AccessKey) async throws {
        state.withLock { $0.keys[key.id] = key }
    }

    public func accessKeys() async throws -> [S3AccessKey] {
        state.withLock { s in s.keys.values.sorted { ($0.created.microseconds, $0.id) < ($1.created.microseconds, $1.id) } }
    }

    public func accessKey(_ id: String) async throws -> S3AccessKey? {
        state.withLock { $0.keys[id] }
    }

    public func revokeAccessKey(_ id: String) async throws -> Bool {
        state.withLock { s in
            guard s.keys[id] != nil else { return false }
            s.keys[id]?.revoked = true
            return true
        }
    }
}
