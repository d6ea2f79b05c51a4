public import Foundation
public import HearthClientCore
import Logging
import Synchronization

/// The Firebase Realtime Database's client (`FIRDatabase`): references into one database,
/// reached over the WebSocket protocol (v5) the Firebase SDKs speak, on Hearth's database port.
///
/// ```swift
/// let ref = Database.database().reference(withPath: "messages")
/// ref.childByAutoId().setValue(["text": "hi"])
/// ref.queryOrdered(byChild: "sentAt").queryLimited(toLast: 20).observe(.childAdded) { snapshot in … }
/// ```
///
/// Data is cached in memory for as long as it is listened to; ``isPersistenceEnabled`` is off
/// (there is no disk cache), and writes made while offline wait in memory, in order, until
/// the connection is back.
public final class Database: Sendable {
    public let app: HearthApp
    /// The database URL (`https://<ns>.firebaseio.com` style, or a Hearth URL with `?ns=`).
    let url: String
    /// The namespace (database name) the URL names.
    let namespace: String

    struct Settings {
        var emulator: (host: String, port: Int)?
        var persistenceEnabled = false
        var persistenceCacheSizeBytes: UInt = 10 * 1024 * 1024
        var callbackQueue: DispatchQueue
        var repo: DatabaseRepo?
    }

    let settings: Mutex<Settings>

    static let logger = Logger(label: "hearth.client.database")

    /// The default app's default database.
    public static func database() -> Database { database(app: HearthApp.requireDefault(for: "Database")) }

    /// The default app's database at `url`.
    public static func database(url: String) -> Database { database(app: HearthApp.requireDefault(for: "Database"), url: url) }

    /// The app's default database: the options' `databaseURL`, else `<project>-default-rtdb`.
    public static func database(app: HearthApp) -> Database {
        database(app: app, url: app.options.databaseURL ?? "https://\(app.options.projectID)-default-rtdb.firebaseio.com")
    }

    /// One instance per app and URL.
    public static func database(app: HearthApp, url: String) -> Database {
        app.component(DatabaseRegistry.self) { DatabaseRegistry() }.instances.withLock { instances in
            if let existing = instances[url] { return existing }
            let made = Database(app: app, url: url)
            instances[url] = made
            return made
        }
    }

    init(app: HearthApp, url: String) {
        self.app = app
        self.url = url
        namespace = Self.namespace(of: url)
        #if canImport(Darwin)
        let queue = DispatchQueue.main
        #else
        let queue = DispatchQueue(label: "hearth.client.database.callbacks")
        #endif
        settings = Mutex(Settings(callbackQueue: queue))
    }

    /// `?ns=` wins; else the host's first label when it has three or more; else the whole host.
    static func namespace(of url: String) -> String {
        guard let components = URLComponents(string: url) else { return url }
        if let ns = components.queryItems?.first(where: { $0.name == "ns" })?.value, !ns.isEmpty { return ns }
        let host = (components.host ?? "").lowercased()
        let labels = host.split(separator: ".")
        return labels.count >= 3 ? String(labels[0]) : host
    }

    /// The client state, made on first use (settings are fixed from then on).
    package var repo: DatabaseRepo {
        settings.withLock { s in
            if let repo = s.repo { return repo }
            let repo = DatabaseRepo(app: app, socketURL: socketURLLocked(s), callbackQueue: s.callbackQueue)
            s.repo = repo
            return repo
        }
    }

    func socketURLLocked(_ s: Settings) -> String {
        if let emulator = s.emulator {
            let host = emulator.host.contains(":") && !emulator.host.hasPrefix("[") ? "[\(emulator.host)]" : emulator.host
            return "ws://\(host):\(emulator.port)/.ws?v=5&ns=\(namespace)"
        }
        return Self.socketURL(url: url, namespace: namespace, options: app.options)
    }

    /// `ws://host:port/.ws?v=5&ns=<ns>`: the URL's own host when it is not one of Google's
    /// (TLS as the SDKs decide it: `https`/`wss`, or no port), else the options' host and
    /// database port.
    static func socketURL(url: String, namespace: String, options: HearthOptions) -> String {
        var host = options.host
        var port = options.databasePort
        var secure = options.usesTLS
        if let components = URLComponents(string: url), let urlHost = components.host,
            !urlHost.hasSuffix("firebaseio.com"), !urlHost.hasSuffix("firebasedatabase.app"), !urlHost.hasSuffix("firebaseio-demo.com")
        {
            host = urlHost
            secure = components.scheme == "https" || components.scheme == "wss" || components.port == nil
            port = components.port ?? (secure ? 443 : 80)
        }
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(secure ? "wss" : "ws")://\(shownHost):\(port)/.ws?v=5&ns=\(namespace)"
    }

    func requireUnused(_ what: String) {
        let used = settings.withLock { $0.repo != nil }
        precondition(!used, "Database: \(what) must be set before the database is used.")
    }

    // MARK: Settings

    /// Connects to `host:port` without TLS (`useEmulator(withHost:port:)`); before first use.
    public func useEmulator(withHost host: String, port: Int) {
        requireUnused("useEmulator(withHost:port:)")
        settings.withLock { $0.emulator = (host, port) }
    }

    /// Off, and stays off: this SDK keeps no disk cache (cached data lives while it is listened
    /// to; writes made offline wait in memory). Setting it to true logs a warning.
    public var isPersistenceEnabled: Bool {
        get { settings.withLock { $0.persistenceEnabled } }
        set {
            if newValue {
                Self.logger.warning("Database.isPersistenceEnabled: this SDK has no disk persistence; offline writes are kept in memory only")
            }
        }
    }

    /// Kept for source compatibility; there is no disk cache to bound.
    public var persistenceCacheSizeBytes: UInt {
        get { settings.withLock { $0.persistenceCacheSizeBytes } }
        set { settings.withLock { $0.persistenceCacheSizeBytes = newValue } }
    }

    /// Where observers and completion blocks run (the main queue on Apple platforms, a serial
    /// queue of the SDK's elsewhere). Set before first use.
    public var callbackQueue: DispatchQueue {
        get { settings.withLock { $0.callbackQueue } }
        set {
            requireUnused("callbackQueue")
            settings.withLock { $0.callbackQueue = newValue }
        }
    }

    public static var sdkVersion: String { "11.0.0-hearth" }

    // MARK: References and connection

    public func reference() -> DatabaseReference { DatabaseReference(database: self, path: []) }

    public func reference(withPath path: String) -> DatabaseReference {
        DatabaseReference(database: self, path: DatabaseValues.segments(path))
    }

    /// A reference from a full URL of this database (`https://<ns>.firebaseio.com/a/b`).
    public func reference(fromURL url: String) -> DatabaseReference {
        reference(withPath: URLComponents(string: url)?.path ?? "")
    }

    /// Reconnects after `goOffline()`.
    public func goOnline() { repo.goOnline() }

    /// Closes the connection (the server runs this client's onDisconnect operations); writes
    /// wait in memory until `goOnline()`.
    public func goOffline() { repo.stop() }
}

/// The databases of one app, by URL.
final class DatabaseRegistry: Sendable {
    let instances = Mutex<[String: Database]>([:])
}
