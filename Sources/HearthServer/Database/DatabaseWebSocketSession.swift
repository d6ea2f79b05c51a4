import HearthAuth
import HearthJWT
import HearthCore
import HearthDatabase
import HummingbirdWebSocket
import NIOWebSocket
import Logging
import Foundation
import Synchronization

/// What a socket's loop reacts to, in order.
enum DatabaseSocketEvent: Sendable {
    /// A text frame from the client.
    case frame(String)
    /// The client closed the socket (or it failed).
    case closed
    /// Changes are waiting in the ``DatabaseSocketFeedQueue``.
    case wake
    /// A timer for the expiry of an ID token fired (the loop checks the current one).
    case authTimer
}

/// Hands the change feed to one socket without waiting: changes queue in commit order and
/// the loop is woken once per batch. A socket that falls more than ``limit`` changes behind
/// is closed (its client reconnects and listens afresh) — never a gap in what it was sent.
final class DatabaseSocketFeedQueue: DatabaseChangeSubscriber {
    struct State {
        var changes: [DatabaseChange] = []
        var overflow = false
        var wakePending = false
    }

    static let limit = 10_000
    let state = Mutex(State())
    let continuation: AsyncStream<DatabaseSocketEvent>.Continuation

    init(_ continuation: AsyncStream<DatabaseSocketEvent>.Continuation) { self.continuation = continuation }

    func deliver(_ change: DatabaseChange) {
        let wake = state.withLock { s -> Bool in
            if s.changes.count >= Self.limit {
                s.overflow = true
            } else {
                s.changes.append(change)
            }
            defer { s.wakePending = true }
            return !s.wakePending
        }
        if wake { continuation.yield(.wake) }
    }

    func take() -> (changes: [DatabaseChange], overflow: Bool) {
        state.withLock { s in
            defer {
                s.changes = []
                s.wakePending = false
            }
            return (s.changes, s.overflow)
        }
    }
}

/// What recent changes look like to the listeners of one location, rendered once and shared by
/// every listener of that location: a write seen by 1,000 listeners is serialized once, not
/// 1,000 times. The WebSocket sessions keep their `d` pushes here (``DatabasePushCache``), the
/// event streams their SSE event bytes (``DatabaseRESTResponder/events``). Two listeners that
/// miss at once both render; the bytes are the same, so either copy is kept.
final class DatabaseRenderCache<Value: Sendable>: Sendable {
    struct Key: Hashable {
        var namespace: String
        var revision: Int64
        var location: DatabasePath
    }

    let capacity: Int
    let render: @Sendable (DatabaseChange, DatabasePath) -> Value
    let entries = Mutex<(map: [Key: Value], order: [Key])>(([:], []))

    init(capacity: Int = 256, _ render: @escaping @Sendable (DatabaseChange, DatabasePath) -> Value) {
        self.capacity = capacity
        self.render = render
    }

    func rendering(_ change: DatabaseChange, at location: DatabasePath) -> Value {
        let key = Key(namespace: change.namespace, revision: change.revision, location: location)
        if let cached = entries.withLock({ $0.map[key] }) { return cached }
        let value = render(change, location)
        entries.withLock { e in
            guard e.map.updateValue(value, forKey: key) == nil else { return }
            e.order.append(key)
            if e.order.count > capacity { e.map[e.order.removeFirst()] = nil }
        }
        return value
    }
}

/// The WebSocket `d` push of a change for one location (none when it does not touch it).
typealias DatabasePushCache = DatabaseRenderCache<String?>

extension DatabasePushCache {
    convenience init() { self.init { change, location in DatabaseWebSocketSession.push(change, at: location) } }
}

/// One client connection of the Realtime Database protocol (v5). Everything the connection
/// does happens on one loop, in the order the client sent it and the database committed it:
/// requests, the pushes for its listens, auth expiry. Pushes caused by a write reach the
/// writer's connection before the write's acknowledgement.
final class DatabaseWebSocketSession {
    struct ListenKey: Hashable {
        var path: DatabasePath
        /// The query object's JSON, or `default`.
        var query: String
    }

    struct Listen {
        var path: DatabasePath
        var query: DatabaseWireQuery?
        var tag: Int64?
        /// The revision of the snapshot sent; earlier changes are already in it.
        var revision: Int64
        /// What a query listen last sent.
        var shown: DatabaseNode
    }

    enum DisconnectKind { case set, merge }

    struct DisconnectOperation {
        var kind: DisconnectKind
        var path: DatabasePath
        var value: JSON
        var auth: DatabaseAuthContext
    }

    /// Closes the connection after the current message.
    struct Close: Error {
        var code: WebSocketErrorCode
        var reason: String
    }

    let engine: DatabaseEngine
    let authenticator: Authenticator
    let namespace: String
    let logger: Logger
    let outbound: WebSocketOutboundWriter
    let queue: DatabaseSocketFeedQueue
    let pushes: DatabasePushCache

    var identity = Identity.unauthenticated
    var auth = DatabaseAuthContext.unauthenticated
    /// When the current ID token expires.
    var authExpiry: Date?
    var listens: [ListenKey: Listen] = [:]
    var onDisconnect: [DisconnectOperation] = []
    /// App Check on this connection (the `appcheck` message): true once a token passed the
    /// `database` gate, false once the gate refused the connection's lack of one; nil before
    /// the first data request. A token is checked once per connection, as Firebase does, so a
    /// limited-use token is consumed once.
    var appCheckPassed: Bool?
    var reassembler = DatabaseWebSocketFrames.Reassembler()

    init(
        engine: DatabaseEngine, authenticator: Authenticator, namespace: String, logger: Logger, outbound: WebSocketOutboundWriter,
        queue: DatabaseSocketFeedQueue, pushes: DatabasePushCache
    ) {
        self.pushes = pushes
        self.engine = engine
        self.authenticator = authenticator
        self.namespace = namespace
        self.logger = logger
        self.outbound = outbound
        self.queue = queue
    }

    // MARK: Sending

    func send(_ message: String) async throws {
        for frame in DatabaseWebSocketFrames.split(message) { try await outbound.write(.text(frame)) }
    }

    func respond(_ id: Int64, _ status: String = "ok", _ data: JSON = .string("")) async throws {
        try await drain()
        try await send(DatabaseWebSocketOutbound.response(id, status: status, data: data))
    }

    // MARK: Frames

    /// Handles one text frame; returns the expiry of the ID token an `auth` set, to schedule.
    func receive(_ frame: String) async throws -> Date? {
        let text: String?
        do { text = try reassembler.receive(frame) } catch {
            throw Close(code: error.reason == .tooBig ? .messageTooLarge : .protocolError, reason: error.message)
        }
        guard let text else { return nil }
        let message: DatabaseWebSocketInbound
        do { message = try DatabaseWebSocketInbound.parse(text) } catch {
            throw Close(code: .protocolError, reason: error.message)
        }
        switch message {
        case .control(let type, _):
            // The JS SDK's health ping; other control messages from clients mean nothing here.
            if type == "p" { try await send(DatabaseWebSocketOutbound.control("o", .object([]))) }
            return nil
        case .request(let id, let action, let body):
            do {
                return try await handle(id, action, body, size: text.utf8.count)
            } catch let error as DatabaseError {
                if error.reason == .unavailable { logger.error("database socket request failed", metadata: ["error": "\(error)"]) }
                try await respond(id, Self.status(error.reason), .string(error.message))
            } catch let error as Close {
                throw error
            } catch let error as CancellationError {
                throw error
            } catch {
                // The socket failed while answering, or the store did: report, keep the server.
                logger.error("database socket request failed", metadata: ["action": "\(action)", "error": "\(error)"])
                try await respond(id, "failure", .string("Internal error."))
            }
            return nil
        }
    }

    /// One table from engine reason to protocol status.
    static func status(_ reason: DatabaseError.Reason) -> String {
        switch reason {
        case .permissionDenied: "permission_denied"
        case .writeTooBig: "too_big"
        case .unauthenticated: "invalid_token"
        case .unavailable: "unavailable"
        case .invalidPath, .invalidData, .invalidQuery, .invalidRules, .etagMismatch: "failure"
        }
    }

    static func path(_ body: JSON) throws(DatabaseError) -> DatabasePath {
        guard let text = body["p"]?.stringValue else { throw DatabaseError.invalidPath("the request has no path \"p\".") }
        return try DatabasePath.parse(text)
    }

    /// A request's query object `q` (absent or `{}`: none) and its parsed form.
    static func query(_ body: JSON) throws(DatabaseError) -> (raw: JSON?, parsed: DatabaseWireQuery?) {
        guard let raw = body["q"], !(raw.objectValue?.isEmpty ?? false), !raw.isNull else { return (nil, nil) }
        return (raw, try DatabaseWireQuery.parse(raw))
    }

    /// The largest message carrying one write (Firebase's 16 MB for a write from an SDK).
    static let maxWriteMessageBytes = 16 * 1024 * 1024

    func handle(_ id: Int64, _ action: String, _ body: JSON, size: Int) async throws -> Date? {
        if ["p", "m", "o", "om"].contains(action), size > Self.maxWriteMessageBytes { throw DatabaseError.writeTooBig }
        if ["q", "p", "m", "o", "om", "g"].contains(action) { try await requireAppCheck() }
        switch action {
        case "s":
            try await respond(id)
        case "auth", "gauth":
            return try await authenticate(id, body)
        case "unauth":
            setAuth(.unauthenticated, .unauthenticated)
            try await recheckListens()
            try await respond(id, "ok", .string("unauthenticated"))
        case "appcheck":
            guard let token = body["token"]?.stringValue else {
                try await respond(id, "invalid_token", .string("Invalid appcheck token"))
                return nil
            }
            do {
                try await authenticator.checkAppCheck("database", token: token, identity: identity)
                appCheckPassed = true
                try await respond(id, "ok", .object([]))
            } catch {
                appCheckPassed = false
                try await respond(id, "invalid_token", .string("Invalid appcheck token"))
            }
        case "unappcheck", "unappeck":
            appCheckPassed = nil
            try await respond(id)
        case "q":
            try await listen(id, body)
        case "n":
            let path = try Self.path(body)
            let raw = body["q"].flatMap { $0.objectValue?.isEmpty == false ? $0 : nil }
            listens[ListenKey(path: path, query: raw?.serialized() ?? "default")] = nil
            try await respond(id)
        case "p":
            try await put(id, body)
        case "m":
            let path = try Self.path(body)
            guard let members = body["d"]?.objectValue else { throw DatabaseError.invalidData("a merge must carry an object \"d\".") }
            _ = try await engine.update(namespace: namespace, path: path, values: members, auth: auth)
            try await respond(id)
        case "o", "om":
            let path = try Self.path(body)
            guard let value = body["d"] else { throw DatabaseError.invalidData("onDisconnect needs data \"d\".") }
            let kind: DisconnectKind = action == "o" ? .set : .merge
            // Checked now (data and rules, nothing written) and again when it runs.
            let dryRun = DatabaseEngine.WriteOptions(dryRun: true)
            if kind == .set {
                _ = try await engine.set(namespace: namespace, path: path, value: value, auth: auth, options: dryRun)
            } else {
                guard let members = value.objectValue else { throw DatabaseError.invalidData("an onDisconnect merge must carry an object.") }
                _ = try await engine.update(namespace: namespace, path: path, values: members, auth: auth, options: dryRun)
            }
            onDisconnect.append(DisconnectOperation(kind: kind, path: path, value: value, auth: auth))
            try await respond(id)
        case "oc":
            let path = try Self.path(body)
            onDisconnect.removeAll { $0.path.isWithin(path) }
            try await respond(id)
        case "g":
            let path = try Self.path(body)
            let node = try await read(path, try Self.query(body).parsed)
            try await respond(id, "ok", node.exportJSON())
        default:
            try await respond(id, "failure", .string("Unsupported action: \(action)"))
        }
        return nil
    }

    // MARK: Auth

    /// Data requests pass the `database` App Check gate: off or monitor (counted once), an admin,
    /// or a token accepted by `appcheck` let them through; in enforce mode anything else is
    /// `permission_denied`, as for REST.
    func requireAppCheck() async throws {
        if appCheckPassed == true { return }
        if appCheckPassed == nil {
            appCheckPassed = await authenticator.appCheckRefusal("database", token: nil, isAdmin: identity.isAdmin) == nil
        }
        if appCheckPassed == false { throw DatabaseError(.permissionDenied, "Permission denied (App Check)") }
    }

    func setAuth(_ identity: Identity, _ auth: DatabaseAuthContext, expiry: Date? = nil) {
        if identity.isAdmin != self.identity.isAdmin, appCheckPassed == false { appCheckPassed = nil }
        self.identity = identity
        self.auth = auth
        self.authExpiry = expiry
    }

    func authenticate(_ id: Int64, _ body: JSON) async throws -> Date? {
        guard let credential = body["cred"]?.stringValue, !credential.isEmpty, !credential.contains(where: \.isWhitespace) else {
            try await respond(id, "invalid_token", .string("Could not parse auth token."))
            return nil
        }
        // A token past its `exp` is `expired_token` (the SDKs then force a refresh), anything
        // else that does not verify `invalid_token`. The unverified claims read here only
        // choose between the two refusals.
        if let claims = JWT.parse(credential)?.payload, let expiry = DatabaseRESTResponder.expiry(claims), expiry.timeIntervalSinceNow <= 0 {
            return try await refuseAuth(id, "expired_token", "Auth token is expired.")
        }
        let identity: Identity
        do { identity = try await authenticator.identify(authorization: "Bearer \(credential)") } catch {
            return try await refuseAuth(id, "invalid_token", "Could not parse auth token.")
        }
        var context: DatabaseAuthContext
        var expiry: Date?
        switch identity.kind {
        case .admin:
            context = .admin
            // firebase-admin's `databaseAuthVariableOverride`: judged as that auth (or nobody).
            if let override = body["authvar"] {
                context = DatabaseAuthContext(isAdmin: false, auth: override.isNull ? nil : override)
            } else if body["noauth"]?.boolValue == true {
                context = .unauthenticated
            }
        case .user:
            context = DatabaseAuthContext(isAdmin: false, auth: DatabaseRESTResponder.rulesAuth(identity))
            expiry = DatabaseRESTResponder.expiry(identity.claims)
            if let expiry, expiry.timeIntervalSinceNow <= 0 { return try await refuseAuth(id, "expired_token", "Auth token is expired.") }
        case .unauthenticated:
            context = .unauthenticated
        }
        setAuth(identity, context, expiry: expiry)
        try await recheckListens()
        let expires: JSON = expiry.map { .number(String(Int64($0.timeIntervalSince1970))) } ?? .null
        try await respond(id, "ok", .object([("auth", context.auth ?? .null), ("expires", expires)]))
        return expiry
    }

    /// A refused `auth`: the connection is unauthenticated from now on (listens re-checked).
    func refuseAuth(_ id: Int64, _ status: String, _ message: String) async throws -> Date? {
        setAuth(.unauthenticated, .unauthenticated)
        try await recheckListens()
        try await respond(id, status, .string(message))
        return nil
    }

    /// A timer fired: if the current ID token has expired, tell the client (`ac`) and drop to
    /// unauthenticated; if it expires later (a newer token), returns when, to schedule again.
    func authTimer() async throws -> Date? {
        guard let expiry = authExpiry else { return nil }
        guard expiry.timeIntervalSinceNow <= 0 else { return expiry }
        try await drain()
        setAuth(.unauthenticated, .unauthenticated)
        try await send(DatabaseWebSocketOutbound.push("ac", .object([("s", .string("expired_token")), ("d", .string("Auth token is expired."))])))
        try await recheckListens()
        return nil
    }

    // MARK: Listens

    /// The query the rules see for a listen (`query.limitToFirst`, …).
    static func rulesQuery(_ query: DatabaseWireQuery?) -> DatabaseQuery? {
        guard let query else { return nil }
        var rules = query.valueQuery
        if let limit = query.limit {
            if query.fromLeft { rules.limitToFirst = limit } else { rules.limitToLast = limit }
        }
        return rules
    }

    /// The location's node (the query applied) if this connection may read it.
    func read(_ path: DatabasePath, _ query: DatabaseWireQuery?) async throws -> DatabaseNode {
        try await snapshot(path, query).node
    }

    func snapshot(_ path: DatabasePath, _ query: DatabaseWireQuery?) async throws -> DatabaseEngine.Snapshot {
        try await engine.authorizeRead(namespace: namespace, path: path, query: Self.rulesQuery(query), auth: auth)
        // Authorized with the query; read as the server (the rules were just applied).
        var snapshot = try await engine.read(namespace: namespace, path: path, auth: .admin)
        if let query { snapshot.node = query.apply(snapshot.node) }
        return snapshot
    }

    func listen(_ id: Int64, _ body: JSON) async throws {
        let path = try Self.path(body)
        let (rawQuery, query) = try Self.query(body)
        var tag: Int64?
        switch body["t"] {
        case nil, .null?: break
        case .number(let lexeme)?:
            guard let value = Int64(lexeme) else { throw DatabaseError.invalidQuery("Invalid tag.") }
            tag = value
        default: throw DatabaseError.invalidQuery("Invalid tag.")
        }
        try await drain()
        let snapshot = try await snapshot(path, query)
        try await send(DatabaseWebSocketOutbound.data("d", path: path, data: snapshot.node.exportJSON(), tag: tag))
        listens[ListenKey(path: path, query: rawQuery?.serialized() ?? "default")] = Listen(
            path: path, query: query, tag: tag, revision: snapshot.revision, shown: snapshot.node)
        // An order no `.indexOn` covers is served by scanning, with Firebase's warning (the SDKs
        // log "Using an unspecified index…").
        if let query, try await !engine.isIndexed(namespace: namespace, path: path, order: query.order) {
            try await respond(id, "ok", .object([("w", .array([.string("no_index")]))]))
        } else {
            try await respond(id, "ok", .object([]))
        }
    }

    /// Sends `c` for a listen the rules no longer allow and forgets it.
    func revoke(_ key: ListenKey) async throws {
        guard let listen = listens.removeValue(forKey: key) else { return }
        var body: [(String, JSON)] = [("p", .string(listen.path.keys.joined(separator: "/")))]
        if let query = listen.query { body.append(("q", .array([query.wire]))) }
        try await send(DatabaseWebSocketOutbound.push("c", .object(body)))
    }

    func recheckListens() async throws {
        guard !auth.isAdmin else { return }
        for (key, listen) in listens {
            do {
                try await engine.authorizeRead(namespace: namespace, path: listen.path, query: Self.rulesQuery(listen.query), auth: auth)
            } catch let error as DatabaseError where error.reason == .permissionDenied {
                try await revoke(key)
            }
        }
    }

    /// Sends the pushes for every change queued so far, in commit order.
    func drain() async throws {
        let (changes, overflow) = queue.take()
        for change in changes { try await deliver(change) }
        if overflow { throw Close(code: .goingAway, reason: "The connection fell too far behind the database.") }
    }

    func deliver(_ change: DatabaseChange) async throws {
        if case .rules = change.kind {
            try await recheckListens()
            return
        }
        for key in Array(listens.keys) {
            guard let listen = listens[key], change.revision > listen.revision, DatabaseListenEvent.touches(change, listen.path) else { continue }
            if !auth.isAdmin {
                // Rules may depend on the data: decide again for every change a listen would see.
                do {
                    try await engine.authorizeRead(namespace: namespace, path: listen.path, query: Self.rulesQuery(listen.query), auth: auth)
                } catch let error as DatabaseError where error.reason == .permissionDenied {
                    try await revoke(key)
                    continue
                }
            }
            if let query = listen.query {
                let current = try await engine.read(namespace: namespace, path: listen.path, auth: .admin)
                let node = query.apply(current.node)
                listens[key]?.revision = current.revision
                if node != listen.shown {
                    listens[key]?.shown = node
                    try await send(DatabaseWebSocketOutbound.data("d", path: listen.path, data: node.exportJSON(), tag: listen.tag))
                }
            } else if let push = pushes.rendering(change, at: listen.path) {
                try await send(push)
            }
        }
    }

    /// The push a default listen at `location` gets for `change`: `d` of the written node
    /// (or of the location's new value when the write was above it), or one `m` of the
    /// children an update changed below the location.
    static func push(_ change: DatabaseChange, at location: DatabasePath) -> String? {
        switch change.kind {
        case .set(let path, let node):
            if path.isWithin(location) { return DatabaseWebSocketOutbound.data("d", path: path, data: node.exportJSON(), tag: nil) }
            if location.isWithin(path) {
                return DatabaseWebSocketOutbound.data("d", path: location, data: node.descendant(location.relative(to: path)).exportJSON(), tag: nil)
            }
            return nil
        case .update(let base, let children):
            var merged: [(String, JSON)] = []
            for (relative, node) in children {
                let path = base.appending(relative)
                if location.isWithin(path) {
                    return DatabaseWebSocketOutbound.data(
                        "d", path: location, data: node.descendant(location.relative(to: path)).exportJSON(), tag: nil)
                }
                if path.isWithin(location) { merged.append((path.relative(to: location).keys.joined(separator: "/"), node.exportJSON())) }
            }
            guard !merged.isEmpty else { return nil }
            return DatabaseWebSocketOutbound.data("m", path: location, data: .object(merged), tag: nil)
        case .rules:
            return nil
        }
    }

    // MARK: Writes

    func put(_ id: Int64, _ body: JSON) async throws {
        let path = try Self.path(body)
        guard let value = body["d"] else { throw DatabaseError.invalidData("a put must carry data \"d\".") }
        var options = DatabaseEngine.WriteOptions()
        if let hash = body["h"] {
            // A client transaction: write only if the current value hashes to what the client saw.
            guard let expected = hash.stringValue else { throw DatabaseError.invalidData("the hash \"h\" must be a string.") }
            let current = try await engine.read(namespace: namespace, path: path, auth: .admin).node
            guard DatabaseWireHash.hash(current) == expected else {
                try await respond(id, "datastale", .string("Transaction hash does not match"))
                return
            }
            options.ifMatch = current.etag
        }
        let outcome = try await engine.set(namespace: namespace, path: path, value: value, auth: auth, options: options)
        if case .preconditionFailed = outcome {
            try await respond(id, "datastale", .string("Transaction hash does not match"))
            return
        }
        try await respond(id)
    }

    /// Runs the queued onDisconnect operations (the connection closed), each judged again.
    func runOnDisconnect() async {
        for operation in onDisconnect {
            do {
                switch operation.kind {
                case .set:
                    _ = try await engine.set(namespace: namespace, path: operation.path, value: operation.value, auth: operation.auth)
                case .merge:
                    _ = try await engine.update(
                        namespace: namespace, path: operation.path, values: operation.value.objectValue ?? [], auth: operation.auth)
                }
            } catch {
                logger.info("onDisconnect operation failed", metadata: ["path": "\(operation.path)", "error": "\(error)"])
            }
        }
        onDisconnect = []
    }
}
