public import HearthCore

/// The state of one Listen stream as a pure state machine: it takes inputs (client
/// commands, the change feed, the results of reads) and returns what to send and what to do.
/// The driver (``DocumentEngine/listen(database:commands:authorize:configuration:send:)``)
/// owns the I/O.
///
/// Consistency, per target: a target's documents are read at one exact snapshot (every
/// commit up to `snapshot` and none after), while the feed keeps delivering; feed changes at
/// or before the snapshot are already in the read and are skipped, later ones are applied.
/// Per stream: `position` is the time up to which every commit that concerns the stream has
/// been delivered to it (the feed is in commit order and ticks follow it). A global
/// `NO_CHANGE` with `read_time = position` is sent only when every current target reflects
/// exactly the commits up to `position` — none is re-reading and none was read ahead of it.
struct ListenStateMachine {
    enum Action: Equatable {
        case register(Int32, ListenTargetSpec)
        case unregister(Int32)
        case load(LoadRequest)
        /// Ask the hub for a tick once the feed reached this time.
        case waitFor(Timestamp)
        /// The overflow was handled: accept feed events again.
        case resumeFeed
        /// End the stream with this error.
        case fail(ListenCause)
    }

    struct LoadRequest: Equatable {
        var targetID: Int32
        var generation: Int
        var spec: ListenTargetSpec
        /// Also read the target at this earlier time (a resume).
        var previousAt: Timestamp?
    }

    enum LoadKind {
        /// First read of a new target: send every document.
        case initial
        /// First read of a resumed target: send what changed since `after`.
        case resume(after: Timestamp)
        /// Re-read of a current target (a limit's window must be refilled, a database was
        /// cleared): send the difference.
        case refresh
        /// Re-sync after the stream fell behind: RESET, then every document.
        case reset
    }

    enum Shape {
        case documents(Set<ResourcePath>)
        case query(NormalizedQuery)
    }

    struct Target {
        var id: Int32
        var spec: ListenTargetSpec
        var shape: Shape
        var generation = 0
        var once: Bool
        var expectedCount: Int32?
        /// Non-nil while a read is outstanding; feed changes wait in `buffer`.
        var loading: LoadKind?
        var buffer: [(Timestamp, [DocumentChange])] = []
        /// The documents the client has for the target (a limit query's window).
        var view: [ResourcePath: Document] = [:]
        /// Commits up to this time are reflected in `view`.
        var snapshot = Timestamp(microseconds: 0)
        var current = false
    }

    let database: DatabaseName
    var targets: [Int32: Target] = [:]
    var position: Timestamp
    var outputs: [ListenOutput] = []
    var actions: [Action] = []
    /// Something was sent since the last global NO_CHANGE.
    var dirty = false
    var tickSeen = false
    var lastMarker: Timestamp?
    var nextServerID: Int32 = 1
    var failed = false
    /// Re-read (and so re-authorize) a documents target whenever one of its documents
    /// changes, instead of applying the change directly.
    var recheckDocuments = false

    init(database: DatabaseName, position: Timestamp = Timestamp(microseconds: 0)) {
        self.database = database
        self.position = position
    }

    // MARK: Inputs

    mutating func handle(_ input: ListenInput) {
        guard !failed else { return }
        switch input {
        case .command(.add(let t)): add(t)
        case .command(.remove(let id)): remove(id)
        case .changes(let time, let changes): feed(time, changes)
        case .tick(let time):
            advance(to: time)
            tickSeen = true
        case .cleared(let time, let db):
            advance(to: time)
            guard db == database.database else { return }
            for id in targets.keys.sorted() { reload(id, as: targets[id]!.loading == nil ? .refresh : nil) }
        case .overflow:
            actions.append(.resumeFeed)
            for id in targets.keys.sorted() { reload(id, as: targets[id]!.loading == nil ? .reset : nil) }
        case .loaded(let result): loaded(result)
        case .loadFailed(let id, let generation, let error):
            guard let t = targets[id], t.generation == generation else { return }
            drop(id)
            send(.targetChange(.remove, targetIDs: [t.id], cause: ListenCause(error)))
        case .clientFinished, .clientFailed:
            break
        }
    }

    /// What to send and do after a run of inputs: CURRENT for targets that became consistent,
    /// then a global NO_CHANGE when the whole stream is consistent and something changed.
    mutating func flush() -> (outputs: [ListenOutput], actions: [Action]) {
        var becameCurrent = false
        for id in targets.keys.sorted() {
            guard let t = targets[id], !t.current, t.loading == nil, t.snapshot <= position else { continue }
            targets[id]!.current = true
            becameCurrent = true
            send(.targetChange(.current, targetIDs: [id], resumeToken: position))
            if t.once {
                drop(id)
                send(.targetChange(.remove, targetIDs: [id]))
            }
        }
        let consistent = targets.values.allSatisfy { !$0.current || ($0.loading == nil && $0.snapshot <= position) }
        let advanced = lastMarker.map { position > $0 } ?? true
        let anyCurrent = targets.values.contains { $0.current }
        if consistent && ((dirty && (anyCurrent || becameCurrent)) || (tickSeen && advanced && anyCurrent)) {
            outputs.append(.targetChange(.noChange, targetIDs: [], resumeToken: position, readTime: position))
            lastMarker = position
            dirty = false
        }
        tickSeen = false
        defer {
            outputs = []
            actions = []
        }
        return (outputs, actions)
    }

    // MARK: Targets

    mutating func add(_ request: ListenTarget) {
        var id = request.id
        if id == 0 {
            while targets[nextServerID] != nil { nextServerID += 2 }
            id = nextServerID
            nextServerID += 2
        } else if id < 0 {
            return fail(.invalidArgument("Target ID must be positive, got \(id)."))
        }
        if targets[id] != nil { return fail(.invalidArgument("Target ID \(id) already exists.")) }
        let shape: Shape
        do throws(HearthError) {
            switch request.spec {
            case .documents(let paths):
                guard !paths.isEmpty else { throw .invalidArgument("A documents target needs at least one document.") }
                for p in paths {
                    try p.validate()
                    guard p.isDocument else { throw .invalidArgument("\"\(database.name(of: p))\" is not a document name.") }
                }
                shape = .documents(Set(paths))
            case .query(let q):
                guard q.offset == 0 else { throw .invalidArgument("Listen queries cannot have an offset.") }
                shape = .query(try NormalizedQuery(q, database: database))
            }
        } catch {
            send(.targetChange(.remove, targetIDs: [id], cause: ListenCause(error)))
            return
        }
        targets[id] = Target(id: id, spec: request.spec, shape: shape, once: request.once, expectedCount: request.expectedCount)
        send(.targetChange(.add, targetIDs: [id]))
        actions.append(.register(id, request.spec))
        reload(id, as: request.resumeAfter.map { .resume(after: $0) } ?? .initial)
    }

    mutating func remove(_ id: Int32) {
        guard targets[id] != nil else { return fail(.invalidArgument("Target ID \(id) was not found.")) }
        drop(id)
        send(.targetChange(.remove, targetIDs: [id]))
    }

    mutating func drop(_ id: Int32) {
        targets[id] = nil
        actions.append(.unregister(id))
    }

    /// Starts a read of the target. `kind` nil keeps the kind of a read already outstanding.
    mutating func reload(_ id: Int32, as kind: LoadKind?) {
        guard var t = targets[id] else { return }
        t.generation += 1
        t.buffer = []
        if let kind { t.loading = kind } else if t.loading == nil { t.loading = .initial }
        var previousAt: Timestamp?
        if case .resume(let after)? = t.loading { previousAt = after }
        targets[id] = t
        actions.append(.load(LoadRequest(targetID: id, generation: t.generation, spec: t.spec, previousAt: previousAt)))
    }

    mutating func loaded(_ r: ListenLoadResult) {
        guard var t = targets[r.targetID], t.generation == r.generation, let kind = t.loading else { return }
        let id = t.id
        let docs = Dictionary(r.documents.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        switch kind {
        case .initial, .reset:
            if case .reset = kind {
                send(.targetChange(.reset, targetIDs: [id]))
                t.current = false
            }
            for d in r.documents { send(.document(d, targetIDs: [id], removedTargetIDs: [])) }
        case .refresh:
            for d in r.documents where t.view[d.path]?.updateTime != d.updateTime {
                send(.document(d, targetIDs: [id], removedTargetIDs: []))
            }
            for p in t.view.keys.sorted() where docs[p] == nil {
                send(.documentRemove(p, removedTargetIDs: [id], readTime: r.snapshot))
            }
        case .resume(let after):
            if let previous = r.previous {
                let before = Dictionary(previous.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
                for d in r.documents where before[d.path]?.updateTime != d.updateTime {
                    send(.document(d, targetIDs: [id], removedTargetIDs: []))
                }
                for p in before.keys.sorted() where docs[p] == nil {
                    send(.documentRemove(p, removedTargetIDs: [id], readTime: r.snapshot))
                }
            } else {
                // The state at the resume time is no longer readable: send what changed since,
                // and the count (with the names for a bloom filter) so the client can find
                // documents it holds that have gone.
                for d in r.documents where d.updateTime > after {
                    send(.document(d, targetIDs: [id], removedTargetIDs: []))
                }
                send(.existenceFilter(
                    targetID: id, count: Int32(clamping: r.documents.count),
                    names: t.expectedCount != nil ? r.documents.map(\.path) : nil))
            }
        }
        t.view = docs
        t.snapshot = r.snapshot
        t.loading = nil
        let buffered = t.buffer
        t.buffer = []
        targets[id] = t
        for (time, changes) in buffered where time > r.snapshot {
            apply(id, time, changes)
            if targets[id]?.loading != nil { break }
        }
        if r.snapshot > position { actions.append(.waitFor(r.snapshot)) }
    }

    // MARK: The feed

    mutating func advance(to time: Timestamp) {
        if time > position { position = time }
    }

    mutating func feed(_ time: Timestamp, _ changes: [DocumentChange]) {
        advance(to: time)
        for id in targets.keys.sorted() {
            guard let t = targets[id] else { continue }
            if t.loading != nil {
                targets[id]!.buffer.append((time, changes))
            } else if time > t.snapshot {
                apply(id, time, changes)
            }
        }
    }

    /// Applies one commit's changes to a current target.
    mutating func apply(_ id: Int32, _ time: Timestamp, _ changes: [DocumentChange]) {
        guard var t = targets[id] else { return }
        defer { if targets[id] != nil && targets[id]!.loading == nil { targets[id]!.snapshot = max(targets[id]!.snapshot, time) } }
        switch t.shape {
        case .documents(let paths):
            if recheckDocuments && changes.contains(where: { paths.contains($0.path) }) {
                return reload(id, as: .refresh)
            }
            for c in changes where paths.contains(c.path) {
                if let after = c.after {
                    guard t.view[c.path]?.updateTime != after.updateTime else { continue }
                    t.view[c.path] = after
                    send(.document(after, targetIDs: [id], removedTargetIDs: []))
                } else if t.view.removeValue(forKey: c.path) != nil {
                    send(.documentDelete(c.path, removedTargetIDs: [id], readTime: time))
                }
            }
            targets[id] = t
        case .query(let nq):
            let limit = nq.query.limit
            for c in changes {
                let was = t.view[c.path] != nil
                let now = c.after.map { nq.matches($0) } ?? false
                guard was || now else { continue }
                if let limit {
                    if now, let after = c.after {
                        if was {
                            t.view[c.path] = after
                            send(.document(after, targetIDs: [id], removedTargetIDs: []))
                            // A full window whose document moved to its end may now have
                            // a document outside it that belongs before this one.
                            if t.view.count >= limit, last(nq, t.view)?.path == c.path {
                                targets[id] = t
                                return reload(id, as: .refresh)
                            }
                        } else if t.view.count < limit {
                            // Not full: the window holds every match, so this one belongs in it.
                            t.view[c.path] = after
                            send(.document(after, targetIDs: [id], removedTargetIDs: []))
                        } else if let last = last(nq, t.view), nq.compare(after, last) < 0 {
                            t.view[c.path] = after
                            t.view[last.path] = nil
                            send(.document(after, targetIDs: [id], removedTargetIDs: []))
                            send(.documentRemove(last.path, removedTargetIDs: [id], readTime: time))
                        }
                    } else {
                        let wasFull = t.view.count >= limit
                        t.view[c.path] = nil
                        sendLeft(c, id, time)
                        if wasFull {
                            targets[id] = t
                            return reload(id, as: .refresh)
                        }
                    }
                } else if now, let after = c.after {
                    t.view[c.path] = after
                    send(.document(after, targetIDs: [id], removedTargetIDs: []))
                } else {
                    t.view[c.path] = nil
                    sendLeft(c, id, time)
                }
            }
            targets[id] = t
        }
    }

    /// A document left a query target: deleted, or changed so that it no longer matches.
    mutating func sendLeft(_ c: DocumentChange, _ id: Int32, _ time: Timestamp) {
        if let after = c.after {
            send(.document(after, targetIDs: [], removedTargetIDs: [id]))
        } else {
            send(.documentDelete(c.path, removedTargetIDs: [id], readTime: time))
        }
    }

    func last(_ nq: NormalizedQuery, _ view: [ResourcePath: Document]) -> Document? {
        var best: Document?
        for d in view.values where best == nil || nq.compare(d, best!) > 0 { best = d }
        return best
    }

    // MARK: Output

    mutating func send(_ output: ListenOutput) {
        outputs.append(output)
        dirty = true
    }

    mutating func fail(_ error: HearthError) {
        failed = true
        actions.append(.fail(ListenCause(error)))
    }
}
