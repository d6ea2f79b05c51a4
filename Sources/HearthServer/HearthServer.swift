public import HearthCore
public import HearthAuth
public import HearthAppCheck
public import HearthDocuments
public import HearthDatabase
import HearthRules
public import HearthStorage
import Hummingbird
import HummingbirdWebSocket
import HTTPTypes
import HummingbirdCore
public import Logging
public import ServiceLifecycle
import NIOCore
import Foundation
import Synchronization

/// The transports: one Hummingbird application per service (REST, gRPC, WebSocket, TLS) over
/// the engines the composition root (`HearthApp`) built, and the background services beside them,
/// all run in one `ServiceGroup` with graceful shutdown. It opens no store: which backend
/// holds the data is the composition root's choice.
public struct HearthServer: Sendable {
    public let configuration: ServerConfiguration
    public let engine: DocumentEngine
    /// Firebase Authentication: accounts, sessions and the token service (`auth.tokens`),
    /// whose ID-token verification every service shares.
    public let auth: AuthEngine
    /// Security rules in force for Firestore.
    public let firestoreRules: RulesStore
    /// Buckets and objects.
    public let objects: ObjectStore
    /// Security rules in force for Storage.
    public let storageRules: RulesStore
    /// The Realtime Database (see `HearthServer+Database.swift`).
    public let database: DatabaseEngine
    /// App Check (docs/app-backend.md).
    public let appCheck: AppCheckEngine
    /// Who runs the periodic jobs that must run on one server at a time.
    public let jobs: any JobCoordinator
    /// Where the console's sign-in sessions live.
    let consoleSessions: ConsoleSessions
    /// This server among the replicas sharing its database (nil: one server).
    public let replicaDirectory: ReplicaDirectory?
    /// The certificate in force when TLS is on (`--tls-cert`), reloaded by ``TLSReloader``.
    public let tls: TLSContexts?
    /// What `/readyz` asks of the persistence beside the listeners (see ``ReadinessCheck``).
    let readiness: [ReadinessCheck]
    let logger: Logger

    /// The engines a server serves, built by the composition root over one storage backend.
    public struct Engines: Sendable {
        public var documents: DocumentEngine
        public var auth: AuthEngine
        public var objects: ObjectStore
        public var database: DatabaseEngine
        public var appCheck: AppCheckEngine
        /// Who runs the periodic jobs that must run on one server at a time (docs/postgres.md, "Workers").
        public var jobs: any JobCoordinator
        /// Where the console's sign-in sessions live (shared by replicas over PostgreSQL).
        public var consoleSessions: any ConsoleSessionStore
        /// Where rules loaded at run time (emulator mode) are shared with the other servers; nil: one server.
        public var runtimeRules: (any RuntimeRulesStore)?
        /// Where the replicas sharing the database find each other, and this replica's id (the
        /// document engine's transaction id prefix); nil for one server.
        public var replicas: (registry: any ReplicaRegistry, id: [UInt8])?

        public init(
            documents: DocumentEngine, auth: AuthEngine, objects: ObjectStore, database: DatabaseEngine, appCheck: AppCheckEngine,
            jobs: any JobCoordinator = LocalJobCoordinator(), consoleSessions: any ConsoleSessionStore = InMemoryConsoleSessionStore(),
            runtimeRules: (any RuntimeRulesStore)? = nil, replicas: (registry: any ReplicaRegistry, id: [UInt8])? = nil
        ) {
            self.documents = documents
            self.auth = auth
            self.objects = objects
            self.database = database
            self.appCheck = appCheck
            self.jobs = jobs
            self.consoleSessions = consoleSessions
            self.runtimeRules = runtimeRules
            self.replicas = replicas
        }
    }

    /// Prepares the transports over `engines`: the TLS certificate, and the rules files (Firestore,
    /// Storage, and the Realtime Database's, loaded into its default namespace). `readiness` is
    /// what `/readyz` checks beyond the listeners: each store's "do you take writes now?".
    public init(configuration: ServerConfiguration, engines: Engines, readiness: [ReadinessCheck], logger: Logger) async throws {
        var tls: TLSContexts?
        if let files = configuration.tls {
            do { tls = try TLSContexts(files: files) } catch { throw HearthError(.failedPrecondition, "\(error)") }
            logger.info("TLS on every port", metadata: ["certificate": "\(files.certificate)", "expires": "\(tls!.notValidAfter)"])
        }
        // Rules loaded at run time exist in emulator mode only; over a shared store every server loads them.
        let runtimeRules = configuration.emulator ? engines.runtimeRules : nil
        let firestoreRules = RulesStore(service: "firestore", shared: runtimeRules, logger: logger)
        if let file = configuration.firestoreRulesFile {
            do {
                try RulesFileWatcher(path: file, store: firestoreRules, logger: logger).load()
            } catch let e as RulesLoadError {
                throw HearthError(.failedPrecondition, e.message)
            }
            logger.info("loaded security rules", metadata: ["file": "\(file)"])
        }
        let storageRules = RulesStore(service: "storage", shared: runtimeRules, logger: logger)
        if let file = configuration.storageRulesFile {
            do {
                try RulesFileWatcher(path: file, store: storageRules, logger: logger).load()
            } catch let e as RulesLoadError {
                throw HearthError(.failedPrecondition, e.message)
            }
            logger.info("loaded storage rules", metadata: ["file": "\(file)"])
        }
        if let watcher = Self.databaseRulesWatcher(configuration, engine: engines.database, logger: logger) {
            try await watcher.load()
            logger.info("loaded database rules", metadata: ["file": "\(watcher.path)"])
        }
        self.configuration = configuration
        self.engine = engines.documents
        self.auth = engines.auth
        self.firestoreRules = firestoreRules
        self.objects = engines.objects
        self.storageRules = storageRules
        self.database = engines.database
        self.appCheck = engines.appCheck
        self.jobs = engines.jobs
        self.consoleSessions = ConsoleSessions(store: engines.consoleSessions)
        self.replicaDirectory = engines.replicas.map { replicas in
            ReplicaDirectory(
                idBytes: replicas.id, registry: replicas.registry, jobs: engines.jobs, address: configuration.replicaAddress,
                tls: configuration.tls != nil, trusting: tls?.chain ?? [], logger: logger)
        }
        self.tls = tls
        self.readiness = readiness
        self.logger = logger
    }

    /// How a port speaks HTTP (``transport(_:)`` adds TLS and the forwarded-header rules).
    ///
    /// Every HTTP/1.1 port ends a connection safely after a refusal sent before the request body
    /// arrived (``EarlyRefusalHandler``: a `Content-Length` over `--max-request-bytes` is answered
    /// from the headers); request heads are bounded by Hummingbird's decoder (80 KiB of header
    /// fields, 1000 fields: larger heads get 400 and the connection closes).
    enum Transport: Sendable {
        /// HTTP/1.1 with `Expect: 100-continue` answered at once.
        case http1
        /// The object ports (Storage, S3): HTTP/1.1 reading up to 256 KiB at a time (see
        /// ``BulkReadHTTP1Channel``), `100 Continue` only once a body is read, and refusals sent
        /// before the body ending the connection safely (``EarlyRefusalHandler``).
        case bulkHTTP1
        /// The Firestore port: HTTP/1.1 (REST, as `http1`) and HTTP/2 (gRPC) on one socket, told
        /// apart by the connection's first bytes — in cleartext HTTP/2 with prior knowledge (h2c),
        /// over TLS as ALPN chose (`h2` or `http/1.1`).
        case http1AndH2
        /// The database port: HTTP/1.1 as `http1`, plus the WebSocket upgrades `shouldUpgrade` accepts
        /// (the Realtime Database's `/.ws`).
        case http1WebSocket(
            WebSocketServerConfiguration,
            shouldUpgrade: @Sendable (HTTPRequest, any Channel, Logger) async throws
                -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>)
    }

    /// One service's HTTP listener on its configured port; reports the bound port to `ready`.
    func listener<R: HTTPResponder>(_ name: String, _ responder: R, _ ready: ReadyFile, server: Transport = .http1) -> some Service
    where R.Context: InitializableFromSource<ApplicationRequestContextSource> {
        Application(
            responder: ObservedResponder(service: name, inner: responder),
            server: transport(server),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.ports[name] ?? ServerConfiguration.defaultPorts[name] ?? 0),
                serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                self.logger.notice("\(name) listening", metadata: [
                    "host": "\(self.configuration.host)", "port": "\(port)", "scheme": "\(self.configuration.scheme)",
                ])
                ready.bound(name, port)
            },
            logger: logger)
    }

    /// The child channels of a transport, behind TLS when it is on; every HTTP/1.1 request passes
    /// ``ForwardedHeadersHandler`` first.
    func transport(_ kind: Transport) -> HTTPServerBuilder {
        let policy = ForwardedPolicy(trustedProxies: configuration.trustedProxies, tls: tls != nil)
        let tls = tls
        @Sendable func secured<C: ServerChildChannel>(_ channel: C, _ offer: TLSContexts.Offer) -> any ServerChildChannel {
            guard let tls else { return channel }
            return TLSServerChannel(channel, contexts: tls, offer: offer)
        }
        switch kind {
        case .http1:
            return HTTPServerBuilder { responder in
                secured(
                    HTTP1Channel(
                        responder: responder,
                        configuration: .init(additionalChannelHandlers: [
                            ForwardedHeadersHandler(policy: policy), ExpectContinueHandler(), EarlyRefusalHandler(),
                        ])),
                    .http1)
            }
        case .http1WebSocket(let webSocket, let shouldUpgrade):
            return HTTPServerBuilder { responder in
                secured(
                    HTTP1WebSocketUpgradeChannel(
                        responder: responder, configuration: webSocket,
                        additionalChannelHandlers: { [ForwardedHeadersHandler(policy: policy), ExpectContinueHandler(), EarlyRefusalHandler()] },
                        shouldUpgrade: shouldUpgrade),
                    .http1)
            }
        case .bulkHTTP1:
            return HTTPServerBuilder { responder in
                secured(
                    BulkReadHTTP1Channel(
                        responder: responder,
                        configuration: .init(additionalChannelHandlers: [
                            ForwardedHeadersHandler(policy: policy), ExpectContinueHandler(.whenBodyIsRead), EarlyRefusalHandler(),
                        ])),
                    .http1)
            }
        case .http1AndH2:
            return HTTPServerBuilder { responder in
                secured(
                    SniffingHTTPChannel(
                        responder: responder,
                        http1: .init(additionalChannelHandlers: [
                            ForwardedHeadersHandler(policy: policy), ExpectContinueHandler(), EarlyRefusalHandler(),
                        ]),
                        forwarded: policy),
                    .h2AndHTTP1)
            }
        }
    }

    /// Runs every listener until SIGTERM/SIGINT, then shuts down gracefully.
    /// `onReady` receives the bound ports once every listener is up (as the ready file does).
    /// Cancelling the calling task shuts the server down gracefully too.
    public func run(onReady: @escaping @Sendable ([String: Int]) -> Void = { _ in }) async throws {
        let group = ServiceGroup(configuration: Self.serviceGroupConfiguration(configuration, services: try await services(onReady: onReady), logger: logger))
        try await group.run()
        logger.notice("stopped")
    }

    /// The one `ServiceGroup`'s configuration: SIGTERM/SIGINT stop every listener, which drain (the
    /// services shut down in reverse order of their start); past `--shutdown-timeout` what is still
    /// open (streams) is cancelled. The composition root starts a group of this configuration with
    /// its backend's services (a connection pool) and adds ``services(onReady:)`` once the engines
    /// are open, so the pool starts first and stops last.
    public static func serviceGroupConfiguration(
        _ configuration: ServerConfiguration, services: [any Service], logger: Logger
    ) -> ServiceGroupConfiguration {
        var groupConfiguration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        groupConfiguration.maximumCancellationDuration = .seconds(5)
        return groupConfiguration
    }

    /// Every listener and background service of the server, in start order (``run(onReady:)``
    /// runs them in a group of their own).
    public func services(onReady: @escaping @Sendable ([String: Int]) -> Void = { _ in }) async throws -> [any Service] {
        var expected: Set<String> = ["auth", "firestore", "storage", "s3", "database", "api"]
        if configuration.ports["console"] != nil { expected.insert("console") }
        if configuration.ports["metrics"] != nil { expected.insert("metrics") }
        let ready = ReadyFile(path: configuration.readyFile, expected: expected, logger: logger, onReady: onReady)
        if let replicaDirectory {
            // Announced to the other replicas before the ready file says the server is up.
            ready.beforeReady = { ports in await replicaDirectory.ready(ports) }
        }
        var authenticator = Authenticator(emulator: configuration.emulator, adminToken: configuration.adminToken, auth: auth)
        authenticator.appCheckGates = appCheckGates(appCheck)
        let consoleToken = ConsoleSessions.randomToken()
        authenticator.consoleToken = consoleToken
        let security = FirestoreSecurity(rules: firestoreRules, emulator: configuration.emulator, engine: engine, logger: logger)
        let storage = StorageRESTResponder(
            store: objects, authenticator: authenticator,
            security: StorageSecurity(rules: storageRules, emulator: configuration.emulator, documents: engine, logger: logger),
            project: configuration.project, logger: logger, maxObjectBytes: configuration.limits.objectBytes,
            maxRequestBytes: configuration.limits.requestBytes(.storage))
        let outbox = Outbox(
            directory: URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("outbox"), smtp: configuration.smtp,
            appName: configuration.project, logger: logger)
        if let smtp = configuration.smtp {
            logger.notice("auth emails go to an SMTP server", metadata: ["smtp": "\(smtp.description)", "from": "\(smtp.from)"])
        }
        // The background services first: the group shuts down in reverse order, so they stop after
        // every listener has drained (nothing queues work for them any more).
        var services: [any Service] = [objects.reclaimer]
        if configuration.smtp != nil { services.append(outbox) }
        services += [
            listener(
                "auth",
                AuthRESTResponder(
                    engine: auth, authenticator: authenticator, outbox: outbox, providers: configuration.identityProviders,
                    linkDomains: configuration.authLinkDomains, logger: logger, maxBody: configuration.limits.requestBytes(.auth)),
                ready),
            listener(
                "firestore",
                FirestoreResponder(
                    rest: FirestoreRESTResponder(
                        engine: engine, authenticator: authenticator, security: security, logger: logger,
                        maxBody: configuration.limits.requestBytes(.firestore), replicas: replicaDirectory),
                    grpc: FirestoreGRPCService(
                        engine: engine, authenticator: authenticator, security: security, replicas: replicaDirectory, logger: logger)
                        .responder(logger: logger, maxMessageSize: configuration.limits.requestBytes(.firestore))),
                ready, server: .http1AndH2),
            listener("storage", storage, ready, server: .bulkHTTP1),
            listener(
                "s3",
                S3RESTResponder(
                    store: objects, emulator: configuration.emulator, logger: logger, maxObjectBytes: configuration.limits.objectBytes,
                    maxRequestBytes: configuration.limits.requestBytes(.s3)),
                ready, server: .bulkHTTP1),
        ]
        services.append(databaseListener(authenticator: authenticator, ready: ready))
        if configuration.ports["console"] != nil {
            let console = ConsoleResponder(
                configuration: configuration, engine: engine, auth: auth, objects: objects, database: database, firestoreRules: firestoreRules,
                storageRules: storageRules, sessions: consoleSessions, boundPort: { ready.port($0) }, proxyCredential: consoleToken,
                recentErrors: configuration.recentErrors, startedAt: Date(), logger: logger)
            services.append(listener("console", console, ready))
        }
        if configuration.ports["metrics"] != nil { services.append(listener("metrics", MetricsResponder(), ready)) }
        services.append(ListenHeartbeat(engine: engine))
        if let replicaDirectory { services.append(replicaDirectory) }
        services += try await appAPIServices(authenticator: authenticator, appCheck: appCheck, ready: ready)  // the api port (docs/app-backend.md)
        if let tls { services.append(TLSReloader(contexts: tls, logger: logger)) }
        if let file = configuration.firestoreRulesFile {
            services.append(RulesFileWatcher(path: file, store: firestoreRules, logger: logger))
        }
        if let file = configuration.storageRulesFile {
            services.append(RulesFileWatcher(path: file, store: storageRules, logger: logger))
        }
        if let watcher = Self.databaseRulesWatcher(configuration, engine: database, logger: logger) {
            watcher.rememberCurrentVersion()  // init loaded it
            services.append(watcher)
        }
        return services
    }
}

/// Writes `{"firestore": 8080, ...}` atomically once every expected listener is bound.
final class ReadyFile: Sendable {
    let path: String?
    let expected: Set<String>
    let bound: Mutex<[String: Int]>
    let logger: Logger
    let onReady: @Sendable ([String: Int]) -> Void
    /// What must happen once every listener is bound and before the ready file is written (the
    /// replica's announcement); set before the listeners start.
    nonisolated(unsafe) var beforeReady: (@Sendable ([String: Int]) async -> Void)?

    init(path: String?, expected: Set<String>, logger: Logger, onReady: @escaping @Sendable ([String: Int]) -> Void) {
        self.path = path
        self.expected = expected
        self.bound = Mutex([:])
        self.logger = logger
        self.onReady = onReady
    }

    /// The port a service is bound to, once it is.
    func port(_ service: String) -> Int? { bound.withLock { $0[service] } }

    /// The expected listeners not bound yet (`/readyz`).
    var missing: [String] { bound.withLock { ports in expected.subtracting(ports.keys).sorted() } }

    func bound(_ service: String, _ port: Int) {
        let complete: [String: Int]? = bound.withLock { ports in
            ports[service] = port
            return Set(ports.keys) == expected ? ports : nil
        }
        guard let complete else { return }
        if let beforeReady {
            Task {
                await beforeReady(complete)
                self.announce(complete)
            }
        } else {
            announce(complete)
        }
    }

    func announce(_ complete: [String: Int]) {
        onReady(complete)
        guard let path else { return }
        let json = JSON.object(complete.sorted { $0.key < $1.key }.map { ($0.key, .number($0.value)) })
        let tmp = path + ".tmp-\(getpid())"
        do {
            try Data(json.serializedBytes()).write(to: URL(fileURLWithPath: tmp))
            if rename(tmp, path) != 0 { throw HearthError(.internal, "rename failed: errno \(errno)") }
            logger.info("wrote ready file", metadata: ["path": "\(path)"])
        } catch {
            logger.error("cannot write ready file", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}
