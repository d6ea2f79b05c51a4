public import Foundation
public import HearthAppCheck
public import HearthAuth
public import HearthDatabase
public import HearthDocuments
public import HearthServer
public import HearthStorage
import HearthCore
import HearthSQLite

/// Where the data lives: the one seam between the engines and their persistence. Each case
/// opens every engine's store (``Stores``); nothing above the composition root knows which.
public enum StorageBackend: Sendable {
    /// The embedded default: SQLite files under a data directory (``SQLiteDataDirectory``),
    /// object bytes under its `objects/` or, with `blobS3`, in an external S3 bucket.
    case sqlite(dataDirectory: URL, blobS3: S3BlobStore.Configuration?)
    // PostgreSQL by URL (`--database-url`, issue 18 part 2) becomes a case here, opened by a
    // `Stores.openPostgres(url:)` beside `openSQLite`.

    /// The backend a server configuration names.
    public init(_ configuration: ServerConfiguration) {
        self = .sqlite(dataDirectory: URL(fileURLWithPath: configuration.dataDirectory), blobS3: configuration.blobS3)
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

    /// Opens every store of `backend`.
    public static func open(_ backend: StorageBackend) throws -> Stores {
        switch backend {
        case .sqlite(let dataDirectory, let blobS3): return try openSQLite(dataDirectory: dataDirectory, blobS3: blobS3)
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
