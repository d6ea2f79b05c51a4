import Foundation
import HearthAppCheck
import HearthCore
import HearthDatabase
import HearthStorage
import PostgresNIO
import Testing

@testable import HearthPostgres

/// What only a shared database promises: two servers (two pools on one database) conflict in the
/// database, and faults of the database are errors, never successes or crashes.
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresFaultTests {
    /// Two pools over one migrated database: two replicas.
    static func twoServers() async throws -> (PostgresBackend, PostgresBackend) {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        return (await TestPostgres.shared.start(settings), await TestPostgres.shared.start(settings))
    }

    static func commit(_ revision: Int64, _ value: String) -> DatabaseTreeCommit {
        DatabaseTreeCommit(
            namespace: "ns", expectedRevision: revision, clearedSubtrees: [], clearedLeaves: [],
            writtenLeaves: [DatabaseLeaf(path: DatabasePath(["a"]), value: value)])
    }

    @Test func twoServersWritingOneNamespaceConflictInTheDatabase() async throws {
        let (first, second) = try await Self.twoServers()
        let stores = [PostgresDatabaseTreeStore(backend: first), PostgresDatabaseTreeStore(backend: second)]
        for round in Int64(0)..<10 {
            let outcomes = try await withThrowingTaskGroup(of: Int64?.self) { group in
                for (i, store) in stores.enumerated() { group.addTask { try await store.apply(Self.commit(round, "\(round * 10 + Int64(i))")) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.compactMap { $0 } == [round + 1], "round \(round): exactly one writer wins, the other sees a newer revision")
        }
        let tree = try await stores[1].subtree(namespace: "ns", at: .root)
        #expect(tree.revision == 10 && tree.leaves.count == 1)
    }

    @Test func aLimitedUseTokenIsConsumedOnceAcrossServers() async throws {
        let (first, second) = try await Self.twoServers()
        let stores = [PostgresAppCheckStore(backend: first), PostgresAppCheckStore(backend: second)]
        for token in 0..<20 {
            let seen = try await withThrowingTaskGroup(of: Bool.self) { group in
                for store in stores + stores { group.addTask { try await store.consume(tokenID: "t-\(token)", expires: 2_000, now: 1_000) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(seen.filter { !$0 }.count == 1, "token \(token): one consumer sees it fresh, the rest see it used: \(seen)")
        }
    }

    @Test func concurrentCreatesOfOneObjectAdmitOneWriter() async throws {
        let (first, second) = try await Self.twoServers()
        let stores = [PostgresObjectMetadataStore(backend: first), PostgresObjectMetadataStore(backend: second)]
        _ = try await stores[0].createBucket("b", created: Timestamp(microseconds: 1), ifMissing: false)
        for round in 0..<8 {
            let outcomes = await withTaskGroup(of: ErrorCode?.self) { group in
                for (i, store) in stores.enumerated() {
                    group.addTask {
                        let object = StorageObject(
                            bucket: "b", name: "k\(round)", generation: 10, metageneration: 1, size: 1, contentType: "text/plain", md5: [],
                            crc32c: 0, etag: "e", created: Timestamp(microseconds: 10), updated: Timestamp(microseconds: 10),
                            blobID: "blob-\(round)-\(i)")
                        do {
                            _ = try await store.putObject(object, preconditions: ObjectPreconditions(ifGenerationMatch: 0))
                            return nil
                        } catch let error as HearthError {
                            return error.code
                        } catch {
                            return .unknown
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1, "round \(round): \(outcomes)")
            #expect(outcomes.compactMap { $0 } == [.failedPrecondition], "round \(round): \(outcomes)")
        }
    }

    /// Nothing listens: every call answers UNAVAILABLE — no crash, and no hang (the time limit ends a
    /// test that waits for good; tests never judge wall-clock speed).
    @Test(.timeLimit(.minutes(1))) func aDownDatabaseAnswersUnavailable() async throws {
        var settings = PostgresSettings(host: "127.0.0.1", port: try TestPostgres.freePort(), username: "postgres", database: "x", tls: .disable)
        settings.acquireTimeout = .seconds(1)
        settings.connectTimeout = .seconds(1)
        let backend = PostgresBackend(settings: settings, logger: TestPostgres.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The pool runs for this test only (it would retry the dead port for the rest of the process).
            group.addTask { try await backend.run() }
            do {
                _ = try await PostgresDatabaseTreeStore(backend: backend).apply(Self.commit(0, "1"))
                Issue.record("a write to a down database succeeded")
            } catch let error as HearthError {
                #expect(error.code == .unavailable, "\(error)")
                #expect((error.cause as? PostgresBackendError)?.reason == .unavailable)
                #expect(error.message.contains(settings.endpoint), "\(error.message)")
            }
            await #expect(throws: HearthError.self) { try await PostgresAppCheckStore(backend: backend).isRegistered("app") }
            group.cancelAll()
        }
    }

    /// The server ends the connection in the middle of a write's transaction: the write throws
    /// UNAVAILABLE, nothing of it is stored, and the pool serves the next write on a new connection.
    @Test func aConnectionLostMidWriteIsNeverASuccess() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let store = PostgresDatabaseTreeStore(backend: await TestPostgres.shared.start(settings))
        #expect(try await store.apply(Self.commit(0, "1")) == 1)
        let logger = TestPostgres.logger
        try await TestPostgres.withConnection(settings) { locker in
            // Hold the leaves table, so the write stops inside its transaction, after reading the revision.
            _ = try await locker.query("BEGIN", logger: logger).collect()
            _ = try await locker.query("LOCK TABLE rtdb_leaves IN ACCESS EXCLUSIVE MODE", logger: logger).collect()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        let revision = try await store.apply(Self.commit(1, "2"))
                        Issue.record("a write whose connection was ended returned \(String(describing: revision))")
                    } catch let error as HearthError {
                        #expect(error.code == .unavailable, "\(error)")
                    }
                }
                var terminated = 0
                let deadline = ContinuousClock.now + .seconds(20)
                while terminated == 0 && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    terminated = try await locker.query(
                        """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
                        """, logger: logger
                    ).collect().count
                }
                #expect(terminated == 1)
                try await group.waitForAll()
            }
            _ = try await locker.query("ROLLBACK", logger: logger).collect()
        }
        let tree = try await store.subtree(namespace: "ns", at: .root)
        #expect(tree.revision == 1 && tree.leaves == [DatabaseLeaf(path: DatabasePath(["a"]), value: "1")], "nothing of the lost write")
        #expect(try await store.apply(Self.commit(1, "3")) == 2, "the pool recovers")
    }

    /// The connection ends while PostgreSQL runs the COMMIT itself (a deferred trigger holds the
    /// commit open): the write is reported as UNAVAILABLE, never as done, and it was not stored.
    @Test func aConnectionLostDuringCommitIsNeverASuccess() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let store = PostgresDatabaseTreeStore(backend: await TestPostgres.shared.start(settings))
        #expect(try await store.apply(Self.commit(0, "1")) == 1)
        try await TestPostgres.cutOffDuringCommit(settings, trigger: "AFTER INSERT OR UPDATE ON rtdb_namespaces") {
            String(describing: try await store.apply(Self.commit(1, "2")))
        }
        let tree = try await store.subtree(namespace: "ns", at: .root)
        #expect(tree.revision == 1 && tree.leaves == [DatabaseLeaf(path: DatabasePath(["a"]), value: "1")], "the cut-off commit left nothing")
        #expect(try await store.apply(Self.commit(1, "3")) == 2)
    }

    /// The database goes away while the pool runs (its connections are ended, new ones refused),
    /// then returns: calls meanwhile answer UNAVAILABLE, and the same pool serves again after.
    @Test func aDatabaseThatReturnsIsServedAgain() async throws {
        var settings = try await TestPostgres.shared.freshDatabase()
        settings.acquireTimeout = .seconds(1)
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let store = PostgresAppCheckStore(backend: await TestPostgres.shared.start(settings))
        // The pool's first connections may take longer than the 1 s acquire timeout on a loaded
        // machine: the setup retries (the timeout is for the outage below).
        var added = false
        for _ in 0..<30 where !added {
            do {
                try await store.addApp("app", at: Timestamp(microseconds: 1))
                added = true
            } catch let error as HearthError where error.code == .unavailable {
                try await Task.sleep(for: .milliseconds(500))
            }
        }
        try #require(added, "the pool connected before the outage")
        let admin = try await TestPostgres.shared.adminSettings()
        let name = try #require(settings.database)
        let logger = TestPostgres.logger
        try await TestPostgres.withConnection(admin) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(name) ALLOW_CONNECTIONS false"), logger: logger).collect()
            _ = try await connection.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name)", logger: logger
            ).collect()
        }
        for _ in 0..<3 {
            do {
                _ = try await store.isRegistered("app")
                Issue.record("a read succeeded while the database refused connections")
            } catch let error as HearthError {
                #expect(error.code == .unavailable, "\(error)")
            }
        }
        try await TestPostgres.withConnection(admin) { connection in
            _ = try await connection.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(name) ALLOW_CONNECTIONS true"), logger: logger).collect()
        }
        let deadline = ContinuousClock.now + .seconds(30)
        var served = false
        while !served && ContinuousClock.now < deadline {
            served = (try? await store.isRegistered("app")) == true
            if !served { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(served, "the pool reconnected once the database returned")
    }
}
