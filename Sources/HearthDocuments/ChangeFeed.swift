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

    /// `position`: the last commit already durable when the feed starts.
    public init(position: Timestamp) {
        state = Mutex(State(position: position))
        startPosition = position
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
        state.withLock { s in
            let time = clock.next()
            s.slots.append(Slot(time: time, outcome: nil))
            return time
        }
    }

    /// When no commit is in flight, moves the position to the clock's current time (every
    /// later commit gets a greater time) and tells the subscribers; so an idle stream's
    /// read times and resume tokens stay fresh.
    func advanceIfIdle(_ clock: CommitClock) {
        state.withLock { s in
            guard s.head == s.slots.count else { return }
            let now = clock.current()
            guard now > s.position else { return }
            s.position = now
            for subscriber in s.subscribers { subscriber.advance(to: now) }
        }
    }

    /// The commit at `batch.commitTime` is durable.
    func publish(_ batch: CommittedChanges) {
        settle(batch.commitTime, .published(batch))
    }

    /// The commit at `time` did not happen.
    func abandon(_ time: Timestamp) {
        settle(time, .abandoned)
    }

    private func settle(_ time: Timestamp, _ outcome: Outcome) {
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

extension DocumentEngine {
    /// The net change of each document a commit wrote (several writes to one document in a
    /// commit become one change), in the order the documents were first written.
    static func netChanges(_ order: [ResourcePath], before: [ResourcePath: Document?], after: [ResourcePath: Document?]) -> [DocumentChange] {
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
