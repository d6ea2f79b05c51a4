import HearthCore
package import HearthDocuments
package import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The change feed across servers (docs/postgres.md, "Several replicas", item 2): feeds one
/// engine's ``ChangeFeed`` — fed externally (``DocumentEngine/Configuration/replicated``) — from
/// `firestore_commit_log`, which every commit on the shared clock writes in its transaction,
/// whichever server made it (this one's included: the engine publishes nothing itself).
///
/// It listens on ``PostgresDocumentStore/commitChannel`` (``PostgresNotificationListener``, a
/// dedicated connection) and **catches up** once `LISTEN` is in effect (at the start and after
/// every reconnect: notifications sent meanwhile are lost), after every notification and every
/// ``interval``: in one REPEATABLE READ snapshot it reads the clock row's `last_us` and the log
/// rows after its position, each commit's documents as they were just before it and at it (the
/// store's reads at a past time, from the history), and hands each commit's net changes to the
/// feed in commit-time order; then it advances the feed to `last_us`. Commit times are taken from
/// the clock row and commits become visible in that order, so a snapshot holding `last_us` holds
/// every commit up to it: each commit is delivered exactly once, in order, whatever the
/// notifications did (lost, coalesced). A log row that added an index reloads the engine's
/// index definitions.
///
/// Every ``interval`` it also moves the clock row up to its engine's clock (`GREATEST`, so no
/// commit can later take a time at or below it) and notifies, so idle streams' read times and
/// resume tokens advance on every server (item 3, "idle advance").
///
/// A `Service` of the server's `ServiceGroup`, started after the pool; it never throws: a failed
/// catch-up (the database down) is logged and tried again at the next wake-up.
package final class PostgresCommitFeed: Service, Sendable {
    let backend: PostgresBackend
    let engine: DocumentEngine
    let interval: Duration
    let logger: Logger
    /// The last commit time handed to the engine's feed (only the run loop changes it).
    let position: Mutex<Timestamp>
    /// The prune horizon (`firestore_clock.pruned_us`) of the last re-sync: log rows pruned below
    /// it were committed before that re-sync's storage reads, so only a newer horizon means loss.
    let resyncedThrough = Mutex<Int64>(0)
    /// The most log rows one snapshot reads.
    static let pageSize = 1000

    /// Feeds `engine` (opened over a ``PostgresDocumentStore`` on `backend` with the shared
    /// clock, `configuration.replicated` on) from the commit log, from the engine's position.
    package init(backend: PostgresBackend, engine: DocumentEngine, interval: Duration = .seconds(1), logger: Logger? = nil) {
        self.backend = backend
        self.engine = engine
        self.interval = interval
        self.logger = logger ?? backend.logger
        position = Mutex(engine.feed.position)
    }

    package func run() async {
        let (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let listener = PostgresNotificationListener(
            settings: backend.settings, channel: PostgresDocumentStore.commitChannel, logger: logger
        ) { _ in
            // `.listening` (catch up after a reconnect) and every notification alike: a wake-up.
            wake.yield()
        }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await listener.run() }
                group.addTask {
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: self.interval) } catch { return }
                        await self.tick()
                        wake.yield()
                    }
                }
                group.addTask {
                    var failing = false
                    for await _ in wakeups {
                        do {
                            try await self.catchUp()
                            if failing { self.logger.notice("the commit feed reads the commit log again") }
                            failing = false
                        } catch {
                            if !failing && !Task.isCancelled {
                                self.logger.warning("the commit feed cannot read the commit log", metadata: ["error": "\(error)"])
                            }
                            failing = true
                        }
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        wake.finish()
    }

    /// The idle advance: the clock row moves up to this server's clock, and every server is woken.
    func tick() async {
        let now = engine.clock.current()
        do {
            try await backend.writeCommitted { session in
                try await session.execute(
                    """
                    WITH moved AS (UPDATE firestore_clock SET last_us = GREATEST(last_us, \(now.microseconds)) RETURNING last_us)
                    SELECT pg_notify(\(PostgresDocumentStore.commitChannel), 'tick') FROM moved
                    """)
            }
        } catch {
            // The catch-up that follows reports the database's trouble.
        }
    }

    /// One commit of the log, read in a catch-up's snapshot.
    struct LoggedCommit: Sendable {
        var time: Timestamp
        var database: String
        var changes: [DocumentChange]
        var cleared: Bool
        var indexes: Bool
    }

    /// Reads what was committed after ``position`` and hands it to the engine's feed, a snapshot
    /// (up to ``pageSize`` commits) at a time, until the feed has reached the clock row.
    package func catchUp() async throws {
        while true {
            let after = position.withLock { $0 }
            let resynced = resyncedThrough.withLock { $0 }
            let page = try await backend.snapshot { session in
                try await Self.read(session, after: after, resyncedThrough: resynced, limit: Self.pageSize)
            }
            if page.behind, let last = page.last {
                // Log rows after the position were pruned (with the history): what was committed
                // meanwhile cannot be delivered commit by commit. Every Listen stream re-syncs
                // from storage, and the feed follows the log from the clock row.
                logger.warning(
                    "the commit feed fell further behind than the document history: every Listen stream re-syncs",
                    metadata: ["position": "\(after.microseconds)", "clock": "\(last.microseconds)"])
                try await engine.reloadIndexes()
                engine.clock.observe(last)
                engine.feed.resynchronize(at: last)
                position.withLock { $0 = max($0, last) }
                resyncedThrough.withLock { $0 = page.pruned }
                continue
            }
            let (commits, last, full) = (page.commits, page.last, page.full)
            for commit in commits {
                if commit.indexes { try await engine.reloadIndexes() }
                engine.clock.observe(commit.time)
                engine.feed.deliver(
                    CommittedChanges(database: commit.database, commitTime: commit.time, changes: commit.changes, cleared: commit.cleared))
                position.withLock { $0 = commit.time }
            }
            if full { continue }
            if let last, last > after {
                engine.clock.observe(last)
                engine.feed.advance(to: last)
                position.withLock { $0 = max($0, last) }
            }
            return
        }
    }

    /// In the caller's snapshot: the log rows after `after` (at most `limit`), each with its net
    /// document changes, the clock row's time, and whether the page was full (more may follow).
    ///
    /// A commit's changes are its documents' states at `time - 1` and at `time`, with the store's
    /// semantics of a read at a past time (the state the first history row after it replaced, else
    /// the current one), read for the whole page at once: per database, one statement for the
    /// history rows after `after` of every path the page names, one for their current states.
    static func read(_ session: PostgresSession, after: Timestamp, resyncedThrough: Int64, limit: Int) async throws -> Page {
        let clock = try await session.rows("SELECT last_us, pruned_us FROM firestore_clock").first?.decode((Int64, Int64).self)
        let last = clock.map { Timestamp(microseconds: $0.0) }
        let pruned = clock?.1 ?? 0
        if after.microseconds < pruned, pruned > resyncedThrough, (last ?? after) > after {
            return Page(commits: [], last: last, full: false, behind: true, pruned: pruned)
        }
        let rows = try await session.rows(
            """
            SELECT time_us, db, paths, cleared, indexes FROM firestore_commit_log
            WHERE time_us > \(after.microseconds) ORDER BY time_us LIMIT \(limit)
            """)
        var logged: [(time: Int64, database: String, paths: [ResourcePath], cleared: Bool, indexes: Bool)] = []
        logged.reserveCapacity(rows.count)
        var named: [String: [ResourcePath]] = [:]
        var seen: [String: Set<ResourcePath>] = [:]
        for row in rows {
            let (time, database, texts, cleared, indexes) = try row.decode((Int64, String, [String], Bool, Bool).self)
            let paths = texts.map { ResourcePath(parsing: $0) }
            logged.append((time, database, paths, cleared, indexes))
            for path in paths where seen[database, default: []].insert(path).inserted { named[database, default: []].append(path) }
        }
        var versions: [String: Versions] = [:]
        for (database, paths) in named {
            versions[database] = try await Versions.read(session, database, paths, after: after)
        }
        let commits = logged.map { commit in
            let states = versions[commit.database]
            let before = commit.paths.map { states?.state($0, at: commit.time - 1) ?? nil }
            let now = commit.paths.map { states?.state($0, at: commit.time) ?? nil }
            let changes = DocumentEngine.netChanges(
                commit.paths, before: Dictionary(uniqueKeysWithValues: zip(commit.paths, before)),
                after: Dictionary(uniqueKeysWithValues: zip(commit.paths, now)))
            return LoggedCommit(
                time: Timestamp(microseconds: commit.time), database: commit.database, changes: changes, cleared: commit.cleared, indexes: commit.indexes)
        }
        // A full page: the rest follows from the last row; else the clock row is the position.
        return Page(commits: commits, last: rows.count == limit ? nil : last, full: rows.count == limit, behind: false, pruned: pruned)
    }

    /// What one catch-up snapshot read.
    struct Page {
        var commits: [LoggedCommit]
        /// The clock row's time (nil after a full page: the next page starts at its last commit).
        var last: Timestamp?
        var full: Bool
        /// The position is below the prune horizon (`firestore_clock.pruned_us`): log rows after
        /// it may be gone, so the page cannot be trusted to hold every commit.
        var behind: Bool
        /// `firestore_clock.pruned_us`: log and history rows below it may be gone.
        var pruned: Int64
    }

    /// Documents' versions after a time, in one snapshot: their history rows since then and their
    /// current states — enough to read each at any time since (``state(_:at:)``).
    struct Versions {
        /// Per path, the history rows after the time in `until_us` order: each the state it
        /// replaced at `until` (nil: missing).
        var history: [ResourcePath: [(until: Int64, state: Document?)]] = [:]
        var current: [ResourcePath: Document] = [:]

        static func read(_ session: PostgresSession, _ database: String, _ paths: [ResourcePath], after: Timestamp) async throws -> Versions {
            var versions = Versions()
            let rows = try await session.rows(
                """
                SELECT h.path, h.until_us, h.data, h.create_us, h.update_us
                FROM unnest(\(paths.map(\.text))::text[]) AS w(path)
                JOIN firestore_history AS h ON h.db = \(database) AND h.path_hash = sha256(convert_to(w.path, 'UTF8')) AND h.path = w.path
                    AND h.until_us > \(after.microseconds)
                ORDER BY h.path, h.until_us
                """)
            for row in rows {
                let (text, until, data, create, update) = try row.decode((String, Int64, ByteBuffer?, Int64?, Int64?).self)
                let path = ResourcePath(parsing: text)
                var state: Document?
                if let data, let create, let update {
                    state = try PostgresDocumentStore.decodeDocument(path: path, data: data, create: create, update: update)
                }
                versions.history[path, default: []].append((until, state))
            }
            for case let doc? in try await PostgresDocumentStore.currentDocuments(session, database, paths) { versions.current[doc.path] = doc }
            return versions
        }

        /// The state of `path` at `time` (at or after the time read): the one the first history
        /// row after `time` replaced, else the current one — the store's read at a past time.
        func state(_ path: ResourcePath, at time: Int64) -> Document? {
            if let row = history[path]?.first(where: { $0.until > time }) { return row.state }
            return current[path]
        }
    }
}
