public import Logging
import PostgresNIO
public import ServiceLifecycle
import HearthCore
import Synchronization

/// One PostgreSQL database shared by Hearth's stores: a `PostgresClient` connection pool (a
/// `Service`: run it in the server's `ServiceGroup`, or in a task the caller owns — requests
/// wait for a connection until it runs), and the transaction scopes every store uses.
///
/// Rules the stores keep:
/// 1. **Each store call is one transaction** lent through ``write(_:)`` (SERIALIZABLE, run again
///    on a serialization failure or deadlock, at most ``maximumAttempts`` times) or
///    ``snapshot(_:)`` (REPEATABLE READ, READ ONLY: one consistent view for several reads), or
///    ``writeLocked(_:_:)`` (advisory locks on what the write reads, first: for writes whose
///    every read is of a locked thing — see there). Every check a write depends on runs inside
///    its transaction, so two servers over one database behave like one.
/// 2. **Nothing is acknowledged that was not committed**: an error at any step, COMMIT
///    included, is thrown (a broken connection as UNAVAILABLE, "may not have been applied").
/// 3. **A database that cannot be reached answers UNAVAILABLE** within ``PostgresSettings/acquireTimeout``,
///    never a crash or a request that hangs; the pool reconnects by itself when it returns.
/// 4. **SQL binds every value** (`PostgresQuery` interpolation); text spliced in with
///    `unescaped:` is only ever a constant of the store.
public final class PostgresBackend: Service, Sendable {
    public let settings: PostgresSettings
    let client: PostgresClient
    let logger: Logger
    /// How often a transaction runs before contention is reported (ABORTED).
    let maximumAttempts = 12

    /// A pool for `settings`; nothing connects until ``run()`` runs. Apply the schema first
    /// (``PostgresSchema/migrate(_:logger:)``).
    public init(settings: PostgresSettings, logger: Logger = Logger(label: "hearth.postgres")) {
        self.settings = settings
        self.logger = logger
        client = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: logger)
    }

    /// Runs the pool until the task is cancelled or the service group shuts down.
    public func run() async throws {
        await client.run()
    }

    // MARK: Transactions

    enum Isolation {
        case serializable, snapshot, readCommitted

        var begin: PostgresQuery {
            switch self {
            case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
            case .snapshot: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
            }
        }
    }

    /// Runs `body` in a SERIALIZABLE transaction, again from the start after a serialization
    /// failure or a deadlock; commits when it returns, rolls back when it throws.
    func write<Result: Sendable>(_ body: @escaping @Sendable (PostgresSession) async throws -> Result) async throws -> Result {
        try await transaction(.serializable, body)
    }

    /// A transaction-level advisory lock a ``writeLocked(_:_:)`` takes: shared (readers of the
    /// thing) or exclusive (its writers).
    struct AdvisoryLock: Sendable, Hashable {
        var key: Int64
        var exclusive: Bool
    }

    /// Runs `body` in a READ COMMITTED transaction whose first statement takes every one of
    /// `locks` (transaction-level advisory locks, in ascending key order in one statement, so no
    /// two callers wait for each other; released when the transaction ends), waiting for other
    /// holders. Again from the start after a serialization failure or a deadlock.
    ///
    /// Use it for writes whose every read is of something the locks stand for, which every writer
    /// of it locks exclusively: each later statement's snapshot holds the last commit of each
    /// such thing, and nothing changes it until this transaction ends — the locks, not
    /// SERIALIZABLE, order such writes, with the same outcome. SERIALIZABLE would also refuse
    /// writes that only share an index page (a new key beside another transaction's read of the
    /// page): concurrent creates of documents of one collection failed serialization until they
    /// ran out of attempts.
    func writeLocked<Result: Sendable>(
        _ locks: [AdvisoryLock], _ body: @escaping @Sendable (PostgresSession) async throws -> Result
    ) async throws -> Result {
        // One lock per key (exclusive if any asks for it), in ascending order.
        var exclusive: [Int64: Bool] = [:]
        for lock in locks { exclusive[lock.key] = (exclusive[lock.key] ?? false) || lock.exclusive }
        let keys = exclusive.keys.sorted()
        let modes = keys.map { exclusive[$0]! }
        return try await transaction(.readCommitted) { session in
            if !keys.isEmpty {
                try await session.execute(
                    """
                    SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(k) ELSE pg_advisory_xact_lock_shared(k) END)
                    FROM unnest(\(keys)::int8[], \(modes)::bool[]) AS t(k, x)
                    """)
            }
            return try await body(session)
        }
    }

    /// Runs `body` in a READ COMMITTED transaction (for single statements whose own conflict
    /// handling is enough, such as `INSERT … ON CONFLICT`).
    func writeCommitted<Result: Sendable>(_ body: @escaping @Sendable (PostgresSession) async throws -> Result) async throws -> Result {
        try await transaction(.readCommitted, body)
    }

    /// Runs `body`'s reads in one snapshot (REPEATABLE READ, READ ONLY).
    func snapshot<Result: Sendable>(_ body: @escaping @Sendable (PostgresSession) async throws -> Result) async throws -> Result {
        try await transaction(.snapshot, body)
    }

    /// Runs `body` on a connection outside an explicit transaction (each statement its own).
    func read<Result: Sendable>(_ body: @escaping @Sendable (PostgresSession) async throws -> Result) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await leased { connection in try await body(PostgresSession(connection: connection, logger: self.logger)) }
            } catch is ClosedBeforeUse where attempt < maximumAttempts {
                attempt += 1
            } catch {
                throw PostgresBackendError.hearthError(error, endpoint: settings.endpoint)
            }
        }
    }

    func transaction<Result: Sendable>(
        _ isolation: Isolation, _ body: @escaping @Sendable (PostgresSession) async throws -> Result
    ) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await leased { connection in
                    let session = PostgresSession(connection: connection, logger: self.logger)
                    try await session.execute(isolation.begin)
                    do {
                        let result = try await body(session)
                        if !session.committed.isSet { try await session.execute("COMMIT") }
                        return result
                    } catch {
                        // The transaction may already be over (a failed COMMIT ends it); a broken
                        // connection is closed by the pool.
                        if !connection.isClosed { try? await session.execute("ROLLBACK") }
                        throw error
                    }
                }
            } catch is ClosedBeforeUse where attempt < maximumAttempts {
                // Nothing was sent on it: lease another.
                attempt += 1
            } catch where PostgresBackendError.isRetryable(error) && attempt < maximumAttempts {
                attempt += 1
                // A little jitter keeps two retrying writers from colliding again.
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 * attempt))))
            } catch {
                throw PostgresBackendError.hearthError(error, endpoint: settings.endpoint)
            }
        }
    }

    /// Leases a connection for `body`; a lease not granted within the acquire timeout fails
    /// with UNAVAILABLE (the timer stops mattering once `body` has started).
    func leased<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        let race = LeaseRace()
        let timeout = settings.acquireTimeout
        let endpoint = settings.endpoint
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                try await self.client.withConnection { connection in
                    guard race.start() else { throw CancellationError() }
                    // The pool may lend a connection the server just closed, before it has noticed;
                    // postgres-nio never answers a query written to a closed channel, so never write one.
                    guard !connection.isClosed else { throw ClosedBeforeUse() }
                    return try await body(connection)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                if race.timeOut() {
                    throw PostgresBackendError(.unavailable, endpoint: endpoint, detail: "no connection within \(timeout)")
                }
                return nil
            }
            var result: Result?
            while let next = try await group.next() {
                if let value = next {
                    result = value
                    group.cancelAll()
                }
            }
            guard let result else { throw CancellationError() }
            return result
        }
    }
}

/// Whether a lease's body started or its timer fired first: exactly one of them wins.
final class LeaseRace: Sendable {
    enum State { case waiting, started, timedOut }
    let state = Mutex(State.waiting)

    /// True if the body may run (the timer has not fired).
    func start() -> Bool {
        state.withLock { state in
            guard state == .waiting else { return false }
            state = .started
            return true
        }
    }

    /// True if the timer fired before the body started.
    func timeOut() -> Bool {
        state.withLock { state in
            guard state == .waiting else { return false }
            state = .timedOut
            return true
        }
    }
}

/// A connection the pool lent after it had closed (nothing was sent on it).
struct ClosedBeforeUse: Error {}

/// The connection closed between two statements of a call (what was sent may or may not have been applied).
struct ConnectionClosed: Error {}

/// A leased connection inside one store call: runs statements and collects their rows.
struct PostgresSession: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// Set once ``executeThenCommit(_:)`` committed the transaction (the backend then sends no COMMIT).
    let committed = CommitFlag()

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Runs `query` as a transaction's last statement with its COMMIT sent right behind it on
    /// the connection, before the query's answer: no task has to resume between the two while the
    /// transaction holds its locks (a commit on the shared clock holds the clock's row until it
    /// commits, so every millisecond there is a millisecond of every other writer's wait). If the
    /// query fails, PostgreSQL answers the COMMIT with a rollback and the query's error is thrown;
    /// if the COMMIT fails, its error. Only in a transaction (``PostgresBackend/transaction(_:_:)``).
    func executeThenCommit(_ query: PostgresQuery) async throws {
        guard !connection.isClosed else { throw ConnectionClosed() }
        // Both written from this thread in this order: the channel keeps the order.
        let statement: EventLoopFuture<PostgresQueryResult> = connection.query(query, logger: logger)
        let commit: EventLoopFuture<PostgresQueryResult> = connection.query("COMMIT", logger: logger)
        do {
            _ = try await statement.get()
        } catch {
            _ = try? await commit.get()
            throw error
        }
        let answer = try await commit.get()
        committed.set()
        // A transaction that had already failed answers COMMIT with ROLLBACK (its statement failed first).
        guard answer.metadata.command == "COMMIT" else { throw CommitRolledBack() }
    }

    /// Every row of `query`.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        // A statement written to a closed channel would never be answered (see ``PostgresBackend/leased(_:)``).
        guard !connection.isClosed else { throw ConnectionClosed() }
        return try await connection.query(query, logger: logger).collect()
    }

    /// Runs `query`, discarding any rows.
    func execute(_ query: PostgresQuery) async throws {
        _ = try await rows(query)
    }

    /// The first column of the first row, if any.
    func value<Value: PostgresDecodable>(_ query: PostgresQuery, as type: Value.Type) async throws -> Value? {
        try await rows(query).first.map { try $0.decode(Value.self) }
    }

    /// Whether `query` returns a row.
    func exists(_ query: PostgresQuery) async throws -> Bool {
        try await !rows(query).isEmpty
    }
}

/// A pipelined COMMIT answered with a rollback although the statement before it succeeded.
struct CommitRolledBack: Error {}

/// Whether a session's transaction was committed by its last statement's pipelined COMMIT.
final class CommitFlag: Sendable {
    let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
