/// How a lock is held: many readers share a document; a committer holds it alone.
package enum LockMode: Sendable, Hashable {
    case shared
    case exclusive

    func isCompatible(with other: LockMode) -> Bool { self == .shared && other == .shared }
}

/// Who holds or waits for locks: one read-write transaction (for its whole life, and for the
/// retries that inherit its place), or one non-transactional write (for its commit).
package struct LockOwnerID: Sendable, Hashable, CustomStringConvertible {
    package let raw: UInt64
    package var description: String { "owner#\(raw)" }
}

/// One pending request for locks (all of its documents are granted together, or none).
package struct LockRequestID: Sendable, Hashable, CustomStringConvertible {
    package let raw: UInt64
    package var description: String { "request#\(raw)" }
}

/// Why the lock manager aborted a transaction.
package enum LockAbortReason: Sendable, Hashable {
    /// It was the youngest transaction in a deadlock.
    case contention
    /// It waited for a lock past the wait limit, or held a lock others waited for past the hold limit.
    case lockTimeout
}

extension DocumentLocks {
    /// The lock table as a pure state machine: events in (begin, acquire, expire, cancel, end),
    /// the requests to resume out. ``DocumentLocks`` owns one behind a `Mutex` and performs the waits.
    ///
    /// Rules (see docs/architecture.md, "Transactions"):
    /// 1. Shared locks are compatible with each other; an exclusive lock with nothing.
    /// 2. Every owner has an age (a sequence number taken when it begins; a retry keeps the age of
    ///    the transaction it retries). Each document's queue is ordered by age, so waiting is first
    ///    come, first served by the time the transaction began, and a retried transaction keeps
    ///    its place in line.
    /// 3. A request is granted when it is compatible with every other holder and with every
    ///    request queued ahead of it, on all of its documents at once.
    /// 4. A blocked request waits; nothing is aborted merely for being in the way. Deadlocks are
    ///    detected when they form: each new wait is checked for a cycle in the wait-for graph
    ///    (an owner waits for the holders and the queued-ahead requests that block it), and the
    ///    youngest transaction in the cycle that is not yet committing is aborted, releasing its
    ///    locks. Of two deadlocked transactions exactly one — the younger — is aborted.
    /// 5. A transaction that lost a document to contention reads that document with an exclusive
    ///    lock when it retries, so a retry queues for it instead of sharing it and colliding again.
    /// 6. A wait is bounded: when it has lasted `holdLimit`, blocking transactions that have held
    ///    their lock that long are aborted; when it has lasted `waitLimit`, the request fails and
    ///    its transaction is aborted ("Transaction lock timeout").
    package struct StateMachine<Key: Hashable & Sendable>: Sendable {
        package struct Limits: Sendable {
            /// The longest a request waits before it fails.
            package var waitLimit: Duration
            /// How long a transaction may hold a lock that others wait for.
            package var holdLimit: Duration
            /// How long an ended transaction's place in line is kept for a retry.
            package var retryRetention: Duration

            package init(waitLimit: Duration = .seconds(20), holdLimit: Duration = .seconds(10), retryRetention: Duration = .seconds(300)) {
                self.waitLimit = waitLimit
                self.holdLimit = holdLimit
                self.retryRetention = retryRetention
            }
        }

        /// What the owner of the machine must do: resume a waiting request.
        package enum Action: Sendable, Hashable {
            case grant(LockRequestID)
            case fail(LockRequestID, LockAbortReason)
        }

        package enum Acquisition: Sendable, Hashable {
            case granted
            case waiting(LockRequestID)
            /// The owner was aborted before (or by) this request; nothing is held.
            case aborted(LockAbortReason)
        }

        struct Held: Sendable {
            var mode: LockMode
            var since: Duration
        }

        struct Owner: Sendable {
            var age: UInt64
            var transactional: Bool
            var held: [Key: Held] = [:]
            /// Its pending requests (a client may read several documents of one transaction at once).
            var waiting: Set<LockRequestID> = []
            /// Holds everything its commit needs: never chosen to break a deadlock.
            var committing = false
            var aborted: LockAbortReason?
            /// Documents this owner (or the attempts it retries) lost to contention.
            var contended: Set<Key> = []
        }

        struct Request: Sendable {
            var owner: LockOwnerID
            var age: UInt64
            var wants: [Key: LockMode]
            var since: Duration
            var commits: Bool
        }

        struct Entry: Sendable {
            var holders: [LockOwnerID: LockMode] = [:]
            /// Waiting requests, oldest owner first.
            var queue: [LockRequestID] = []
        }

        struct Lineage: Sendable {
            var age: UInt64
            var contended: Set<Key>
            var ended: Duration
        }

        package let limits: Limits
        var entries: [Key: Entry] = [:]
        var owners: [LockOwnerID: Owner] = [:]
        var requests: [LockRequestID: Request] = [:]
        /// Ended transactions whose place in line a retry may take, oldest first.
        var lineages: [LockOwnerID: Lineage] = [:]
        var lineageOrder: [LockOwnerID] = []
        var lineageHead = 0
        var nextAge: UInt64 = 1
        var nextOwner: UInt64 = 1
        var nextRequest: UInt64 = 1

        package init(limits: Limits = Limits()) {
            self.limits = limits
        }

        // MARK: Queries

        /// Why the owner was aborted, if it was.
        package func abortReason(_ owner: LockOwnerID) -> LockAbortReason? { owners[owner]?.aborted }

        package func age(_ owner: LockOwnerID) -> UInt64? { owners[owner]?.age }

        package func mode(_ owner: LockOwnerID, _ key: Key) -> LockMode? { owners[owner]?.held[key]?.mode }

        package func holders(_ key: Key) -> [LockOwnerID: LockMode] { entries[key]?.holders ?? [:] }

        /// Waiting requests for `key`, in the order they will be served.
        package func queue(_ key: Key) -> [LockRequestID] { entries[key]?.queue ?? [] }

        /// True when no lock is held or awaited and no owner is open (every owner ended).
        package var isIdle: Bool { entries.isEmpty && requests.isEmpty && owners.isEmpty }

        // MARK: Events

        /// A new owner. `retrying` (an ended or still open transaction) passes on its age and the
        /// documents it lost; a still open one is ended first, releasing its locks (one that is
        /// committing finishes on its own, and the retry starts afresh).
        package mutating func begin(transactional: Bool, retrying: LockOwnerID? = nil, now: Duration) -> (LockOwnerID, [Action]) {
            pruneLineages(now: now)
            var age: UInt64?
            var contended: Set<Key> = []
            var actions: [Action] = []
            if let retrying {
                if let open = owners[retrying], open.transactional, !open.committing {
                    age = open.age
                    contended = open.contended
                    actions = release(retrying, retire: false, now: now)
                } else if let lineage = lineages.removeValue(forKey: retrying) {
                    age = lineage.age
                    contended = lineage.contended
                }
            }
            let id = LockOwnerID(raw: nextOwner)
            nextOwner += 1
            let assigned: UInt64
            if let age {
                assigned = age
            } else {
                assigned = nextAge
                nextAge += 1
            }
            owners[id] = Owner(age: assigned, transactional: transactional, contended: contended)
            return (id, actions)
        }

        /// Asks for `wants` (document → mode) for `owner`. Shared requests for documents the owner
        /// lost to contention before become exclusive. `commits`: once granted, the owner is
        /// committing (it waits for nothing more) and is never chosen to break a deadlock.
        package mutating func acquire(
            _ owner: LockOwnerID, _ wants: [Key: LockMode], commits: Bool = false, now: Duration
        ) -> (Acquisition, [Action]) {
            guard let state = owners[owner] else { return (.aborted(.lockTimeout), []) }
            if let reason = state.aborted { return (.aborted(reason), []) }
            var needed: [Key: LockMode] = [:]
            for (key, mode) in wants {
                let mode = mode == .shared && state.contended.contains(key) ? LockMode.exclusive : mode
                switch state.held[key]?.mode {
                case .exclusive?: continue
                case .shared? where mode == .shared: continue
                default: needed[key] = mode
                }
            }
            if needed.isEmpty {
                if commits { owners[owner]?.committing = true }
                return (.granted, [])
            }
            let id = LockRequestID(raw: nextRequest)
            nextRequest += 1
            let request = Request(owner: owner, age: state.age, wants: needed, since: now, commits: commits)
            if !isBlocked(request, id, queued: false) {
                install(request, now: now)
                return (.granted, [])
            }
            requests[id] = request
            owners[owner]?.waiting.insert(id)
            for key in needed.keys { enqueue(id, request.age, key) }
            // The new wait may close a cycle (the graph had none before): break it. Only an owner
            // someone waits for can be in one.
            var actions: [Action] = []
            var released: Set<Key> = []
            while isAwaited(owner), let cycle = cycle(through: owner) {
                let candidates = cycle.filter { owners[$0]?.transactional == true && owners[$0]?.committing == false }
                guard let victim = candidates.max(by: { (owners[$0]?.age ?? 0, $0.raw) < (owners[$1]?.age ?? 0, $1.raw) }) else { break }
                for waiting in owners[victim]?.waiting ?? [] {
                    owners[victim]?.contended.formUnion(requests[waiting]?.wants.keys.map { $0 } ?? [])
                }
                actions += abort(victim, .contention, freeing: &released)
                if victim == owner { break }
            }
            actions += grantWaiting(released.union(needed.keys), now: now)
            for (index, action) in actions.enumerated() {
                if case .fail(id, let reason) = action {
                    actions.remove(at: index)
                    return (.aborted(reason), actions)
                }
            }
            if let granted = actions.firstIndex(of: .grant(id)) {
                actions.remove(at: granted)
                return (.granted, actions)
            }
            return (.waiting(id), actions)
        }

        /// A waiting request reached a deadline: past `holdLimit`, the transactions blocking it
        /// that have held their lock that long are aborted; past `waitLimit`, it fails itself.
        package mutating func expire(_ id: LockRequestID, now: Duration) -> [Action] {
            guard let request = requests[id] else { return [] }
            var actions: [Action] = []
            if now - request.since >= limits.holdLimit {
                var released: Set<Key> = []
                for (victim, key) in blockers(request, id, queued: true) {
                    guard let other = owners[victim], other.transactional, !other.committing, other.aborted == nil,
                        let held = other.held[key], now - held.since >= limits.holdLimit
                    else { continue }
                    actions += abort(victim, .lockTimeout, freeing: &released)
                }
                actions += grantWaiting(released, now: now)
                if actions.contains(.grant(id)) { return actions }
            }
            if now - request.since >= limits.waitLimit, requests[id] != nil {
                let owner = request.owner
                if owners[owner]?.transactional == true {
                    owners[owner]?.contended.formUnion(request.wants.keys)
                    var released: Set<Key> = []
                    actions += abort(owner, .lockTimeout, freeing: &released)
                    actions += grantWaiting(released, now: now)
                } else {
                    actions.append(.fail(id, .lockTimeout))
                    withdraw(id)
                    actions += grantWaiting(Set(request.wants.keys), now: now)
                }
            }
            return actions
        }

        /// The waiter gave up (its call was cancelled): the request goes, the owner stays.
        package mutating func cancel(_ id: LockRequestID, now: Duration) -> [Action] {
            guard let request = requests[id] else { return [] }
            withdraw(id)
            return grantWaiting(Set(request.wants.keys), now: now)
        }

        /// The owner is done (committed, rolled back, failed, expired): every lock is released and
        /// a pending request fails. Unless it committed, a transaction's place in line is kept
        /// for a retry.
        package mutating func end(_ owner: LockOwnerID, committed: Bool, now: Duration) -> [Action] {
            release(owner, retire: !committed, now: now)
        }

        // MARK: Internals

        /// Owners in the way of `request` and the document each blocks: incompatible holders, and
        /// incompatible requests queued ahead of it.
        func blockers(_ request: Request, _ id: LockRequestID, queued: Bool) -> [(LockOwnerID, Key)] {
            var out: [(LockOwnerID, Key)] = []
            for (key, mode) in request.wants {
                guard let entry = entries[key] else { continue }
                for (holder, held) in entry.holders where holder != request.owner && !mode.isCompatible(with: held) {
                    out.append((holder, key))
                }
                for other in entry.queue {
                    if other == id { break }
                    guard let ahead = requests[other] else { continue }
                    if !queued, (ahead.age, other.raw) > (request.age, id.raw) { break }
                    if ahead.owner != request.owner, let theirs = ahead.wants[key], !mode.isCompatible(with: theirs) {
                        out.append((ahead.owner, key))
                    }
                }
            }
            return out
        }

        /// Whether anything blocks `request`: `blockers(…).isEmpty`, stopping at the first.
        func isBlocked(_ request: Request, _ id: LockRequestID, queued: Bool) -> Bool {
            for (key, mode) in request.wants {
                guard let entry = entries[key] else { continue }
                for (holder, held) in entry.holders where holder != request.owner && !mode.isCompatible(with: held) { return true }
                for other in entry.queue {
                    if other == id { break }
                    guard let ahead = requests[other] else { continue }
                    if !queued, (ahead.age, other.raw) > (request.age, id.raw) { break }
                    if ahead.owner != request.owner, let theirs = ahead.wants[key], !mode.isCompatible(with: theirs) { return true }
                }
            }
            return false
        }

        /// Whether another owner may be waiting for `owner`: it holds a document others queue for,
        /// or one of its requests has others queued behind it.
        func isAwaited(_ owner: LockOwnerID) -> Bool {
            guard let state = owners[owner] else { return false }
            for key in state.held.keys where entries[key]?.queue.contains(where: { requests[$0]?.owner != owner }) == true { return true }
            for id in state.waiting {
                for key in requests[id]?.wants.keys.map({ $0 }) ?? [] {
                    guard let queue = entries[key]?.queue, let at = queue.firstIndex(of: id) else { continue }
                    if queue[(at + 1)...].contains(where: { requests[$0]?.owner != owner }) { return true }
                }
            }
            return false
        }

        /// The owners an owner waits for: the blockers of its pending requests.
        func waitsFor(_ owner: LockOwnerID) -> Set<LockOwnerID> {
            var out = Set<LockOwnerID>()
            for id in owners[owner]?.waiting ?? [] {
                guard let request = requests[id] else { continue }
                for (blocker, _) in blockers(request, id, queued: true) where blocker != owner { out.insert(blocker) }
            }
            return out
        }

        /// A cycle of waits that leads from `start` back to it (its owners, `start` first), if any.
        func cycle(through start: LockOwnerID) -> [LockOwnerID]? {
            var visited = Set<LockOwnerID>()
            var path: [LockOwnerID] = [start]
            var frontier: [[LockOwnerID]] = [Array(waitsFor(start))]
            while !frontier.isEmpty {
                guard let next = frontier[frontier.count - 1].popLast() else {
                    frontier.removeLast()
                    path.removeLast()
                    continue
                }
                if next == start { return path }
                guard visited.insert(next).inserted else { continue }
                path.append(next)
                frontier.append(Array(waitsFor(next)))
            }
            return nil
        }

        mutating func install(_ request: Request, now: Duration) {
            for (key, mode) in request.wants {
                entries[key, default: Entry()].holders[request.owner] = mode
                let since = owners[request.owner]?.held[key]?.since ?? now
                owners[request.owner]?.held[key] = Held(mode: mode, since: since)
            }
            if request.commits { owners[request.owner]?.committing = true }
        }

        mutating func enqueue(_ id: LockRequestID, _ age: UInt64, _ key: Key) {
            var entry = entries[key, default: Entry()]
            let at = entry.queue.firstIndex { other in
                guard let r = requests[other] else { return false }
                return (r.age, other.raw) > (age, id.raw)
            } ?? entry.queue.endIndex
            entry.queue.insert(id, at: at)
            entries[key] = entry
        }

        /// Takes a request out of every queue.
        mutating func withdraw(_ id: LockRequestID) {
            guard let request = requests.removeValue(forKey: id) else { return }
            owners[request.owner]?.waiting.remove(id)
            for key in request.wants.keys {
                entries[key]?.queue.removeAll { $0 == id }
                dropIfEmpty(key)
            }
        }

        mutating func dropIfEmpty(_ key: Key) {
            if let entry = entries[key], entry.holders.isEmpty, entry.queue.isEmpty { entries[key] = nil }
        }

        /// Marks the owner aborted, fails its pending request and releases its locks; the documents
        /// whose queues may move are added to `freed` (the caller grants them).
        mutating func abort(_ owner: LockOwnerID, _ reason: LockAbortReason, freeing freed: inout Set<Key>) -> [Action] {
            guard owners[owner] != nil else { return [] }
            var actions: [Action] = []
            for waiting in (owners[owner]?.waiting ?? []).sorted(by: { $0.raw < $1.raw }) {
                guard let request = requests[waiting] else { continue }
                actions.append(.fail(waiting, reason))
                freed.formUnion(request.wants.keys)
                withdraw(waiting)
            }
            guard var state = owners[owner] else { return actions }
            for key in state.held.keys {
                entries[key]?.holders[owner] = nil
                freed.insert(key)
                dropIfEmpty(key)
            }
            state.held = [:]
            state.waiting = []
            state.aborted = reason
            owners[owner] = state
            return actions
        }

        /// Removes the owner, failing a pending request and granting what its locks and its place
        /// in the queues held back; `retire` keeps its age and lost documents for a retry.
        mutating func release(_ owner: LockOwnerID, retire: Bool, now: Duration) -> [Action] {
            guard owners[owner] != nil else { return [] }
            var freed = Set<Key>()
            var actions = abort(owner, owners[owner]?.aborted ?? .contention, freeing: &freed)
            guard let state = owners.removeValue(forKey: owner) else { return actions }
            if retire, state.transactional {
                lineages[owner] = Lineage(age: state.age, contended: state.contended, ended: now)
                lineageOrder.append(owner)
            }
            actions += grantWaiting(freed, now: now)
            return actions
        }

        /// Grants, in queue order, every waiting request on `keys` that is now compatible.
        mutating func grantWaiting(_ keys: Set<Key>, now: Duration) -> [Action] {
            var actions: [Action] = []
            var candidates: [LockRequestID] = []
            var seen = Set<LockRequestID>()
            for key in keys {
                for id in entries[key]?.queue ?? [] where seen.insert(id).inserted { candidates.append(id) }
            }
            candidates.sort { a, b in
                let ra = requests[a], rb = requests[b]
                return (ra?.age ?? 0, a.raw) < (rb?.age ?? 0, b.raw)
            }
            for id in candidates {
                guard let request = requests[id], !isBlocked(request, id, queued: true) else { continue }
                withdraw(id)
                install(request, now: now)
                actions.append(.grant(id))
            }
            return actions
        }

        mutating func pruneLineages(now: Duration) {
            while lineageHead < lineageOrder.count {
                let id = lineageOrder[lineageHead]
                if let lineage = lineages[id], now - lineage.ended < limits.retryRetention { break }
                lineages[id] = nil
                lineageHead += 1
            }
            if lineageHead > 1024, lineageHead * 2 > lineageOrder.count {
                lineageOrder.removeFirst(lineageHead)
                lineageHead = 0
            }
        }
    }
}
