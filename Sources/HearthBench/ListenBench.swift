import Foundation
import HearthFirestoreProto
import HearthCore
import HearthDocuments
import Synchronization

/// `hearth bench --phases listen`: realtime listeners on the document engine, without a
/// transport — commit-to-listener latency with 1, 1,000 and 10,000 active Listen streams,
/// one write fanned out to 1,000 listeners of the same document, and the memory an idle
/// stream holds; next to the same-run latency of the commit alone (the floor).
struct ListenBench {
    let engine: DocumentEngine
    let writes: Int
    let database = DatabaseName(project: "demo-hearth", database: "(default)")

    /// When each listener saw each write (by the write's sequence number).
    final class Arrivals: Sendable {
        let seen = Mutex<[Int: [ContinuousClock.Instant]]>([:])

        func record(_ outputs: [ListenOutput]) {
            let now = ContinuousClock.now
            for o in outputs {
                if case .document(let d, _, _) = o, case .integer(let seq)? = d.fields["seq"] {
                    seen.withLock { $0[Int(seq), default: []].append(now) }
                }
            }
        }

        func record(seq: Int) {
            let now = ContinuousClock.now
            seen.withLock { $0[seq, default: []].append(now) }
        }

        func count(_ seq: Int) -> Int { seen.withLock { $0[seq]?.count ?? 0 } }
        func times(_ seq: Int) -> [ContinuousClock.Instant] { seen.withLock { $0[seq] ?? [] } }
    }

    /// Open Listen streams, each with one documents target.
    struct Streams {
        var commands: [AsyncStream<ListenCommand>.Continuation] = []
        var tasks: [Task<Void, any Error>] = []

        func close() async {
            for c in commands { c.finish() }
            for t in tasks { _ = try? await t.value }
        }
    }

    func open(_ paths: [ResourcePath], arrivals: Arrivals) -> Streams {
        var s = Streams()
        for (i, p) in paths.enumerated() {
            let (stream, continuation) = AsyncStream<ListenCommand>.makeStream()
            continuation.yield(.add(ListenTarget(id: 1, spec: .documents([p]))))
            s.commands.append(continuation)
            let engine = self.engine, database = self.database
            s.tasks.append(Task {
                try await engine.listen(database: database, commands: stream, authorize: nil, send: { arrivals.record($0) })
            })
            if i % 1000 == 999 { FileHandle.standardError.write(Data("  \(i + 1) listen streams open\n".utf8)) }
        }
        return s
    }

    /// Waits until every stream's target is current (the hub has all targets).
    func waitRegistered(_ n: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while engine.listeners.targetCount < n {
            guard ContinuousClock.now < deadline else { throw BenchError("listen streams did not start") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(200))
    }

    func run() async throws {
        // The floor: the same commit with nobody listening.
        var floor: [Double] = []
        for i in 0..<writes {
            let t0 = ContinuousClock.now
            _ = try await engine.commit(database, [.set(ResourcePath(["listen-floor", "d\(i % 100)"]), ["seq": .integer(Int64(i))])])
            floor.append(Self.seconds(ContinuousClock.now - t0))
        }
        print(Measurement(name: "baseline: engine commit, no listeners", operations: floor.count, errors: 0, seconds: floor.reduce(0, +), latencies: floor))

        var seq = 1_000_000
        for n in [1, 1000, 10_000] {
            let arrivals = Arrivals()
            let paths = (0..<n).map { ResourcePath(["listen\(n)", "d\($0)"]) }
            let rssBefore = Self.residentBytes()
            let streams = open(paths, arrivals: arrivals)
            try await waitRegistered(n)
            let rssAfter = Self.residentBytes()
            print(try await latency("commit to listener, \(n) streams", paths, arrivals, seq: &seq))
            if n == 10_000 {
                let perStream = Double(rssAfter - rssBefore) / Double(n)
                let harness = await Self.harnessBytes(n) / Double(n)
                print("  memory per idle Listen stream (engine only, RSS delta over \(n)): \(String(format: "%.1f", perStream / 1024)) KiB,"
                    + " of which the bench's own task and command stream per stream: \(String(format: "%.1f", harness / 1024)) KiB")
            }
            await streams.close()
        }

        // Fan-out: 1,000 listeners of one document, one write at a time.
        let arrivals = Arrivals()
        let hot = ResourcePath(["listen-fanout", "hot"])
        let streams = open(Array(repeating: hot, count: 1000), arrivals: arrivals)
        try await waitRegistered(1000)
        var all: [Double] = []
        var lastArrivals: [Double] = []
        let rounds = max(5, writes / 20)
        let t0 = ContinuousClock.now
        for _ in 0..<rounds {
            seq += 1
            let start = ContinuousClock.now
            _ = try await engine.commit(database, [.set(hot, ["seq": .integer(Int64(seq))])])
            let deadline = ContinuousClock.now + .seconds(10)
            while arrivals.count(seq) < 1000 && ContinuousClock.now < deadline { try await Task.sleep(for: .microseconds(200)) }
            let times = arrivals.times(seq).map { Self.seconds($0 - start) }
            all += times
            lastArrivals.append(times.max() ?? .nan)
        }
        print(Measurement(
            name: "one write to 1,000 listeners, each", operations: all.count, errors: rounds * 1000 - all.count,
            seconds: Self.seconds(ContinuousClock.now - t0), latencies: all))
        print(Measurement(
            name: "one write to 1,000 listeners, the last", operations: lastArrivals.count, errors: 0,
            seconds: Self.seconds(ContinuousClock.now - t0), latencies: lastArrivals))
        await streams.close()
    }

    /// The same measurements end to end: Listen streams over gRPC (h2c) on the Firestore port,
    /// from an in-process HTTP/2 client, about 90 streams per connection.
    func runGRPC(port: Int) async throws {
        let database = "projects/demo-hearth/databases/(default)"
        var seq = 2_000_000
        for n in [1, 1000, 10_000] {
            let client = try await GRPCBenchClient.connect(port: port, connections: max(1, n / 90))
            let arrivals = Arrivals()
            let currents = Mutex2(0)
            let paths = (0..<n).map { ResourcePath(["glisten\(n)", "d\($0)"]) }
            let rssBefore = Self.residentBytes()
            var calls: [GRPCBenchClient.ListenCall] = []
            for (i, p) in paths.enumerated() {
                var request = Google_Firestore_V1_ListenRequest()
                request.database = database
                request.addTarget.targetID = 1
                request.addTarget.documents.documents = ["\(database)/documents/\(p.text)"]
                calls.append(try await client.listen(request, on: i) { response in
                    if case .documentChange(let c)? = response.responseType, case .integerValue(let s)? = c.document.fields["seq"]?.valueType {
                        arrivals.record(seq: Int(s))
                    } else if case .targetChange(let c)? = response.responseType, c.targetChangeType == .current {
                        currents.withLock { $0 += 1 }
                    }
                })
                if i % 1000 == 999 { FileHandle.standardError.write(Data("  \(i + 1) gRPC Listen streams open\n".utf8)) }
            }
            let deadline = ContinuousClock.now + .seconds(180)
            while currents.withLock({ $0 }) < n {
                guard ContinuousClock.now < deadline else { throw BenchError("gRPC Listen streams did not become current") }
                try await Task.sleep(for: .milliseconds(20))
            }
            let rssAfter = Self.residentBytes()
            print(try await latency("commit to gRPC listener, \(n) streams", paths, arrivals, seq: &seq))
            if n >= 1000 {
                let perStream = Double(rssAfter - rssBefore) / Double(n)
                print("  \(n) gRPC Listen streams held; RSS per stream, server and in-process client together: \(String(format: "%.1f", perStream / 1024)) KiB")
            }
            for c in calls { await c.close() }
            await client.close()
        }
    }

    /// `writes` commits, one at a time, each to one of `paths`, and how long each took to reach
    /// its listener (a write not seen within 30 s counts as an error).
    func latency(_ name: String, _ paths: [ResourcePath], _ arrivals: Arrivals, seq: inout Int) async throws -> Measurement {
        var latencies: [Double] = []
        var missed = 0
        let t0 = ContinuousClock.now
        for i in 0..<writes {
            seq += 1
            let start = ContinuousClock.now
            _ = try await engine.commit(database, [.set(paths[i * 7919 % paths.count], ["seq": .integer(Int64(seq))])])
            let deadline = ContinuousClock.now + .seconds(30)
            while arrivals.count(seq) == 0 && ContinuousClock.now < deadline { await Task.yield() }
            if let arrived = arrivals.times(seq).first { latencies.append(Self.seconds(arrived - start)) } else { missed += 1 }
        }
        return Measurement(name: name, operations: latencies.count, errors: missed, seconds: Self.seconds(ContinuousClock.now - t0), latencies: latencies)
    }

    /// The RSS of what the bench itself holds per stream (a task awaiting a command stream),
    /// measured alone, so it can be told apart from the engine's share.
    static func harnessBytes(_ n: Int) async -> Double {
        let before = residentBytes()
        var continuations: [AsyncStream<ListenCommand>.Continuation] = []
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<n {
            let (stream, continuation) = AsyncStream<ListenCommand>.makeStream()
            continuation.yield(.remove(1))
            continuations.append(continuation)
            tasks.append(Task { for await _ in stream {} })
        }
        try? await Task.sleep(for: .milliseconds(200))
        let after = residentBytes()
        for c in continuations { c.finish() }
        for t in tasks { await t.value }
        return Double(after - before)
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// The process's resident set size, from /proc (0 where it is not available).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
