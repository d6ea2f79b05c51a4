import Foundation
import HearthAuth
import HearthCore
import HearthSQLite
import HearthServer
import HearthStorage
import Logging
import Testing

@testable import HearthApp

/// The composition root's choices for stores that several servers share (docs/postgres.md,
/// "Several replicas"), with in-process stand-ins for the shared stores: the key rings built over
/// a shared `SigningKeyStore` (the first data directory's key files imported), and object stores
/// without the metadata cache seeing another server's writes at once.
@Suite struct SharedStoresTests {
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-shared-\(UUID().uuidString)")
    }

    static var logger: Logger {
        var logger = Logger(label: "hearth.app-tests")
        logger.logLevel = .critical
        return logger
    }

    static func configuration(_ directory: URL) -> ServerConfiguration {
        var config = ServerConfiguration()
        config.dataDirectory = directory.path
        config.ports = ["auth": 0, "firestore": 0, "storage": 0, "s3": 0, "database": 0, "api": 0]
        return config
    }

    @Test func twoServersOverOneKeyStoreShareTheKeysTheFirstDataDirectoryHad() async throws {
        let first = Self.temporaryDirectory(), second = Self.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: first)
            try? FileManager.default.removeItem(at: second)
        }
        // The first data directory served on SQLite before: its rings have key files and signed a token.
        let before = try await CompositionRoot.engines(Self.configuration(first), stores: try Stores.openSQLite(dataDirectory: first), logger: Self.logger)
        let fileKids = before.auth.tokens.keyRing.publishedKeys.map(\.kid)
        let token = try before.auth.tokens.mintIDToken(
            for: Account(uid: "alice", createdAt: 0, validSince: 0), signInProvider: "password", authTime: AuthClock.system.seconds)

        // Now both directories' servers share one key store (as `--database-url` gives them).
        let shared = InMemorySigningKeyStore()
        var engines: [HearthServer.Engines] = []
        for directory in [first, second] {
            var stores = try Stores.openSQLite(dataDirectory: directory)
            stores.signingKeys = shared
            engines.append(try await CompositionRoot.engines(Self.configuration(directory), stores: stores, logger: Self.logger))
        }
        #expect(try await shared.keys(ring: CompositionRoot.authRing).map(\.kid) == fileKids, "the first directory's keys, imported")
        for server in engines {
            #expect(server.auth.tokens.keyRing.publishedKeys.map(\.kid) == fileKids)
            #expect(try server.auth.tokens.verifyIDToken(token).uid == "alice", "a token signed before the move verifies on both")
        }
        #expect(engines[0].appCheck.keyRing.publishedKeys.map(\.kid) == engines[1].appCheck.keyRing.publishedKeys.map(\.kid))
        #expect(try engines[0].appCheck.keyRing.activeKey().kid == engines[1].appCheck.keyRing.activeKey().kid)
        #expect(
            Set(engines[0].appCheck.keyRing.publishedKeys.map(\.kid)).isDisjoint(with: fileKids), "App Check's ring is a ring of its own")
        // One signs, the other verifies.
        let signed = try engines[1].auth.tokens.mintIDToken(
            for: Account(uid: "bob", createdAt: 0, validSince: 0), signInProvider: "password", authTime: AuthClock.system.seconds)
        #expect(try engines[0].auth.tokens.verifyIDToken(signed).uid == "bob")
    }

    @Test func withoutTheCacheAServerSeesAnotherServersObjectWritesAtOnce() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let metadata = try SQLiteObjectMetadataStore(path: directory.appendingPathComponent("storage.sqlite").path)
        let blobs = try ObjectStore.blobStore(directory: directory)
        var stores = try Stores.openSQLite(dataDirectory: directory.appendingPathComponent("server"))
        stores.objectMetadata = metadata
        stores.blobs = blobs
        let a = CompositionRoot.objects(stores)
        stores.objectMetadataCacheSize = 0
        let b = CompositionRoot.objects(stores)
        let cached = ObjectStore(metadata: metadata, blobs: blobs)  // a server with the cache, for contrast
        _ = try await a.createBucket("bucket", ifMissing: true)
        _ = try await a.put("bucket", "x", Array("v1".utf8))
        #expect(try await b.object("bucket", "x")?.size == 2)
        #expect(try await cached.object("bucket", "x")?.size == 2)
        _ = try await a.put("bucket", "x", Array("v2-longer".utf8))
        #expect(try await b.object("bucket", "x")?.size == 9)
        try await a.delete("bucket", "x")
        #expect(try await b.object("bucket", "x") == nil)
        #expect(try await cached.object("bucket", "x") != nil, "a cached row outlives another server's delete: why the cache is off")

        // S3 keys: revoked through one server, refused by the other at once.
        let key = try await a.createAccessKey()
        #expect(try await b.accessKey(key.id)?.revoked == false)
        try await a.revokeAccessKey(key.id)
        #expect(try await b.accessKey(key.id)?.revoked == true)
    }

    @Test func aServerSharingItsAccountsReadsTheSettingsAndServiceAccountsAnotherServerChanged() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try Stores.openSQLite(dataDirectory: directory)
        let ring = try KeyRing(directory: nil)
        let a = AuthEngine(store: stores.accounts, tokens: TokenService(projectID: "demo-proj", keyRing: ring))
        let b = AuthEngine(store: stores.accounts, tokens: TokenService(projectID: "demo-proj", keyRing: ring))
        #expect(!a.emailEnumerationProtection && !b.emailEnumerationProtection)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await AuthSettingsRefresher(auth: b, interval: .milliseconds(20), logger: Self.logger).run() }
            for on in [true, false, true] {
                try await a.saveEmailEnumerationProtection(on)
                let deadline = ContinuousClock.now + .seconds(10)
                while b.emailEnumerationProtection != on && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
                #expect(b.emailEnumerationProtection == on, "the other server follows the stored setting")
            }
            // A service account registered through A: B accepts its custom tokens once it has read it.
            #expect(b.tokens.customTokenSigners.isEmpty)
            let created = try await a.createServiceAccount(tokenURI: "http://127.0.0.1/token", name: "late-registered")
            let deadline = ContinuousClock.now + .seconds(10)
            while b.tokens.customTokenSigners.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(b.tokens.customTokenSigners.map(\.clientEmail) == [created.record.clientEmail])
            group.cancelAll()
        }
    }

    @Test func aSQLiteServerKeepsItsCachesFilesAndJobs() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try Stores.openSQLite(dataDirectory: directory)
        #expect(stores.signingKeys == nil && stores.signInAttempts == nil)
        #expect(stores.objectMetadataCacheSize > 0 && stores.sweepsUnreferencedBlobsAtStart)
        #expect(stores.jobs is LocalJobCoordinator)
        let engines = try await CompositionRoot.engines(Self.configuration(directory), stores: stores, logger: Self.logger)
        #expect(engines.jobs is LocalJobCoordinator)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("keys").path).count
                == engines.auth.tokens.keyRing.publishedKeys.count)
    }
}
