/// Who runs a periodic job that must run on one server at a time (the lifecycle sweeps, the
/// expiry of unfinished uploads): the seam between the workers and the servers sharing a
/// database (docs/postgres.md, "Workers").
///
/// A worker calls ``runExclusively(job:_:)`` on each tick; the coordinator runs the body only if
/// this server holds the job, taking it if no server does. A single server
/// (``LocalJobCoordinator``: SQLite, the in-process stores) always holds every job. Servers over
/// one PostgreSQL database hold a job through a session-level advisory lock on a connection of
/// their own: one server holds it until its connection ends (the server stops or dies), and
/// then whichever server ticks next takes the job over.
///
/// Call it for one job from one task at a time (each worker ticks sequentially).
public protocol JobCoordinator: Sendable {
    /// Runs `body` and returns its result if this server holds `job` (taking it when free);
    /// `nil`, without running it, when another server holds it or holding cannot be decided
    /// (the database is unreachable: nobody runs it now, the next tick asks again).
    func runExclusively<Result: Sendable>(job: String, _ body: () async throws -> Result) async throws -> Result?
}

/// One server alone: every job runs here.
public struct LocalJobCoordinator: JobCoordinator {
    public init() {}

    public func runExclusively<Result: Sendable>(job: String, _ body: () async throws -> Result) async throws -> Result? {
        try await body()
    }
}
