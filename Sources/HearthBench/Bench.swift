import AsyncHTTPClient
import Foundation
import GRDB
import HearthCore
import HearthDocuments
import HearthApp
import HearthServer
import HearthRules
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// `hearth bench`'s phases: Hearth over REST, gRPC and in process with concurrent clients, each
/// figure printed next to a baseline measured in the same run on the same machine (the raw HTTP
/// stack, raw GRDB). The CLI parses the arguments (`BenchCommand`); the phases are described there.
package struct Bench: Sendable {
    var clients: Int
    var duration: Double
    var small: Int
    var large: Int
    var phases: String
    var importDocuments: Int
    var importBaseline: Int
    var grpcConnections: Int
    var dataDir: String?
    var databaseTarget: String?
    var serveBroadcast: Int?
    /// The Python (with google-cloud-firestore) for the sdk phase's baseline.
    var python: String
    /// The sdk phase's listener-latency clients, run alone in this process against this Firestore port.
    var sdkClient: Int?
    /// The replicas phase's server counts over PostgreSQL, and its wrk connections.
    var replicas: [Int]
    var connections: Int

    package init(
        clients: Int, duration: Double, small: Int, large: Int, phases: String, importDocuments: Int, importBaseline: Int,
        grpcConnections: Int, dataDir: String?, databaseTarget: String?, serveBroadcast: Int?, python: String = "python3",
        sdkClient: Int? = nil, replicas: [Int] = [1, 2, 3], connections: Int = 16
    ) {
        self.clients = clients
        self.duration = duration
        self.small = small
        self.large = large
        self.phases = phases
        self.importDocuments = importDocuments
        self.importBaseline = importBaseline
        self.grpcConnections = grpcConnections
        self.dataDir = dataDir
        self.databaseTarget = databaseTarget
        self.serveBroadcast = serveBroadcast
        self.python = python
        self.sdkClient = sdkClient
        self.replicas = replicas
        self.connections = connections
    }

    package func run() async throws {
        if let sdkClient { return try await SDKBench.latencyClient(firestorePort: sdkClient, directory: dataDir ?? NSTemporaryDirectory()) }
        if let serveBroadcast {
            var logger = Logger(label: "hearth.bench")
            logger.logLevel = .warning
            return try await DatabaseBench.serveBroadcast(port: serveBroadcast, logger: logger)
        }
        var selected = Set(phases.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
        if selected.remove("auth") != nil { selected.formUnion(AuthBench.phases) }
        let dir = dataDir ?? NSTemporaryDirectory() + "hearth-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { if dataDir == nil { try? FileManager.default.removeItem(atPath: dir) } }
        var logger = Logger(label: "hearth.bench")
        logger.logLevel = .warning
        print("hearth bench — \(clients) clients, \(duration) s per phase, \(ProcessInfo.processInfo.activeProcessorCount) cores, data in \(dir)")
        print(Measurement.header)

        let http = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: clients)))
        let load = Load(client: http, clients: clients, duration: duration)
        do {
            try await phases(selected, dir: dir, load: load, logger: logger)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    func phases(_ selected: Set<String>, dir: String, load: Load, logger: Logger) async throws {
        if let target = databaseTarget {
            if selected.contains("database-fanout") { try await DatabaseBench.fanOut(load: load, base: "http://\(target)") }
            if selected.contains("database-ws-fanout") {
                print(try await DatabaseWebSocketBench(load: load, listeners: DatabaseBench.listeners, fanOutWrites: DatabaseBench.fanOutWrites)
                    .fanOut("ws://\(target)/.ws?v=5&ns=bench-ws"))
            }
            return
        }

        if selected.contains("http") {
            try await withMinimalServer(logger: logger) { port in
                let url = "http://127.0.0.1:\(port)/ping"
                print(try await load.run("baseline: HTTP stack, minimal route") { _ in (HTTPMethod.GET, url, nil) })
            }
        }
        if selected.contains("grdb") {
            try await GRDBBaseline(path: dir + "/baseline.sqlite", clients: clients, duration: duration).run()
        }
        if selected.contains("rules") { try RulesBench(duration: duration).run() }
        if selected.contains("import") {
            try await ImportBench(directory: dir + "/import", documents: importDocuments, baseline: min(importBaseline, importDocuments)).run()
        }
        if selected.contains(PostgresBench.phase) {
            try await PostgresBench(directory: dir + "/postgres-bench", clients: clients, duration: duration, logger: logger).run()
        }
        if selected.contains(ReplicaBench.phase) {
            try await ReplicaBench(replicas: replicas, connections: connections, duration: duration, scratch: dir + "/replicas").run()
        }
        if !selected.isDisjoint(with: AuthBench.phases) {
            try await AuthBench(directory: dir + "/auth", clients: clients, duration: duration).run(selected)
        }
        guard !selected.isDisjoint(with: Set(["engine", "transactions", "listen", "listen-grpc", "write", "write-wrk", "rules-write", "read", "grpc", "query", "storage", "api", "lifecycle", "console", "database-ws", "database-ws-fanout", "sdk"]).union(DatabaseBench.phases)) else { return }
        var config = ServerConfiguration()
        config.dataDirectory = dir + "/hearth"
        config.ports = ["firestore": 0, "storage": 0, "s3": 0, "auth": 0, "database": 0, "api": 0, "console": 0]
        config.emulator = true
        let server = try await CompositionRoot.openServer(config, logger: logger)
        let engine = server.engine
        if selected.contains("engine") {
            let db = DatabaseName(project: "demo-hearth", database: "(default)")
            let fields: [String: Value] = ["title": .string("hello world"), "n": .integer(5), "group": .integer(7), "score": .double(1.5)]
            print(try await GRDBBaseline.measure("hearth engine: commit one document, no HTTP", clients: clients, duration: duration) { i in
                _ = try await engine.commit(db, [.set(ResourcePath(["engine", "e\(i)"]), fields)])
            })
            print(try await GRDBBaseline.measure("hearth engine: point get, no HTTP", clients: clients, duration: duration) { i in
                _ = try await engine.get(db, ResourcePath(["engine", "e\(1 + i % 1000)"]))
            })
            // Below the document cache: the store's own async point read, `documents(_:_:at:)`.
            let store = engine.store
            print(try await GRDBBaseline.measure("store point read, documents(_:_:at:)", clients: clients, duration: duration) { i in
                _ = try await store.documents("(default)", [ResourcePath(["engine", "e\(1 + i % 1000)"])], at: nil)
            })
        }
        if selected.contains("transactions") {
            try await TransactionBench(engine: engine, clients: clients, duration: duration).run()
        }
        if selected.contains("listen") {
            try await ListenBench(engine: engine, writes: 500).run()
        }
        try await withServer(server) { ports in
            let base = "http://127.0.0.1:\(ports["firestore"] ?? 0)/v1/projects/demo-hearth/databases/(default)/documents"
            // The api port and the lifecycle worker (issue 15).
            if selected.contains("api") { try await ApiBench(load: load, server: server).runAPI(port: ports["api"] ?? 0) }
            if selected.contains("console") {
                try await ConsoleBench(load: load, engine: engine).run(consolePort: ports["console"] ?? 0, firestorePort: ports["firestore"] ?? 0)
            }
            if selected.contains("database-ws-fanout") {
                print(try await DatabaseWebSocketBench(load: load, listeners: DatabaseBench.listeners, fanOutWrites: DatabaseBench.fanOutWrites)
                    .fanOut("ws://127.0.0.1:\(ports["database"] ?? 0)/.ws?v=5&ns=bench-ws"))
            }
            if selected.contains("database-ws") {
                try await DatabaseWebSocketBench(load: load, listeners: 1000, fanOutWrites: 50)
                    .run(databasePort: ports["database"] ?? 0, firestorePort: ports["firestore"] ?? 0)
            }
            if !selected.isDisjoint(with: DatabaseBench.phases) {
                try await DatabaseBench(load: load, engine: server.database, logger: logger)
                    .run(selected, databasePort: ports["database"] ?? 0, firestoreBase: base)
            }
            if selected.contains("lifecycle") { try await ApiBench(load: load, server: server).runLifecycle(bottles: 5000) }
            if selected.contains("sdk") {
                try await SDKBench(directory: dir + "/sdk", firestorePort: ports["firestore"] ?? 0, authPort: ports["auth"] ?? 0, python: python).run()
            }
            if selected.contains("storage") {
                try await withMinimalServer(logger: logger) { pingPort in
                    try await StorageBench(load: load, dir: dir, objects: server.objects, pingPort: pingPort)
                        .run(storagePort: ports["storage"] ?? 0, s3Port: ports["s3"] ?? 0)
                }
            }
            if selected.contains("write") || selected.contains("read") || selected.contains("grpc") {
                let body = Bench.documentBody(0)
                print(try await load.run("hearth: write one document (PATCH)") { i in (HTTPMethod.PATCH, "\(base)/bench/w\(i)", body) })
            }
            if selected.contains("write-wrk") {
                if let wrk = Wrk.find() {
                    try await WriteBench(wrk: wrk, connections: load.clients, duration: load.duration, scratch: dir).run(hearthPort: ports["firestore"] ?? 0)
                } else {
                    FileHandle.standardError.write(Data("  wrk is not installed: skipping write-wrk (apt-get install wrk)\n".utf8))
                }
            }
            if selected.contains("rules-write") {
                // The same signed-in user's writes, to a project without rules and to one with an
                // owner-check rule, on the same server in the same run.
                let user = load.with(authorization: "Bearer " + Bench.unsignedToken(uid: "bench-user"))
                let body = Bench.documentBody(0)
                print(try await user.run("hearth: write as a user, no rules") { i in
                    (HTTPMethod.PATCH, "\(base)/users/bench-user/items/w\(i)", body)
                })
                let rules = try Ruleset.compile(Bench.ownerRules, fileName: "bench.rules")
                server.firestoreRules.setProjectRules(RulesStore.Loaded(rules, origin: "bench"), project: "demo-rules")
                let ruled = base.replacingOccurrences(of: "projects/demo-hearth/", with: "projects/demo-rules/")
                print(try await user.run("hearth: write as a user, owner-check rules") { i in
                    (HTTPMethod.PATCH, "\(ruled)/users/bench-user/items/w\(i)", body)
                })
            }
            if selected.contains("read") || selected.contains("grpc") {
                let n = max(1, try await count(engine, "bench") - 16)
                print(try await load.run("hearth: point get (GET)") { i in (HTTPMethod.GET, "\(base)/bench/w\(1 + abs(i) % n)", Optional<ByteBuffer>.none) })
            }
            if selected.contains("grpc") {
                try await GRPCBench(port: ports["firestore"] ?? 0, clients: clients, connections: grpcConnections, duration: duration)
                    .run(engine: engine)
            }
            if selected.contains("listen-grpc") {
                try await ListenBench(engine: engine, writes: 500).runGRPC(port: ports["firestore"] ?? 0)
            }
            if selected.contains("query") {
                for size in [small, large] where size > 0 {
                    let collection = "q\(size)"
                    try await populate(engine, collection: collection, count: size)
                    let query = Bench.queryBody(collection)
                    // The first run creates the automatic composite index (back-filling every
                    // document); done through the engine, so no HTTP timeout applies. Not measured.
                    FileHandle.standardError.write(Data("  preparing the composite index for \(collection)…\n".utf8))
                    var q = Query(collectionId: collection)
                    q.filter = .field(FieldPath(["group"]), .equal, .integer(7))
                    q.orderBy = [Query.Order(FieldPath(["score"]), descending: true)]
                    q.limit = 20
                    _ = try await engine.runQuery(DatabaseName(project: "demo-hearth", database: "(default)"), q)
                    print(try await load.run("hearth: 20-doc query page, \(size) docs") { _ in (HTTPMethod.POST, "\(base):runQuery", query) })
                    let single = Load(client: load.client, clients: 1, duration: load.duration)
                    print(try await single.run("  same, 1 client (unloaded latency)") { _ in (HTTPMethod.POST, "\(base):runQuery", query) })
                }
            }
        }
    }

    static let ownerRules = """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /users/{userId}/{document=**} {
              allow read, write: if request.auth != null && request.auth.uid == userId;
            }
          }
        }
        """

    /// An emulator-style unsigned ID token (the bench server runs in emulator mode).
    static func unsignedToken(uid: String) -> String {
        func b64(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return b64(#"{"alg":"none","typ":"JWT"}"#) + "." + b64(#"{"sub":"\#(uid)","user_id":"\#(uid)","aud":"demo-hearth"}"#) + "."
    }

    static func documentBody(_ i: Int) -> ByteBuffer {
        ByteBuffer(string: #"{"fields":{"title":{"stringValue":"hello world"},"n":{"integerValue":"\#(i)"},"group":{"integerValue":"\#(i % 100)"},"score":{"doubleValue":\#(Double(i % 997) / 3)}}}"#)
    }

    static func queryBody(_ collection: String) -> ByteBuffer {
        ByteBuffer(string: #"{"structuredQuery":{"from":[{"collectionId":"\#(collection)"}],"where":{"fieldFilter":{"field":{"fieldPath":"group"},"op":"EQUAL","value":{"integerValue":"7"}}},"orderBy":[{"field":{"fieldPath":"score"},"direction":"DESCENDING"}],"limit":20}}"#)
    }

    func count(_ engine: DocumentEngine, _ collection: String) async throws -> Int {
        let r = try await engine.runAggregation(
            DatabaseName(project: "demo-hearth", database: "(default)"), Query(collectionId: collection),
            [Aggregation(alias: "n", kind: .count(upTo: nil))])
        if case .integer(let n) = r.values[0].value { return Int(n) }
        return 0
    }

    /// Loads documents through the engine in commits of 500, with progress output.
    func populate(_ engine: DocumentEngine, collection: String, count: Int) async throws {
        let db = DatabaseName(project: "demo-hearth", database: "(default)")
        let have = try await self.count(engine, collection)
        if have >= count { return }
        let start = Date()
        var done = have
        var lastReport = Date()
        while done < count {
            let batch = (done..<min(count, done + 500)).map { i in
                Write.set(
                    ResourcePath(["\(collection)", String(format: "d%09d", i)]),
                    ["title": .string("hello world"), "n": .integer(Int64(i)), "group": .integer(Int64(i % 100)), "score": .double(Double(i % 997) / 3)])
            }
            _ = try await engine.commit(db, batch)
            done += batch.count
            if Date().timeIntervalSince(lastReport) > 2 || done == count {
                lastReport = Date()
                let rate = Double(done - have) / Date().timeIntervalSince(start)
                FileHandle.standardError.write(Data("  loading \(collection): \(done)/\(count) documents (\(Int(rate))/s)\n".utf8))
            }
        }
    }

    /// Runs a minimal Hummingbird route (the HTTP stack's own cost) until `body` finishes.
    func withMinimalServer(logger: Logger, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        let router = Router()
        router.get("/ping") { _, _ in "{\"ok\":true}" }
        try await withBenchRouter(router, logger: logger, body)
    }

    func withServer(_ server: HearthServer, _ body: @escaping @Sendable ([String: Int]) async throws -> Void) async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: [String: Int].self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run { ports in continuation.yield(ports) } }
            var ports = stream.makeAsyncIterator()
            guard let bound = await ports.next() else { return }
            try await body(bound)
            group.cancelAll()
        }
    }
}

/// Throughput and latency percentiles of one phase.
struct Measurement: CustomStringConvertible {
    var name: String
    var operations: Int
    var errors: Int
    var seconds: Double
    var latencies: [Double]

    static let header = "phase".padding(toLength: 46, withPad: " ", startingAt: 0) + "      ops/s     p50 ms     p99 ms   errors"

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        let sorted = latencies.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    var description: String {
        name.padding(toLength: 46, withPad: " ", startingAt: 0)
            + String(format: " %10.0f %10.3f %10.3f %8d", Double(operations) / seconds, percentile(0.5) * 1000, percentile(0.99) * 1000, errors)
    }
}

/// A closed-loop load: `clients` concurrent loops issue requests for `duration` seconds.
struct Load: Sendable {
    let client: HTTPClient
    let clients: Int
    let duration: Double
    var authorization = "Bearer owner"
    /// A `Cookie` header to send too (the console's session).
    var cookie: String?

    init(client: HTTPClient, clients: Int, duration: Double) {
        self.client = client
        self.clients = clients
        self.duration = duration
    }

    func with(cookie: String) -> Load {
        var copy = self
        copy.cookie = cookie
        return copy
    }

    func with(authorization: String) -> Load {
        var copy = self
        copy.authorization = authorization
        return copy
    }

    func once(_ method: HTTPMethod, _ url: String, _ body: ByteBuffer?) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "authorization", value: authorization)
        if let cookie { request.headers.add(name: "cookie", value: cookie) }
        if let body { request.body = .bytes(body) }
        let response = try await client.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return Int(response.status.code)
    }

    func run(_ name: String, _ next: @escaping @Sendable (Int) -> (HTTPMethod, String, ByteBuffer?)) async throws -> Measurement {
        // Warm up connections.
        for i in 0..<min(clients, 8) {
            let (m, u, b) = next(-1 - i)
            _ = try? await once(m, u, b)
        }
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(duration * 1000))
        let counter = Counter()
        let results: [([Double], Int)] = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
            for _ in 0..<clients {
                group.addTask {
                    var latencies: [Double] = []
                    var errors = 0
                    while ContinuousClock.now < deadline {
                        let (m, u, b) = next(counter.next())
                        let t0 = ContinuousClock.now
                        let status = (try? await once(m, u, b)) ?? 0
                        let d = ContinuousClock.now - t0
                        latencies.append(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
                        if status >= 400 || status == 0 { errors += 1 }
                    }
                    return (latencies, errors)
                }
            }
            var all: [([Double], Int)] = []
            for try await r in group { all.append(r) }
            return all
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let latencies = results.flatMap { $0.0 }
        return Measurement(name: name, operations: latencies.count, errors: results.map { $0.1 }.reduce(0, +), seconds: seconds, latencies: latencies)
    }
}

final class Counter: Sendable {
    let value = Mutex2(0)
    func next() -> Int { value.withLock { v in v += 1; return v } }
}

/// Serves `router` on a free loopback port until `body` (given the port) finishes: the bare
/// routes the benchmarks compare against.
func withBenchRouter(_ router: Router<BasicRequestContext>, logger: Logger, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await app.runService() }
        var ports = stream.makeAsyncIterator()
        guard let port = await ports.next() else { return }
        try await body(port)
        group.cancelAll()
    }
}
