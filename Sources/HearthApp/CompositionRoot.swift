public import Foundation
public import HearthAppCheck
public import HearthAuth
import HearthCore
import HearthDatabase
import HearthDocuments
public import HearthServer
import HearthStorage
public import Logging

/// The composition root: reads a ``ServerConfiguration``, opens the stores of its
/// ``StorageBackend``, builds the engines over them and hands them to ``HearthServer`` (the
/// transports). `hearth serve`, `hearth bench` and the tests that run a whole server start here;
/// the CLI's offline commands open single engines through it.
public enum CompositionRoot {
    /// The server of `configuration`, its stores open and its engines ready; run it with
    /// ``HearthServer/run(onReady:)``.
    public static func openServer(_ configuration: ServerConfiguration, logger: Logger) async throws -> HearthServer {
        HearthMetrics.start()  // before the stores open, so their metrics land in the registry
        let stores = try Stores.open(StorageBackend(configuration))
        let engines = try await engines(configuration, stores: stores, logger: logger)
        let server = try await HearthServer(configuration: configuration, engines: engines, readiness: stores.readiness, logger: logger)
        logger.info("opened data directory", metadata: ["path": "\(URL(fileURLWithPath: configuration.dataDirectory).path)"])
        return server
    }

    /// Every engine over `stores`: Firestore's documents (with `firestore.indexes.json`
    /// applied), Auth, Storage (the default bucket created, blobs of uploads that never
    /// completed removed), the Realtime Database and App Check.
    public static func engines(_ configuration: ServerConfiguration, stores: Stores, logger: Logger) async throws -> HearthServer.Engines {
        let documents = try await DocumentEngine(
            store: stores.documents, configuration: .init(strictIndexes: configuration.strictIndexes), logger: logger)
        if let file = configuration.indexesFile {
            for definition in try HearthServer.indexDefinitions(file: file, database: "(default)") {
                try await documents.createIndex(definition)
            }
        }
        let auth = try await authEngine(configuration, store: stores.accounts, keys: stores.authKeys)
        let objects = ObjectStore(metadata: stores.objectMetadata, blobs: stores.blobs)
        try await objects.createBucket(configuration.defaultBucket, ifMissing: true)
        let swept = try await objects.sweep()
        if swept > 0 { logger.notice("removed blobs of uploads that never completed", metadata: ["count": "\(swept)"]) }
        let database = DatabaseEngine(store: stores.databaseTrees, authorizer: HearthServer.databaseAuthorizer(emulator: configuration.emulator))
        let appCheck = try appCheckEngine(configuration, store: stores.appCheck, keys: stores.appCheckKeys, auth: auth)
        return HearthServer.Engines(documents: documents, auth: auth, objects: objects, database: database, appCheck: appCheck)
    }

    /// The auth engine of a data directory alone (`hearth admin`, `hearth lifecycle plan`, the
    /// first start's service account): `<data-dir>/auth.sqlite`, its signing keys under `<data-dir>/keys/`.
    public static func openAuth(_ configuration: ServerConfiguration, directory: String) async throws -> AuthEngine {
        let dataDirectory = URL(fileURLWithPath: directory)
        return try await authEngine(configuration, store: try Stores.openAccounts(dataDirectory), keys: dataDirectory.appendingPathComponent("keys"))
    }

    /// The App Check store of a data directory (`hearth admin app-check`).
    public static func openAppCheckStore(directory: URL) throws -> any AppCheckStore {
        try Stores.openAppCheck(directory)
    }

    /// The Realtime Database of a data directory as the lifecycle worker sees it (for
    /// `hearth lifecycle plan`, which reads it while the server is stopped).
    public static func lifecycleDatabase(_ configuration: ServerConfiguration, directory: String) throws -> DatabaseLifecycleAdapter {
        let trees = try Stores.openDatabaseTrees(URL(fileURLWithPath: directory))
        let engine = DatabaseEngine(store: trees, authorizer: HearthServer.databaseAuthorizer(emulator: configuration.emulator))
        return DatabaseLifecycleAdapter(engine: engine, project: configuration.project)
    }

    /// Auth over `store`: registered service accounts sign custom tokens; emulator mode also
    /// accepts unsigned tokens. Keys stay published as long as the longest token they sign:
    /// session cookies (14 days).
    static func authEngine(_ configuration: ServerConfiguration, store: any AuthStore, keys: URL?) async throws -> AuthEngine {
        let ring = try KeyRing(
            directory: keys, policy: .init(rotationInterval: 6 * 3600, maxTokenLifetime: AuthEngine.sessionCookieDurations.upperBound))
        let bootstrap = AuthEngine(store: store, tokens: TokenService(projectID: configuration.project, keyRing: ring))
        let signers = try await bootstrap.serviceAccountSigners()
        let tokens = TokenService(
            projectID: configuration.project, keyRing: ring, allowUnsigned: configuration.emulator, customTokenSigners: signers,
            clockSkew: 60)
        let engine = AuthEngine(store: store, tokens: tokens, configuration: configuration.auth)
        try await engine.applyStoredSettings()
        return engine
    }

    /// App Check over `store`, its keys in `keys`; custom tokens are accepted from the service
    /// accounts that sign auth custom tokens.
    static func appCheckEngine(_ configuration: ServerConfiguration, store: any AppCheckStore, keys: URL?, auth: AuthEngine) throws -> AppCheckEngine {
        let keyRing = try KeyRing(directory: keys, policy: .init(rotationInterval: 6 * 3600, maxTokenLifetime: 7 * 86400))
        return AppCheckEngine(
            projectID: configuration.project, projectNumber: configuration.api.appCheckProjectNumber, keyRing: keyRing, store: store,
            customTokenSigners: auth.tokens.customTokenSigners, tokenTTL: configuration.api.appCheckTokenTTLSeconds)
    }
}
