import Synchronization

/// Tells subscribers which accounts were deleted, after the deletion committed: the hook the
/// lifecycle worker's `onAccountDeletion` rules run from (admin delete, `batchDelete`, a user
/// deleting themselves). Delivery is best effort within this process — a subscriber that
/// falls more than `bufferSize` batches behind loses the oldest, and deletions made by another
/// process (or before a restart) are not seen — so a subscriber keeps a reconciliation pass
/// as the safety net.
public final class AccountDeletionFeed: Sendable {
    /// The subscribers' continuations, by subscription number.
    private let subscribers = Mutex<(next: Int, continuations: [Int: AsyncStream<[String]>.Continuation])>((0, [:]))
    public let bufferSize: Int

    public init(bufferSize: Int = 1024) { self.bufferSize = bufferSize }

    /// A stream of batches of deleted uids, from now on; ends when the consumer stops iterating.
    public func subscribe() -> AsyncStream<[String]> {
        let (stream, continuation) = AsyncStream<[String]>.makeStream(bufferingPolicy: .bufferingNewest(bufferSize))
        let id = subscribers.withLock { state in
            state.next += 1
            state.continuations[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Called once a deletion has committed.
    func publish(_ uids: [String]) {
        guard !uids.isEmpty else { return }
        let continuations = subscribers.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(uids) }
    }

    /// How many subscribers are listening (tests).
    public var subscriberCount: Int { subscribers.withLock { $0.continuations.count } }
}
