import Foundation
import HearthAuth
import HearthCore
import PostgresNIO
import Synchronization
import Testing

@testable import HearthPostgres

/// What several servers over one database share besides documents (docs/postgres.md, "Several
/// replicas"): the job locks of the periodic workers, the sign-in attempt counts, and the key
/// files a data directory brings to its first start over PostgreSQL. Each "server" is a pool (or
/// a coordinator) of its own over one test database.
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresSharedStateTests {
    // MARK: Job locks

    /// Runs `job` on `coordinator` and says whether it ran.
    static func ran(_ coordinator: PostgresJobCoordinator, _ job: String, runs: Counter) async throws -> Bool {
        try await coordinator.runExclusively(job: job) { runs.add() } != nil
    }

    final class Counter: Sendable {
        let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    /// The backend pids holding `job`'s lock.
    static func holders(_ settings: PostgresSettings, _ job: String) async throws -> [Int32] {
        try await TestPostgres.withConnection(settings) { connection in
            try await connection.query(
                """
                SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
                AND classid = \(Int64(PostgresJobCoordinator.lockClass))::oid AND objid = \(Int64(PostgresJobCoordinator.lockKey(job)))::oid
                """, logger: TestPostgres.logger
            ).collect().map { try $0.decode(Int32.self) }
        }
    }

    @Test func exactlyOneServerRunsAJobAndAnotherTakesItOverWhenTheHolderDies() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        let servers = [PostgresJobCoordinator(settings: settings, logger: TestPostgres.logger), PostgresJobCoordinator(settings: settings, logger: TestPostgres.logger)]
        defer { Task { for server in servers { await server.release() } } }
        let runs = [Counter(), Counter()]
        // Both tick at once, several times: one server runs every tick, the other none.
        for _ in 0..<5 {
            let ran = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for i in 0..<2 { group.addTask { (i, try await Self.ran(servers[i], "sweep", runs: runs[i])) } }
                return try await group.reduce(into: [Bool](repeating: false, count: 2)) { $0[$1.0] = $1.1 }
            }
            #expect(ran.filter { $0 }.count == 1, "\(ran)")
        }
        let holder = runs[0].count == 5 ? 0 : 1
        let other = 1 - holder
        #expect(runs[holder].count == 5 && runs[other].count == 0)
        let holds = (await servers[holder].holds("sweep"), await servers[other].holds("sweep"))
        #expect(holds.0 && !holds.1)
        // Jobs are apart: the other job is free for whichever asks first.
        #expect(try await Self.ran(servers[other], "expiry", runs: Counter()))
        #expect(try await !Self.ran(servers[holder], "expiry", runs: Counter()))

        // The holder's connection dies (as its process would): the other takes the job at its next tick.
        let pids = try await Self.holders(settings, "sweep")
        #expect(pids.count == 1)
        try await TestPostgres.withConnection(settings) { admin in
            for pid in pids { _ = try await admin.query("SELECT pg_terminate_backend(\(pid))", logger: TestPostgres.logger).collect() }
        }
        var tookOver = false
        let deadline = ContinuousClock.now + .seconds(10)
        while !tookOver && ContinuousClock.now < deadline {
            tookOver = try await Self.ran(servers[other], "sweep", runs: runs[other])
            if !tookOver { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(tookOver, "the other server took the job over")
        // The old holder, still running, finds its lock gone and the job taken: it does not run it.
        #expect(try await !Self.ran(servers[holder], "sweep", runs: runs[holder]))
        #expect(runs[holder].count == 5)
        #expect(try await Self.holders(settings, "sweep").count == 1)

        // A server that stops releases its jobs at once.
        await servers[other].release()
        #expect(try await Self.ran(servers[holder], "sweep", runs: runs[holder]))
    }

    @Test func anUnreachableDatabaseRunsNoJob() async throws {
        var settings = try await TestPostgres.shared.adminSettings()
        settings.database = "hearth_no_such_database_\(UInt32.random(in: 0...UInt32.max))"
        let coordinator = PostgresJobCoordinator(settings: settings, logger: TestPostgres.logger)
        #expect(try await !Self.ran(coordinator, "sweep", runs: Counter()))
        #expect(await !coordinator.holds("sweep"))
    }

    @Test func jobKeysAreStableAndApart() {
        #expect(PostgresJobCoordinator.lockKey("lifecycle") == PostgresJobCoordinator.lockKey("lifecycle"))
        #expect(PostgresJobCoordinator.lockKey("lifecycle") != PostgresJobCoordinator.lockKey("pending-uploads"))
        #expect(PostgresJobCoordinator.lockKey("") >= 0 && PostgresJobCoordinator.lockKey(String(repeating: "x", count: 300)) >= 0)
    }

    // MARK: Sign-in attempts

    @Test func attemptsRecordedByOneServerCountOnTheOther() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let a = PostgresAuthStore(backend: await TestPostgres.shared.start(settings))
        let b = PostgresAuthStore(backend: await TestPostgres.shared.start(settings))
        try await a.recordAttempt("account email:x@example.com", at: 1_000, forgetting: 0)
        try await b.recordAttempt("account email:x@example.com", at: 2_000, forgetting: 0)
        try await b.recordAttempt("account email:y@example.com", at: 2_000, forgetting: 0)
        #expect(try await a.attempts("account email:x@example.com", after: 0) == 2)
        #expect(try await b.attempts("account email:x@example.com", after: 1_000) == 1, "outside the window")
        // Any character, NUL included, is a key.
        try await a.recordAttempt("address \u{0}é", at: 2_000, forgetting: 0)
        #expect(try await b.attempts("address \u{0}é", after: 0) == 1)
        #expect(try await b.attempts("address ", after: 0) == 0)
        // A record forgets its key's attempts outside the window; a reset all of them.
        try await a.recordAttempt("account email:x@example.com", at: 5_000, forgetting: 1_500)
        #expect(try await b.attempts("account email:x@example.com", after: 0) == 2)
        try await b.resetAttempts("account email:x@example.com")
        #expect(try await a.attempts("account email:x@example.com", after: 0) == 0)
        #expect(try await a.attempts("account email:y@example.com", after: 0) == 1)
    }

    @Test func theFailedSignInLimitHoldsForTwoServersTogether() async throws {
        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        func engine() async -> AuthEngine {
            let store = PostgresAuthStore(backend: await TestPostgres.shared.start(settings))
            return AuthEngine(
                store: store, tokens: TokenService(projectID: "demo-proj", keyRing: PostgresAuthStoreTests.ring),
                configuration: .init(passwordHashing: .testing, accountFailureLimit: 4, addressAttemptLimit: 6), attempts: store)
        }
        let servers = [await engine(), await engine()]
        _ = try await servers[0].signUp(email: "limit@example.com", password: "right-password")
        for i in 0..<4 {
            await PostgresAuthStoreTests.expectAuthError(.invalidPassword) {
                try await servers[i % 2].signInWithPassword(email: "limit@example.com", password: "wrong", clientAddress: "10.0.0.\(i)")
            }
        }
        // Two failures on each: together the account's limit is reached on both, right password or not.
        for server in servers {
            await PostgresAuthStoreTests.expectAuthError(.tooManyAttempts) {
                try await server.signInWithPassword(email: "limit@example.com", password: "right-password", clientAddress: "10.0.1.1")
            }
        }
        // The per-address limit too: 6 sign-ins from one address, three on each server.
        _ = try await servers[1].signUp(email: "other@example.com", password: "right-password")
        for i in 0..<6 {
            _ = try await servers[i % 2].signInWithPassword(email: "other@example.com", password: "right-password", clientAddress: "10.0.2.2")
        }
        await PostgresAuthStoreTests.expectAuthError(.tooManyAttempts) {
            try await servers[0].signInWithPassword(email: "other@example.com", password: "right-password", clientAddress: "10.0.2.2")
        }
        #expect(try await servers[0].signInWithPassword(email: "other@example.com", password: "right-password", clientAddress: "10.0.2.3").account.email == "other@example.com")
    }

    // MARK: Key files

    @Test func aDataDirectorysKeyFilesAreImportedOnceSoItsTokensKeepVerifying() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let policy = KeyRing.Policy(rotationInterval: 6 * 3600)
        let files = try KeyRing(directory: directory, policy: policy)
        let account = Account(uid: "alice", createdAt: 0, validSince: 0)
        let token = try TokenService(projectID: "demo-proj", keyRing: files).mintIDToken(
            for: account, signInProvider: "password", authTime: AuthClock.system.seconds)

        let settings = try await TestPostgres.shared.freshDatabase()
        try await PostgresSchema.migrate(settings, logger: TestPostgres.logger)
        let a = PostgresSigningKeyStore(backend: await TestPostgres.shared.start(settings))
        let b = PostgresSigningKeyStore(backend: await TestPostgres.shared.start(settings))
        #expect(try await KeyRing.importFiles(directory, into: a, ring: "auth") == 2)
        // Imported once: a second server (or start) with key files of its own keeps the stored ring.
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        _ = try KeyRing(directory: elsewhere, policy: policy)
        #expect(try await KeyRing.importFiles(elsewhere, into: b, ring: "auth") == 0)
        #expect(try await KeyRing.importFiles(directory.appendingPathComponent("missing"), into: b, ring: "auth") == 0)
        #expect(try await b.keys(ring: "auth").map(\.kid) == files.publishedKeys.map(\.kid))
        #expect(try await b.keys(ring: "app-check").isEmpty, "rings apart")

        // Both servers' rings sign with the imported active key and verify the token the files signed.
        let ringA = try await KeyRing(store: a, ring: "auth", policy: policy)
        let ringB = try await KeyRing(store: b, ring: "auth", policy: policy)
        #expect(ringA.publishedKeys.map(\.kid) == files.publishedKeys.map(\.kid))
        #expect(try TokenService(projectID: "demo-proj", keyRing: ringB).verifyIDToken(token).uid == "alice")
        #expect(try ringA.activeKey().kid == files.activeKey().kid)
    }
}
