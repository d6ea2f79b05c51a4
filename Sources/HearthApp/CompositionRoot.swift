import Foundation
import HearthAppCheck
public import HearthAuth
import HearthCore
import HearthDatabase
import HearthDocuments
public import HearthServer
public import HearthStorage
public import Logging
import ServiceLifecycle

/// The composition root: reads a ``ServerConfiguration``, opens the stores of its
/// ``StorageBackend``, builds the engines over them and hands them to ``HearthServer`` (the
/// transports). `hearth serve`, `hearth bench` and the tests that run a whole server start here;
/// the CLI's offline commands open single engines through it.
public enum CompositionRoot {
    /// Opens the stores of `configuration`'s backend, the engines over them and the server, and
    /// runs it until SIGTERM/SIGINT (or until the calling task is cancelled), all in one
    /// `ServiceGroup`: the backend's services (PostgreSQL's connection pool) start first — the
    /// engines read their stores while they open — and stop last, after every listener drained.
    /// `prepare` runs once the stores answer, before the engines open (the first start's service
    /// account). `onReady` receives the bound ports once every listener is up.
    public static func run(
        _ configuration: ServerConfiguration, logger: Logger, prepare: @Sendable (Stores) async throws -> Void = { _ in },
        onReady: @escaping @Sendable ([String: Int]) -> Void = { _ in }
    ) async throws {
        HearthMetrics.start()  // before the stores open, so their metrics land in the registry
        let stores = try await Stores.open(StorageBackend(configuration), logger: logger)
        guard !stores.services.isEmpty else {
            // SQLite: nothing needs to run before the stores answer; the group is the server's alone.
            try await prepare(stores)
            let server = try await openServer(configuration, stores: stores, logger: logger)
            logger.notice("starting", metadata: ["project": "\(configuration.project)", "mode": "\(configuration.emulator ? "emulator" : "production")"])
            return try await server.run(onReady: onReady)
        }
        let group = ServiceGroup(configuration: HearthServer.serviceGroupConfiguration(configuration, services: stores.services + stores.serverServices, logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                try await prepare(stores)
                let server = try await openServer(configuration, stores: stores, logger: logger)
                // After the pool, before the listeners: Listen streams hear every server's commits.
                if let feed = stores.documentFeed { await group.addServiceUnlessShutdown(feed(server.engine)) }
                logger.notice("starting", metadata: ["project": "\(configuration.project)", "mode": "\(configuration.emulator ? "emulator" : "production")"])
                for service in sharedStoreServices(server, stores: stores, logger: logger) + (try await server.services(onReady: onReady)) {
                    await group.addServiceUnlessShutdown(service)
                }
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
            try await tasks.waitForAll()
        }
        logger.notice("stopped")
    }

    /// The server of `configuration`, its stores open and its engines ready; run it with
    /// ``HearthServer/run(onReady:)``. For a backend whose stores need services running
    /// (PostgreSQL), use ``run(_:logger:prepare:onReady:)``.
    public static func openServer(_ configuration: ServerConfiguration, logger: Logger) async throws -> HearthServer {
        HearthMetrics.start()  // before the stores open, so their metrics land in the registry
        let stores = try await Stores.open(StorageBackend(configuration), logger: logger)
        guard stores.services.isEmpty else {
            throw HearthError(.failedPrecondition, "CompositionRoot.openServer opens SQLite data directories only; run a PostgreSQL server with CompositionRoot.run.")
        }
        return try await openServer(configuration, stores: stores, logger: logger)
    }

    static func openServer(_ configuration: ServerConfiguration, stores: Stores, logger: Logger) async throws -> HearthServer {
        let engines = try await engines(configuration, stores: stores, logger: logger)
        let server = try await HearthServer(configuration: configuration, engines: engines, readiness: stores.readiness, logger: logger)
        if let url = configuration.databaseURL {
            logger.info("opened PostgreSQL", metadata: ["database": "\(DatabaseURL.redacted(url))"])
        }
        logger.info("opened data directory", metadata: ["path": "\(URL(fileURLWithPath: configuration.dataDirectory).path)"])
        return server
    }

    /// Every engine over `stores`: Firestore's documents (with `firestore.indexes.json`
    /// applied), Auth, Storage (the default bucket created, blobs of uploads that never
    /// completed removed), the Realtime Database and App Check.
    public static func engines(_ configuration: ServerConfiguration, stores: Stores, logger: Logger) async throws -> HearthServer.Engines {
        var documentConfiguration = DocumentEngine.Configuration(strictIndexes: configuration.strictIndexes, replicated: stores.documentFeed != nil)
        if stores.replicas != nil { documentConfiguration.transactionIDPrefix = stores.replicaID }
        let documents = try await DocumentEngine(store: stores.documents, configuration: documentConfiguration, logger: logger)
        if let file = configuration.indexesFile {
            for definition in try HearthServer.indexDefinitions(file: file, database: "(default)") {
                try await documents.createIndex(definition)
            }
        }
        let auth = try await authEngine(configuration, stores: stores)
        let objects = Self.objects(stores)
        try await objects.createBucket(configuration.defaultBucket, ifMissing: true)
        if stores.sweepsUnreferencedBlobsAtStart {
            let swept = try await objects.sweep()
            if swept > 0 { logger.notice("removed blobs of uploads that never completed", metadata: ["count": "\(swept)"]) }
        }
        let database = DatabaseEngine(
            store: stores.databaseTrees, authorizer: HearthServer.databaseAuthorizer(emulator: configuration.emulator), feed: stores.databaseChanges)
        let appCheck = try await appCheckEngine(configuration, stores: stores, auth: auth)
        return HearthServer.Engines(documents: documents, auth: auth, objects: objects, database: database, appCheck: appCheck, jobs: stores.jobs,
            consoleSessions: stores.consoleSessions, runtimeRules: stores.runtimeRules,
            replicas: stores.replicas.map { ($0, stores.replicaID) })
    }

    /// Opens the stores of `backend` for an offline command (`hearth admin …`), runs their services
    /// (PostgreSQL's pool) while `body` uses them, and stops them after.
    public static func withStores<Result: Sendable>(
        _ backend: StorageBackend, logger: Logger, _ body: (Stores) async throws -> Result
    ) async throws -> Result {
        let stores = try await Stores.open(backend, logger: logger)
        guard !stores.services.isEmpty else { return try await body(stores) }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for service in stores.services { group.addTask { try await service.run() } }
            defer { group.cancelAll() }
            return try await body(stores)
        }
    }

    /// The object store (metadata and bytes) over `stores`; with no metadata cache when other
    /// servers write the same store.
    public static func objects(_ stores: Stores) -> ObjectStore {
        ObjectStore(metadata: stores.objectMetadata, blobs: stores.blobs, metadataCacheSize: stores.objectMetadataCacheSize)
    }

    /// The auth engine over `stores`' accounts (the first start's service account, registered
    /// before the server's engines open).
    public static func openAuth(_ configuration: ServerConfiguration, stores: Stores) async throws -> AuthEngine {
        try await authEngine(configuration, stores: stores)
    }

    /// The Realtime Database of `stores` as the lifecycle worker sees it (for `hearth lifecycle plan`).
    public static func lifecycleDatabase(_ configuration: ServerConfiguration, stores: Stores) -> DatabaseLifecycleAdapter {
        let engine = DatabaseEngine(store: stores.databaseTrees, authorizer: HearthServer.databaseAuthorizer(emulator: configuration.emulator))
        return DatabaseLifecycleAdapter(engine: engine, project: configuration.project)
    }

    /// The name of Auth's key ring in a shared ``Stores/signingKeys``.
    static let authRing = "auth"
    /// The name of App Check's key ring in a shared ``Stores/signingKeys``.
    static let appCheckRing = "app-check"

    /// A key ring under `directory`, or — when `stores` share their keys — the stored ring
    /// `ring` (the directory's key files imported into it first if it has none).
    static func keyRing(_ stores: Stores, ring: String, directory: URL?, policy: KeyRing.Policy) async throws -> KeyRing {
        guard let store = stores.signingKeys else { return try KeyRing(directory: directory, policy: policy) }
        if let directory { _ = try await KeyRing.importFiles(directory, into: store, ring: ring) }
        return try await KeyRing(store: store, ring: ring, policy: policy)
    }

    /// For stores that other servers share: a service per key ring keeping this server's copy in
    /// step with the stored ring (docs/postgres.md, "Signing keys"), and one reading Auth's
    /// project settings (email enumeration protection) and registered service accounts (the
    /// custom-token signers) every ``settingsRefreshInterval``, so a change made through another
    /// server holds here too; none otherwise.
    static func sharedStoreServices(_ server: HearthServer, stores: Stores, logger: Logger) -> [any Service] {
        guard stores.signingKeys != nil else { return [] }
        let rings: [any Service] = [(Self.authRing, server.auth.tokens.keyRing), (Self.appCheckRing, server.appCheck.keyRing)].map {
            KeyRingSynchronizer(ring: $0.1, name: $0.0, logger: logger)
        }
        return rings + [AuthSettingsRefresher(auth: server.auth, interval: settingsRefreshInterval, logger: logger)]
    }

    /// How often a server sharing its stores reads Auth's project settings again.
    static let settingsRefreshInterval: Duration = .seconds(5)

    /// Auth over `stores`' accounts: registered service accounts sign custom tokens; emulator mode
    /// also accepts unsigned tokens. Keys stay published as long as the longest token they sign:
    /// session cookies (14 days). Sign-in attempts are counted in `stores.signInAttempts` when set.
    static func authEngine(_ configuration: ServerConfiguration, stores: Stores) async throws -> AuthEngine {
        let store = stores.accounts
        let ring = try await keyRing(
            stores, ring: Self.authRing, directory: stores.authKeys,
            policy: .init(rotationInterval: 6 * 3600, maxTokenLifetime: AuthEngine.sessionCookieDurations.upperBound))
        let bootstrap = AuthEngine(store: store, tokens: TokenService(projectID: configuration.project, keyRing: ring))
        let signers = try await bootstrap.serviceAccountSigners()
        let tokens = TokenService(
            projectID: configuration.project, keyRing: ring, allowUnsigned: configuration.emulator, customTokenSigners: signers,
            clockSkew: 60)
        let engine = AuthEngine(store: store, tokens: tokens, configuration: configuration.auth, attempts: stores.signInAttempts)
        try await engine.applyStoredSettings()
        return engine
    }

    /// App Check over `stores`' App Check store and keys; custom tokens are accepted from the
    /// service accounts that sign auth custom tokens (read from Auth's token service at each
    /// exchange, so a refresh reaches both).
    static func appCheckEngine(_ configuration: ServerConfiguration, stores: Stores, auth: AuthEngine) async throws -> AppCheckEngine {
        let keyRing = try await keyRing(
            stores, ring: Self.appCheckRing, directory: stores.appCheckKeys, policy: .init(rotationInterval: 6 * 3600, maxTokenLifetime: 7 * 86400))
        return AppCheckEngine(
            projectID: configuration.project, projectNumber: configuration.api.appCheckProjectNumber, keyRing: keyRing, store: stores.appCheck,
            customTokenSignerSource: { [tokens = auth.tokens] in tokens.customTokenSigners }, tokenTTL: configuration.api.appCheckTokenTTLSeconds)
    }
}

/// Keeps a store-backed ``KeyRing`` in step with its store (``KeyRing/runSynchronization(onError:)``)
/// until graceful shutdown: a `Service` of the server's group.
struct KeyRingSynchronizer: Service {
    let ring: KeyRing
    let name: String
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await ring.runSynchronization { error in
                logger.warning("cannot synchronize a signing key ring", metadata: ["ring": "\(name)", "error": "\(error)"])
            }
        }
    }
}

/// Reads Auth's project settings (``AuthEngine/applyStoredSettings()``) and registered service
/// accounts (the custom-token signers of Auth and App Check) from the store every `interval` until
/// graceful shutdown: for servers sharing one accounts store, where another server may change
/// them. A failed read is logged and what is in force stays.
struct AuthSettingsRefresher: Service {
    let auth: AuthEngine
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                do {
                    try await auth.applyStoredSettings()
                    auth.tokens.setCustomTokenSigners(try await auth.serviceAccountSigners())
                } catch {
                    logger.warning("cannot read the auth project settings and service accounts", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
