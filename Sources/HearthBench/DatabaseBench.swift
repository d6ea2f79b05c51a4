import AsyncHTTPClient
import Foundation
import HearthCore
import HearthDatabase
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// `hearth bench --phases database`: the Realtime Database over REST and event streams, each
/// figure next to a same-run baseline:
/// - REST writes (`PUT`) to distinct paths and to one hot path, next to Firestore REST creates;
/// - one write reaching 1,000 SSE listeners (write start → event parsed by each listener),
///   next to the same write acknowledged with no listener;
/// - a `GET` of a 10,000-child subtree, next to the same JSON bytes served from memory by a
///   bare Hummingbird route;
/// - `orderBy` a child with `limitToFirst=10` over 100,000 children, from the `.indexOn` index.
struct DatabaseBench {
    let load: Load
    let engine: DatabaseEngine
    let logger: Logger
    static let namespace = "bench"
    static let listeners = 1000
    static let fanOutWrites = 50

    /// `database` runs every part; `database-write`, `database-fanout`, `database-read` one each.
    static let phases: Set<String> = ["database", "database-write", "database-fanout", "database-read"]

    func run(_ selected: Set<String>, databasePort: Int, firestoreBase: String) async throws {
        let base = "http://127.0.0.1:\(databasePort)"
        let all = selected.contains("database")
        if all || selected.contains("database-write") { try await writes(base: base, firestoreBase: firestoreBase) }
        if all || selected.contains("database-fanout") { try await Self.fanOut(load: load, base: base) }
        if all || selected.contains("database-read") {
            try await bigRead(base: base)
            try await indexedQuery(base: base)
        }
    }

    func writes(base: String, firestoreBase: String) async throws {
        let ns = "ns=\(Self.namespace)"
        print(try await load.run("baseline: Firestore REST create (POST)") { i in
            (HTTPMethod.POST, "\(firestoreBase)/dbbench-baseline", Bench.documentBody(i))
        })
        let value = ByteBuffer(string: #"{"title":"hello world","n":5,"group":7,"score":1.5}"#)
        print(try await load.run("database: REST PUT, distinct paths") { i in
            (HTTPMethod.PUT, "\(base)/writes/w\(abs(i)).json?\(ns)&print=silent", value)
        })
        print(try await load.run("database: REST PUT, one hot path") { _ in
            (HTTPMethod.PUT, "\(base)/hot.json?\(ns)&print=silent", value)
        })
    }

    // MARK: Fan-out

    /// Arrival instants per write sequence number, filled by the listeners.
    final class Arrivals: Sendable {
        let seen = Mutex2<[Int: [ContinuousClock.Instant]]>([:])
        func record(_ sequence: Int, at instant: ContinuousClock.Instant) {
            seen.withLock { $0[sequence, default: []].append(instant) }
        }
        func count(_ sequence: Int) -> Int { seen.withLock { $0[sequence]?.count ?? 0 } }
        func instants(_ sequence: Int) -> [ContinuousClock.Instant] { seen.withLock { $0[sequence] ?? [] } }
    }

    /// The sequence number a `put` event carries: N for `{"path":"/v","data":N}`, 0 for the
    /// stream's initial `put` at `/`.
    static func sequence(inEvent event: Substring) -> Int? {
        guard event.contains("event: put") else { return nil }
        if event.contains(#""path":"/","#) { return 0 }
        guard let range = event.range(of: #""path":"/v","data":"#) else { return nil }
        return Int(event[range.upperBound...].prefix { $0.isNumber })
    }

    /// `listeners` event streams on `base` (a database port, in this process or another), one
    /// writer; latency from just before each `PUT` to each listener's parse of its event.
    static func fanOut(load: Load, base: String) async throws {
        let url = "\(base)/fan.json?ns=\(Self.namespace)"
        _ = try await load.once(.PUT, "\(base)/fan/v.json?ns=\(Self.namespace)", ByteBuffer(string: "0"))
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(connectionPool: .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: Self.listeners + 16)))
        let arrivals = Arrivals()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<Self.listeners {
                group.addTask {
                    var request = HTTPClientRequest(url: url)
                    request.headers.add(name: "accept", value: "text/event-stream")
                    request.headers.add(name: "authorization", value: "Bearer owner")
                    let response = try await client.execute(request, timeout: .seconds(600))
                    var pending = ""
                    for try await chunk in response.body {
                        pending += String(buffer: chunk)
                        while let end = pending.range(of: "\n\n") {
                            let event = pending[..<end.lowerBound]
                            if let sequence = Self.sequence(inEvent: event) { arrivals.record(sequence, at: .now) }
                            pending.removeSubrange(..<end.upperBound)
                        }
                    }
                }
            }
            // Every listener has its initial `put` (sequence 0) before measuring.
            let ready = ContinuousClock.now + .seconds(120)
            while arrivals.count(0) < Self.listeners {
                guard ContinuousClock.now < ready else {
                    throw HearthError(.internal, "only \(arrivals.count(0)) of \(Self.listeners) event streams started")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            var latencies: [Double] = []
            var acknowledged: [Double] = []
            var missing = 0
            let start = ContinuousClock.now
            for sequence in 1...Self.fanOutWrites {
                let t0 = ContinuousClock.now
                _ = try await load.once(.PUT, "\(base)/fan/v.json?ns=\(Self.namespace)&print=silent", ByteBuffer(string: "\(sequence)"))
                acknowledged.append(Self.seconds(ContinuousClock.now - t0))
                let deadline = ContinuousClock.now + .seconds(10)
                while arrivals.count(sequence) < Self.listeners, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(1))
                }
                let instants = arrivals.instants(sequence)
                missing += Self.listeners - instants.count
                latencies += instants.map { Self.seconds($0 - t0) }
            }
            let elapsed = Self.seconds(ContinuousClock.now - start)
            group.cancelAll()
            print(Measurement(
                name: "  same write acknowledged (its own PUT)", operations: acknowledged.count, errors: 0, seconds: elapsed,
                latencies: acknowledged))
            print(Measurement(
                name: "database: write → \(Self.listeners) SSE listeners", operations: latencies.count, errors: missing, seconds: elapsed,
                latencies: latencies))
        }
        try await client.shutdown()
    }

    /// The ceiling for `database-fanout`: the same protocol (`GET /fan.json` as an event
    /// stream, `PUT /fan/v.json` writing a number) from a bare Hummingbird server with no
    /// database — each `PUT` hands one fixed buffer to every open stream before it answers.
    /// `hearth bench --serve-broadcast PORT` runs it until interrupted, for `--database-target`.
    static func serveBroadcast(port: Int, logger: Logger) async throws {
        let streams = Mutex2<[Int: AsyncStream<ByteBuffer>.Continuation]>([:])
        let ids = Counter()
        let router = Router()
        router.get("/fan.json") { _, _ in
            let (items, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
            let id = ids.next()
            continuation.yield(ByteBuffer(string: "event: put\ndata: {\"path\":\"/\",\"data\":{\"v\":0}}\n\n"))
            streams.withLock { $0[id] = continuation }
            return Response(
                status: .ok, headers: [.contentType: "text/event-stream"],
                body: ResponseBody { writer in
                    defer { _ = streams.withLock { $0.removeValue(forKey: id) } }
                    // SIGTERM/SIGINT end the streams, so the server stops.
                    try await withGracefulShutdownHandler {
                        for await bytes in items { try await writer.write(bytes) }
                    } onGracefulShutdown: {
                        continuation.finish()
                    }
                    try await writer.finish(nil)
                })
        }
        router.put("/fan/v.json") { request, _ in
            let value = try await request.body.collect(upTo: 64)
            let event = ByteBuffer(string: "event: put\ndata: {\"path\":\"/v\",\"data\":\(String(buffer: value))}\n\n")
            for continuation in streams.withLock({ Array($0.values) }) { continuation.yield(event) }
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "null")))
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                print("broadcast baseline on 127.0.0.1:\(channel.localAddress?.port ?? 0)")
                fflush(nil)  // every C stream: stdout is a file or a pipe here
            }, logger: logger)
        try await app.runService()
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    // MARK: Reads

    func bigRead(base: String) async throws {
        let children = JSON.object((0..<10_000).map { i in
            (String(format: "c%05d", i), JSON.object([("title", .string("hello world")), ("n", .number(String(i))), ("score", .number("1.5"))]))
        })
        _ = try await engine.set(namespace: Self.namespace, path: DatabasePath(["big"]), value: children, auth: .admin)
        let served = try await engine.read(namespace: Self.namespace, path: DatabasePath(["big"]), auth: .admin).node.plainJSON()
        let bytes = served.serializedBytes()
        try await withBytesServer(bytes) { port in
            let single = Load(client: load.client, clients: 4, duration: load.duration)
            print(try await single.run("baseline: same JSON from memory (bare route)") { _ in
                (HTTPMethod.GET, "http://127.0.0.1:\(port)/big", nil)
            })
            print(try await single.run("database: GET 10k-child subtree (\(bytes.count / 1024) KiB)") { _ in
                (HTTPMethod.GET, "\(base)/big.json?ns=\(Self.namespace)", nil)
            })
        }
    }

    func indexedQuery(base: String) async throws {
        try await engine.setRules(#"{"rules":{"ranked":{".indexOn":"score"}}}"#, namespace: Self.namespace, auth: .admin)
        let ranked = JSON.object((0..<100_000).map { i in
            (String(format: "r%06d", i), JSON.object([("score", .number(String((i * 7919) % 100_003))), ("name", .string("player"))]))
        })
        _ = try await engine.set(namespace: Self.namespace, path: DatabasePath(["ranked"]), value: ranked, auth: .admin)
        let single = Load(client: load.client, clients: 4, duration: load.duration)
        print(try await single.run("database: orderBy child, first 10 of 100k, index") { _ in
            (HTTPMethod.GET, "\(base)/ranked.json?ns=\(Self.namespace)&orderBy=%22score%22&limitToFirst=10", nil)
        })
        // The same query on an unindexed child: the emulator serves it by scanning.
        print(try await single.run("  same, unindexed child (scan)") { _ in
            (HTTPMethod.GET, "\(base)/ranked.json?ns=\(Self.namespace)&orderBy=%22name%22&limitToFirst=10", nil)
        })
    }

    /// A bare Hummingbird route that answers `GET /big` with `bytes` (built once).
    func withBytesServer(_ bytes: [UInt8], _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        let router = Router()
        let buffer = ByteBuffer(bytes: bytes)
        router.get("/big") { _, _ in
            Response(status: .ok, body: ResponseBody(byteBuffer: buffer))
        }
        try await withBenchRouter(router, logger: logger, body)
    }
}
