public import Foundation
public import HearthAppCheck
public import HearthAuth
public import HearthDatabase
public import HearthDocuments
public import HearthServer
public import HearthStorage
public import HearthCore
import HearthSQLite
import HearthPostgres
public import Logging
public import ServiceLifecycle

/// Where the data lives: the one seam between the engines and their persistence. Each case
/// opens every engine's store (``Stores``); nothing above the composition root knows which.
public enum StorageBackend: Sendable {
    /// The embedded default: SQLite files under a data directory (``SQLiteDataDirectory``),
    /// object bytes under its `objects/` or, with `blobS3`, in an external S3 bucket.
    case sqlite(dataDirectory: URL, blobS3: S3BlobStore.Configuration?)
    /// A PostgreSQL database (`--database-url`, docs/postgres.md): its schema migrated at start,
    /// one connection pool for every store, the signing keys in the database too (several
    /// servers may share it). Object bytes stay under `dataDirectory`'s `objects/` (or in `blobS3`).
    case postgres(url: String, dataDirectory: URL, blobS3: S3BlobStore.Configuration?)

    /// The backend a server configuration names: PostgreSQL when it has a database URL.
    public init(_ configuration: ServerConfiguration) {
        let dataDirectory = URL(fileURLWithPath: configuration.dataDirectory)
        if let url = configuration.databaseURL {
            self = .postgres(url: url, dataDirectory: dataDirectory, blobS3: configuration.blobS3)
        } else {
            self = .sqlite(dataDirectory: dataDirectory, blobS3: configuration.blobS3)
        }
    }
}

/// Every engine's store, opened from one ``StorageBackend``, and the readiness checks
/// `/readyz` runs against them.
public struct Stores: Sendable {
    public var documents: any DocumentStore
    public var accounts: any AuthStore
    public var objectMetadata: any ObjectMetadataStore
    public var blobs: any BlobStore
    public var databaseTrees: any DatabaseTreeStore
    public var appCheck: any AppCheckStore
    /// Where the auth signing keys are kept (`nil`: in memory only). With ``signingKeys``, the
    /// key files a first start over that store imports.
    public var authKeys: URL?
    /// Where the App Check signing keys are kept (with ``signingKeys``: as for ``authKeys``).
    public var appCheckKeys: URL?
    /// The store every server over the database signs and verifies with (rings `"auth"` and
    /// `"app-check"`) instead of the files; nil for SQLite.
    public var signingKeys: (any SigningKeyStore)?
    /// Where sign-in attempts are counted for every server over the database; nil: in process.
    public var signInAttempts: (any SignInAttemptStore)?
    /// Who runs the periodic jobs that must run on one server at a time.
    public var jobs: any JobCoordinator = LocalJobCoordinator()
    /// Where the console's sign-in sessions live: in memory, or in the database every server shares.
    public var consoleSessions: any ConsoleSessionStore = InMemoryConsoleSessionStore()
    /// Where rules loaded at run time (emulator mode) are shared by every server; nil: one server.
    public var runtimeRules: (any RuntimeRulesStore)?
    /// Where the servers over the database find each other (nil: one server), and this server's
    /// replica id (8 random bytes per start: the prefix of its transaction ids).
    public var replicas: (any ReplicaRegistry)?
    public var replicaID: [UInt8] = []
    /// The object metadata rows (and S3 access keys) a server may keep in memory: none when
    /// other servers write the same store.
    public var objectMetadataCacheSize = 16_384
    /// Whether the start-up sweep may remove blobs no object refers to. Not over PostgreSQL, where
    /// other running servers may write the same blobs (an S3 bucket, or a data directory, shared
    /// by replicas): an upload in flight on another server has bytes its metadata does not refer to yet.
    public var sweepsUnreferencedBlobsAtStart = true
    /// Each store's answer to "do you take writes now?" (`/readyz`).
    public var readiness: [ReadinessCheck]
    /// What must run, in the server's one `ServiceGroup`, before the stores answer and until the
    /// last listener has stopped (PostgreSQL's connection pool, the job locks); none for SQLite.
    public var services: [any Service] = []
    /// What only a server runs, after ``services`` and stopped before them: the Realtime
    /// Database's feed of the other servers' writes. Offline commands (``CompositionRoot/withStores(_:logger:_:)``)
    /// leave them out: nothing of theirs may still use the pool when it stops (postgres-nio never
    /// answers a query written to a connection the stopping pool has just closed).
    public var serverServices: [any Service] = []
    /// Where the Realtime Database's writes go: over PostgreSQL a sequenced feed that
    /// ``PostgresDatabaseTreeFeed`` (in ``serverServices``) also fills with the other servers' writes.
    public var databaseChanges = DatabaseChangeFeed()
    /// Several servers may share the document store (PostgreSQL): the document engine opens
    /// `replicated` (its change feed fed externally, no document cache) and this service, made
    /// for it, feeds its change feed from the store's commit log; it runs after ``services``.
    public var documentFeed: (@Sendable (DocumentEngine) -> any Service)? = nil

    /// Opens every store of `backend` (for PostgreSQL: migrates its schema first; the stores
    /// answer once ``services`` run).
    public static func open(_ backend: StorageBackend, logger: Logger) async throws -> Stores {
        switch backend {
        case .sqlite(let dataDirectory, let blobS3):
            if let recorded = PostgresMarker.recorded(dataDirectory) {
                throw HearthError(
                    .failedPrecondition,
                    "\(dataDirectory.path) belongs to a server that keeps its data in PostgreSQL (\(recorded)): start it with --database-url "
                        + "(or HEARTH_DATABASE_URL), or delete \(dataDirectory.appendingPathComponent(PostgresMarker.fileName).path) to serve "
                        + "this directory's SQLite files.")
            }
            return try openSQLite(dataDirectory: dataDirectory, blobS3: blobS3)
        case .postgres(let url, let dataDirectory, let blobS3):
            return try await openPostgres(url: url, dataDirectory: dataDirectory, blobS3: blobS3, logger: logger)
        }
    }

    /// The stores of a PostgreSQL database: its schema migrated (under the advisory lock; a
    /// schema newer than this binary is refused), one ``PostgresBackend`` (the pool, in
    /// ``services``) shared by every store, the signing keys and sign-in attempts in the database,
    /// the periodic jobs coordinated by advisory locks, no cache of object metadata (docs/postgres.md,
    /// "Several replicas"). The data directory keeps what is not in the database: object bytes
    /// (unless `blobS3`), the outbox, the admin token — and the key files of a SQLite past, which
    /// the first start imports.
    /// UNAVAILABLE naming `host:port` and the cause when the database cannot be reached.
    public static func openPostgres(url: String, dataDirectory: URL, blobS3: S3BlobStore.Configuration?, logger: Logger) async throws -> Stores {
        let settings = try DatabaseURL.settings(url)
        try createDataDirectory(dataDirectory)
        try await PostgresSchema.migrate(settings, logger: logger)
        try PostgresMarker.write(dataDirectory, url: url)
        let backend = PostgresBackend(settings: settings, logger: logger)
        let jobs = PostgresJobCoordinator(settings: settings, logger: logger)
        let path = dataDirectory.path
        let databaseChanges = DatabaseChangeFeed(sequenced: true)
        let accounts = PostgresAuthStore(backend: backend)
        var stores = Stores(
            documents: PostgresDocumentStore(backend: backend, sharedClock: true), accounts: accounts, objectMetadata: PostgresObjectMetadataStore(backend: backend),
            blobs: try ObjectStore.blobStore(directory: dataDirectory, s3: blobS3, shared: true), databaseTrees: PostgresDatabaseTreeStore(backend: backend),
            appCheck: PostgresAppCheckStore(backend: backend), authKeys: dataDirectory.appendingPathComponent("keys"),
            appCheckKeys: dataDirectory.appendingPathComponent("app-check-keys"),
            readiness: [
                ReadinessCheck("PostgreSQL \(settings.endpoint)") { try await pingPostgres(backend, within: .seconds(2)) },
                ReadinessCheck("data directory") { try await SQLiteDataDirectory.checkWrites(directory: path) },
            ],
            services: [backend, jobs],
            databaseChanges: databaseChanges,
            documentFeed: { engine in PostgresCommitFeed(backend: backend, engine: engine, logger: logger) })
        stores.serverServices = [PostgresDatabaseTreeFeed(backend: backend, feed: databaseChanges, logger: logger)]
        stores.signingKeys = PostgresSigningKeyStore(backend: backend)
        stores.signInAttempts = accounts
        stores.jobs = jobs
        stores.consoleSessions = PostgresConsoleSessionStore(backend: backend)
        stores.runtimeRules = PostgresRuntimeRulesStore(backend: backend)
        stores.replicas = PostgresReplicaRegistry(backend: backend)
        stores.replicaID = ReplicaDirectory.randomID()
        stores.objectMetadataCacheSize = 0
        // Never over a shared database: another server's upload in flight has a blob and no row yet
        // (whether the bytes are in a bucket or in a data directory the servers share).
        stores.sweepsUnreferencedBlobsAtStart = false
        return stores
    }

    /// A trivial query (the schema version) answered within `limit`; UNAVAILABLE otherwise.
    static func pingPostgres(_ backend: PostgresBackend, within limit: Duration) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = try await PostgresSchema.version(backend)
                return true
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return false
            }
            let answered = try await group.next() ?? false
            group.cancelAll()
            guard answered else {
                throw HearthError(.unavailable, "The database at \(backend.settings.endpoint) did not answer within \(limit).")
            }
        }
    }

    /// The stores of a data directory (created if missing): `hearth.sqlite`, `auth.sqlite`,
    /// `storage.sqlite` with the bytes under `objects/` (or in `blobS3`), `database.sqlite` and
    /// `app-check.sqlite`; the signing keys under `keys/` and `app-check-keys/`.
    public static func openSQLite(dataDirectory: URL, blobS3: S3BlobStore.Configuration? = nil) throws -> Stores {
        try createDataDirectory(dataDirectory)
        let documents = try SQLiteDocumentStore(path: dataDirectory.appendingPathComponent(SQLiteDataDirectory.documents).path)
        let accounts = try openAccounts(dataDirectory)
        let objectMetadata = try SQLiteObjectMetadataStore(path: dataDirectory.appendingPathComponent(SQLiteDataDirectory.objectMetadata).path)
        let blobs = try ObjectStore.blobStore(directory: dataDirectory, s3: blobS3)
        let databaseTrees = try openDatabaseTrees(dataDirectory)
        let appCheck = try openAppCheck(dataDirectory)
        let path = dataDirectory.path
        return Stores(
            documents: documents, accounts: accounts, objectMetadata: objectMetadata, blobs: blobs, databaseTrees: databaseTrees,
            appCheck: appCheck, authKeys: dataDirectory.appendingPathComponent("keys"),
            appCheckKeys: dataDirectory.appendingPathComponent("app-check-keys"),
            readiness: [ReadinessCheck("data directory") { try await SQLiteDataDirectory.checkWrites(directory: path) }])
    }

    /// The accounts store of a data directory alone (the admin commands, the first start's service account).
    static func openAccounts(_ dataDirectory: URL) throws -> any AuthStore {
        do {
            return try SQLiteDataDirectory.openAccounts(directory: dataDirectory)
        } catch {
            throw HearthError(.failedPrecondition, "Cannot open \(dataDirectory.appendingPathComponent(SQLiteDataDirectory.accounts).path): \(error)")
        }
    }

    /// The App Check store of a data directory alone (`hearth admin app-check`).
    static func openAppCheck(_ dataDirectory: URL) throws -> any AppCheckStore {
        try GRDBAppCheckStore.open(path: dataDirectory.appendingPathComponent(SQLiteDataDirectory.appCheck).path)
    }

    /// The Realtime Database's store of a data directory alone (`hearth lifecycle plan`).
    static func openDatabaseTrees(_ dataDirectory: URL) throws -> any DatabaseTreeStore {
        try SQLiteDatabaseTreeStore(path: dataDirectory.appendingPathComponent(SQLiteDataDirectory.databaseTrees).path)
    }

    static func createDataDirectory(_ dataDirectory: URL) throws {
        do {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw HearthError(.failedPrecondition, "Cannot create data directory \(dataDirectory.path): \(error.localizedDescription)")
        }
    }
}
