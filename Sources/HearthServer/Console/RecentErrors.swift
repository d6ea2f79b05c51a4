public import Foundation
public import Logging
import Synchronization

/// The last errors the server logged, for the console's overview: a `LogHandler` that keeps
/// `error` and `critical` messages in a ring buffer and forwards nothing (pair it with the real
/// handler through `MultiplexLogHandler`).
public final class RecentErrors: Sendable {
    public struct Entry: Sendable {
        public var time: Date
        public var label: String
        public var message: String
        public var metadata: [String: String]
    }

    let capacity: Int
    private let entries = Mutex<[Entry]>([])

    public init(capacity: Int = 50) { self.capacity = capacity }

    public var all: [Entry] { entries.withLock { Array($0.reversed()) } }

    func record(_ entry: Entry) {
        entries.withLock { list in
            list.append(entry)
            if list.count > capacity { list.removeFirst(list.count - capacity) }
        }
    }

    /// A handler for `LoggingSystem.bootstrap` that records into this buffer.
    public func handler(label: String) -> some LogHandler { Handler(label: label, sink: self) }

    struct Handler: LogHandler {
        let label: String
        let sink: RecentErrors
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .error

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.level >= .error else { return }
            var merged: [String: String] = [:]
            for (k, v) in metadata { merged[k] = "\(v)" }
            for (k, v) in event.metadata ?? [:] { merged[k] = "\(v)" }
            sink.record(Entry(time: Date(), label: label, message: "\(event.message)", metadata: merged))
        }
    }
}
