public import HearthCore
import Synchronization

/// What a Listen stream's state machine consumes, from the feed, the client and its loads.
enum ListenInput: Sendable {
    /// Changes of one commit that may affect the stream's targets.
    case changes(Timestamp, [DocumentChange])
    /// Every commit up to the time that concerns the stream has been delivered before this.
    case tick(Timestamp)
    /// A database was emptied.
    case cleared(Timestamp, String)
    /// The feed outran the consumer's budget; feed events were dropped since.
    case overflow
    case command(ListenCommand)
    case loaded(ListenLoadResult)
    case loadFailed(targetID: Int32, generation: Int, error: HearthError)
    /// The client closed its side of the stream.
    case clientFinished
    /// The client's side failed (a malformed message).
    case clientFailed(HearthError)
}

/// The inbox of one Listen stream: many producers (the feed under the hub's lock, the
/// client reader, loads), one consumer that takes everything pending at once.
///
/// Feed events count against a budget: a consumer that falls that far behind (its client is
/// not reading) gets its feed events dropped and one `.overflow` instead, and re-syncs its
/// targets from storage — so a slow client cannot make the server buffer without bound.
final class ListenSink: Sendable {
    struct State {
        var queue: [ListenInput] = []
        var feedEntries = 0
        var overflowed = false
        var waiter: CheckedContinuation<[ListenInput]?, Never>?
        var closed = false
    }

    let budget: Int
    let state = Mutex(State())

    init(budget: Int) {
        self.budget = budget
    }

    func enqueueFromFeed(_ input: ListenInput) {
        let cost: Int
        if case .changes(_, let changes) = input { cost = max(1, changes.count) } else { cost = 1 }
        let resume: (CheckedContinuation<[ListenInput]?, Never>, [ListenInput])? = state.withLock { s in
            if s.closed || s.overflowed { return nil }
            if s.feedEntries + cost > budget {
                s.overflowed = true
                s.queue.removeAll { $0.isFeedEvent }
                s.feedEntries = 0
                s.queue.append(.overflow)
            } else {
                s.feedEntries += cost
                s.queue.append(input)
            }
            return s.takeIfWaiting()
        }
        if let (c, inputs) = resume { c.resume(returning: inputs) }
    }

    /// Drops the feed events waiting and asks the stream to re-sync from storage (``ListenInput/overflow``),
    /// as when it outgrows its budget.
    func overflow() {
        let resume: (CheckedContinuation<[ListenInput]?, Never>, [ListenInput])? = state.withLock { s in
            if s.closed || s.overflowed { return nil }
            s.overflowed = true
            s.queue.removeAll { $0.isFeedEvent }
            s.feedEntries = 0
            s.queue.append(.overflow)
            return s.takeIfWaiting()
        }
        if let (c, inputs) = resume { c.resume(returning: inputs) }
    }

    func enqueue(_ input: ListenInput) {
        let resume: (CheckedContinuation<[ListenInput]?, Never>, [ListenInput])? = state.withLock { s in
            if s.closed { return nil }
            s.queue.append(input)
            return s.takeIfWaiting()
        }
        if let (c, inputs) = resume { c.resume(returning: inputs) }
    }

    /// Called by the consumer when it has handled `.overflow`: feed events are accepted again.
    func resumeFeed() {
        state.withLock { $0.overflowed = false }
    }

    /// Everything pending, waiting if there is nothing; nil once closed.
    func next() async -> [ListenInput]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[ListenInput]?, Never>) in
                let ready: [ListenInput]?? = state.withLock { s in
                    if s.closed { return .some(nil) }
                    if !s.queue.isEmpty { return .some(s.take()) }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            close()
        }
    }

    func close() {
        let waiter = state.withLock { s -> CheckedContinuation<[ListenInput]?, Never>? in
            s.closed = true
            s.queue = []
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }
}

extension ListenSink.State {
    mutating func take() -> [ListenInput] {
        let q = queue
        queue = []
        feedEntries = 0
        return q
    }

    mutating func takeIfWaiting() -> (CheckedContinuation<[ListenInput]?, Never>, [ListenInput])? {
        guard let w = waiter else { return nil }
        waiter = nil
        return (w, take())
    }
}

extension ListenInput {
    var isFeedEvent: Bool {
        switch self {
        case .changes, .tick, .cleared, .overflow: true
        default: false
        }
    }
}
