public import Foundation
import GRDB
import HearthCore

/// The embedded backend's data directory: which file holds which store, and `/readyz`'s write
/// probe of them. The composition root (`HearthApp`) opens the stores through it, so no module
/// above this one names a file or touches GRDB.
public enum SQLiteDataDirectory {
    /// Firestore's documents (``SQLiteDocumentStore``).
    public static let documents = "hearth.sqlite"
    /// Accounts, sessions and the project's auth settings (``GRDBAuthStore``).
    public static let accounts = "auth.sqlite"
    /// The Realtime Database's trees (``SQLiteDatabaseTreeStore``).
    public static let databaseTrees = "database.sqlite"
    /// Buckets, objects' metadata and S3 keys (``SQLiteObjectMetadataStore``); the bytes are under `objects/`.
    public static let objectMetadata = "storage.sqlite"
    /// App Check's apps, debug tokens and consumed tokens (``GRDBAppCheckStore``).
    public static let appCheck = "app-check.sqlite"

    /// The accounts store of `directory` (created if missing).
    public static func openAccounts(directory: URL) throws -> GRDBAuthStore {
        try GRDBAuthStore(writer: DatabasePool(path: directory.appendingPathComponent(accounts).path))
    }

    /// `/readyz`'s question to the data directory: does it take writes now? First a small file
    /// written, synced and removed (the stores' file system), then the write lock of each SQLite
    /// store (every `*.sqlite` file in it) taken and released (`BEGIN IMMEDIATE; ROLLBACK`:
    /// nothing changes), each on its own connection with a two-second busy timeout. Throws
    /// `UNAVAILABLE` naming what does not.
    public static func checkWrites(directory: String) async throws {
        let probe = directory + "/.readyz-probe-\(UUID().uuidString)"
        do {
            guard FileManager.default.createFile(atPath: probe, contents: Data("ok".utf8)) else {
                throw HearthError(.unavailable, "cannot create \(probe)")
            }
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: probe))
            try handle.synchronize()
            try handle.close()
            try FileManager.default.removeItem(atPath: probe)
        } catch {
            throw HearthError(.unavailable, "The data directory does not take writes: \(error)")
        }
        let stores = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".sqlite") }.sorted()
        for name in stores {
            do {
                var configuration = Configuration()
                configuration.busyMode = .timeout(2)
                configuration.label = "hearth.readyz"
                let queue = try DatabaseQueue(path: directory + "/" + name, configuration: configuration)
                try await queue.writeWithoutTransaction { db in
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    try db.execute(sql: "ROLLBACK")
                }
                try queue.close()
            } catch {
                throw HearthError(.unavailable, "The store \(name) does not take writes: \(error)")
            }
        }
    }
}
