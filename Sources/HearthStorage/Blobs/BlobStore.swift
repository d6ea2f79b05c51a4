public import HearthCore

/// What a finished blob is: where it lives, how long it is, and its checksums.
public struct BlobInfo: Sendable, Hashable {
    /// The backend's key for the bytes (never derived from an object name).
    public var id: String
    public var size: Int64
    /// MD5 of the bytes (16 bytes).
    public var md5: [UInt8]
    public var crc32c: UInt32

    public init(id: String, size: Int64, md5: [UInt8], crc32c: UInt32) {
        self.id = id
        self.size = size
        self.md5 = md5
        self.crc32c = crc32c
    }
}

/// Bytes being written. Nothing is visible until ``finish()`` returns; ``abort()`` (or a
/// crash) leaves no trace but a temporary file that the store sweeps at start.
public protocol BlobWriter: AnyObject, Sendable {
    /// Bytes written so far.
    var size: Int64 { get }
    func write(_ bytes: UnsafeRawBufferPointer) throws(HearthError)
    /// Makes the bytes durable and immutable (and, for a remote store, uploads them).
    func finish() async throws -> BlobInfo
    func abort()
}

/// Where object bytes live: the local filesystem by default, an external S3 as the second
/// backend. Blobs are immutable once finished and addressed by opaque ids.
public protocol BlobStore: Sendable {
    func makeWriter() throws(HearthError) -> any BlobWriter
    /// Reads `range` (nil = everything) in chunks of at most `chunkSize` bytes.
    func read(_ id: String, range: Range<Int64>?, chunkSize: Int) -> AsyncThrowingStream<[UInt8], any Error>
    /// Reads `range` into memory at once (for small objects: no stream to set up).
    func readAll(_ id: String, range: Range<Int64>) async throws -> [UInt8]
    func delete(_ id: String) async throws
    /// Deletes many blobs (missing ones are fine); a remote store batches the requests.
    func delete(batch ids: [String]) async throws
    /// Every finished blob id (for sweeping blobs no object references after a crash).
    func allBlobIDs() async throws -> [String]
}

extension BlobStore {
    /// One at a time; every id is tried, the first failure is thrown at the end.
    public func delete(batch ids: [String]) async throws {
        var failure: (any Error)?
        for id in ids {
            do { try await delete(id) } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    public func readAll(_ id: String, range: Range<Int64>) async throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Int(range.count))
        for try await chunk in read(id, range: range, chunkSize: max(1, Int(range.count))) { out += chunk }
        return out
    }
}

extension BlobWriter {
    public func write<C: Collection<UInt8>>(_ bytes: C) throws(HearthError) {
        if let r: Result<Void, HearthError> = bytes.withContiguousStorageIfAvailable({ p in
            do throws(HearthError) { try write(UnsafeRawBufferPointer(p)) } catch { return .failure(error) }
            return .success(())
        }) {
            try r.get()
            return
        }
        let copy = Array(bytes)
        let r: Result<Void, HearthError> = copy.withUnsafeBytes { p in
            do throws(HearthError) { try write(p) } catch { return .failure(error) }
            return .success(())
        }
        try r.get()
    }
}
