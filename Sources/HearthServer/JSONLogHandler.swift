public import Logging
import HearthCore
import Foundation
import Synchronization

/// `--log-format json`: one JSON object per line on standard error —
/// `{"time": RFC 3339 UTC, "level", "label", "message", "source", …metadata}` — the metadata
/// (including `request_id` from ``HearthLogging/metadataProvider``) flattened beside the fixed keys.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String

    public init(label: String, metadataProvider: Logger.MetadataProvider? = HearthLogging.metadataProvider) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        let line = Self.line(
            time: Date(), level: event.level, label: label, message: "\(event.message)", source: event.source, metadata: merged)
        var bytes = line.serializedBytes()
        bytes.append(UInt8(ascii: "\n"))
        let data = Data(bytes)
        Self.output.withLock { _ in FileHandle.standardError.write(data) }
    }

    private static let output = Mutex(())

    /// One log line as JSON (fixed keys first, then the metadata sorted by key).
    static func line(
        time: Date, level: Logger.Level, label: String, message: String, source: String, metadata: Logger.Metadata
    ) -> JSON {
        let fixed: [(String, JSON)] = [
            ("time", .string(time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))),
            ("level", .string(level.rawValue)), ("label", .string(label)), ("message", .string(message)), ("source", .string(source)),
        ]
        let reserved = Set(fixed.map(\.0))
        let extra = metadata.filter { !reserved.contains($0.key) }.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) }
        return .object(fixed + extra)
    }

    static func json(_ value: Logger.Metadata.Value) -> JSON {
        switch value {
        case .string(let s): .string(s)
        case .stringConvertible(let c): .string(c.description)
        case .array(let a): .array(a.map(json))
        case .dictionary(let d): .object(d.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) })
        }
    }
}

/// The server's logging setup shared by both formats.
public enum HearthLogging {
    /// Adds `request_id` to every line logged while a request is served (``ObservedResponder``).
    public static let metadataProvider = Logger.MetadataProvider {
        guard let id = RequestID.current else { return [:] }
        return ["request_id": .string(id)]
    }
}
