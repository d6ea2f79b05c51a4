import Synchronization

extension PostgresDocumentStore {
    /// Commits of one process that write the same document wait here, in order, before they
    /// lease a connection: without it, every writer of a hot document held a pooled connection
    /// while it waited for the document's advisory lock, and the pool ran dry for every other
    /// request of the server (UNAVAILABLE after the acquire timeout). Now at most one
    /// connection per document and process waits in PostgreSQL, for writers on other servers.
    ///
    /// Keys are taken in ascending order (callers pass them sorted, without repeats), so no two
    /// callers wait for each other; a released key is handed to its first waiter.
    final class LocalLocks: Sendable {
        private struct State {
            var held: Set<Int64> = []
            var waiters: [Int64: [CheckedContinuation<Void, Never>]] = [:]
        }

        private let state = Mutex(State())

        /// Waits until every key of `keys` (sorted, distinct) is held by the caller.
        func lock(_ keys: [Int64]) async {
            for key in keys {
                await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                    let acquired = state.withLock { state -> Bool in
                        if state.held.insert(key).inserted { return true }
                        state.waiters[key, default: []].append(waiter)
                        return false
                    }
                    if acquired { waiter.resume() }
                }
            }
        }

        /// Releases `keys`, each to its next waiter if there is one.
        func unlock(_ keys: [Int64]) {
            for key in keys {
                let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    if var queue = state.waiters[key], !queue.isEmpty {
                        let first = queue.removeFirst()
                        state.waiters[key] = queue.isEmpty ? nil : queue
                        return first  // still held: handed over
                    }
                    state.held.remove(key)
                    return nil
                }
                next?.resume()
            }
        }
    }
}
