public import HearthCore
public import Logging
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// HearthCore's ``JobCoordinator`` for servers sharing one PostgreSQL database: a job is held
/// through a **session-level** advisory lock (`pg_try_advisory_lock(int4, int4)`: the class
/// ``lockClass``, the job's ``lockKey(_:)``) on a connection of the job's own, outside the pool
/// (a pooled connection goes back to others; a session lock must stay with its holder).
///
/// - The first server whose tick finds the job free takes it and keeps it: its later ticks only
///   check that its connection — and so its lock — still lives (`SELECT 1`), and run the job.
/// - Another server's tick finds the lock taken and skips the job.
/// - When the holder's connection ends (the server stops or dies, the network breaks,
///   `pg_terminate_backend`), PostgreSQL releases the lock; the next server to tick takes it.
///   A holder that is still alive notices at its next tick (the check fails), reconnects and
///   asks again — and skips the job if another server took it meanwhile.
/// - A database that cannot be reached: nobody runs the job (the tick returns `nil`, logged).
///
/// A job whose holder lost its connection in the middle of a run may overlap, once, with the
/// next holder's run; every job given to it is idempotent (deleting what has expired).
///
/// A `Service`: run it in the server's `ServiceGroup`; at its end (graceful shutdown) it
/// closes the connections, releasing the jobs for the other servers at once.
public final class PostgresJobCoordinator: JobCoordinator, Service, Sendable {
    /// The first key of every job lock (`'HJOB'`), apart from the single-key locks the stores take.
    public static let lockClass: Int32 = 0x484A_4F42

    let settings: PostgresSettings
    let logger: Logger
    let holders = Mutex<[String: JobLock]>([:])

    public init(settings: PostgresSettings, logger: Logger = Logger(label: "hearth.postgres.jobs")) {
        self.settings = settings
        self.logger = logger
    }

    /// The second key of `job`'s lock: FNV-1a of its name, in 31 bits (stable across builds and servers).
    public static func lockKey(_ job: String) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for byte in job.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash & 0x7FFF_FFFF)
    }

    public func runExclusively<Result: Sendable>(job: String, _ body: () async throws -> Result) async throws -> Result? {
        let lock = holders.withLock { holders in
            if let lock = holders[job] { return lock }
            let lock = JobLock(settings: settings, job: job, key: Self.lockKey(job), logger: logger)
            holders[job] = lock
            return lock
        }
        guard await lock.hold() else { return nil }
        return try await body()
    }

    /// Whether this server holds `job` now (as of its last tick).
    public func holds(_ job: String) async -> Bool {
        guard let lock = holders.withLock({ $0[job] }) else { return false }
        return await lock.isHeld
    }

    /// Waits for the graceful shutdown (or cancellation), then closes every job's connection.
    public func run() async throws {
        try? await gracefulShutdown()
        await release()
    }

    /// Closes every job's connection (the other servers take the jobs at their next tick).
    public func release() async {
        let locks = holders.withLock { holders in
            defer { holders = [:] }
            return Array(holders.values)
        }
        for lock in locks { await lock.close() }
    }
}

/// One job's lock and the connection that holds it.
actor JobLock {
    let settings: PostgresSettings
    let job: String
    let key: Int32
    let logger: Logger
    var connection: PostgresConnection?
    var isHeld = false

    init(settings: PostgresSettings, job: String, key: Int32, logger: Logger) {
        self.settings = settings
        self.job = job
        self.key = key
        self.logger = logger
    }

    /// True if this server holds the job now: it did and its connection answers, or the lock was free and is taken.
    func hold() async -> Bool {
        if let connection, !connection.isClosed {
            do {
                if isHeld {
                    _ = try await connection.query("SELECT 1", logger: logger).collect()
                    return true
                }
                return try await tryLock(connection)
            } catch {
                logger.warning("lost the connection holding a job", metadata: ["job": "\(job)", "error": "\(PostgresNotificationListener.describe(error))"])
                await drop()
            }
        } else if connection != nil {
            if isHeld { logger.warning("lost the connection holding a job", metadata: ["job": "\(job)"]) }
            await drop()
        }
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: Int(key), logger: logger)
            self.connection = connection
            return try await tryLock(connection)
        } catch {
            logger.warning("cannot ask for a job's lock", metadata: ["job": "\(job)", "error": "\(PostgresNotificationListener.describe(error))"])
            await drop()
            return false
        }
    }

    func tryLock(_ connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT pg_try_advisory_lock(\(PostgresJobCoordinator.lockClass), \(key))", logger: logger
        ).collect()
        let taken = try rows.first?.decode(Bool.self) ?? false
        if taken && !isHeld { logger.notice("took a job", metadata: ["job": "\(job)"]) }
        isHeld = taken
        return taken
    }

    func drop() async {
        isHeld = false
        let old = connection
        connection = nil
        try? await old?.close()
    }

    func close() async {
        await drop()
    }
}
