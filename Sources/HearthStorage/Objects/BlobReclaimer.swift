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
final class BlobReclaimer: Sendable {
    let blobs: any BlobStore
    private let state = Mutex<State>(State())

    struct State {
        var pending = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    init(blobs: any BlobStore) {
        self.blobs = blobs
    }

    func reclaim(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        state.withLock { $0.pending += 1 }
        Task.detached(priority: .utility) { [self] in
            try? await blobs.delete(batch: ids)
            finished()
        }
    }

    private func finished() {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { s in
            s.pending -= 1
            guard s.pending == 0 else { return [] }
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    /// Returns once every deletion queued so far is done.
    func settle() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done: Bool = state.withLock { s in
                if s.pending == 0 { return true }
                s.waiters.append(c)
                return false
            }
            if done { c.resume() }
        }
    }
}
