import HearthCore
import Synchronization

/// Push ids: 20 characters of `-0-9A-Z_a-z` (ASCII order, so string order is time order):
/// 8 for the time in milliseconds, 12 random; within one millisecond the random part is
/// incremented so ids stay strictly increasing.
public final class PushIDGenerator: Sendable {
    static let alphabet: [Character] = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")

    struct State {
        var lastTime: Int64 = -1
        var random: [Int] = Array(repeating: 0, count: 12)
    }

    let state = Mutex(State())

    public init() {}

    public func next(now: Int64) -> String {
        state.withLock { state in
            if now > state.lastTime {
                state.lastTime = now
                let bytes = SecureRandom.bytes(12)
                state.random = bytes.map { Int($0) & 63 }
            } else {
                // Same (or an earlier) millisecond: keep the last time and count up.
                var index = 11
                while index >= 0 && state.random[index] == 63 {
                    state.random[index] = 0
                    index -= 1
                }
                if index >= 0 { state.random[index] += 1 } else { state.lastTime += 1 }
            }
            var time = state.lastTime
            var head = [Character](repeating: "-", count: 8)
            for position in stride(from: 7, through: 0, by: -1) {
                head[position] = Self.alphabet[Int(time % 64)]
                time /= 64
            }
            return String(head) + String(state.random.map { Self.alphabet[$0] })
        }
    }
}
