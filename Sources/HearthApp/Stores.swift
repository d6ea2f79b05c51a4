public import Foundation
public import HearthAppCheck
public import HearthAuth
public import HearthDatabase
public import HearthDocuments
public import HearthServer
public import HearthStorage
import HearthCore
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
    /// one connection pool for every store. Object bytes stay under `dataDirectory`'s `objects/`
    /// (or in `blobS3`), the signing keys under its `keys/` and `app-check-keys/`.
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
    /// Where the auth signing keys are kept (`nil`: in memory only).
    public var authKeys: URL?
    /// Where the App Check signing keys are kept.
    public var appCheckKeys: URL?
    /// Each store's answer to "do you take writes now?" (`/readyz`).
    public var readiness: [ReadinessCheck]
    /// What must run, in the server's one `ServiceGroup`, before the stores answer and until the
    /// last listener has stopped (PostgreSQL's connection pool); none for SQLite.
    public var services: [any Service] = []

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
    /// ``services``) shared by every store. The data directory keeps what is not in the database
    /// yet: object bytes (unless `blobS3`), the signing keys, the outbox, the admin token.
    /// UNAVAILABLE naming `host:port` and the cause when the database cannot be reached.
    public static func openPostgres(url: String, dataDirectory: URL, blobS3: S3BlobStore.Configuration?, logger: Logger) async throws -> Stores {
        let settings = try DatabaseURL.settings(url)
        try createDataDirectory(dataDirectory)
        try await PostgresSchema.migrate(settings, logger: logger)
        try PostgresMarker.write(dataDirectory, url: url)
        let backend = PostgresBackend(settings: settings, logger: logger)
        let path = dataDirectory.path
        return Stores(
            documents: PostgresDocumentStore(backend: backend), accounts: PostgresAuthStore(backend: backend), objectMetadata: PostgresObjectMetadataStore(backend: backend),
            blobs: try ObjectStore.blobStore(directory: dataDirectory, s3: blobS3), databaseTrees: PostgresDatabaseTreeStore(backend: backend),
            appCheck: PostgresAppCheckStore(backend: backend), authKeys: dataDirectory.appendingPathComponent("keys"),
            appCheckKeys: dataDirectory.appendingPathComponent("app-check-keys"),
            readiness: [
                ReadinessCheck("PostgreSQL \(settings.endpoint)") { try await pingPostgres(backend, within: .seconds(2)) },
                ReadinessCheck("data directory") { try await SQLiteDataDirectory.checkWrites(directory: path) },
            ],
            services: [backend])
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
