import AsyncHTTPClient
import Foundation
import GRDB
import HearthCore
import HearthSQLite
import HearthServer
import Logging
import NIOCore
import Testing

@testable import HearthApp

/// The composition root: the SQLite backend's stores and their readiness checks, and a whole
/// server built from a configuration, ready, then stopped.
@Suite struct CompositionRootTests {
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-app-\(UUID().uuidString)")
    }

    @Test func theSQLiteBackendOpensEveryStoreInTheDataDirectory() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try await Stores.open(.sqlite(dataDirectory: directory, blobS3: nil), logger: Logger(label: "test"))
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
        for name in [
            SQLiteDataDirectory.documents, SQLiteDataDirectory.accounts, SQLiteDataDirectory.objectMetadata, SQLiteDataDirectory.databaseTrees,
            SQLiteDataDirectory.appCheck,
        ] {
            #expect(files.contains(name), "\(name)")
        }
        #expect(stores.authKeys == directory.appendingPathComponent("keys"))
        #expect(stores.readiness.map(\.name) == ["data directory"])
    }

    @Test func aStoreWhoseWriteLockIsHeldIsNotReady() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try Stores.openSQLite(dataDirectory: directory)
        for readiness in stores.readiness { try await readiness.check() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.hasPrefix(".readyz-probe") })

        // Another connection holds auth.sqlite's write lock past the probe's two-second busy timeout.
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: directory.appendingPathComponent(SQLiteDataDirectory.accounts).path, configuration: configuration)
        try await holder.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
        do {
            for readiness in stores.readiness { try await readiness.check() }
            Issue.record("a store whose write lock is held was reported ready")
        } catch let error as HearthError {
            #expect(error.code == .unavailable)
            #expect(error.message.hasPrefix("The store auth.sqlite does not take writes"), "\(error.message)")
        }
        try await holder.writeWithoutTransaction { try $0.execute(sql: "ROLLBACK") }
        for readiness in stores.readiness { try await readiness.check() }
    }

    @Test func aServerBuiltFromAConfigurationIsReadyThenStops() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = ServerConfiguration()
        config.dataDirectory = directory.path
        config.emulator = true
        config.ports = ["auth": 0, "firestore": 0, "storage": 0, "s3": 0, "database": 0, "api": 0]
        var logger = Logger(label: "hearth.app-tests")
        logger.logLevel = .critical
        let server = try await CompositionRoot.openServer(config, logger: logger)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: [String: Int].self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run { ports in readyContinuation.yield(ports) } }
            var iterator = ready.makeAsyncIterator()
            let ports = try #require(await iterator.next())
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(ports["api"] ?? 0)/readyz"), timeout: .seconds(30))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
            #expect(response.status == .ok, "\(body)")
            #expect(body.contains("\"ready\""))
            group.cancelAll()  // the server stops gracefully (the group waits for it)
        }
        // Stopped: the reclaimer no longer takes ids, so a delete removes its bytes before returning.
        try await server.objects.createBucket("b-1")
        _ = try await server.objects.put("b-1", "x", [1, 2, 3])
        let blobs = directory.appendingPathComponent("objects/blobs")
        #expect(Self.regularFiles(blobs) == 1)
        try await server.objects.delete("b-1", "x")
        #expect(Self.regularFiles(blobs) == 0)
    }

    static func regularFiles(_ root: URL) -> Int {
        var count = 0
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walker?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { count += 1 }
        }
        return count
    }
}
