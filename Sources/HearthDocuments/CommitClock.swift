public import HearthCore
import Foundation
import Synchronization

/// The one monotonic clock commit times come from: microsecond resolution, strictly
/// increasing, never behind the last commit time found in storage.
public final class CommitClock: Sendable {
    private let last: Mutex<Int64>
    private let now: @Sendable () -> Int64

    public init(after lastCommit: Timestamp? = nil, now: @escaping @Sendable () -> Int64 = CommitClock.systemMicros) {
        self.last = Mutex(lastCommit?.microseconds ?? 0)
        self.now = now
    }

    public static let systemMicros: @Sendable () -> Int64 = {
        Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down))
    }

    /// A new commit time, greater than every one given before.
    public func next() -> Timestamp {
        let t = now()
        return Timestamp(microseconds: last.withLock { last in
            last = max(t, last + 1)
            return last
        })
    }

    /// The current time as a read time (not greater than the next commit time).
    public func current() -> Timestamp {
        let t = now()
        // Advancing `last` guarantees every later commit time is greater than this read time.
        return Timestamp(microseconds: last.withLock { last in
            last = max(t, last)
            return last
        })
    }

    public func observe(_ time: Timestamp) {
        last.withLock { $0 = max($0, time.microseconds) }
    }
}
