import Synchronization

/// A tiny wrapper so `Counter` can hold a `Mutex` in a final class.
final class Mutex2<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ v: Value) { mutex = Mutex(v) }
    func withLock<R: Sendable>(_ body: (inout sending Value) -> sending R) -> R { mutex.withLock(body) }
}
