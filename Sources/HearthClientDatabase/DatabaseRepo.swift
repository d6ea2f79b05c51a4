package import Foundation
import HearthClientAuth
package import HearthClientCore
import HummingbirdWSClient
import Logging
import Synchronization

/// One database's client state and its connection (Firebase's `Repo` + `PersistentConnection`
/// + `SyncTree`): the listens and their cached server data, this client's pending writes (the
/// ``DatabaseWriteTree``, laid over the server's data for latency compensation), the observers
/// and what each was last shown, the requests in flight and the writes queued while offline.
///
/// State lives under one `Mutex`; the socket's task hands every received message to
/// ``receive(_:generation:)``, which updates the state and queues the observers' callbacks on
/// the database's callback queue in order. Outgoing messages go through an `AsyncStream` to the
/// socket's writer, so nothing here blocks while holding the lock.
package final class DatabaseRepo: Sendable {
    package struct Reply: Sendable {
        package var status: String
        package var data: DatabaseJSON
    }

    struct Observer {
        let type: DataEventType
        let params: DatabaseQueryParams
        let onEvent: @Sendable (DatabaseEvent) -> Void
        let onCancel: (@Sendable (DatabaseError) -> Void)?
        let once: Bool
        /// What this observer was last shown (nil: nothing yet).
        var shown: DatabaseNode?
    }

    package struct ListenKey: Hashable, Sendable {
        package var path: [String]
        package var query: String
    }

    struct Listen {
        let path: [String]
        let query: DatabaseJSON?
        let tag: Int?
        var cache: DatabaseNode = .empty
        var complete = false
        var observers: [UInt: Observer] = [:]
        var keepSynced = false
        /// Writes the server acknowledged before this listen's data was complete: still shown
        /// (over nothing) until the server's data arrives, so an ack never takes a value away.
        var acked: [DatabaseWriteTree.Overwrite] = []
        /// Transactions waiting for the first complete data (the client knew nothing there).
        var waiters: [CheckedContinuation<Result<Void, DatabaseError>, Never>] = []
        var isLocal: Bool { path.first == ".info" }
    }

    /// The answer to one request, awaited by whoever sent it.
    package final class ReplyBox: Sendable {
        struct State {
            var reply: Reply?
            var waiter: CheckedContinuation<Reply, Never>?
            var handler: (@Sendable (Reply) -> Void)?
        }

        let state = Mutex(State())

        /// Called in the order replies arrive (inside the repo's lock): handlers run at once,
        /// so completion blocks are queued in that order.
        func resolve(_ reply: Reply) {
            let (waiter, handler) = state.withLock { s -> (CheckedContinuation<Reply, Never>?, (@Sendable (Reply) -> Void)?) in
                guard s.reply == nil else { return (nil, nil) }
                s.reply = reply
                defer { (s.waiter, s.handler) = (nil, nil) }
                return (s.waiter, s.handler)
            }
            waiter?.resume(returning: reply)
            handler?(reply)
        }

        package func value() async -> Reply {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s -> Reply? in
                    if let reply = s.reply { return reply }
                    s.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        /// Runs `handler` with the reply when it arrives (at once if it has).
        package func whenResolved(_ handler: @escaping @Sendable (Reply) -> Void) {
            let ready = state.withLock { s -> Reply? in
                if let reply = s.reply { return reply }
                s.handler = handler
                return nil
            }
            if let ready { handler(ready) }
        }
    }

    enum Pending {
        case listen(ListenKey)
        case reply(ReplyBox)
        /// A set, update or transaction in the write tree: it leaves the tree (and observers
        /// see the events that takes, a revert when refused) before the box gets the answer.
        case write(id: Int, box: ReplyBox)
        case auth
        case none
    }

    struct Outgoing {
        var action: String
        var body: DatabaseJSON
        var pending: Pending
        /// Writes and onDisconnect operations are sent again after a reconnect; a transaction's
        /// hashed put is not (it fails with `disconnected`).
        var resend: Bool
        /// Waits in the outbox while offline even if not resent after a drop (a transaction's put
        /// made offline goes out on connect, as in the SDKs).
        var waitsOffline = false
    }

    struct State {
        var started = false
        var wantOnline = true
        var loopRunning = false
        var generation = 0
        /// The socket's writer once the hello arrived; nil while offline.
        var outbound: AsyncStream<String>.Continuation?
        var connecting: AsyncStream<String>.Continuation?
        var nextRequest = 1
        var inflight: [Int: Outgoing] = [:]
        var outbox: [Outgoing] = []
        var listens: [ListenKey: Listen] = [:]
        var tags: [Int: ListenKey] = [:]
        var nextTag = 1
        var nextHandle: UInt = 1
        var handles: [UInt: ListenKey] = [:]
        /// The token to send with `auth` when the next connection is ready, and the one sent last.
        var token: String?
        var sentToken: String?
        var authFailures = 0
        var serverTimeOffset: Double = 0
        var sessionID: String?
        var frames: (remaining: Int, parts: [String])?
        var transactionQueues: [[String]: [CheckedContinuation<Void, Never>]] = [:]
        var listeningToTokens = false
        var tokenSequence = 0
        /// This client's writes the server has not answered yet.
        var writeTree = DatabaseWriteTree()
        /// Transactions running, by number: their location, their put's write id while it is
        /// out, and whether a set or update overlapping it has overridden it.
        var transactions: [Int: ActiveTransaction] = [:]
        var nextTransaction = 1
    }

    struct ActiveTransaction {
        var path: [String]
        var writeID: Int?
        var overridden = false
    }

    let state = Mutex(State())
    let app: HearthApp
    let socketURL: String
    let callbackQueue: DispatchQueue
    let logger: Logger

    package init(app: HearthApp, socketURL: String, callbackQueue: DispatchQueue) {
        self.app = app
        self.socketURL = socketURL
        self.callbackQueue = callbackQueue
        var logger = Logger(label: "hearth.client.database")
        logger.logLevel = .warning
        self.logger = logger
    }

    // MARK: Connection

    /// Starts the connection on first use (a listen, a write); after `goOffline` only
    /// `goOnline` reconnects, and writes wait in memory meanwhile.
    package func start() { launch(firstUseOnly: true) }

    /// `goOnline`: starts the connection loop unless it is running.
    package func goOnline() { launch(firstUseOnly: false) }

    func launch(firstUseOnly: Bool) {
        let launch = state.withLock { s -> Bool in
            if firstUseOnly && s.started { return false }
            s.started = true
            s.wantOnline = true
            guard !s.loopRunning else { return false }
            s.loopRunning = true
            return true
        }
        guard launch else { return }
        Task { await self.runLoop() }
    }

    /// `goOffline`: closes the socket (the server runs this connection's onDisconnect
    /// operations) and stops reconnecting until `goOnline`. The client is offline at once, as
    /// the SDKs' interrupt: writes in flight go back to the outbox, a transaction's put in
    /// flight fails with `disconnected`, what is written next waits, and frames the closing
    /// socket still delivers are ignored.
    package func stop() {
        state.withLock { s in
            s.started = true
            s.wantOnline = false
            s.outbound?.finish()
            s.connecting?.finish()
            _ = disconnected(s.generation, &s)
            s.generation += 1
        }
    }

    func runLoop() async {
        registerTokenListener()
        var delay = 0.0
        while true {
            let online = state.withLock { s -> Bool in
                if !s.wantOnline { s.loopRunning = false }
                return s.wantOnline
            }
            guard online else { return }
            if delay > 0 { try? await Task.sleep(for: .milliseconds(Int(delay * 1000))) }
            guard state.withLock({ $0.wantOnline }) else { continue }
            let token = await currentToken(forcingRefresh: state.withLock { $0.authFailures > 0 })
            state.withLock { $0.token = token }
            let wasReady = await connectOnce()
            // Backoff as the SDKs: 1 s, ×1.3 per failure, at most 30 s.
            delay = wasReady ? 1 : min(max(delay * 1.3, 1), 30)
        }
    }

    /// One socket's life; true when the server's hello arrived.
    func connectOnce() async -> Bool {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let generation = state.withLock { s -> Int in
            s.generation += 1
            s.connecting = continuation
            return s.generation
        }
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = 1 << 20
        do {
            try await WebSocketClient.connect(url: socketURL, configuration: configuration, logger: logger) { inbound, outbound, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in stream { try await outbound.write(.text(text)) }
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    for try await message in inbound.messages(maxSize: 1 << 26) {
                        guard case .text(let text) = message else { continue }
                        if !self.receive(text, generation: generation) { break }
                    }
                    continuation.finish()
                    try? await group.waitForAll()
                }
            }
        } catch {
            logger.debug("database socket ended: \(error)")
        }
        continuation.finish()
        return state.withLock { s in disconnected(generation, &s) }
    }

    /// The socket `generation` closed: requests in flight go back to the outbox (writes) or fail.
    func disconnected(_ generation: Int, _ s: inout State) -> Bool {
        guard s.generation == generation else { return false }
        let wasReady = s.outbound != nil
        s.outbound = nil
        s.connecting = nil
        s.frames = nil
        s.sentToken = nil
        var requeue: [Outgoing] = []
        let inflight = s.inflight
        s.inflight = [:]
        for r in inflight.keys.sorted() {
            let out = inflight[r]!
            if out.resend {
                requeue.append(out)
            } else {
                resolve(out.pending, Reply(status: "disconnected", data: .null), &s)
            }
        }
        s.outbox = requeue + s.outbox
        if wasReady { updateInfo(&s, connected: false) }
        return wasReady
    }

    func registerTokenListener() {
        let first = state.withLock { s -> Bool in
            defer { s.listeningToTokens = true }
            return !s.listeningToTokens
        }
        guard first else { return }
        Auth.auth(app: app).addIDTokenDidChangeListener { [weak self] _, user in
            guard let self else { return }
            // Numbered as they come, so a slow token fetch never overrides a later change.
            let sequence = self.state.withLock { s -> Int in
                s.tokenSequence += 1
                return s.tokenSequence
            }
            Task { await self.tokenChanged(user, sequence: sequence) }
        }
    }

    func currentToken(forcingRefresh: Bool = false) async -> String? {
        guard let user = Auth.auth(app: app).currentUser else { return nil }
        return try? await user.getIDToken(forcingRefresh: forcingRefresh)
    }

    /// A new ID token, sign-in or sign-out: `auth` with the new token or `unauth` on the open socket.
    func tokenChanged(_ user: User?, sequence: Int) async {
        let token: String? = if let user { try? await user.getIDToken() } else { nil }
        state.withLock { s in
            guard sequence == s.tokenSequence else { return }
            s.token = token
            guard s.outbound != nil, token != s.sentToken else { return }
            s.sentToken = token
            if let token {
                send(Outgoing(action: "auth", body: .object([("cred", .string(token))]), pending: .auth, resend: false), &s)
            } else {
                send(Outgoing(action: "unauth", body: .object([]), pending: .none, resend: false), &s)
            }
        }
    }

    // MARK: Sending

    /// Sends now when connected; otherwise writes wait in the outbox (listens are re-sent from
    /// the registry on connect).
    func send(_ out: Outgoing, _ s: inout State) {
        guard let outbound = s.outbound else {
            if out.resend || out.waitsOffline {
                s.outbox.append(out)
            } else {
                resolve(out.pending, Reply(status: "disconnected", data: .null), &s)
            }
            return
        }
        let r = s.nextRequest
        s.nextRequest += 1
        s.inflight[r] = out
        let message = DatabaseJSON.object([
            ("t", .string("d")), ("d", .object([("r", .number(Double(r))), ("a", .string(out.action)), ("b", out.body)])),
        ])
        Self.write(message.serialized(), to: outbound)
    }

    /// Messages over 16384 UTF-16 units go as a count frame and pieces cut on scalar boundaries.
    static func write(_ text: String, to outbound: AsyncStream<String>.Continuation) {
        guard text.utf16.count > 16384 else {
            outbound.yield(text)
            return
        }
        var pieces: [String] = []
        var current = String.UnicodeScalarView()
        var units = 0
        for scalar in text.unicodeScalars {
            let width = scalar.utf16.count
            if units + width > 16384 {
                pieces.append(String(current))
                current = String.UnicodeScalarView()
                units = 0
            }
            current.append(scalar)
            units += width
        }
        if !current.isEmpty { pieces.append(String(current)) }
        outbound.yield(String(pieces.count))
        for piece in pieces { outbound.yield(piece) }
    }

    /// Sends a request now (or queues it, in call order, while offline); the box gets its answer
    /// (`disconnected` when it cannot be sent and is not resent).
    package func submit(_ action: String, _ body: DatabaseJSON, resend: Bool = true) -> ReplyBox {
        start()
        let box = ReplyBox()
        state.withLock { s in send(Outgoing(action: action, body: body, pending: .reply(box), resend: resend), &s) }
        return box
    }

    /// A set (`p`) or update (`m`) of `data` at `path` by this app: in the write tree and shown
    /// to observers at once (server values estimated), then sent (queued in call order while
    /// offline). The box gets the server's answer once the write has left the tree.
    package func write(_ action: String, path: [String], data: DatabaseJSON) -> ReplyBox {
        start()
        let box = ReplyBox()
        state.withLock { s in
            let overwrites = localOverwrites(action, path: path, data: data, s)
            let id = s.writeTree.add(overwrites)
            overrideTransactions(at: path, &s)
            raise(touching: overwrites.map(\.path), &s)
            let body = DatabaseJSON.object([("p", Self.wirePath(path)), ("d", data)])
            send(Outgoing(action: action, body: body, pending: .write(id: id, box: box), resend: true), &s)
        }
        return box
    }

    /// The estimated server time in milliseconds (`.info/serverTimeOffset` applied).
    static func estimatedServerTime(_ s: State) -> Double { Date().timeIntervalSince1970 * 1000 + s.serverTimeOffset }

    /// What a set or update writes, as the write tree holds it: absolute paths, server values
    /// resolved against the local value there.
    func localOverwrites(_ action: String, path: [String], data: DatabaseJSON, _ s: State) -> [DatabaseWriteTree.Overwrite] {
        let now = Self.estimatedServerTime(s)
        func overwrite(_ path: [String], _ json: DatabaseJSON) -> DatabaseWriteTree.Overwrite {
            let resolved = DatabaseServerValues.resolve(json, existing: latestState(path, s), now: now)
            return DatabaseWriteTree.Overwrite(path: path, node: DatabaseNode(json: resolved))
        }
        guard action == "m", case .object(let members) = data else { return [overwrite(path, data)] }
        return members.map { relative, value in overwrite(path + DatabaseValues.segments(relative), value) }
    }

    /// The server's complete data at `path`, from a default listen at or above it (nil when
    /// no such listen has its data).
    func serverNode(_ path: [String], _ s: State) -> DatabaseNode? {
        for listen in s.listens.values where listen.complete && listen.tag == nil && !listen.isLocal && Self.isPrefix(listen.path, of: path) {
            return listen.cache.child(atPath: Array(path.dropFirst(listen.path.count)))
        }
        return nil
    }

    /// The local value at `path` (Firebase's `latestState`): the server's data known there (none:
    /// empty) with every pending write over it, hidden transactions included.
    func latestState(_ path: [String], excluding: Set<Int> = [], _ s: State) -> DatabaseNode {
        s.writeTree.overlay(serverNode(path, s) ?? .empty, at: path, excluding: excluding, includeHidden: true)
    }

    /// The server answered (or can no longer answer) a request.
    func resolve(_ pending: Pending, _ reply: Reply, _ s: inout State) {
        switch pending {
        case .reply(let box): box.resolve(reply)
        case .write(let id, let box):
            finishWrite(id, revert: reply.status != "ok", &s)
            box.resolve(reply)
        case .listen, .auth, .none: break
        }
    }

    /// A write leaves the tree: acknowledged (the server's data, which already holds it, shows
    /// through: no events unless the server resolved something differently) or refused (the
    /// observers get the events that take the local value back).
    func finishWrite(_ id: Int, revert: Bool, _ s: inout State) {
        guard let write = s.writeTree.remove(id) else { return }
        if !revert && write.visible {
            for (key, listen) in s.listens where !listen.complete && !listen.isLocal {
                let relevant = write.overwrites.filter { DatabaseWriteTree.overlaps($0.path, listen.path) }
                s.listens[key]?.acked += relevant
            }
        }
        raise(touching: write.overwrites.map(\.path), &s)
    }

    /// A set or update at `path` overrides the transactions at, above or below it (as the SDKs):
    /// a put still waiting in the outbox is taken out and reverted, and the transaction fails
    /// with `set`; one in flight commits if the server takes it, else fails instead of rerunning.
    func overrideTransactions(at path: [String], _ s: inout State) {
        for (number, transaction) in s.transactions where DatabaseWriteTree.overlaps(transaction.path, path) {
            s.transactions[number]?.overridden = true
            guard let writeID = transaction.writeID else { continue }
            guard let index = s.outbox.firstIndex(where: { if case .write(writeID, _) = $0.pending { true } else { false } }) else { continue }
            let queued = s.outbox.remove(at: index)
            resolve(queued.pending, Reply(status: DatabaseError.overriddenBySet.status, data: .null), &s)
        }
    }

    /// Raises events for every listen at, above or below one of `paths`.
    func raise(touching paths: [[String]], _ s: inout State) {
        for key in s.listens.keys.sorted(by: { ($0.path.count, $0.query) < ($1.path.count, $1.query) }) {
            guard let listen = s.listens[key], !listen.isLocal, paths.contains(where: { DatabaseWriteTree.overlaps($0, listen.path) }) else {
                continue
            }
            raise(key, &s)
        }
    }

    /// Sends a request and waits for its answer.
    package func request(_ action: String, _ body: DatabaseJSON, resend: Bool = true) async -> Reply {
        await submit(action, body, resend: resend).value()
    }

    static func wirePath(_ path: [String]) -> DatabaseJSON { .string("/" + path.joined(separator: "/")) }

    // MARK: Receiving

    /// Handles one text frame of socket `generation`; false when the socket must close (the
    /// server sent something unreadable).
    package func receive(_ frame: String, generation: Int) -> Bool {
        state.withLock { s in
            guard s.generation == generation else { return false }
            var text = frame
            if var pending = s.frames {
                pending.parts.append(frame)
                pending.remaining -= 1
                if pending.remaining > 0 {
                    s.frames = pending
                    return true
                }
                s.frames = nil
                text = pending.parts.joined()
            } else if frame.utf8.count <= 6, let count = Int(frame) {
                if count > 0 { s.frames = (count, []) }
                return true
            }
            do throws(DatabaseError) {
                try handle(text, &s)
                return true
            } catch {
                logger.warning("database: unreadable message from the server (\(error)); closing the connection")
                failAll(&s, error)
                s.outbound?.finish()
                s.connecting?.finish()
                return false
            }
        }
    }

    func handle(_ text: String, _ s: inout State) throws(DatabaseError) {
        let message: DatabaseJSON
        do { message = try DatabaseJSON.parse(text) } catch { throw .malformedMessage("The server sent invalid JSON: \(error.description).") }
        guard case .object = message, let type = message["t"]?.stringValue, let data = message["d"] else {
            throw .malformedMessage("The server sent a message without a type.")
        }
        switch type {
        case "c":
            guard let control = data["t"]?.stringValue else { throw .malformedMessage("A control message without a type.") }
            try handleControl(control, data["d"] ?? .null, &s)
        case "d":
            if let r = data["r"] {
                guard let number = r.numberValue, let request = Int(exactly: number), let body = data["b"], let status = body["s"]?.stringValue else {
                    throw .malformedMessage("A response without a request number or status.")
                }
                handleReply(request, Reply(status: status, data: body["d"] ?? .null), &s)
            } else if let action = data["a"]?.stringValue, let body = data["b"] {
                try handlePush(action, body, &s)
            } else {
                throw .malformedMessage("A data message that is neither a response nor a push.")
            }
        default:
            throw .malformedMessage("A message of unknown type \"\(type)\".")
        }
    }

    func handleControl(_ control: String, _ body: DatabaseJSON, _ s: inout State) throws(DatabaseError) {
        switch control {
        case "h":
            guard let connecting = s.connecting else { return }
            if let ts = body["ts"]?.numberValue { s.serverTimeOffset = ts - Date().timeIntervalSince1970 * 1000 }
            s.sessionID = body["s"]?.stringValue
            s.outbound = connecting
            restore(&s)
        case "s":
            // A permanent kill: the SDKs stop reconnecting in this process.
            logger.warning("database: the server ended the connection: \(body.stringValue ?? "")")
            s.wantOnline = false
            s.outbound?.finish()
            s.connecting?.finish()
        case "r":
            s.outbound?.finish()
            s.connecting?.finish()
        case "e":
            logger.warning("database: server error: \(body.stringValue ?? body.serialized())")
        default:
            break  // "o" (pong) and others need nothing
        }
    }

    /// The connection is ready: stats, auth, every listen, then queued writes in order.
    func restore(_ s: inout State) {
        send(Outgoing(action: "s", body: .object([("c", .object([("sdk.swift.hearth", .number(1))]))]), pending: .none, resend: false), &s)
        if let token = s.token {
            s.sentToken = token
            send(Outgoing(action: "auth", body: .object([("cred", .string(token))]), pending: .auth, resend: false), &s)
        }
        for (key, listen) in s.listens where !listen.isLocal {
            sendListen(key, listen, &s)
        }
        let queued = s.outbox
        s.outbox = []
        for out in queued { send(out, &s) }
        updateInfo(&s, connected: true)
    }

    func sendListen(_ key: ListenKey, _ listen: Listen, _ s: inout State) {
        var body: [(String, DatabaseJSON)] = [("p", Self.wirePath(listen.path))]
        if let query = listen.query, let tag = listen.tag {
            body.append(("q", query))
            body.append(("t", .number(Double(tag))))
        }
        body.append(("h", .string("")))
        send(Outgoing(action: "q", body: .object(body), pending: .listen(key), resend: false), &s)
    }

    func handleReply(_ r: Int, _ reply: Reply, _ s: inout State) {
        guard let out = s.inflight.removeValue(forKey: r) else { return }
        switch out.pending {
        case .reply, .write: resolve(out.pending, reply, &s)
        case .listen(let key):
            guard var listen = s.listens[key] else { return }
            if reply.status == "ok" {
                listen.complete = true
                listen.acked = []
                let waiters = listen.waiters
                listen.waiters = []
                s.listens[key] = listen
                for waiter in waiters { waiter.resume(returning: .success(())) }
                raise(key, &s)
            } else {
                cancel(key, .server(status: reply.status, message: reply.data.stringValue), &s)
            }
        case .auth:
            if reply.status == "ok" {
                s.authFailures = 0
            } else {
                // invalid or expired token: reconnect with a freshly refreshed one (as the SDKs), up to 3 times.
                s.authFailures += 1
                logger.warning("database: auth refused (\(reply.status)): \(reply.data.stringValue ?? "")")
                if s.authFailures <= 3 {
                    s.outbound?.finish()
                    s.connecting?.finish()
                }
            }
        case .none: break
        }
    }

    func handlePush(_ action: String, _ body: DatabaseJSON, _ s: inout State) throws(DatabaseError) {
        switch action {
        case "d", "m":
            guard let path = body["p"]?.stringValue, let data = body["d"] else { throw .malformedMessage("A data push without a path or data.") }
            if action == "m", case .object = data {} else if action == "m" { throw .malformedMessage("A merge push whose data is not an object.") }
            let pushPath = DatabaseValues.segments(path)
            if let tagValue = body["t"], case .number(let number) = tagValue {
                guard let tag = Int(exactly: number) else { throw .malformedMessage("A push with an invalid tag.") }
                guard let key = s.tags[tag] else { return }  // a listen removed meanwhile
                apply(action, at: pushPath, data, to: key, &s)
            } else {
                for (key, listen) in s.listens where listen.tag == nil && !listen.isLocal {
                    if Self.isPrefix(listen.path, of: pushPath) || Self.isPrefix(pushPath, of: listen.path) {
                        apply(action, at: pushPath, data, to: key, &s)
                    }
                }
            }
        case "c":
            // Listen revoked (rules): every listen at that path ends with permission_denied.
            guard let path = body["p"]?.stringValue else { throw .malformedMessage("A revocation without a path.") }
            let segments = DatabaseValues.segments(path)
            for (key, listen) in s.listens where listen.path == segments {
                cancel(key, .server(status: "permission_denied", message: "Permission denied"), &s)
            }
        case "ac":
            // Auth revoked (expired token): reconnect with a refreshed token.
            logger.info("database: auth revoked: \(body["d"]?.stringValue ?? "")")
            s.sentToken = nil
            s.authFailures += 1
            s.outbound?.finish()
            s.connecting?.finish()
        case "sd":
            logger.warning("database: \(body["msg"]?.stringValue ?? "")")
        default:
            logger.debug("database: unknown push \(action)")
        }
    }

    static func isPrefix(_ prefix: [String], of path: [String]) -> Bool {
        prefix.count <= path.count && Array(path.prefix(prefix.count)) == prefix
    }

    /// Applies a `d` (overwrite) or `m` (merge) at `pushPath` to one listen's cache.
    func apply(_ action: String, at pushPath: [String], _ data: DatabaseJSON, to key: ListenKey, _ s: inout State) {
        guard var listen = s.listens[key] else { return }
        var writes: [([String], DatabaseNode)] = []
        if action == "d" {
            writes.append((pushPath, DatabaseNode(json: data)))
        } else if case .object(let members) = data {
            for (relative, value) in members { writes.append((pushPath + DatabaseValues.segments(relative), DatabaseNode(json: value))) }
        }
        for (path, node) in writes {
            if Self.isPrefix(listen.path, of: path) {
                listen.cache = listen.cache.setting(Array(path.dropFirst(listen.path.count)), to: node)
            } else if Self.isPrefix(path, of: listen.path) {
                listen.cache = node.child(atPath: Array(listen.path.dropFirst(path.count)))
            }
        }
        s.listens[key] = listen
        if listen.complete { raise(key, &s) }
    }

    // MARK: Observers and events

    /// What the observers of a listen see: its server data (when complete) with this client's
    /// pending writes over it.
    func eventView(_ listen: Listen, _ s: State) -> DatabaseWriteTree.View {
        if listen.isLocal { return DatabaseWriteTree.View(node: listen.cache, complete: listen.complete) }
        return s.writeTree.view(server: listen.complete ? listen.cache : nil, at: listen.path, before: listen.complete ? [] : listen.acked)
    }

    /// The events every observer of a listen is owed now; queued on the callback queue in order.
    /// Without complete data only child events of queries without a limit are raised (for the
    /// children local writes set whole), as the SDKs do.
    func raise(_ key: ListenKey, _ s: inout State, only handle: UInt? = nil) {
        guard var listen = s.listens[key] else { return }
        let current = eventView(listen, s)
        var owed: [(rank: Int, event: DatabaseEvent, onEvent: @Sendable (DatabaseEvent) -> Void)] = []
        for h in listen.observers.keys.sorted() where handle == nil || handle == h {
            guard var observer = listen.observers[h] else { continue }
            if !current.complete && (observer.type == .value || observer.params.limit != nil) { continue }
            let view = observer.params.view(current.node)
            var events = DatabaseEventGenerator.events(for: observer.type, old: observer.shown, new: view, params: observer.params)
            observer.shown = view
            listen.observers[h] = observer
            if events.isEmpty { continue }
            if observer.once {
                events = [events[0]]
                listen.observers.removeValue(forKey: h)
                s.handles.removeValue(forKey: h)
            }
            owed += events.map { (Self.rank(of: $0.type), $0, observer.onEvent) }
        }
        s.listens[key] = listen
        // Firebase's order across observers: removed, added, moved, changed, then value.
        for (_, event, onEvent) in owed.enumerated().sorted(by: { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }).map(\.element) {
            callbackQueue.async { onEvent(event) }
        }
        unlistenIfUnused(key, &s)
    }

    static func rank(of type: DataEventType) -> Int {
        switch type {
        case .childRemoved: 0
        case .childAdded: 1
        case .childMoved: 2
        case .childChanged: 3
        case .value: 4
        }
    }

    func cancel(_ key: ListenKey, _ error: DatabaseError, _ s: inout State) {
        guard let listen = s.listens.removeValue(forKey: key) else { return }
        if let tag = listen.tag { s.tags.removeValue(forKey: tag) }
        for h in listen.observers.keys.sorted() {
            s.handles.removeValue(forKey: h)
            if let onCancel = listen.observers[h]?.onCancel { callbackQueue.async { onCancel(error) } }
        }
        for waiter in listen.waiters { waiter.resume(returning: .failure(error)) }
    }

    /// A malformed message ends every observer with the error (the socket then reconnects).
    func failAll(_ s: inout State, _ error: DatabaseError) {
        for key in Array(s.listens.keys) where !(s.listens[key]?.isLocal ?? true) { cancel(key, error, &s) }
    }

    static func key(_ path: [String], _ params: DatabaseQueryParams) -> (ListenKey, DatabaseJSON?) {
        // Only filtering queries are their own listens; an index alone shares the default listen.
        let wire = params.filters ? params.wire : nil
        return (ListenKey(path: path, query: wire?.serialized() ?? "default"), wire)
    }

    func ensureListen(_ key: ListenKey, wire: DatabaseJSON?, path: [String], _ s: inout State) {
        guard s.listens[key] == nil else { return }
        var tag: Int?
        if wire != nil {
            tag = s.nextTag
            s.nextTag += 1
            s.tags[tag!] = key
        }
        var listen = Listen(path: path, query: wire, tag: tag)
        if listen.isLocal {
            listen.complete = true
            listen.cache = infoNode(&s).child(atPath: Array(path.dropFirst()))
        }
        s.listens[key] = listen
        if !listen.isLocal, s.outbound != nil { sendListen(key, listen, &s) }
    }

    /// Registers an observer; its first events come once the listen's data is complete.
    package func observe(
        path: [String], params: DatabaseQueryParams, type: DataEventType, once: Bool,
        onEvent: @escaping @Sendable (DatabaseEvent) -> Void, onCancel: (@Sendable (DatabaseError) -> Void)?
    ) -> UInt {
        if path.first != ".info" { start() }
        return state.withLock { s in
            let (key, wire) = Self.key(path, params)
            ensureListen(key, wire: wire, path: path, &s)
            let handle = s.nextHandle
            s.nextHandle += 1
            s.handles[handle] = key
            s.listens[key]?.observers[handle] = Observer(type: type, params: params, onEvent: onEvent, onCancel: onCancel, once: once)
            raise(key, &s, only: handle)
            return handle
        }
    }

    package func removeObserver(_ handle: UInt) {
        state.withLock { s in
            guard let key = s.handles.removeValue(forKey: handle) else { return }
            s.listens[key]?.observers.removeValue(forKey: handle)
            unlistenIfUnused(key, &s)
        }
    }

    /// Every observer of listens at `path` (queries included).
    package func removeAllObservers(path: [String]) {
        state.withLock { s in
            for (key, listen) in s.listens where listen.path == path {
                for h in listen.observers.keys { s.handles.removeValue(forKey: h) }
                s.listens[key]?.observers = [:]
                unlistenIfUnused(key, &s)
            }
        }
    }

    package func keepSynced(path: [String], params: DatabaseQueryParams, _ keep: Bool) {
        if keep { start() }
        state.withLock { s in
            let (key, wire) = Self.key(path, params)
            if keep { ensureListen(key, wire: wire, path: path, &s) }
            s.listens[key]?.keepSynced = keep
            unlistenIfUnused(key, &s)
        }
    }

    func unlistenIfUnused(_ key: ListenKey, _ s: inout State) {
        guard let listen = s.listens[key], listen.observers.isEmpty, !listen.keepSynced, listen.waiters.isEmpty else { return }
        s.listens.removeValue(forKey: key)
        if let tag = listen.tag { s.tags.removeValue(forKey: tag) }
        guard !listen.isLocal, s.outbound != nil else { return }
        var body: [(String, DatabaseJSON)] = [("p", Self.wirePath(listen.path))]
        if let query = listen.query, let tag = listen.tag {
            body.append(("q", query))
            body.append(("t", .number(Double(tag))))
        }
        send(Outgoing(action: "n", body: .object(body), pending: .none, resend: false), &s)
    }

    /// `getData` after `goOffline()`: the local view (pending writes over the server's data) of
    /// an active listen for the same query, or of a location listened at or above, or what a
    /// pending write at or above it set; else nil. While online (or reconnecting) the request
    /// goes to the server.
    package func cachedWhileOffline(path: [String], params: DatabaseQueryParams) -> (offline: Bool, node: DatabaseNode?) {
        state.withLock { s in
            guard !s.wantOnline else { return (false, nil) }
            let (key, _) = Self.key(path, params)
            if let listen = s.listens[key], listen.complete { return (true, eventView(listen, s).node) }
            if let server = serverNode(path, s) { return (true, s.writeTree.overlay(server, at: path)) }
            let written = s.writeTree.view(server: nil, at: path)
            return (true, written.complete ? written.node : nil)
        }
    }

    // MARK: .info

    func infoNode(_ s: inout State) -> DatabaseNode {
        DatabaseNode(content: .children([
            "connected": DatabaseNode(leaf: .bool(s.outbound != nil)),
            "serverTimeOffset": DatabaseNode(leaf: .number(s.serverTimeOffset.rounded())),
        ]))
    }

    func updateInfo(_ s: inout State, connected: Bool) {
        let info = infoNode(&s)
        for (key, listen) in s.listens where listen.isLocal {
            s.listens[key]?.cache = info.child(atPath: Array(listen.path.dropFirst()))
            raise(key, &s)
        }
    }

    // MARK: Transactions

    /// Waits until the client knows the value at `path`: the server's data (the default listen
    /// at `key` complete, or one above it) or a pending write at or above it. Fails when the
    /// listen is refused.
    func waitUntilKnown(_ path: [String], _ key: ListenKey) async -> Result<Void, DatabaseError> {
        await withCheckedContinuation { continuation in
            state.withLock { s in
                if serverNode(path, s) != nil || s.writeTree.view(server: nil, at: path).complete {
                    return continuation.resume(returning: .success(()))
                }
                guard s.listens[key] != nil else { return continuation.resume(returning: .failure(.disconnected)) }
                s.listens[key]?.waiters.append(continuation)
            }
        }
    }

    /// Transactions on one path from this client run one after another (as the SDKs queue them).
    func lockPath(_ path: [String]) async {
        await withCheckedContinuation { continuation in
            state.withLock { s in
                if let queue = s.transactionQueues[path] {
                    s.transactionQueues[path] = queue + [continuation]
                } else {
                    s.transactionQueues[path] = []
                    continuation.resume()
                }
            }
        }
    }

    func unlockPath(_ path: [String]) {
        state.withLock { s in
            guard var queue = s.transactionQueues[path] else { return }
            if queue.isEmpty {
                s.transactionQueues.removeValue(forKey: path)
            } else {
                let next = queue.removeFirst()
                s.transactionQueues[path] = queue
                next.resume()
            }
        }
    }

    /// Firebase's client-side compare-and-set, as the Apple SDK runs it: `update` runs on the
    /// local value (the server's data known here with pending writes over it); its result goes
    /// into the write tree (shown to observers when `applyLocally`) and is sent with that
    /// value's hash (queued while offline). On `datastale` the write is reverted and `update`
    /// runs again on the newer value, at most 25 runs in all; a refusal or a dropped connection
    /// reverts it and fails; a set or update overlapping it overrides it
    /// (``overrideTransactions(at:_:)``). One difference: when the client knows nothing at the location yet,
    /// the first run waits for the server's data instead of running on nil.
    package func runTransaction(
        path: [String], applyLocally: Bool, update: @Sendable (DatabaseNode) -> DatabaseNode?
    ) async -> Result<(committed: Bool, node: DatabaseNode), DatabaseError> {
        await lockPath(path)
        defer { unlockPath(path) }
        let number = state.withLock { s -> Int in
            defer { s.nextTransaction += 1 }
            s.transactions[s.nextTransaction] = ActiveTransaction(path: path)
            return s.nextTransaction
        }
        defer { state.withLock { _ = $0.transactions.removeValue(forKey: number) } }
        // Keeps the location listened, so a stale run is followed by the server's newer data.
        let handle = observe(path: path, params: DatabaseQueryParams(), type: .value, once: false, onEvent: { _ in }, onCancel: nil)
        defer { removeObserver(handle) }
        if case .failure(let error) = await waitUntilKnown(path, ListenKey(path: path, query: "default")) { return .failure(error) }
        for _ in 0..<25 {
            let current = state.withLock { latestState(path, $0) }
            // The app's block runs outside the lock (it may use the database).
            guard let proposed = update(current) else { return .success((false, current)) }
            let sent = state.withLock { s -> Result<(box: ReplyBox, local: DatabaseNode), DatabaseError>? in
                if s.transactions[number]?.overridden == true { return .failure(.overriddenBySet) }
                // Data that changed while the block ran: run again on it, as nothing was sent.
                guard latestState(path, s) == current else { return nil }
                let data = proposed.exportJSON()
                let local = DatabaseNode(json: DatabaseServerValues.resolve(data, existing: current, now: Self.estimatedServerTime(s)))
                let id = s.writeTree.add([DatabaseWriteTree.Overwrite(path: path, node: local)], visible: applyLocally)
                s.transactions[number]?.writeID = id
                raise(touching: [path], &s)
                let box = ReplyBox()
                let body = DatabaseJSON.object([("p", Self.wirePath(path)), ("d", data), ("h", .string(current.hash))])
                send(Outgoing(action: "p", body: body, pending: .write(id: id, box: box), resend: false, waitsOffline: true), &s)
                return .success((box, local))
            }
            guard let sent else { continue }
            let outcome: (box: ReplyBox, local: DatabaseNode)
            switch sent {
            case .failure(let error): return .failure(error)
            case .success(let value): outcome = value
            }
            let reply = await outcome.box.value()
            let overridden = state.withLock { s -> Bool in
                s.transactions[number]?.writeID = nil
                return s.transactions[number]?.overridden ?? false
            }
            switch reply.status {
            case "ok":
                // The server's data when this client has it (server values as the server resolved
                // them, not the app's later pending writes), else the value as resolved locally.
                let node = state.withLock { s in serverNode(path, s) } ?? outcome.local
                return .success((true, node))
            case "datastale" where overridden, DatabaseError.overriddenBySet.status: return .failure(.overriddenBySet)
            case "datastale": continue
            case "disconnected": return .failure(.disconnected)
            default: return .failure(.server(status: reply.status, message: reply.data.stringValue))
            }
        }
        return .failure(.maxRetries)
    }
}
