import AsyncHTTPClient
import Crypto
import Foundation
import HearthStorage
import NIOCore
import NIOHTTP1

/// `hearth bench --phases storage`: large objects through Firebase Storage v0 and S3 next to
/// the limit — copying the same bytes on the same disk with the same durability (write,
/// fsync) — and small-object operations per second.
struct StorageBench {
    let load: Load
    let dir: String
    /// The server's object store (for a signing key).
    let objects: ObjectStore
    /// A minimal Hummingbird route: the HTTP stack's own rate, measured by the same load generator.
    let pingPort: Int
    static let largeSize = 100 * 1024 * 1024
    static let runs = 5

    func run(storagePort: Int, s3Port: Int) async throws {
        FileHandle.standardError.write(Data("  preparing 100 MiB of random bytes…\n".utf8))
        // xorshift64* from one random seed: incompressible enough for a disk and a hash, and
        // quick (a system random draw per 8 bytes took longer than the measurements).
        var x = UInt64.random(in: 1...UInt64.max)
        let bytes = [UInt8](unsafeUninitializedCapacity: Self.largeSize) { out, count in
            let words = UnsafeMutableRawBufferPointer(out).bindMemory(to: UInt64.self)
            for i in 0..<words.count {
                x ^= x >> 12
                x ^= x << 25
                x ^= x >> 27
                words[i] = x &* 0x2545_F491_4F6C_DD1D
            }
            count = Self.largeSize
        }
        let source = dir + "/storage-bench-source.bin"
        _ = FileManager.default.createFile(atPath: source, contents: Data(bytes))
        let large = ByteBuffer(bytes: bytes)

        // Uploads and the disk copy take turns, round after round, so that all of them meet the
        // same disk: a cloud disk's burst budget or the host's memory can change its speed
        // within seconds, and a baseline taken before the uploads would then compare unlike
        // with like.
        let v0 = "http://127.0.0.1:\(storagePort)/v0/b/demo-hearth.appspot.com/o"
        let s3 = "http://127.0.0.1:\(s3Port)/storage-bench"
        _ = try await load.once(.PUT, s3, nil)
        var copy: [Double] = [], v0Up: [Sample] = [], v0Resumable: [Sample] = [], s3Up: [Sample] = []
        for _ in 0..<Self.runs {
            copy.append(try Self.diskCopy(from: source, to: dir + "/storage-bench-copy.bin"))
            v0Up.append(try await Sample.measure { try await self.timed(.POST, "\(v0)?name=bench%2Flarge.bin", large, expect: 200) })
            v0Resumable.append(try await Sample.measure { try await self.resumable(v0, name: "bench%2Fresumable.bin", large) })
            s3Up.append(try await Sample.measure { try await self.timed(.PUT, "\(s3)/large.bin", large, expect: 200) })
        }
        let copySeconds = copy.sorted()[Self.runs / 2]
        print(Self.throughput("baseline: disk copy 100 MiB (write + fsync)", copySeconds))
        print(Self.throughput("baseline: MD5 of 100 MiB alone (one core)", Self.median { Self.md5(bytes) }))
        print(Self.upload("storage v0: upload 100 MiB", v0Up, limit: copySeconds))
        print(Self.upload("storage v0: resumable 100 MiB, 8 MiB chunks", v0Resumable, limit: copySeconds))
        print(Self.upload("s3: PUT 100 MiB", s3Up, limit: copySeconds))
        print(Self.throughput("storage v0: download 100 MiB (alt=media)", try await Self.median {
            try await self.timed(.GET, "\(v0)/bench%2Flarge.bin?alt=media", nil, expect: 200, bytes: Self.largeSize)
        }))
        print(Self.throughput("s3: GET 100 MiB", try await Self.median {
            try await self.timed(.GET, "\(s3)/large.bin", nil, expect: 200, bytes: Self.largeSize)
        }))

        let small = ByteBuffer(bytes: Array(bytes[0..<4096]))
        let clients = Load(client: load.client, clients: 32, duration: load.duration)
        print(try await clients.run("s3: PUT 4 KiB, 32 clients") { i in (HTTPMethod.PUT, "\(s3)/small/\(i)", small) })
        print(try await clients.run("s3: GET 4 KiB, 32 clients") { i in (HTTPMethod.GET, "\(s3)/small/\(1 + abs(i) % 500)", Optional<ByteBuffer>.none) })
        if let wrk = Wrk.find() {
            // Load from another process: GETs through presigned URLs (SigV4 in the query, the
            // way apps hand out media), next to the bare HTTP stack under the same generator.
            let key = try await objects.createAccessKey(note: "hearth bench")
            let presigner = S3Presigner(
                endpoint: URL(string: "http://127.0.0.1:\(s3Port)")!, region: "us-east-1", accessKeyID: key.id, secretAccessKey: key.secret)
            let urls = try (1...500).map { try presigner.presignedURL(method: "GET", bucket: "storage-bench", key: "small/\($0)", expires: 3600) }
            let ping = [URL(string: "http://127.0.0.1:\(pingPort)/ping")!]
            print(try wrk.run("baseline: HTTP stack, minimal route (wrk)", urls: ping, connections: 32, duration: load.duration, scratch: dir))
            print(try wrk.run("s3: GET 4 KiB presigned, 32 conns (wrk)", urls: urls, connections: 32, duration: load.duration, scratch: dir))
        } else {
            FileHandle.standardError.write(Data("  wrk is not installed: skipping the out-of-process small-GET load (apt-get install wrk)\n".utf8))
        }
        try? FileManager.default.removeItem(atPath: source)
        try? FileManager.default.removeItem(atPath: dir + "/storage-bench-copy.bin")
    }

    /// Seconds for one request (the whole body sent or received).
    func timed(_ method: HTTPMethod, _ url: String, _ body: ByteBuffer?, expect: Int, bytes: Int? = nil) async throws -> Double {
        let start = ContinuousClock.now
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "authorization", value: "Bearer owner")
        if let body { request.body = .bytes(body) }
        let response = try await load.client.execute(request, timeout: .seconds(600))
        var received = 0
        for try await chunk in response.body { received += chunk.readableBytes }
        guard Int(response.status.code) == expect else { throw BenchError("\(method) \(url) answered \(response.status.code)") }
        if let bytes, received != bytes { throw BenchError("\(url) returned \(received) bytes, expected \(bytes)") }
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// Seconds for one resumable upload as the Firebase SDKs send a large file: `start`, then
    /// `upload` commands of ``resumableChunk`` bytes, the last one `upload, finalize` (each chunk
    /// is stored as a part of the session and the parts are joined at the end).
    func resumable(_ v0: String, name: String, _ body: ByteBuffer) async throws -> Double {
        let start = ContinuousClock.now
        var open = HTTPClientRequest(url: "\(v0)?name=\(name)")
        open.method = .POST
        open.headers.add(name: "authorization", value: "Bearer owner")
        open.headers.add(name: "x-goog-upload-protocol", value: "resumable")
        open.headers.add(name: "x-goog-upload-command", value: "start")
        open.headers.add(name: "x-goog-upload-content-length", value: String(body.readableBytes))
        open.headers.add(name: "content-type", value: "application/json")
        open.body = .bytes(ByteBuffer(string: "{}"))
        let opened = try await load.client.execute(open, timeout: .seconds(60))
        _ = try await opened.body.collect(upTo: 1 << 20)
        guard opened.status == .ok, let url = opened.headers.first(name: "x-goog-upload-url") else {
            throw BenchError("resumable start answered \(opened.status.code)")
        }
        var offset = 0
        while offset < body.readableBytes {
            let n = min(Self.resumableChunk, body.readableBytes - offset)
            let last = offset + n == body.readableBytes
            var chunk = HTTPClientRequest(url: url)
            chunk.method = .PUT
            chunk.headers.add(name: "authorization", value: "Bearer owner")
            chunk.headers.add(name: "x-goog-upload-command", value: last ? "upload, finalize" : "upload")
            chunk.headers.add(name: "x-goog-upload-offset", value: String(offset))
            chunk.body = .bytes(body.getSlice(at: body.readerIndex + offset, length: n)!)
            let answer = try await load.client.execute(chunk, timeout: .seconds(600))
            _ = try await answer.body.collect(upTo: 1 << 20)
            guard answer.status == .ok else { throw BenchError("resumable chunk at \(offset) answered \(answer.status.code)") }
            if last, answer.headers.first(name: "x-goog-upload-status") != "final" { throw BenchError("the resumable upload did not finish") }
            offset += n
        }
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static let resumableChunk = 8 * 1024 * 1024

    static func diskCopy(from: String, to: String) throws -> Double {
        let start = ContinuousClock.now
        guard let input = FileHandle(forReadingAtPath: from) else { throw BenchError("cannot open \(from)") }
        _ = FileManager.default.createFile(atPath: to, contents: nil)
        guard let output = FileHandle(forWritingAtPath: to) else { throw BenchError("cannot open \(to)") }
        while let chunk = try input.read(upToCount: 256 * 1024), !chunk.isEmpty { try output.write(contentsOf: chunk) }
        try output.synchronize()
        try output.close()
        try input.close()
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static func median(_ body: () throws -> Double) rethrows -> Double {
        try (0..<runs).map { _ in try body() }.sorted()[runs / 2]
    }

    /// Seconds for the MD5 of `bytes` on this thread: the hash every upload must compute
    /// (S3's ETag, Storage's md5Hash), which no upload can outrun on its own core.
    static func md5(_ bytes: [UInt8]) -> Double {
        let start = ContinuousClock.now
        let digest = Insecure.MD5.hash(data: bytes)
        precondition(Array(digest).count == 16)
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// One upload's wall time and the CPU time the whole process (server and client) spent on it.
    struct Sample {
        var seconds: Double
        var cpu: Double

        static func measure(_ body: () async throws -> Double) async throws -> Sample {
            let before = processCPU()
            let seconds = try await body()
            return Sample(seconds: seconds, cpu: processCPU() - before)
        }

        static func processCPU() -> Double {
            var usage = rusage()
            #if os(Linux)
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
            #else
            getrusage(RUSAGE_SELF, &usage)
            #endif
            return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        }
    }

    /// An upload line: throughput, its share of the same-run disk copy, and CPU per upload.
    static func upload(_ name: String, _ samples: [Sample], limit: Double) -> String {
        let median = samples.sorted { $0.seconds < $1.seconds }[samples.count / 2]
        return throughput(name, median.seconds)
            + String(format: ", %.0f%% of the disk copy, %.2f s CPU (both cores)", 100 * limit / median.seconds, median.cpu)
    }

    static func median(_ body: () async throws -> Double) async throws -> Double {
        var times: [Double] = []
        for _ in 0..<runs { times.append(try await body()) }
        return times.sorted()[runs / 2]
    }

    static func throughput(_ name: String, _ seconds: Double) -> String {
        name.padding(toLength: 46, withPad: " ", startingAt: 0)
            + String(format: " %10.1f MiB/s  (median of %d, %.2f s each)", Double(largeSize) / 1_048_576 / seconds, runs, seconds)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
