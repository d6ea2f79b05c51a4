public import HearthDatabase
public import Logging
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// The Realtime Database's change feed across servers (docs/postgres.md, "Several replicas"):
/// reads every server's commits from the commit log (`rtdb_commit_log`, written by
/// ``PostgresDatabaseTreeStore`` in each commit's transaction) and hands them to this server's
/// sequenced ``DatabaseChangeFeed``, which delivers each namespace's revisions once, in order.
///
/// It catches up — reads the log after its position in each namespace, in one snapshot — when
/// `LISTEN hearth_rtdb` takes effect (at the start and after every reconnect, on a dedicated
/// connection: ``PostgresNotificationListener``), on each notification and every second, so a
/// lost or folded notification delays a change by at most a second and loses nothing. The
/// first catch-up only starts the feed at the namespaces' current revisions. A namespace whose
/// log no longer holds the rows after the position (pruned while this server could not read
/// it), or whose commit was made outside the engine (an import), is re-read: its listeners get
/// a `put` of the current value at the root, as a reconnecting client would. Rules changes
/// reach the listeners (they re-check their reads); the engines check the rules version on each
/// use, so rules need no invalidation here. Log rows older than ``retention`` are pruned.
public final class PostgresDatabaseTreeFeed: Service, Sendable {
    /// The channel every commit notifies (payload `ns:revision`, or `ns:rules`; a wake-up only).
    public static let channel = "hearth_rtdb"
    /// Most log rows read per statement.
    static let pageSize = 1000

    struct Position {
        var synchronized = false
        /// The last `log_seq` handed on per namespace (absent: 0).
        var seq: [String: Int64] = [:]
        var lastPrune: ContinuousClock.Instant?
    }

    /// One namespace's part of a catch-up.
    struct Step: Sendable {
        var namespace: String
        var changes: [DatabaseChange] = []
        /// The root as it is at `revision`, in place of what could not be read (nil: nobody listens).
        var reset: DatabaseChange?
        /// Set when the namespace is re-read: its revision in the snapshot.
        var revision: Int64?
        var seq: Int64
    }

    let backend: PostgresBackend
    let feed: DatabaseChangeFeed
    let logger: Logger
    let retention: Duration
    let pollInterval: Duration
    let reconnectDelay: Duration
    let position = Mutex(Position())

    /// A feed for `feed` (sequenced) from `backend`'s database, whose schema is migrated.
    public init(
        backend: PostgresBackend, feed: DatabaseChangeFeed, logger: Logger = Logger(label: "hearth.postgres"),
        retention: Duration = .seconds(3600), pollInterval: Duration = .seconds(1), reconnectDelay: Duration = .milliseconds(100)
    ) {
        precondition(feed.sequenced, "the commit log feeds a sequenced DatabaseChangeFeed")
        self.backend = backend
        self.feed = feed
        self.logger = logger
        self.retention = retention
        self.pollInterval = pollInterval
        self.reconnectDelay = reconnectDelay
    }

    public func run() async throws {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let listener = PostgresNotificationListener(
            settings: backend.settings, channel: Self.channel, logger: logger, initialRetryDelay: reconnectDelay
        ) { _ in wake.yield() }
        let interval = pollInterval
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await listener.run() }
                group.addTask {
                    while true {
                        do { try await Task.sleep(for: interval) } catch { return }
                        wake.yield()
                    }
                }
                wake.yield()
                var failing = false
                for await _ in wakes {
                    do {
                        try await self.catchUp()
                        try await self.pruneIfDue()
                        if failing { self.logger.notice("realtime database feed reads the commit log again") }
                        failing = false
                    } catch {
                        // The database is away: the next wake-up (at most a second later) tries
                        // again; said once per outage, not once a second.
                        if !failing, !Task.isCancelled {
                            self.logger.warning("realtime database feed cannot read the commit log", metadata: ["error": "\(error)"])
                        }
                        failing = true
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// Reads the commit log after this server's position and hands it to the feed (see the type).
    /// One caller at a time (the service's loop, or a test instead of it).
    package func catchUp() async throws {
        while true {
            let (synchronized, known) = position.withLock { ($0.synchronized, $0.seq) }
            let feed = feed
            if !synchronized {
                // The start: every namespace's current revision, and the root of those already listened to.
                let steps = try await backend.snapshot { session in
                    var steps: [Step] = []
                    for (namespace, revision, seq) in try await Self.heads(session) {
                        var step = Step(namespace: namespace, revision: revision, seq: seq)
                        if revision > 0, feed.hasSubscribers(namespace: namespace) {
                            step.reset = try await Self.root(session, namespace, revision: revision)
                        }
                        steps.append(step)
                    }
                    return steps
                }
                feed.synchronize(
                    revisions: Dictionary(steps.map { ($0.namespace, $0.revision ?? 0) }, uniquingKeysWith: max), resets: steps.compactMap(\.reset))
                position.withLock { p in
                    p.synchronized = true
                    for step in steps { p.seq[step.namespace] = step.seq }
                }
                return
            }
            let (steps, more) = try await backend.snapshot { session in try await Self.read(session, after: known, feed: feed) }
            for step in steps {
                for change in step.changes { feed.publish(change) }
                if let revision = step.revision {
                    feed.synchronize(revisions: [step.namespace: revision], resets: step.reset.map { [$0] } ?? [])
                }
                position.withLock { $0.seq[step.namespace] = step.seq }
            }
            if !more { return }
        }
    }

    /// Every namespace's revision and last `log_seq`.
    static func heads(_ session: PostgresSession) async throws -> [(String, Int64, Int64)] {
        try await session.rows("SELECT ns, revision, log_seq FROM rtdb_namespaces").map { try $0.decode((String, Int64, Int64).self) }
    }

    /// The namespace's whole tree as a `set` of its root at `revision` (read in the snapshot that gave it).
    static func root(_ session: PostgresSession, _ namespace: String, revision: Int64) async throws -> DatabaseChange {
        let leaves = try PostgresDatabaseTreeStore.leaves(
            await session.rows("SELECT key, value FROM rtdb_leaves WHERE ns = \(namespace) ORDER BY key"))
        return DatabaseChange(namespace: namespace, revision: revision, kind: .set(path: .root, node: DatabaseNode(leaves: leaves, base: .root)))
    }

    /// The log after `known` (one page), as steps per namespace; true when the page was full.
    static func read(_ session: PostgresSession, after known: [String: Int64], feed: DatabaseChangeFeed) async throws -> ([Step], Bool) {
        let behind = try await heads(session).filter { $0.2 > (known[$0.0] ?? 0) }
        guard !behind.isEmpty else { return ([], false) }
        let names = behind.map(\.0)
        let positions = behind.map { known[$0.0] ?? 0 }
        let rows = try await session.rows(
            """
            SELECT l.ns, l.seq, l.revision, l.kind, l.base, l.paths, l.keys, l.vals
            FROM unnest(\(names)::text[], \(positions)::bigint[]) AS p(ns, pos)
            JOIN rtdb_commit_log AS l ON l.ns = p.ns AND l.seq > p.pos
            ORDER BY l.ns, l.seq LIMIT \(Int64(pageSize))
            """)
        let full = rows.count == pageSize
        var steps: [String: Step] = [:]
        var order: [String] = []
        var cut = Set<String>()
        for row in rows {
            let (namespace, seq, revision, kind, base, paths, keys, values) = try row.decode(
                (String, Int64, Int64, String, ByteBuffer?, [ByteBuffer], [ByteBuffer], [String]).self)
            guard !cut.contains(namespace) else { continue }
            if steps[namespace] == nil {
                steps[namespace] = Step(namespace: namespace, seq: known[namespace] ?? 0)
                order.append(namespace)
            }
            guard seq == steps[namespace]!.seq + 1, kind != "reset" else {
                // Rows were pruned before this server read them, or the commit did not say what it
                // changed: the namespace is re-read below.
                cut.insert(namespace)
                continue
            }
            switch kind {
            case "rules":
                steps[namespace]!.changes.append(DatabaseChange(namespace: namespace, revision: 0, kind: .rules))
            default:
                let event: DatabaseTreeCommit.Event =
                    kind == "update" ? .update(base: DatabasePathKey.decode((base ?? ByteBuffer()).readableBytesView)) : .set
                let leaves = zip(keys, values).map { DatabaseLeaf(path: DatabasePathKey.decode($0.0.readableBytesView), value: $0.1) }
                let commit = DatabaseTreeCommit(
                    namespace: namespace, expectedRevision: revision - 1, clearedSubtrees: paths.map { DatabasePathKey.decode($0.readableBytesView) },
                    clearedLeaves: [], writtenLeaves: leaves, event: event)
                if let change = DatabaseChange(commit, revision: revision) { steps[namespace]!.changes.append(change) }
            }
            steps[namespace]!.seq = seq
        }
        // A page that was not full holds every row after the positions: a namespace behind with
        // none of them lost its rows too.
        if !full {
            for (namespace, _, _) in behind where steps[namespace] == nil {
                cut.insert(namespace)
                steps[namespace] = Step(namespace: namespace, seq: known[namespace] ?? 0)
                order.append(namespace)
            }
        }
        for (namespace, revision, seq) in behind where cut.contains(namespace) {
            steps[namespace]!.revision = revision
            steps[namespace]!.seq = seq
            if feed.hasSubscribers(namespace: namespace) {
                steps[namespace]!.reset = try await root(session, namespace, revision: revision)
            }
        }
        return (order.map { steps[$0]! }, full)
    }

    /// Deletes log rows older than ``retention``, at most once a minute.
    func pruneIfDue() async throws {
        let now = ContinuousClock.now
        let due = position.withLock { p in
            guard p.lastPrune.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
            p.lastPrune = now
            return true
        }
        if due { try await prune() }
    }

    /// Deletes log rows older than ``retention``.
    package func prune(olderThan age: Duration? = nil) async throws {
        let seconds = Double((age ?? retention).components.seconds) + Double((age ?? retention).components.attoseconds) / 1e18
        try await backend.writeCommitted { session in
            try await session.execute("DELETE FROM rtdb_commit_log WHERE logged_at < now() - make_interval(secs => \(seconds))")
        }
    }
}
