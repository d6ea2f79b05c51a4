import Crypto
import Foundation
import HearthCore
import Testing

@testable import HearthStorage

/// The filesystem writer hashes large uploads on a second thread, block by block; the result
/// must be exactly the checksums of the bytes, whatever the chunking, and aborting or failing
/// mid-way must leave nothing behind.
struct BlobWriterTests {
    static func randomBytes(_ n: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        var out = [UInt8](repeating: 0, count: n)
        for i in stride(from: 0, to: n, by: 8) {
            let r = rng.next() as UInt64
            withUnsafeBytes(of: r) { raw in for j in 0..<min(8, n - i) { out[i + j] = raw[j] } }
        }
        return out
    }

    @Test(arguments: [0, 1, 4096, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 7 * (1 << 20) + 12_345])
    func checksumsMatchWholeBufferHashes(size: Int) async throws {
        #expect(FileBlobWriter.blockSize == 1 << 20, "the sizes above straddle block boundaries")
        let t = try TempStore()
        let data = Self.randomBytes(size)
        let w = try t.blobs.makeWriter()
        var rng = SystemRandomNumberGenerator()
        var i = 0
        while i < data.count {
            let n = Int.random(in: 1...300_000, using: &rng)
            try w.write(data[i..<min(data.count, i + n)])
            i += n
            #expect(w.size == Int64(min(i, data.count)))
        }
        let info = try await w.finish()
        #expect(info.size == Int64(size))
        #expect(info.md5 == Array(Insecure.MD5.hash(data: data)))
        #expect(info.crc32c == data.withUnsafeBytes { CRC32C.softwareChecksum($0) })
        var back: [UInt8] = []
        for try await chunk in t.blobs.read(info.id, range: nil, chunkSize: 1 << 20) { back += chunk }
        #expect(back == data)
        #expect(t.files("tmp").isEmpty)
    }

    /// Large uploads with direct I/O (where the temporary directory's file system takes it),
    /// without it, and on tmpfs (which may refuse it): the same bytes and checksums either way,
    /// including the tail that is not a whole block and a write that lands exactly on the end
    /// of a block.
    @Test(arguments: [(false, true), (false, false), (true, true)])
    func largeUploadsOnEveryWritePath(onTmpfs: Bool, directIO: Bool) async throws {
        let shm = URL(fileURLWithPath: "/dev/shm")
        if onTmpfs && !FileManager.default.fileExists(atPath: shm.path) { return }
        let t = try onTmpfs ? TempStore(parent: shm, directIO: directIO) : TempStore(directIO: directIO)
        for size in [3 * FileBlobWriter.blockSize, 2 * FileBlobWriter.blockSize + 4097] {
            let data = Self.randomBytes(size)
            let w = try t.blobs.makeWriter()
            try w.write(data[0..<FileBlobWriter.blockSize])
            try w.write(data[FileBlobWriter.blockSize..<(FileBlobWriter.blockSize + 10)])
            try w.write(data[(FileBlobWriter.blockSize + 10)...])
            let info = try await w.finish()
            #expect(info.size == Int64(size))
            #expect(info.md5 == Array(Insecure.MD5.hash(data: data)))
            #expect(info.crc32c == CRC32C.checksum(data))
            #expect(try await t.blobs.readAll(info.id, range: 0..<Int64(size)) == data)
        }
        #expect(t.files("tmp").isEmpty)
    }

    @Test func abortAfterSeveralBlocksLeavesNothing() async throws {
        let t = try TempStore()
        let w = try t.blobs.makeWriter()
        let block = Self.randomBytes(FileBlobWriter.blockSize)
        for _ in 0..<6 { try w.write(block) }
        w.abort()
        #expect(t.files("tmp").isEmpty)
        #expect(t.files("blobs").isEmpty)
        #expect(throws: HearthError.self) { try w.write([1]) }
        await #expect(throws: HearthError.self) { _ = try await w.finish() }
    }

    @Test func writesAfterFinishAreRefused() async throws {
        let t = try TempStore()
        let w = try t.blobs.makeWriter()
        try w.write(Self.randomBytes(3 * FileBlobWriter.blockSize))
        _ = try await w.finish()
        #expect(throws: HearthError.self) { try w.write([1]) }
    }

    @Test func manyLargeUploadsAtOnce() async throws {
        let t = try TempStore()
        let datas = (0..<6).map { _ in Self.randomBytes(3 * FileBlobWriter.blockSize + 777) }
        let blobs = t.blobs
        let infos = try await withThrowingTaskGroup(of: (Int, BlobInfo).self) { group in
            for (k, data) in datas.enumerated() {
                group.addTask {
                    let w = try blobs.makeWriter()
                    var i = 0
                    while i < data.count {
                        try w.write(data[i..<min(data.count, i + 65_536)])
                        i += 65_536
                    }
                    return (k, try await w.finish())
                }
            }
            var out: [Int: BlobInfo] = [:]
            for try await (k, info) in group { out[k] = info }
            return out
        }
        for (k, data) in datas.enumerated() {
            #expect(infos[k]?.md5 == Array(Insecure.MD5.hash(data: data)))
            #expect(infos[k]?.crc32c == CRC32C.checksum(data))
        }
    }

    @Test func readAllMatchesTheStreamForRanges() async throws {
        let t = try TempStore()
        try await t.store.createBucket("b-1")
        let data = Self.randomBytes(100_000)
        let o = try await t.store.put("b-1", "k", data)
        #expect(try await t.store.contents(o) == data)
        for range in [Int64(0)..<0, 0..<1, 5..<4096, 99_000..<100_000, 0..<100_000] {
            var streamed: [UInt8] = []
            for try await chunk in t.store.read(o, range: range, chunkSize: 777) { streamed += chunk }
            #expect(try await t.store.contents(o, range: range) == streamed)
            #expect(streamed == Array(data[Int(range.lowerBound)..<Int(range.upperBound)]))
        }
        try await t.store.delete("b-1", "k")
        await t.store.settleReclaims()
        await #expect(throws: HearthError.self) { _ = try await t.store.contents(o) }
    }
}
