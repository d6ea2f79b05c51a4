package import HearthCore
import Synchronization

/// A document as the lock table names it: the database id and the path.
package struct LockedDocument: Sendable, Hashable {
    package var database: String
    package var path: ResourcePath

    package init(_ database: String, _ path: ResourcePath) {
        self.database = database
        self.path = path
    }
}

/// Pessimistic concurrency for read-write transactions: owns the lock table
/// (``DocumentLocks/StateMachine``) behind a `Mutex` and performs its waits. A waiting call
/// parks on a continuation next to one timer child task (structured, in a task group) that
/// reports the wait's deadlines to the machine; whoever resolves a request resumes it.
package final class DocumentLocks: Sendable {
    package typealias Machine = StateMachine<LockedDocument>

    package enum Outcome: Sendable, Equatable {
        case granted
        case aborted(LockAbortReason)
        case cancelled
    }

    struct Guarded: Sendable {
        var machine: Machine
        var parked: [LockRequestID: CheckedContinuation<Outcome, Never>] = [:]
        /// Outcomes that arrived before their waiter parked.
        var early: [LockRequestID: Outcome] = [:]
    }

    let state: Mutex<Guarded>
    let start = ContinuousClock.now
    package let limits: Machine.Limits

    package init(limits: Machine.Limits = .init()) {
        self.limits = limits
        state = Mutex(Guarded(machine: Machine(limits: limits)))
    }

    func now() -> Duration { ContinuousClock.now - start }

    /// The error a client sees for a transaction the lock manager aborted (Firestore's wording).
    package static func error(_ reason: LockAbortReason) -> HearthError {
        switch reason {
        case .contention:
            HearthError(
                .aborted,
                "Aborted due to cross-transaction contention. This occurs when multiple transactions attempt to access the same data, "
                    + "requiring Firestore to abort at least one in order to enforce serializability.")
        case .lockTimeout:
            HearthError(.aborted, "Transaction lock timeout.")
        }
    }

    // MARK: Owners

    package func begin(retrying: LockOwnerID? = nil) -> LockOwnerID {
        let now = now()
        let (owner, actions) = state.withLock { $0.machine.begin(transactional: true, retrying: retrying, now: now) }
        perform(actions)
        return owner
    }

    package func end(_ owner: LockOwnerID, committed: Bool) {
        let now = now()
        perform(state.withLock { $0.machine.end(owner, committed: committed, now: now) })
    }

    package func abortReason(_ owner: LockOwnerID) -> LockAbortReason? {
        state.withLock { $0.machine.abortReason(owner) }
    }

    /// Locks for a read of a transaction (a shared request becomes exclusive for documents its
    /// earlier attempt lost). Throws ABORTED when the transaction was or gets aborted.
    package func lockForRead(_ owner: LockOwnerID, _ documents: [LockedDocument], mode: LockMode) async throws {
        guard !documents.isEmpty else { return }
        let wants = Dictionary(documents.map { ($0, mode) }, uniquingKeysWith: { a, _ in a })
        try Self.check(await acquire(owner, wants, commits: false))
    }

    /// Exclusive locks for a transaction's commit; once granted the transaction is never chosen to break a deadlock.
    package func lockForCommit(_ owner: LockOwnerID, _ documents: [LockedDocument]) async throws {
        let wants = Dictionary(documents.map { ($0, LockMode.exclusive) }, uniquingKeysWith: { a, _ in a })
        try Self.check(await acquire(owner, wants, commits: true))
    }

    /// Exclusive locks for a non-transactional write: waits for transactions holding them. The
    /// caller ends the returned owner once the write is durable (or failed).
    package func lockForWrite(_ documents: [LockedDocument]) async throws -> LockOwnerID {
        let now = now()
        let wants = Dictionary(documents.map { ($0, LockMode.exclusive) }, uniquingKeysWith: { a, _ in a })
        let (owner, acquisition, actions) = state.withLock { guarded in
            let (owner, _) = guarded.machine.begin(transactional: false, now: now)
            let (acquisition, actions) = guarded.machine.acquire(owner, wants, commits: true, now: now)
            return (owner, acquisition, actions)
        }
        perform(actions)
        let outcome: Outcome
        switch acquisition {
        case .granted: return owner
        case .aborted(let reason): outcome = .aborted(reason)
        case .waiting(let id): outcome = await wait(id, since: now)
        }
        if outcome == .granted { return owner }
        end(owner, committed: false)
        try Self.check(outcome)
        return owner
    }

    static func check(_ outcome: Outcome) throws(HearthError) {
        switch outcome {
        case .granted: return
        case .aborted(let reason): throw error(reason)
        case .cancelled: throw HearthError(.cancelled, "The request was cancelled while it waited for a document lock.")
        }
    }

    // MARK: Waiting

    func acquire(_ owner: LockOwnerID, _ wants: [LockedDocument: LockMode], commits: Bool) async -> Outcome {
        let now = now()
        let (acquisition, actions) = state.withLock { $0.machine.acquire(owner, wants, commits: commits, now: now) }
        perform(actions)
        switch acquisition {
        case .granted: return .granted
        case .aborted(let reason): return .aborted(reason)
        case .waiting(let id): return await wait(id, since: now)
        }
    }

    /// Parks until the request is granted or fails; a timer child tells the machine when the
    /// hold and wait limits pass (measured from `since`).
    func wait(_ id: LockRequestID, since: Duration) async -> Outcome {
        let deadlines = Set([limits.holdLimit, limits.waitLimit]).sorted()
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask { await self.park(id) }
            group.addTask {
                for deadline in deadlines {
                    do { try await Task.sleep(until: self.start + since + deadline, clock: .continuous) } catch { return nil }
                    let now = self.now()
                    self.perform(self.state.withLock { $0.machine.expire(id, now: now) })
                }
                return nil
            }
            var result = Outcome.cancelled
            for await outcome in group {
                if let outcome {
                    result = outcome
                    group.cancelAll()
                }
            }
            return result
        }
    }

    func park(_ id: LockRequestID) async -> Outcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let ready: Outcome? = state.withLock { guarded in
                    if let outcome = guarded.early.removeValue(forKey: id) { return outcome }
                    guarded.parked[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let now = now()
            perform(state.withLock { guarded in
                // Still pending: it resumes as cancelled. Already resolved: its outcome stands.
                guard guarded.machine.requests[id] != nil else { return [] }
                var actions = guarded.machine.cancel(id, now: now)
                actions.append(.fail(id, .lockTimeout))
                return actions
            }, cancelled: id)
        }
    }

    /// Resumes the requests the machine resolved (outside the lock).
    func perform(_ actions: [Machine.Action], cancelled: LockRequestID? = nil) {
        guard !actions.isEmpty else { return }
        let resumes: [(CheckedContinuation<Outcome, Never>, Outcome)] = state.withLock { guarded in
            var out: [(CheckedContinuation<Outcome, Never>, Outcome)] = []
            for action in actions {
                let id: LockRequestID
                var outcome: Outcome
                switch action {
                case .grant(let request):
                    id = request
                    outcome = .granted
                case .fail(let request, let reason):
                    id = request
                    outcome = .aborted(reason)
                }
                if id == cancelled, outcome != .granted { outcome = .cancelled }
                if let continuation = guarded.parked.removeValue(forKey: id) {
                    out.append((continuation, outcome))
                } else if guarded.early[id] == nil {
                    guarded.early[id] = outcome
                }
            }
            return out
        }
        for (continuation, outcome) in resumes { continuation.resume(returning: outcome) }
    }
}
