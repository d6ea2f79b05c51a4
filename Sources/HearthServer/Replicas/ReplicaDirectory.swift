public import HearthCore
import AsyncHTTPClient
import HearthStorage
public import Foundation
public import Hummingbird
public import HTTPTypes
public import Logging
public import NIOCore
import NIOHTTP1
public import NIOSSL
public import ServiceLifecycle
import Synchronization

/// This server among the replicas that share its database (docs/postgres.md, "Transactions
/// across replicas"): its id, where its ports are reached, the registry it announces itself in,
/// which replica orders the REST read-write transactions, and the client that hands a request to
/// another replica.
///
/// - At start (before the ready file is written) it announces its id, address and ports, and
///   asks once for the `firestore-transactions` role; then every second it asks for the role again
///   (a job lock: one replica holds it until it stops or dies, then the next asker takes it) and
///   every five seconds it announces itself again. A graceful stop withdraws it.
/// - A replica that has not announced itself for ``liveWithin`` is taken for gone.
public final class ReplicaDirectory: Service, Sendable {
    /// 8 random bytes made at start: the prefix of the transaction ids this replica hands out.
    public let idBytes: [UInt8]
    /// ``idBytes`` in hex: this replica's id in the registry.
    public let id: String
    let registry: any ReplicaRegistry
    let jobs: any JobCoordinator
    let address: String
    let tls: Bool
    let logger: Logger
    let ports = Mutex<[String: Int]?>(nil)
    let coordinating = Mutex(false)
    /// Replicas looked up recently (id → record, when).
    let known = Mutex<[String: (ReplicaRecord, ContinuousClock.Instant)]>([:])
    let coordinatorSeen = Mutex<(ReplicaRecord?, ContinuousClock.Instant)?>(nil)
    let client: HTTPClient

    /// The header a handed-over request carries (the id of the replica that handed it): it is
    /// served where it arrives, never handed on again.
    public static let forwardedHeader = HTTPField.Name("X-Hearth-Forwarded-By")!
    /// The role of the replica every REST read-write transaction begins on.
    public static let transactionsRole = "firestore-transactions"
    /// A replica silent for longer is taken for gone.
    public static let liveWithin: TimeInterval = 20
    static let heartbeat: Duration = .seconds(5)
    static let electionTick: Duration = .seconds(1)

    /// A directory for the replica `idBytes` (8 bytes, ``randomID()``; the document engine's
    /// transaction id prefix). With `tls`, the other replicas are reached over TLS and trusted
    /// when their certificate chains to the system's roots or to one of `trusting` (this
    /// server's own `--tls-cert` chain: replicas serve the same certificate, often a private CA's).
    public init(
        idBytes: [UInt8], registry: any ReplicaRegistry, jobs: any JobCoordinator, address: String, tls: Bool,
        trusting: [NIOSSLCertificate] = [], logger: Logger
    ) {
        precondition(idBytes.count == 8, "a replica id is 8 bytes")
        self.idBytes = idBytes
        id = Self.hex(idBytes)
        self.registry = registry
        self.jobs = jobs
        self.address = address
        self.tls = tls
        self.logger = logger
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(2)
        // A replica that refuses connections is gone: fail at once instead of retrying to the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        // Requests wait for transaction locks while they are handed over: no small cap, or the
        // commit that would release a lock could wait for a connection held by a waiter.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 4096
        configuration.httpVersion = .http1Only
        if tls {
            // The replicas' certificate names the public host, not each replica's address.
            var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
            tlsConfiguration.certificateVerification = .noHostnameVerification
            if !trusting.isEmpty { tlsConfiguration.additionalTrustRoots = [.certificates(trusting)] }
            configuration.tlsConfiguration = tlsConfiguration
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// 8 random bytes: a new replica's id.
    public static func randomID() -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    static func hex(_ bytes: [UInt8]) -> String { SigV4.hex(bytes) }

    /// The replica id a transaction id names: its first 8 bytes in hex (nil: not a replica's shape).
    public static func owner(ofTransaction bytes: [UInt8]) -> String? {
        bytes.count == 8 + 16 ? hex(Array(bytes.prefix(8))) : nil
    }

    var record: ReplicaRecord? {
        ports.withLock { $0 }.map { ReplicaRecord(id: id, address: address, ports: $0, tls: tls) }
    }

    /// Called once every listener is bound, before the ready file is written: announces this
    /// replica and asks for the transactions role once.
    public func ready(_ bound: [String: Int]) async {
        ports.withLock { $0 = bound }
        await announce()
        await elect()
        logger.info(
            "announced to the other replicas",
            metadata: ["replica": "\(id)", "address": "\(address)", "orders REST transactions": "\(isCoordinator)"])
    }

    func announce() async {
        guard let record else { return }
        do { try await registry.announce(record) } catch {
            logger.error("could not announce this replica", metadata: ["error": "\(error)"])
        }
    }

    func elect() async {
        do {
            let held = try await jobs.runExclusively(job: Self.transactionsRole) {
                try await registry.claim(role: Self.transactionsRole, by: id)
                return true
            }
            let now = held == true
            let was = coordinating.withLock { c in
                defer { c = now }
                return c
            }
            if now != was {
                logger.notice(now ? "this replica orders the REST read-write transactions" : "another replica orders the REST read-write transactions")
            }
        } catch {
            coordinating.withLock { $0 = false }
            logger.error("could not ask for the transactions role", metadata: ["error": "\(error)"])
        }
    }

    /// Whether this replica holds the transactions role (as of its last tick).
    public var isCoordinator: Bool { coordinating.withLock { $0 } }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var sinceHeartbeat: Duration = .zero
            while !Task.isCancelled {
                do { try await Task.sleep(for: Self.electionTick) } catch { return }
                await self.elect()
                sinceHeartbeat += Self.electionTick
                if sinceHeartbeat >= Self.heartbeat {
                    sinceHeartbeat = .zero
                    await self.announce()
                }
            }
        }
        do { try await registry.withdraw(id: id) } catch {
            logger.error("could not withdraw this replica", metadata: ["error": "\(error)"])
        }
        try? await client.shutdown()
    }

    /// The live replica with this id (looked up at most every second), nil when it is gone.
    public func replica(_ other: String) async throws -> ReplicaRecord? {
        let now = ContinuousClock.now
        if let (record, at) = known.withLock({ $0[other] }), now - at < .seconds(1) { return record }
        guard let record = try await registry.replica(id: other, liveWithin: Self.liveWithin) else {
            known.withLock { $0[other] = nil }
            return nil
        }
        known.withLock { $0[other] = (record, now) }
        return record
    }

    /// The replica that orders REST read-write transactions, when it is another one (nil: this
    /// one, or nobody holds the role yet — the request is served here).
    public func coordinator() async throws -> ReplicaRecord? {
        if isCoordinator { return nil }
        let now = ContinuousClock.now
        if let (record, at) = coordinatorSeen.withLock({ $0 }), now - at < .seconds(1) { return record }
        var holder = try await registry.holder(of: Self.transactionsRole, liveWithin: Self.liveWithin)
        if holder?.id == id { holder = nil }
        coordinatorSeen.withLock { $0 = (holder, now) }
        return holder
    }

    /// Hands `request` (with its collected `body`) to `replica`'s `service` port and returns its
    /// answer: the client's own method, path, query and headers, plus ``forwardedHeader``. Throws
    /// ``ReplicaUnreachable`` when the replica cannot be reached (connection refused or reset before
    /// an answer).
    public func forward(_ request: Request, body: ByteBuffer?, to replica: ReplicaRecord, service: String) async throws -> Response {
        guard let port = replica.ports[service] else { throw ReplicaUnreachable(replica: replica.id, reason: "it has no \(service) port") }
        let host = replica.address.contains(":") && !replica.address.hasPrefix("[") ? "[\(replica.address)]" : replica.address
        var url = "\(replica.tls ? "https" : "http")://\(host):\(port)\(request.uri.path)"
        if let query = request.uri.query, !query.isEmpty { url += "?" + query }
        var upstream = HTTPClientRequest(url: url)
        upstream.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headers where !Self.hopByHop.contains(field.name.canonicalName) {
            upstream.headers.add(name: field.name.rawName, value: field.value)
        }
        upstream.headers.replaceOrAdd(name: Self.forwardedHeader.rawName, value: id)
        if let body { upstream.body = .bytes(body) }
        let answer: HTTPClientResponse
        do {
            answer = try await client.execute(upstream, timeout: .minutes(5))
        } catch {
            throw ReplicaUnreachable(replica: replica.id, reason: "\(error)")
        }
        var headers = HTTPFields()
        for (name, value) in answer.headers where !Self.hopByHop.contains(name.lowercased()) {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        let status = HTTPResponse.Status(code: Int(answer.status.code))
        // The answer keeps the framing its replica gave it: a body of known length (every error,
        // most answers) is passed whole with its Content-Length; a chunked one (a streamed
        // batchGet or runQuery) streams. Clients read the two differently: urllib3 reads a chunked
        // error body through a generator, and a client under load can deadlock its own connection
        // pool finalizing one (seen with 50 threads of google-cloud-firestore's REST transport).
        if let length = answer.headers.first(name: "content-length").flatMap(Int.init), length <= Self.wholeAnswerLimit {
            let bytes: ByteBuffer
            do {
                bytes = try await answer.body.collect(upTo: length)
            } catch {
                throw ReplicaUnreachable(replica: replica.id, reason: "its answer ended early: \(error)")
            }
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: bytes))
        }
        return Response(status: status, headers: headers, body: ResponseBody(asyncSequence: answer.body))
    }

    /// Calls `path` (with its query) on `replica`'s `service` port with `headers` and `body`, as a
    /// request handed over (``forwardedHeader``): the status and the whole answer. Throws
    /// ``ReplicaUnreachable`` when the replica cannot be reached.
    public func call(
        _ method: HTTPRequest.Method, _ path: String, headers: [(String, String)], body: ByteBuffer?, to replica: ReplicaRecord, service: String
    ) async throws -> (status: Int, body: ByteBuffer) {
        guard let port = replica.ports[service] else { throw ReplicaUnreachable(replica: replica.id, reason: "it has no \(service) port") }
        let host = replica.address.contains(":") && !replica.address.hasPrefix("[") ? "[\(replica.address)]" : replica.address
        var upstream = HTTPClientRequest(url: "\(replica.tls ? "https" : "http")://\(host):\(port)\(path)")
        upstream.method = HTTPMethod(rawValue: method.rawValue)
        for (name, value) in headers { upstream.headers.add(name: name, value: value) }
        upstream.headers.replaceOrAdd(name: Self.forwardedHeader.rawName, value: id)
        if let body {
            upstream.headers.replaceOrAdd(name: "content-type", value: "application/json")
            upstream.body = .bytes(body)
        }
        do {
            let answer = try await client.execute(upstream, timeout: .minutes(5))
            return (Int(answer.status.code), try await answer.body.collect(upTo: Self.wholeAnswerLimit))
        } catch {
            throw ReplicaUnreachable(replica: replica.id, reason: "\(error)")
        }
    }

    /// Answers of known length up to this size are passed whole (with their Content-Length).
    static let wholeAnswerLimit = 64 << 20

    /// Headers of one connection, never passed on.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length",
        "x-hearth-forwarded-by",
    ]
}

/// Another replica could not be reached to take a request.
public struct ReplicaUnreachable: Error, CustomStringConvertible {
    public var replica: String
    public var reason: String
    public var description: String { "replica \(replica) could not be reached: \(reason)" }
}
