public import HearthCore
import Synchronization

/// What one durable commit changed, as the change feed delivers it.
public struct CommittedChanges: Sendable {
    /// The database id (`(default)`, or a named database).
    public var database: String
    public var commitTime: Timestamp
    /// One entry per document the commit changed: its state before the commit and after it
    /// (nil: missing / deleted). No-op writes are left out.
    public var changes: [DocumentChange]
    /// The whole database was emptied (the emulator's clear endpoint); `changes` is empty.
    public var cleared: Bool

    public init(database: String, commitTime: Timestamp, changes: [DocumentChange], cleared: Bool = false) {
        self.database = database
        self.commitTime = commitTime
        self.changes = changes
        self.cleared = cleared
    }
}

/// Receives the change feed. `deliver` is called in commit-time order, once per commit, with
/// the feed's lock held: it must only hand the batch on (enqueue), never wait.
public protocol ChangeFeedSubscriber: Sendable {
    func deliver(_ batch: CommittedChanges)
    /// No commit is in flight and none will get a time at or before `time`: every commit up
    /// to it has been delivered.
    func advance(to time: Timestamp)
    /// The commits up to `time` cannot be delivered one by one (an externally fed feed further
    /// behind than the store's history): whatever depends on them re-synchronizes from storage;
    /// none after `time` will be missed. By default, an ``advance(to:)``.
    func resynchronize(at time: Timestamp)
}

extension ChangeFeedSubscriber {
    public func resynchronize(at time: Timestamp) { advance(to: time) }
}

/// The engine's change feed: every durable commit, exactly once, in commit-time order.
///
/// A commit takes its time before it is planned (transforms and the rules' `request.time`
/// use it), holding exclusive locks on the documents it writes; commits of other documents
/// may become durable in another order, and callers learn that their commit is durable in any
/// order. A commit therefore reserves its time (``reserve(_:)``), and after the store answers
/// it either publishes its changes or abandons the reservation (planning, the rules or the
/// store refused it, or the group commit failed). The feed hands batches on only when every earlier reservation is settled, so
/// subscribers see commits in order with no gaps and nothing that was not made durable.
///
/// **Fed externally** (`external`: several servers share one store, docs/postgres.md "Several
/// replicas"): the engine's reservations, publications and idle advances do nothing, and the
/// feed's only source is the store's commit log, read by a service of the backend (PostgreSQL's
/// `PostgresCommitFeed`), which calls ``deliver(_:)`` in commit-time order and ``advance(to:)``
/// — one path for every commit, this server's own included.
public final class ChangeFeed: Sendable {
    struct Slot {
        var time: Timestamp
        /// nil while the commit is in flight.
        var outcome: Outcome?
    }

    enum Outcome {
        case published(CommittedChanges)
        case abandoned
    }

    struct State {
        /// Reservations in commit-time order (times are reserved in increasing order).
        var slots: [Slot] = []
        var head = 0
        var position: Timestamp
        var subscribers: [any ChangeFeedSubscriber] = []
    }

    let state: Mutex<State>
    /// The last commit that was durable when the feed started.
    let startPosition: Timestamp
    /// Fed by ``deliver(_:)`` and ``advance(to:)`` alone (see above).
    public let external: Bool

    /// `position`: the last commit already durable when the feed starts.
    public init(position: Timestamp, external: Bool = false) {
        state = Mutex(State(position: position))
        startPosition = position
        self.external = external
    }

    /// The time of the last commit handed to subscribers.
    public var position: Timestamp { state.withLock { $0.position } }

    public func subscribe(_ subscriber: any ChangeFeedSubscriber) {
        state.withLock { $0.subscribers.append(subscriber) }
    }

    /// Takes a commit time from `clock` and reserves it, before the commit is planned.
    /// Both happen under the feed's lock, so ``advanceIfIdle(_:)`` never passes a commit
    /// whose time was taken but not yet reserved.
    func reserve(_ clock: CommitClock) -> Timestamp {
        // Fed externally: the commit reaches the feed through the store's log, in the order the
        // store assigned times; the reservation is only the proposal.
        if external { return clock.next() }
        return state.withLock { s in
            let time = clock.next()
            s.slots.append(Slot(time: time, outcome: nil))
            return time
        }
    }

    /// When no commit is in flight, moves the position to the clock's current time (every
    /// later commit gets a greater time) and tells the subscribers; so an idle stream's
    /// read times and resume tokens stay fresh.
    func advanceIfIdle(_ clock: CommitClock) {
        // Fed externally, only the shared store knows no commit is in flight anywhere.
        if external { return }
        state.withLock { s in
            guard s.head == s.slots.count else { return }
            let now = clock.current()
            guard now > s.position else { return }
            s.position = now
            for subscriber in s.subscribers { subscriber.advance(to: now) }
        }
    }

    /// The commit that reserved `reserved` is durable, at `batch.commitTime` (the time its store
    /// assigned: the reserved one, except where several engines share the store).
    func publish(_ batch: CommittedChanges, reserved: Timestamp) {
        settle(reserved, .published(batch))
    }

    /// The commit at `batch.commitTime`, the time it reserved, is durable.
    func publish(_ batch: CommittedChanges) {
        publish(batch, reserved: batch.commitTime)
    }

    /// The commit at `time` did not happen.
    func abandon(_ time: Timestamp) {
        settle(time, .abandoned)
    }

    private func settle(_ time: Timestamp, _ outcome: Outcome) {
        if external { return }
        state.withLock { s in
            // Reservations are few (the commits in flight): a linear search from the head is cheap.
            guard let i = s.slots[s.head...].firstIndex(where: { $0.time == time }) else { return }
            s.slots[i].outcome = outcome
            while s.head < s.slots.count, let ready = s.slots[s.head].outcome {
                s.head += 1
                guard case .published(let batch) = ready else { continue }
                s.position = batch.commitTime
                for subscriber in s.subscribers { subscriber.deliver(batch) }
            }
            if s.head == s.slots.count {
                s.slots.removeAll(keepingCapacity: true)
                s.head = 0
            } else if s.head > 1024 {
                s.slots.removeFirst(s.head)
                s.head = 0
            }
        }
    }
}

extension ChangeFeed {
    /// Fed externally: the commit at `batch.commitTime` is durable, and every commit before it
    /// was delivered. Called in commit-time order; a time at or below the position (delivered
    /// already) is ignored, so each commit reaches subscribers once.
    public func deliver(_ batch: CommittedChanges) {
        precondition(external, "deliver(_:) feeds an externally fed ChangeFeed only")
        state.withLock { s in
            guard batch.commitTime > s.position else { return }
            s.position = batch.commitTime
            for subscriber in s.subscribers { subscriber.deliver(batch) }
        }
    }

    /// Fed externally: the commits up to `time` that were not delivered cannot be (the feed's
    /// source no longer holds them, e.g. it fell further behind than the store's history);
    /// subscribers re-synchronize from storage (Listen streams: every target is RESET).
    public func resynchronize(at time: Timestamp) {
        precondition(external, "resynchronize(at:) feeds an externally fed ChangeFeed only")
        state.withLock { s in
            guard time > s.position else { return }
            s.position = time
            for subscriber in s.subscribers { subscriber.resynchronize(at: time) }
        }
    }

    /// Fed externally: no commit will get a time at or before `time` and every commit up to
    /// it was delivered.
    public func advance(to time: Timestamp) {
        precondition(external, "advance(to:) feeds an externally fed ChangeFeed only")
        state.withLock { s in
            guard time > s.position else { return }
            s.position = time
            for subscriber in s.subscribers { subscriber.advance(to: time) }
        }
    }
}

extension DocumentEngine {
    /// The net change of each document a commit wrote (several writes to one document in a
    /// commit become one change), in the order the documents were first written.
    package static func netChanges(_ order: [ResourcePath], before: [ResourcePath: Document?], after: [ResourcePath: Document?]) -> [DocumentChange] {
        var out: [DocumentChange] = []
        var seen = Set<ResourcePath>()
        for path in order where seen.insert(path).inserted {
            let b = before[path] ?? nil
            let a = after[path] ?? nil
            if b == nil && a == nil { continue }
            if let b, let a, b.updateTime == a.updateTime { continue }
            out.append(DocumentChange(path: path, before: b, after: a, index: out.count))
        }
        return out
    }
}
