public import HearthCore
public import Foundation
import Crypto
import Synchronization
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
final class FileBlobWriter: BlobWriter {
    let store: FilesystemBlobStore
    let id: String
    let tmpPath: String
    let state: Mutex<State>

    struct State {
        var fd: Int32
        var size: Int64 = 0
        var md5 = Insecure.MD5()
        var crc = CRC32C()
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
            var off = 0
            while off < bytes.count {
                let n = sysWrite(s.fd, bytes.baseAddress! + off, bytes.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    let code: ErrorCode = errno == ENOSPC ? .resourceExhausted : .internal
                    return .failure(HearthError(code, "Cannot write the upload to disk (errno \(errno))."))
                }
                off += n
            }
            s.md5.update(bufferPointer: bytes)
            s.crc.update(bytes)
            s.size += Int64(bytes.count)
            return .success(())
        }
        try result.get()
    }

    func finish() async throws -> BlobInfo {
        let result: Result<BlobInfo, HearthError> = state.withLock { s in
            guard !s.done else { return .failure(HearthError(.failedPrecondition, "The upload is already finished.")) }
            s.done = true
            let ok = fsync(s.fd) == 0
            sysClose(s.fd)
            s.fd = -1
            guard ok else {
                unlink(tmpPath)
                return .failure(HearthError(.internal, "Cannot make the upload durable (errno \(errno))."))
            }
            return .success(BlobInfo(id: id, size: s.size, md5: Array(s.md5.finalize()), crc32c: s.crc.value))
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
