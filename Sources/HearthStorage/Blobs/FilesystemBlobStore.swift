public import HearthCore
public import Foundation
import Crypto
import Synchronization
import Dispatch
import HearthCShims
#if canImport(Glibc)
import Glibc
private func sysClose(_ fd: Int32) { _ = Glibc.close(fd) }
#elseif canImport(Darwin)
import Darwin
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
    /// Whether large uploads' full blocks may be written with direct I/O (see ``BlockPipeline``).
    let directIO: Bool

    /// `directIO: false` keeps every write in the page cache (tests use it to cover that path
    /// on file systems that would accept direct I/O). `sharedKeepingTemporaryFilesFor`: other
    /// running servers may write under the same root (replicas sharing a data directory), so the
    /// start removes only temporary files left untouched that long — younger ones may be another
    /// server's upload in flight; nil (one server) removes them all.
    public init(root: URL, directIO: Bool = true, sharedKeepingTemporaryFilesFor shared: TimeInterval? = nil) throws(HearthError) {
        self.root = root
        self.directIO = directIO
        blobs = root.appendingPathComponent("blobs")
        blobsPath = blobs.path
        tmp = root.appendingPathComponent("tmp")
        do {
            try FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            // Temporary files of a previous run are uploads that never finished.
            let cutoff = shared.map { Date().addingTimeInterval(-$0) }
            for f in try FileManager.default.contentsOfDirectory(atPath: tmp.path) {
                let file = tmp.appendingPathComponent(f)
                if let cutoff, let modified = try? file.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate,
                    modified > cutoff
                {
                    continue
                }
                try? FileManager.default.removeItem(at: file)
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
/// Bytes are gathered into blocks of ``blockSize``. An upload that never fills a block (most
/// small objects) is written, hashed and fsynced when it finishes. Once a block fills, the
/// writer hands its blocks to a ``BlockPipeline``: the caller's thread copies received bytes
/// into the block, takes its CRC-32C (hardware, several GB/s) and writes it — with direct I/O
/// where the file system allows it — while its MD5, which alone runs at about the disk's rate,
/// is taken on a thread of its own.
final class FileBlobWriter: BlobWriter {
    static let blockSize = 1 << 20

    let store: FilesystemBlobStore
    let id: String
    let tmpPath: String
    let state: Mutex<State>

    struct State {
        var fd: Int32
        var size: Int64 = 0
        /// Received bytes of an upload that has not filled a block yet.
        var pending: [UInt8] = []
        /// The block being filled, once the upload has filled one.
        var block: AlignedBlock?
        /// Bytes written to the file so far (whole blocks).
        var written: Int64 = 0
        var crc = CRC32C()
        /// Created when the first full block is ready.
        var pipeline: BlockPipeline?
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
            if let failure = s.pipeline?.failure { return .failure(failure) }
            var offset = 0
            if s.block == nil {
                // Below one block: gather in a plain array (no 1 MiB buffer for a small object).
                let n = min(bytes.count, Self.blockSize - s.pending.count)
                if n < Self.blockSize - s.pending.count {
                    s.pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
                    s.size += Int64(bytes.count)
                    return .success(())
                }
                let pipeline = BlockPipeline(fd: s.fd, direct: store.directIO)
                let block = pipeline.freshBlock()
                s.pending.withUnsafeBytes { block.append($0) }
                s.pending = []
                s.pipeline = pipeline
                s.block = block
            }
            while offset < bytes.count {
                let block = s.block!
                let n = min(bytes.count - offset, Self.blockSize - block.count)
                block.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
                offset += n
                guard block.count == Self.blockSize else { continue }
                s.crc.update(block.bytes)
                s.block = s.pipeline!.submit(block, at: s.written)
                s.written += Int64(Self.blockSize)
            }
            s.size += Int64(bytes.count)
            return .success(())
        }
        try result.get()
    }

    /// Writes all of `bytes` at `offset`; the error to report, if any.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> HearthError? {
        var off = 0
        while off < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + off, bytes.count - off, off_t(offset) + off_t(off))
            if n < 0 {
                if errno == EINTR { continue }
                let code: ErrorCode = errno == ENOSPC ? .resourceExhausted : .internal
                return HearthError(code, "Cannot write the upload to disk (errno \(errno)).")
            }
            off += n
        }
        return nil
    }

    func finish() async throws -> BlobInfo {
        let result: Result<BlobInfo, HearthError> = state.withLock { s in
            guard !s.done else { return .failure(HearthError(.failedPrecondition, "The upload is already finished.")) }
            s.done = true
            if s.block != nil, s.pipeline?.direct == true {
                // The tail is not a whole block: it goes through the page cache.
                _ = hearth_set_direct_io(s.fd, 0)
            }
            let fd = s.fd, written = s.written, pipeline = s.pipeline
            let finished: (UnsafeRawBufferPointer) -> Result<[UInt8], HearthError> = { tail in
                var failure = pipeline?.failure ?? Self.writeAll(fd, tail, at: written)
                if failure == nil && fsync(fd) != 0 {
                    failure = HearthError(.internal, "Cannot make the upload durable (errno \(errno)).")
                }
                if let failure { return .failure(failure) }
                return .success(pipeline.map { $0.finalize(tail) } ?? Array(Insecure.MD5.hash(data: tail)))
            }
            let outcome: Result<[UInt8], HearthError>
            if let block = s.block {
                outcome = finished(block.bytes)
                s.crc.update(block.bytes)
            } else {
                outcome = s.pending.withUnsafeBytes { finished($0) }
                s.crc.update(s.pending)
            }
            sysClose(s.fd)
            s.fd = -1
            s.pending = []
            s.block = nil
            switch outcome {
            case .failure(let failure):
                unlink(tmpPath)
                return .failure(failure)
            case .success(let md5):
                return .success(BlobInfo(id: id, size: s.size, md5: md5, crc32c: s.crc.value))
            }
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
            s.block = nil
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

/// One block of a large upload: ``FileBlobWriter/blockSize`` bytes of page-aligned memory, as
/// direct I/O needs. The filling thread owns it until it is submitted; then the pipeline's
/// writer and hasher only read it, and whichever finishes last empties it for reuse.
final class AlignedBlock: @unchecked Sendable {
    static let alignment = 4096

    let base: UnsafeMutableRawPointer
    private(set) var count = 0

    init() {
        base = .allocate(byteCount: FileBlobWriter.blockSize, alignment: Self.alignment)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Appends `source`, which must fit.
    func append(_ source: UnsafeRawBufferPointer) {
        precondition(count + source.count <= FileBlobWriter.blockSize)
        guard let from = source.baseAddress, source.count > 0 else { return }
        (base + count).copyMemory(from: from, byteCount: source.count)
        count += source.count
    }

    func reset() { count = 0 }
}

/// What happens to a large upload's full blocks: the caller writes each to the file in turn,
/// and a serial dispatch queue of its own (not the Swift concurrency pool, whose threads the
/// uploads themselves run on) takes their MD5 in order, in parallel with the caller receiving
/// the next ones. MD5 runs at about a disk's speed on one core, so it is the one job worth a
/// thread of its own; writing on the caller's thread keeps the wakeups that would preempt the
/// hasher down to one per block.
///
/// Blocks are written with direct I/O (`O_DIRECT`) when the file system accepts it: the bytes
/// go from the block to the device without a copy into the page cache, so a large upload
/// costs neither the copy nor the page-cache churn and leaves the cache to hot small objects
/// (a large object is read back from disk). Where direct I/O is refused (tmpfs, other
/// platforms) the blocks go through the page cache with writeback started at once, so the
/// final fsync has little left to do.
///
/// At most ``blocksInFlight`` blocks wait for the hasher; a caller submitting one more waits.
/// Hashed blocks are kept for reuse, so a long upload allocates a few blocks, not one per
/// megabyte.
final class BlockPipeline: Sendable {
    static let blocksInFlight = 4

    let fd: Int32
    /// Whether the blocks are written with direct I/O.
    let direct: Bool
    let hashQueue = DispatchQueue(label: "hearth.storage.md5")
    let slots = DispatchSemaphore(value: blocksInFlight)
    let md5 = Mutex(MD5Stream())
    let spare = Mutex<[AlignedBlock]>([])
    let firstFailure = Mutex<HearthError?>(nil)

    /// `direct`: try direct I/O (it is used only if the file system accepts it).
    init(fd: Int32, direct: Bool) {
        self.fd = fd
        self.direct = direct && hearth_set_direct_io(fd, 1) == 0
    }

    /// The first write error, if any (later blocks are then skipped).
    var failure: HearthError? { firstFailure.withLock { $0 } }

    func freshBlock() -> AlignedBlock { spare.withLock { $0.popLast() } ?? AlignedBlock() }

    /// Writes a full `block` to the file at `offset`, queues it for the hash, and returns an
    /// empty block to fill next.
    func submit(_ block: AlignedBlock, at offset: Int64) -> AlignedBlock {
        if failure == nil {
            var error = FileBlobWriter.writeAll(fd, block.bytes, at: offset)
            if error != nil && direct {
                // Direct I/O can still be refused for one write (EINVAL): once more through the cache.
                _ = hearth_set_direct_io(fd, 0)
                error = FileBlobWriter.writeAll(fd, block.bytes, at: offset)
                _ = hearth_set_direct_io(fd, 1)
            }
            if let error {
                firstFailure.withLock { if $0 == nil { $0 = error } }
            } else if !direct {
                _ = hearth_start_writeback(fd, offset, Int64(block.count))
            }
        }
        slots.wait()
        hashQueue.async { [self] in
            md5.withLock { $0.update(block.bytes) }
            block.reset()
            spare.withLock { $0.append(block) }
            slots.signal()
        }
        return freshBlock()
    }

    /// Hashes `tail` after the submitted blocks and returns the digest.
    func finalize(_ tail: UnsafeRawBufferPointer) -> [UInt8] {
        hashQueue.sync {}
        return md5.withLock { h in
            h.update(tail)
            return h.finalize()
        }
    }
}
