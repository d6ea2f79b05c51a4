import Foundation
public import HearthClientCore
import HearthClientAuth
import HearthFirestoreProto
import GRPCCore
import GRPCNIOTransportHTTP2
import Synchronization

/// Where a client reaches Firestore: the Apple SDK's `FirestoreSettings`.
public struct FirestoreSettings: Sendable {
    /// `host:port`; defaults to the app options' host and Firestore port.
    public var host: String
    public var isSSLEnabled: Bool
    public init(host: String, isSSLEnabled: Bool) {
        self.host = host
        self.isSSLEnabled = isSSLEnabled
    }
}

/// Cloud Firestore's client. Online for now: writes go out as `Commit`, reads as
/// `BatchGetDocuments` and `RunQuery` over gRPC (HTTP/2). The Listen/Write streams, listeners and
/// the offline cache come next (docs/client-sdk.md).
public final class Firestore: Sendable {
    public let app: HearthApp
    public let databaseID: String
    /// `projects/{p}/databases/{d}`.
    let databaseName: String
    let settingsState: Mutex<FirestoreSettings>
    let connection = Mutex<Connection?>(nil)

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

    /// A named database of the default app (not cached per name yet: keep the instance).
    public static func firestore(database: String) -> Firestore {
        let app = HearthApp.requireDefault(for: "Firestore")
        return database == "(default)" ? firestore(app: app) : Firestore(app: app, database: database)
    }

    init(app: HearthApp, database: String) {
        self.app = app
        databaseID = database
        databaseName = "projects/\(app.options.projectID)/databases/\(database)"
        let host = app.options.host.contains(":") ? "[\(app.options.host)]" : app.options.host
        settingsState = Mutex(FirestoreSettings(host: "\(host):\(app.options.firestorePort)", isSSLEnabled: app.options.usesTLS))
    }

    /// Assign before the first request (later assignments apply to the next connection).
    public var settings: FirestoreSettings {
        get { settingsState.withLock { $0 } }
        set { settingsState.withLock { $0 = newValue } }
    }

    /// Points the client at an emulator (or a Hearth) at `host:port`, without TLS.
    public func useEmulator(withHost host: String, port: Int) {
        settings = FirestoreSettings(host: "\(host):\(port)", isSSLEnabled: false)
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

    /// Closes the connection; a later call opens a new one.
    public func terminate() async {
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
                target: .dns(host: host, port: port), transportSecurity: settings.isSSLEnabled ? .tls : .plaintext)
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

    func commit(_ writes: [Google_Firestore_V1_Write]) async throws {
        var request = Google_Firestore_V1_CommitRequest()
        request.database = databaseName
        request.writes = writes
        _ = try await call { stub, md in try await stub.commit(request, metadata: md) }
    }

    var reader: UserDataReader { UserDataReader(databaseName: databaseName) }
    var writer: UserDataWriter { UserDataWriter(databaseName: databaseName, firestore: self) }
}
