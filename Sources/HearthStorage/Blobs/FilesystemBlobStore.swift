public import HearthCore
public import Foundation
import Crypto
import Synchronization
import Dispatch
import HearthCShims
#if canImport(Glibc)
import Glibc
private func sysWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { Glibc.write(fd, p, n) }
private func sysClose(_ fd: Int32) { _ = Glibc.close(fd) }
#elseif canImport(Darwin)
import Darwin
private func sysWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { Darwin.write(fd, p, n) }
private func sysClose(_ fd: Int32) { _ = Darwin.close(fd) }
#endif

/// Blobs as files under `root`: `blobs/ab/<id>` for finished blobs, `tmp/<id>` while
/// writing. A blob is written to its temporary file, fsynced, renamed into place and its
/// directory fsynced — so after a crash it is either wholly there or not at all. Ids are
/// random, so no object name ever becomes a file path.
public final class FilesystemBlobStore: BlobStore {
    public let root: URL
    let blobs: URL
    /// `blobs.path`, for building blob paths without URL work on every read.
    let blobsPath: String
    let tmp: URL

    public init(root: URL) throws(HearthError) {
        self.root = root
        blobs = root.appendingPathComponent("blobs")
        blobsPath = blobs.path
        tmp = root.appendingPathComponent("tmp")
        do {
            try FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            // Temporary files of a previous run are uploads that never finished.
            for f in try FileManager.default.contentsOfDirectory(atPath: tmp.path) {
                try? FileManager.default.removeItem(at: tmp.appendingPathComponent(f))
            }
        } catch {
            throw HearthError(.failedPrecondition, "Cannot prepare the blob directory \(root.path): \(error.localizedDescription)")
        }
    }

    public static func newID() -> String {
        // 130 random bits from two draws (each draw is a getrandom call), 5 bits per character.
        var rng = SystemRandomNumberGenerator()
        var a = rng.next() as UInt64, b = rng.next() as UInt64
        return String(unsafeUninitializedCapacity: 26) { out in
            for i in 0..<26 {
                let source = i < 13 ? a : b
                out[i] = alphabet[Int(source & 31)]
                if i < 13 { a >>= 5 } else { b >>= 5 }
            }
            return 26
        }
    }

    static let alphabet = Array("0123456789abcdefghijklmnopqrstuv".utf8)

    /// `blobs/<first two characters>/<id>`; ids are validated so they cannot name anything else.
    func path(_ id: String) throws(HearthError) -> String {
        guard id.utf8.count == 26, id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 118) }) else {
            throw HearthError(.internal, "Invalid blob id.")
        }
        return "\(blobsPath)/\(id.prefix(2))/\(id)"
    }

    public func makeWriter() throws(HearthError) -> any BlobWriter { try makeFileWriter() }

    func makeFileWriter() throws(HearthError) -> FileBlobWriter {
        let id = Self.newID()
        let tmpPath = tmp.appendingPathComponent(id).path
        let fd = open(tmpPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HearthError(.internal, "Cannot create a temporary blob file (errno \(errno)).") }
        return FileBlobWriter(store: self, id: id, fd: fd, tmpPath: tmpPath)
    }

    /// Reads on demand: each chunk is read from disk only when the consumer asks for it, so a
    /// slow client holds at most one chunk in memory.
    public func read(_ id: String, range: Range<Int64>?, chunkSize: Int) -> AsyncThrowingStream<[UInt8], any Error> {
        let path: String
        do { path = try self.path(id) } catch { return AsyncThrowingStream { $0.finish(throwing: error) } }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return AsyncThrowingStream { $0.finish(throwing: HearthError(.notFound, "The object's bytes are missing.")) } }
        let reader = ChunkReader(fd: fd, offset: range?.lowerBound ?? 0, end: range?.upperBound ?? Int64.max, chunk: max(1, chunkSize))
        return AsyncThrowingStream(unfolding: { try reader.next() })
    }

    /// One open and as many `pread`s as it takes (one, for a small object); a file shorter
    /// than `range` gives what there is, as the stream does.
    public func readAll(_ id: String, range: Range<Int64>) throws(HearthError) -> [UInt8] {
        let path = try self.path(id)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HearthError(.notFound, "The object's bytes are missing.") }
        defer { sysClose(fd) }
        let want = Int(range.count)
        var failed: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: want) { buffer, initialized in
            var got = 0
            while got < want {
                let n = pread(fd, buffer.baseAddress! + got, want - got, off_t(range.lowerBound) + off_t(got))
                if n < 0 {
                    if errno == EINTR { continue }
                    failed = errno
                    break
                }
                if n == 0 { break }
                got += n
            }
            initialized = got
        }
        if failed != 0 { throw HearthError(.internal, "Read failed (errno \(failed)).") }
        return bytes
    }

    public func delete(_ id: String) throws(HearthError) {
        let p = try path(id)
        if unlink(p) != 0 && errno != ENOENT { throw HearthError(.internal, "Cannot delete blob \(id) (errno \(errno)).") }
    }

    public func allBlobIDs() throws(HearthError) -> [String] {
        var ids: [String] = []
        let fm = FileManager.default
        guard let shards = try? fm.contentsOfDirectory(atPath: blobs.path) else { return [] }
        for s in shards {
            for f in (try? fm.contentsOfDirectory(atPath: blobs.appendingPathComponent(s).path)) ?? [] { ids.append(f) }
        }
        return ids
    }

    /// Renames a finished temporary file into place and makes the rename durable.
    func install(_ id: String, from tmpPath: String) throws(HearthError) {
        let final = try path(id)
        let dir = (final as NSString).deletingLastPathComponent
        if mkdir(dir, 0o700) != 0 && errno != EEXIST { throw HearthError(.internal, "Cannot create \(dir) (errno \(errno)).") }
        guard rename(tmpPath, final) == 0 else { throw HearthError(.internal, "Cannot install blob \(id) (errno \(errno)).") }
        let dfd = open(dir, O_RDONLY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            _ = close(dfd)
        }
    }
}

/// Sequential `pread`s of one open file, pulled by one producer task.
final class ChunkReader: Sendable {
    struct State {
        var fd: Int32
        var offset: Int64
    }

    let state: Mutex<State>
    let end: Int64
    let chunk: Int

    init(fd: Int32, offset: Int64, end: Int64, chunk: Int) {
        state = Mutex(State(fd: fd, offset: offset))
        self.end = end
        self.chunk = chunk
    }

    func next() throws(HearthError) -> [UInt8]? {
        let r: Result<[UInt8]?, HearthError> = state.withLock { s in
            guard s.fd >= 0 else { return .success(nil) }
            let want = Int(min(Int64(chunk), end - s.offset))
            if want <= 0 {
                sysClose(s.fd)
                s.fd = -1
                return .success(nil)
            }
            var buffer = [UInt8](repeating: 0, count: want)
            let fd = s.fd, offset = s.offset
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            if n < 0 { return .failure(HearthError(.internal, "Read failed (errno \(errno)).")) }
            if n == 0 {
                sysClose(s.fd)
                s.fd = -1
                return .success(nil)
            }
            s.offset += Int64(n)
            if n < want { buffer.removeLast(want - n) }
            return .success(buffer)
        }
        return try r.get()
    }

    func close() {
        state.withLock { s in
            if s.fd >= 0 { sysClose(s.fd) }
            s.fd = -1
        }
    }

    deinit { close() }
}

/// Appends to a temporary file, hashing as it goes.
///
/// Bytes are gathered into blocks of ``blockSize``. Each full block is written to the file and
/// its CRC-32C taken on the caller's thread, and its MD5 is computed on a second thread
/// (``BlockHasher``) while the caller goes on receiving and writing — MD5 alone runs at about
/// the disk's rate, so hashing in line would halve a large upload's speed. At most
/// ``BlockHasher/blocksInFlight`` blocks wait for the hasher (bounded memory). Writeback of
/// each block is started at once, so the final fsync has little left to do. An upload that
/// never fills a block (most small objects) is written and hashed in line when it finishes.
final class FileBlobWriter: BlobWriter {
    static let blockSize = 1 << 20

    let store: FilesystemBlobStore
    let id: String
    let tmpPath: String
    let state: Mutex<State>

    struct State {
        var fd: Int32
        var size: Int64 = 0
        /// Received bytes not yet written to the file (less than a block, between writes).
        var pending: [UInt8] = []
        /// Bytes written to the file so far.
        var written: Int64 = 0
        var crc = CRC32C()
        /// Created when the first full block is written.
        var hasher: BlockHasher?
        var done = false
    }

    init(store: FilesystemBlobStore, id: String, fd: Int32, tmpPath: String) {
        self.store = store
        self.id = id
        self.tmpPath = tmpPath
        state = Mutex(State(fd: fd))
    }

    var size: Int64 { state.withLock { $0.size } }

    func write(_ bytes: UnsafeRawBufferPointer) throws(HearthError) {
        let result: Result<Void, HearthError> = state.withLock { s in
            guard !s.done else { return .failure(HearthError(.failedPrecondition, "The upload is already finished.")) }
            var offset = 0
            while offset < bytes.count {
                let n = min(bytes.count - offset, Self.blockSize - s.pending.count)
                if s.pending.count + n == Self.blockSize && s.pending.capacity < Self.blockSize { s.pending.reserveCapacity(Self.blockSize) }
                s.pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
                offset += n
                guard s.pending.count == Self.blockSize else { continue }
                var block: [UInt8] = []
                swap(&block, &s.pending)
                if let e = Self.writeAll(s.fd, block) { return .failure(e) }
                s.crc.update(block)
                _ = hearth_start_writeback(s.fd, s.written, Int64(block.count))
                s.written += Int64(block.count)
                let hasher = s.hasher ?? BlockHasher()
                s.hasher = hasher
                s.pending = hasher.submit(block)
            }
            s.size += Int64(bytes.count)
            return .success(())
        }
        try result.get()
    }

    /// Writes all of `block` at the file's current offset; the error to report, if any.
    static func writeAll(_ fd: Int32, _ block: [UInt8]) -> HearthError? {
        block.withUnsafeBytes { bytes -> HearthError? in
            var off = 0
            while off < bytes.count {
                let n = sysWrite(fd, bytes.baseAddress! + off, bytes.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    let code: ErrorCode = errno == ENOSPC ? .resourceExhausted : .internal
                    return HearthError(code, "Cannot write the upload to disk (errno \(errno)).")
                }
                off += n
            }
            return nil
        }
    }

    func finish() async throws -> BlobInfo {
        let result: Result<BlobInfo, HearthError> = state.withLock { s in
            guard !s.done else { return .failure(HearthError(.failedPrecondition, "The upload is already finished.")) }
            s.done = true
            let tail = s.pending
            s.pending = []
            var failure = Self.writeAll(s.fd, tail)
            if failure == nil && fsync(s.fd) != 0 {
                failure = HearthError(.internal, "Cannot make the upload durable (errno \(errno)).")
            }
            sysClose(s.fd)
            s.fd = -1
            if let failure {
                unlink(tmpPath)
                return .failure(failure)
            }
            s.crc.update(tail)
            // The hasher finished its blocks while the fsync ran (or finishes them now).
            let md5 = s.hasher.map { $0.finalize(tail) } ?? Array(Insecure.MD5.hash(data: tail))
            return .success(BlobInfo(id: id, size: s.size, md5: md5, crc32c: s.crc.value))
        }
        let info = try result.get()
        do {
            try store.install(id, from: tmpPath)
        } catch {
            unlink(tmpPath)
            throw error
        }
        return info
    }

    func abort() {
        state.withLock { s in
            guard !s.done else { return }
            s.done = true
            s.pending = []
            sysClose(s.fd)
            s.fd = -1
            unlink(tmpPath)
        }
    }

    deinit {
        // A writer dropped without finish or abort leaves no partial blob.
        abort()
    }
}

/// MD5 of a large upload's blocks, in order, on a thread of its own: a serial dispatch queue
/// (not the Swift concurrency pool, whose threads the uploads themselves run on). A caller
/// submitting a block waits only when ``blocksInFlight`` blocks are already queued; finished
/// blocks' buffers are handed back for reuse, so a long upload allocates a few blocks, not one
/// per megabyte.
final class BlockHasher: Sendable {
    static let blocksInFlight = 4

    let queue = DispatchQueue(label: "hearth.storage.md5")
    let slots = DispatchSemaphore(value: blocksInFlight)
    let md5 = Mutex(Insecure.MD5())
    /// Emptied buffers of hashed blocks, ready to be filled again.
    let spare = Mutex<[[UInt8]]>([])

    /// Queues `block` for hashing and returns an empty buffer to gather the next one in.
    func submit(_ block: consuming [UInt8]) -> [UInt8] {
        slots.wait()
        let box = Handoff(block)
        queue.async { [self] in
            var bytes = box.take()
            bytes.withUnsafeBytes { p in md5.withLock { $0.update(bufferPointer: p) } }
            bytes.removeAll(keepingCapacity: true)
            spare.withLock { $0.append(bytes) }
            slots.signal()
        }
        if let buffer = spare.withLock({ $0.popLast() }) { return buffer }
        var fresh: [UInt8] = []
        fresh.reserveCapacity(FileBlobWriter.blockSize)
        return fresh
    }

    /// A block on its way to the hasher; taking it out leaves the hasher the only owner of
    /// its buffer, so emptying it for reuse keeps the allocation.
    final class Handoff: Sendable {
        let bytes: Mutex<[UInt8]>
        init(_ bytes: consuming [UInt8]) { self.bytes = Mutex(bytes) }
        func take() -> [UInt8] {
            bytes.withLock { b in
                var out: [UInt8] = []
                swap(&out, &b)
                return out
            }
        }
    }

    /// Waits for the queued blocks, hashes `tail` after them and returns the digest.
    func finalize(_ tail: [UInt8]) -> [UInt8] {
        queue.sync {}
        return md5.withLock { h in
            tail.withUnsafeBytes { h.update(bufferPointer: $0) }
            return Array(h.finalize())
        }
    }
}
