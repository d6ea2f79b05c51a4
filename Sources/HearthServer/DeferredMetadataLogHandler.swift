public import Logging

/// Keeps a log handler's own metadata and hands it to the handler only when something is logged.
/// swift-log's `StreamLogHandler` renders its metadata to text whenever it changes, and Hummingbird
/// sets a request id on every request's logger: about 1% of a REST create's server time went to
/// text that was almost never logged. The output is the same (explicit metadata wins, as in
/// `StreamLogHandler`'s own merge).
public struct DeferredMetadataLogHandler<Inner: LogHandler>: LogHandler {
    var inner: Inner
    public var metadata: Logger.Metadata = [:]

    public init(_ inner: Inner) { self.inner = inner }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard !metadata.isEmpty else { return inner.log(event: event) }
        var event = event
        event.metadata = metadata.merging(event.metadata ?? [:]) { $1 }
        inner.log(event: event)
    }
}
