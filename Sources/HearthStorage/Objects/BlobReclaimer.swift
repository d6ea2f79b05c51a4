import HearthCore
public import ServiceLifecycle
import Synchronization

/// Deletes blobs that no object or part refers to any more, off the request's path.
///
/// Unlinking a large file costs the file system milliseconds (a 100 MiB blob: ~20 ms on ext4
/// for freeing its extents), and a client whose overwrite or delete has already committed should
/// not wait for the old bytes' space to come back. Safe because a blob is reclaimed only once
/// a committed transaction saw that nothing refers to it, and no later transaction can refer
/// to it again (new objects get new blobs; copies share blobs of rows that exist). A crash
/// before a deletion leaves an orphan, which the start-up sweep (``ObjectStore/sweep()``)
/// removes.
///
/// A `Service` of the server's `ServiceGroup`: while ``run()`` runs, ``reclaim(_:)`` queues the
/// ids and returns, and the service deletes them in arrival order. On graceful shutdown it
/// stops taking ids and deletes those queued before it returns. When it is not running (the
/// CLI's offline commands, tests, or after shutdown) ``reclaim(_:)`` deletes at once, before
/// returning — there is no task to hand the work to.
public final class BlobReclaimer: Service, Sendable {
    let blobs: any BlobStore
    private let state = Mutex<State>(State())

    struct State {
        /// Set while ``run()`` takes ids.
        var queue: AsyncStream<[String]>.Continuation?
        /// Batches queued and not deleted yet.
        var pending = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    init(blobs: any BlobStore) {
        self.blobs = blobs
    }

    /// Whether ``run()`` takes ids now.
    var isRunning: Bool { state.withLock { $0.queue != nil } }

    /// Deletes `ids`: queued for the running service, else at once.
    func reclaim(_ ids: [String]) async {
        guard !ids.isEmpty else { return }
        let queued: Bool = state.withLock { state in
            guard let queue = state.queue else { return false }
            state.pending += 1
            queue.yield(ids)
            return true
        }
        if !queued { try? await blobs.delete(batch: ids) }
    }

    /// Deletes queued blobs until graceful shutdown, then those already queued. Cancelled (past
    /// the shutdown deadline), it leaves the rest as orphans for the next start-up sweep.
    public func run() async throws {
        let (batches, queue) = AsyncStream.makeStream(of: [String].self)
        let opened = state.withLock { state in
            guard state.queue == nil else { return false }
            state.queue = queue
            return true
        }
        guard opened else { throw HearthError(.failedPrecondition, "The blob reclaimer is already running.") }
        await withGracefulShutdownHandler {
            for await ids in batches {
                try? await blobs.delete(batch: ids)
                finished(batches: 1)
            }
        } onGracefulShutdown: { [self] in
            close()
        }
        close()
        // Batches a cancellation left behind: no longer pending (the start-up sweep takes them).
        finished(batches: state.withLock { $0.pending })
    }

    /// Takes no more ids: later ones are deleted by their callers.
    private func close() {
        let queue = state.withLock { state in
            defer { state.queue = nil }
            return state.queue
        }
        queue?.finish()
    }

    private func finished(batches: Int) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.pending -= batches
            guard state.pending == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once every deletion queued so far is done.
    func settle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done: Bool = state.withLock { state in
                if state.pending == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
