package import Foundation
import HearthClientAuth
package import HearthClientCore
import HummingbirdWSClient
import Logging
import Synchronization

/// One database's client state and its connection (Firebase's `Repo` + `PersistentConnection`):
/// the listens and their cached server data, the observers and what each was last shown, the
/// requests in flight and the writes queued while offline.
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
        /// Transactions waiting for the first complete data.
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
    /// operations) and stops reconnecting until `goOnline`.
    package func stop() {
        state.withLock { s in
            s.started = true
            s.wantOnline = false
            s.outbound?.finish()
            s.connecting?.finish()
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
        for r in s.inflight.keys.sorted() {
            let out = s.inflight[r]!
            if out.resend {
                requeue.append(out)
            } else if case .reply(let box) = out.pending {
                box.resolve(Reply(status: "disconnected", data: .null))
            }
        }
        s.inflight = [:]
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
            if out.resend {
                s.outbox.append(out)
            } else if case .reply(let box) = out.pending {
                box.resolve(Reply(status: "disconnected", data: .null))
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
        case .reply(let box): box.resolve(reply)
        case .listen(let key):
            guard var listen = s.listens[key] else { return }
            if reply.status == "ok" {
                listen.complete = true
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

    /// The events every observer of a listen is owed now; queued on the callback queue in order.
    func raise(_ key: ListenKey, _ s: inout State, only handle: UInt? = nil) {
        guard var listen = s.listens[key], listen.complete else { return }
        var owed: [(rank: Int, event: DatabaseEvent, onEvent: @Sendable (DatabaseEvent) -> Void)] = []
        for h in listen.observers.keys.sorted() where handle == nil || handle == h {
            guard var observer = listen.observers[h] else { continue }
            let view = observer.params.view(listen.cache)
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

    /// `getData` after `goOffline()`: the data of an active listen for the same query (or the
    /// location's default listen) when it has complete data, else nil. While online (or
    /// reconnecting) the request goes to the server.
    package func cachedWhileOffline(path: [String], params: DatabaseQueryParams) -> (offline: Bool, node: DatabaseNode?) {
        state.withLock { s in
            guard !s.wantOnline else { return (false, nil) }
            let (key, _) = Self.key(path, params)
            if let listen = s.listens[key], listen.complete { return (true, listen.cache) }
            if let listen = s.listens[ListenKey(path: path, query: "default")], listen.complete { return (true, listen.cache) }
            return (true, nil)
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

    /// Waits until the listen at `key` has complete data (false when it was cancelled).
    func waitUntilComplete(_ key: ListenKey) async -> Result<Void, DatabaseError> {
        await withCheckedContinuation { continuation in
            state.withLock { s in
                guard let listen = s.listens[key] else { return continuation.resume(returning: .failure(.disconnected)) }
                if listen.complete { return continuation.resume(returning: .success(())) }
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

    /// Firebase's client-side compare-and-set: run `update` on the cached server value, send it
    /// with that value's hash; on `datastale` (another write won) run again on the newer value
    /// the server pushed first, at most 25 times.
    package func runTransaction(
        path: [String], update: @Sendable (DatabaseNode) -> DatabaseNode?
    ) async -> Result<(committed: Bool, node: DatabaseNode), DatabaseError> {
        await lockPath(path)
        defer { unlockPath(path) }
        let handle = observe(path: path, params: DatabaseQueryParams(), type: .value, once: false, onEvent: { _ in }, onCancel: nil)
        defer { removeObserver(handle) }
        let key = ListenKey(path: path, query: "default")
        for _ in 0..<25 {
            if case .failure(let error) = await waitUntilComplete(key) { return .failure(error) }
            let current = state.withLock { $0.listens[key]?.cache ?? .empty }
            guard let proposed = update(current) else { return .success((false, current)) }
            let body = DatabaseJSON.object([("p", Self.wirePath(path)), ("d", proposed.exportJSON()), ("h", .string(current.hash))])
            let reply = await request("p", body, resend: false)
            switch reply.status {
            case "ok": return .success((true, state.withLock { $0.listens[key]?.cache } ?? proposed))
            case "datastale": continue
            case "disconnected": return .failure(.disconnected)
            default: return .failure(.server(status: reply.status, message: reply.data.stringValue))
            }
        }
        return .failure(.maxRetries)
    }
}
