public import Foundation
public import HearthClientCore
import HearthClientAuth
import HearthFirestoreProto
import GRPCCore
import GRPCNIOTransportHTTP2
import Synchronization

/// How the client caches (the Apple SDK's `LocalCacheSettings`): `PersistentCacheSettings` (the
/// default: a SQLite file) or `MemoryCacheSettings`.
public protocol LocalCacheSettings: Sendable {}

/// The cache lives in a SQLite file and survives restarts; documents past `sizeBytes` that no
/// listener or pending write needs are collected, least recently used first.
public struct PersistentCacheSettings: LocalCacheSettings {
    /// 100 MiB by default; at least 1 MiB; `FirestoreCacheSizeUnlimited` turns collection off.
    public let sizeBytes: Int64
    public init() { sizeBytes = FirestoreSettings.defaultCacheSizeBytes }
    public init(sizeBytes: NSNumber) {
        let size = sizeBytes.int64Value
        precondition(size == FirestoreCacheSizeUnlimited || size >= 1_048_576, "Cache size must be at least 1 MiB or FirestoreCacheSizeUnlimited.")
        self.sizeBytes = size
    }
}

/// The cache lives in memory and is gone with the process (pending writes too).
public struct MemoryCacheSettings: LocalCacheSettings {
    public init() {}
}

/// `cacheSizeBytes` that disables garbage collection.
public let FirestoreCacheSizeUnlimited: Int64 = -1

/// Where a client reaches Firestore and how it caches: the Apple SDK's `FirestoreSettings`.
public final class FirestoreSettings: @unchecked Sendable {
    static let defaultCacheSizeBytes: Int64 = 100 * 1024 * 1024

    /// `host:port`; defaults to the app options' host and Firestore port.
    public var host: String
    public var isSSLEnabled: Bool
    /// `PersistentCacheSettings()` unless set.
    public var cacheSettings: any LocalCacheSettings = PersistentCacheSettings()
    /// Where the cache file goes (Hearth's addition; default: Application Support on Apple
    /// platforms, `$HEARTH_CLIENT_DATA_DIR` or `$XDG_DATA_HOME/hearth-client` elsewhere, then
    /// `firestore/<app>/<project>.<database>/`).
    public var cacheDirectory: URL?

    public init() {
        host = "firestore.googleapis.com"
        isSSLEnabled = true
    }

    public init(host: String, isSSLEnabled: Bool) {
        self.host = host
        self.isSSLEnabled = isSSLEnabled
    }

    /// Deprecated in the Apple SDK in favour of `cacheSettings`.
    public var isPersistenceEnabled: Bool {
        get { cacheSettings is PersistentCacheSettings }
        set { cacheSettings = newValue ? PersistentCacheSettings(sizeBytes: NSNumber(value: cacheSizeBytes)) : MemoryCacheSettings() }
    }

    /// Deprecated in the Apple SDK in favour of `PersistentCacheSettings(sizeBytes:)`.
    public var cacheSizeBytes: Int64 {
        get { (cacheSettings as? PersistentCacheSettings)?.sizeBytes ?? Self.defaultCacheSizeBytes }
        set { if cacheSettings is PersistentCacheSettings { cacheSettings = PersistentCacheSettings(sizeBytes: NSNumber(value: newValue)) } }
    }

    func copy() -> FirestoreSettings {
        let c = FirestoreSettings(host: host, isSSLEnabled: isSSLEnabled)
        c.cacheSettings = cacheSettings
        c.cacheDirectory = cacheDirectory
        return c
    }
}

/// Cloud Firestore's client: writes queue in the local cache and go out over the Write stream,
/// listeners run over Listen streams and the cache (latency compensation, offline), one-time reads
/// are `BatchGetDocuments`/`RunQuery` falling back to the cache offline (docs/client-sdk.md).
public final class Firestore: Sendable {
    public let app: HearthApp
    public let databaseID: String
    /// `projects/{p}/databases/{d}`.
    let databaseName: String
    let settingsState: Mutex<FirestoreSettings>
    let connection = Mutex<Connection?>(nil)
    let local = Mutex<Local?>(nil)

    /// The cache, the write queue and the Write stream's task, made at first use from the settings.
    final class Local: Sendable {
        let engine: LocalSyncEngine
        let writer: Task<Void, Never>
        init(engine: LocalSyncEngine, writer: Task<Void, Never>) {
            self.engine = engine
            self.writer = writer
        }
    }

    final class Connection: Sendable {
        let client: GRPCClient<HTTP2ClientTransport.Posix>
        let stub: Google_Firestore_V1_Firestore.Client<HTTP2ClientTransport.Posix>
        let runner: Task<Void, Never>
        init(client: GRPCClient<HTTP2ClientTransport.Posix>) {
            self.client = client
            stub = Google_Firestore_V1_Firestore.Client(wrapping: client)
            runner = Task { try? await client.runConnections() }
        }
    }

    public static func firestore() -> Firestore { firestore(app: HearthApp.requireDefault(for: "Firestore")) }

    public static func firestore(app: HearthApp) -> Firestore {
        app.component(Firestore.self) { Firestore(app: app, database: "(default)") }
    }

    /// A named database of the default app (one instance per app and database, so that one write
    /// queue drains each cache file).
    public static func firestore(database: String) -> Firestore {
        firestore(app: HearthApp.requireDefault(for: "Firestore"), database: database)
    }

    public static func firestore(app: HearthApp, database: String) -> Firestore {
        if database == "(default)" { return firestore(app: app) }
        let named = app.component(NamedDatabases.self) { NamedDatabases() }
        return named.instances.withLock { instances in
            if let existing = instances[database] { return existing }
            let made = Firestore(app: app, database: database)
            instances[database] = made
            return made
        }
    }

    final class NamedDatabases: Sendable {
        let instances = Mutex<[String: Firestore]>([:])
    }

    init(app: HearthApp, database: String) {
        self.app = app
        databaseID = database
        databaseName = "projects/\(app.options.projectID)/databases/\(database)"
        let host = app.options.host.contains(":") ? "[\(app.options.host)]" : app.options.host
        settingsState = Mutex(FirestoreSettings(host: "\(host):\(app.options.firestorePort)", isSSLEnabled: app.options.usesTLS))
    }

    /// Assign before the first request (later host changes apply to the next connection; the cache
    /// settings are read once, at first use).
    public var settings: FirestoreSettings {
        get { settingsState.withLock { $0.copy() } }
        set { settingsState.withLock { $0 = newValue.copy() } }
    }

    /// Points the client at an emulator (or a Hearth) at `host:port`, without TLS.
    public func useEmulator(withHost host: String, port: Int) {
        settingsState.withLock { s in
            s.host = "\(host):\(port)"
            s.isSSLEnabled = false
        }
    }

    /// The local engine, opened at first use: the cache file for this app and database (rebuilt
    /// if damaged), or memory.
    var engine: LocalSyncEngine {
        local.withLock { l in
            if let l { return l.engine }
            let settings = settingsState.withLock { $0.copy() }
            let uid = Auth.auth(app: app).currentUser?.uid ?? ""
            var engine: LocalSyncEngine?
            if let persistent = settings.cacheSettings as? PersistentCacheSettings {
                let file = (settings.cacheDirectory ?? Self.defaultCacheDirectory(app: app.name, database: databaseName))
                    .appendingPathComponent("cache.sqlite")
                // A file that opens but whose queue cannot be read is damaged: marked, the second
                // open rebuilds it.
                for _ in 0..<2 where engine == nil {
                    guard let cache = try? LocalCache(fileURL: file) else { break }
                    do {
                        engine = try LocalSyncEngine(cache: cache, databaseName: databaseName, uid: uid, sizeBytes: persistent.sizeBytes)
                    } catch {
                        cache.markDamaged("\(error)")
                    }
                }
            }
            if engine == nil {
                // Memory (asked for, or the file could not be made at all).
                guard let cache = try? LocalCache(fileURL: nil),
                    let made = try? LocalSyncEngine(cache: cache, databaseName: databaseName, uid: uid, sizeBytes: FirestoreCacheSizeUnlimited)
                else { preconditionFailure("SQLite could not open an in-memory database.") }
                engine = made
            }
            let made = engine!
            let stream = RemoteWriteStream(firestore: self, engine: made)
            l = Local(engine: made, writer: Task { await stream.run() })
            return made
        }
    }

    static func defaultCacheDirectory(app: String, database: String) -> URL {
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileAuthUserStore.defaultDirectory()
        #else
        let base = FileAuthUserStore.defaultDirectory()
        #endif
        // projects/<p>/databases/<d> → <p>.<d>
        let parts = database.split(separator: "/")
        let name = parts.count >= 4 ? "\(parts[1]).\(parts[3])" : database.replacingOccurrences(of: "/", with: "_")
        let safeApp = app.replacingOccurrences(of: "/", with: "_")
        return base.appendingPathComponent("firestore").appendingPathComponent(safeApp).appendingPathComponent(name)
    }

    /// Stops the streams: listeners show the cache (`isFromCache`), writes queue, reads come
    /// from the cache (`.server` reads fail) until `enableNetwork()`.
    public func disableNetwork() async throws { engine.setNetworkEnabled(false) }

    public func disableNetwork(completion: (@Sendable ((any Error)?) -> Void)?) {
        engine.setNetworkEnabled(false)
        engine.callbacks.async { completion?(nil) }
    }

    /// Starts the streams again after `disableNetwork()`: queued writes go out, listeners resume.
    public func enableNetwork() async throws { engine.setNetworkEnabled(true) }

    public func enableNetwork(completion: (@Sendable ((any Error)?) -> Void)?) {
        engine.setNetworkEnabled(true)
        engine.callbacks.async { completion?(nil) }
    }

    /// Resumes when every write queued so far is acknowledged or rejected by the server.
    public func waitForPendingWrites() async throws {
        await engine.waitForPendingWrites()
    }

    public func collection(_ collectionPath: String) -> CollectionReference {
        CollectionReference(firestore: self, path: Self.normalize(collectionPath))
    }

    public func document(_ documentPath: String) -> DocumentReference {
        DocumentReference(path: Self.normalize(documentPath), firestore: self)
    }

    public func collectionGroup(_ collectionID: String) -> Query {
        Query(firestore: self, parent: "", collectionID: collectionID, allDescendants: true)
    }

    public func batch() -> WriteBatch { WriteBatch(firestore: self) }

    /// Stops the Write stream and closes the connection (queued writes stay in the cache for the
    /// next instance); a later call opens a new one.
    public func terminate() async {
        let oldLocal = local.withLock { l -> Local? in
            defer { l = nil }
            return l
        }
        oldLocal?.writer.cancel()
        _ = await oldLocal?.writer.value
        // What Watch sent is in the file before another instance opens it.
        oldLocal?.engine.close()
        let old = connection.withLock { c -> Connection? in
            defer { c = nil }
            return c
        }
        old?.client.beginGracefulShutdown()
        _ = await old?.runner.value
    }

    static func normalize(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    // MARK: Calls

    func stub() throws -> Google_Firestore_V1_Firestore.Client<HTTP2ClientTransport.Posix> {
        try connection.withLock { c in
            if let c { return c.stub }
            let settings = settingsState.withLock { $0 }
            let (host, port) = Self.split(settings.host)
            let transport = try HTTP2ClientTransport.Posix(
                target: .dns(host: host, port: port), transportSecurity: settings.isSSLEnabled ? .tls : .plaintext,
                // Reconnect as the streams back off (1 s × 1.5 up to 60 s, ±50%), not gRPC's 2-minute ceiling.
                config: .defaults { $0.backoff = .init(initial: .seconds(1), max: .seconds(60), multiplier: 1.5, jitter: 0.5) })
            let made = Connection(client: GRPCClient(transport: transport))
            c = made
            return made.stub
        }
    }

    static func split(_ hostPort: String) -> (String, Int) {
        if hostPort.hasPrefix("["), let end = hostPort.firstIndex(of: "]") {
            let host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<end])
            return (host, Int(hostPort[hostPort.index(after: end)...].dropFirst()) ?? 443)
        }
        let parts = hostPort.split(separator: ":")
        return (String(parts.first ?? "127.0.0.1"), parts.count > 1 ? Int(parts[1]) ?? 443 : 443)
    }

    /// The signed-in user's ID token and the database routing header.
    func metadata() async throws -> Metadata {
        var md: Metadata = ["google-cloud-resource-prefix": "\(databaseName)"]
        if let user = Auth.auth(app: app).currentUser {
            md.addString("Bearer \(try await user.getIDToken())", forKey: "authorization")
        }
        return md
    }

    /// Runs a call, mapping gRPC failures to `FirestoreErrorDomain` errors.
    func call<T: Sendable>(_ body: (Google_Firestore_V1_Firestore.Client<HTTP2ClientTransport.Posix>, Metadata) async throws -> T) async throws -> T {
        do {
            return try await body(try stub(), try await metadata())
        } catch let error as RPCError {
            throw (FirestoreErrorCode(rawValue: error.code.rawValue) ?? .unknown).error(error.message)
        }
    }

    func documentName(_ path: String) -> String { "\(databaseName)/documents/\(path)" }

    /// Queues writes locally (listeners see them at once) and resumes when the server acknowledges them.
    func enqueue(_ writes: [Google_Firestore_V1_Write]) async throws {
        try await engine.enqueue(writes)
    }

    /// Queues writes locally and calls `completion` (on the callback queue) when the server answers.
    func enqueue(_ writes: [Google_Firestore_V1_Write], completion: (@Sendable ((any Error)?) -> Void)?) {
        engine.enqueue(writes) { error in completion?(error) }
    }

    /// One `Commit`, bypassing the queue (for transactions, which need the network).
    func commit(_ writes: [Google_Firestore_V1_Write]) async throws {
        var request = Google_Firestore_V1_CommitRequest()
        request.database = databaseName
        request.writes = writes
        _ = try await call { stub, md in try await stub.commit(request, metadata: md) }
    }

    var reader: UserDataReader { UserDataReader(databaseName: databaseName) }
    var writer: UserDataWriter { UserDataWriter(databaseName: databaseName, firestore: self) }
}
