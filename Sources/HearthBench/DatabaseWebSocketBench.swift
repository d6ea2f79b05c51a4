import AsyncHTTPClient
import Foundation
import HearthCore
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1

/// `hearth bench --phases database-ws`: the Realtime Database's WebSocket protocol (what the
/// SDKs speak). Writes (`p` requests, each waiting for its `ok`) to distinct paths and to one
/// hot path from `clients` sockets, next to Firestore REST creates in the same run; then one
/// write reaching `listeners` sockets listening on the same location (fan-out latency: from
/// just before the write is sent to each listener's push).
struct DatabaseWebSocketBench {
    let load: Load
    let listeners: Int
    let fanOutWrites: Int

    func run(databasePort: Int, firestorePort: Int) async throws {
        let url = "ws://127.0.0.1:\(databasePort)/.ws?v=5&ns=bench-ws"
        let base = "http://127.0.0.1:\(firestorePort)/v1/projects/demo-hearth/databases/(default)/documents"
        let body = Bench.documentBody(0)
        print(try await load.run("baseline: Firestore REST create (PATCH)") { i in (HTTPMethod.PATCH, "\(base)/bench-ws/w\(i)", body) })
        print(try await writes(url, name: "database ws: set, distinct paths") { i in "/bench/w\(i)" })
        print(try await writes(url, name: "database ws: set, one hot path") { _ in "/hot/counter" })
        print(try await fanOut(url))
    }

    static var logger: Logger {
        var logger = Logger(label: "hearth.bench.ws")
        logger.logLevel = .warning
        return logger
    }

    static func request(_ r: Int, _ action: String, _ body: String) -> String {
        #"{"t":"d","d":{"r":\#(r),"a":"\#(action)","b":\#(body)}}"#
    }

    /// The response number of a message, if it is a response.
    static func responseNumber(_ text: String) -> Int? {
        guard let json = try? JSON.parse(text), case .number(let r)? = json["d"]?["r"] else { return nil }
        return Int(r)
    }

    /// `clients` sockets each writing in a closed loop for `duration` seconds.
    func writes(_ url: String, name: String, path: @escaping @Sendable (Int) -> String) async throws -> Measurement {
        let counter = Counter()
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(load.duration * 1000))
        let results: [([Double], Int)] = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
            for _ in 0..<load.clients {
                group.addTask {
                    let result = Mutex2<([Double], Int)>(([], 0))
                    try await WebSocketClient.connect(url: url, logger: Self.logger) { inbound, outbound, _ in
                        var messages = inbound.messages(maxSize: 1 << 24).makeAsyncIterator()
                        _ = try await messages.next()  // hello
                        try await outbound.write(.text(Self.request(1, "gauth", #"{"cred":"owner"}"#)))
                        _ = try await messages.next()
                        var r = 1
                        var latencies: [Double] = []
                        var errors = 0
                        while ContinuousClock.now < deadline {
                            r += 1
                            let i = counter.next()
                            let t0 = ContinuousClock.now
                            try await outbound.write(.text(Self.request(r, "p", #"{"p":"\#(path(i))","d":{"n":\#(i),"title":"hello world"}}"#)))
                            while let message = try await messages.next() {
                                guard case .text(let text) = message, Self.responseNumber(text) == r else { continue }
                                if !text.contains(#""s":"ok""#) { errors += 1 }
                                break
                            }
                            latencies.append(Self.seconds(ContinuousClock.now - t0))
                        }
                        result.withLock { $0 = (latencies, errors) }
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                    return result.withLock { $0 }
                }
            }
            var all: [([Double], Int)] = []
            for try await r in group { all.append(r) }
            return all
        }
        let seconds = Self.seconds(ContinuousClock.now - start)
        let latencies = results.flatMap(\.0)
        return Measurement(name: name, operations: latencies.count, errors: results.map(\.1).reduce(0, +), seconds: seconds, latencies: latencies)
    }

    /// The `seq` of a fan-out push (`…{"seq":N}…`), read without a JSON parser so the
    /// 1,000 in-process listeners cost the shared cores as little as possible.
    static func sequence(_ text: String) -> Int? {
        guard text.hasPrefix(#"{"t":"d","d":{"a":"d""#), let range = text.range(of: #""seq":"#) else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    /// `listeners` sockets listen on `/fanout`; one socket writes `fanOutWrites` values in turn,
    /// each after every listener got the previous one; latency per (write, listener).
    func fanOut(_ url: String) async throws -> Measurement {
        let sent = Mutex2<[Int: ContinuousClock.Instant]>([:])
        let ready = Counter()
        let latencies = Mutex2<[Double]>([])
        let received = Mutex2<[Int: Int]>([:])
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<listeners {
                group.addTask {
                    try await WebSocketClient.connect(url: url, logger: Self.logger) { inbound, outbound, _ in
                        var messages = inbound.messages(maxSize: 1 << 24).makeAsyncIterator()
                        _ = try await messages.next()  // hello
                        try await outbound.write(.text(Self.request(1, "gauth", #"{"cred":"owner"}"#)))
                        try await outbound.write(.text(Self.request(2, "q", #"{"p":"/fanout","h":""}"#)))
                        var listening = false
                        while let message = try await messages.next() {
                            guard case .text(let text) = message else { continue }
                            if Self.responseNumber(text) == 2 {
                                listening = true
                                _ = ready.next()
                                continue
                            }
                            guard listening, let seq = Self.sequence(text) else { continue }
                            let now = ContinuousClock.now
                            if let t0 = sent.withLock({ $0[seq] }) { latencies.withLock { $0.append(Self.seconds(now - t0)) } }
                            received.withLock { $0[seq, default: 0] += 1 }
                            if seq == fanOutWrites { break }
                        }
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                }
            }
            // The writer: waits for every listener, then writes one value at a time.
            group.addTask {
                try await WebSocketClient.connect(url: url, logger: Self.logger) { inbound, outbound, _ in
                    var messages = inbound.messages(maxSize: 1 << 24).makeAsyncIterator()
                    _ = try await messages.next()
                    try await outbound.write(.text(Self.request(1, "gauth", #"{"cred":"owner"}"#)))
                    _ = try await messages.next()
                    while ready.value.withLock({ $0 }) < listeners { try await Task.sleep(for: .milliseconds(20)) }
                    for seq in 1...fanOutWrites {
                        sent.withLock { $0[seq] = ContinuousClock.now }
                        try await outbound.write(.text(Self.request(seq + 1, "p", #"{"p":"/fanout","d":{"seq":\#(seq)}}"#)))
                        while let message = try await messages.next() {
                            if case .text(let text) = message, Self.responseNumber(text) == seq + 1 { break }
                        }
                        // Next write once everyone has this one (or after a second).
                        let waitUntil = ContinuousClock.now + .seconds(1)
                        while received.withLock({ $0[seq, default: 0] }) < listeners && ContinuousClock.now < waitUntil {
                            try await Task.sleep(for: .milliseconds(1))
                        }
                    }
                    try await outbound.close(.normalClosure, reason: nil)
                }
            }
            try await group.waitForAll()
        }
        let all = latencies.withLock { $0 }
        let missing = listeners * fanOutWrites - all.count
        return Measurement(
            name: "database ws: 1 write -> \(listeners) listeners", operations: all.count, errors: missing,
            seconds: Self.seconds(ContinuousClock.now - start), latencies: all)
    }
}
