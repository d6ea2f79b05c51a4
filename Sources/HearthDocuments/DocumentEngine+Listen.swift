public import HearthCore

/// Limits of one Listen stream.
public struct ListenConfiguration: Sendable {
    /// Feed changes a stream may have waiting before it is re-synced from storage instead.
    public var feedBudget: Int

    public init(feedBudget: Int = 10_000) {
        self.feedBudget = feedBudget
    }
}

extension DocumentEngine {
    /// Moves idle Listen streams' position to now and sends each a tick, so their resume
    /// tokens stay fresh (call every few seconds; `HearthServer` does every 10 s).
    public func listenHeartbeat() {
        feed.advanceIfIdle(clock)
        listeners.heartbeat()
    }

    /// Serves one Listen stream: reads `commands` from the client, keeps each target's view
    /// up to date from the change feed, and hands what the client must receive to `send`
    /// (one call per consistent batch). Returns when the client finishes its side; throws the
    /// error that ends the stream (a malformed command, a duplicate target id).
    ///
    /// `authorize` (security rules; nil for an admin) judges every read of a target, with the
    /// documents read; a target it refuses is removed with the error as its cause, the stream
    /// goes on. With an authorizer, a change to a documents target re-reads it, so a document
    /// that the rules stop allowing removes the target.
    public func listen<Commands: AsyncSequence & Sendable>(
        database: DatabaseName,
        commands: Commands,
        authorize: (@Sendable (ListenTargetSpec, [Document]) async throws -> Void)?,
        configuration: ListenConfiguration = .init(),
        send: @escaping @Sendable ([ListenOutput]) async throws -> Void
    ) async throws where Commands.Element == ListenCommand {
        let sink = ListenSink(budget: configuration.feedBudget)
        var registrations: [Int32: ListenerHub.RegistrationID] = [:]
        feed.advanceIfIdle(clock)
        listeners.attach(sink)
        defer {
            sink.close()
            listeners.detach(sink)
            for r in registrations.values { listeners.unregister(r) }
        }
        var machine = ListenStateMachine(database: database)
        machine.recheckDocuments = authorize != nil
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await command in commands { sink.enqueue(.command(command)) }
                    sink.enqueue(.clientFinished)
                } catch let e as HearthError {
                    sink.enqueue(.clientFailed(e))
                } catch is CancellationError {
                    sink.enqueue(.clientFinished)
                } catch {
                    sink.enqueue(.clientFailed(HearthError(.unavailable, "The stream was interrupted.")))
                }
            }
            defer { group.cancelAll() }
            loop: while let inputs = await sink.next() {
                var finished = false
                for input in inputs {
                    switch input {
                    case .clientFinished: finished = true
                    case .clientFailed(let e): throw e
                    default: machine.handle(input)
                    }
                }
                let (outputs, actions) = machine.flush()
                for action in actions {
                    switch action {
                    case .register(let id, let spec):
                        if let old = registrations[id] { listeners.unregister(old) }
                        registrations[id] = listeners.register(sink, database: database.database, target: spec)
                    case .unregister(let id):
                        if let r = registrations.removeValue(forKey: id) { listeners.unregister(r) }
                    case .load(let request):
                        group.addTask { [self] in
                            do {
                                let result = try await self.loadListenTarget(database, request)
                                try await authorize?(request.spec, result.documents)
                                sink.enqueue(.loaded(result))
                            } catch let e as HearthError {
                                sink.enqueue(.loadFailed(targetID: request.targetID, generation: request.generation, error: e))
                            } catch is CancellationError {
                                return
                            } catch {
                                self.logger.error("listen target read failed", metadata: ["error": "\(error)"])
                                sink.enqueue(.loadFailed(
                                    targetID: request.targetID, generation: request.generation,
                                    error: HearthError(.internal, "The target could not be read.")))
                            }
                        }
                    case .waitFor(let time):
                        listeners.notify(sink, atOrAfter: time)
                    case .resumeFeed:
                        sink.resumeFeed()
                    case .fail(let cause):
                        throw HearthError(cause.code, cause.message)
                    }
                }
                if !outputs.isEmpty { try await send(outputs) }
                if finished { break loop }
            }
        }
    }

    /// Reads a target's documents at one exact snapshot: one ``DocumentStore/snapshot(_:)``,
    /// together with the time of the last commit that snapshot includes.
    func loadListenTarget(_ database: DatabaseName, _ request: ListenStateMachine.LoadRequest) async throws -> ListenLoadResult {
        let db = database.database
        let floor = feed.startPosition
        let documents: [Document]
        let snapshot: Timestamp
        var previous: [Document]?
        switch request.spec {
        case .documents(let paths):
            let read = try await store.snapshot(DocumentSnapshotRead(database: db, paths: paths, readsLastCommitTime: true))
            (documents, snapshot) = (read.documents.compactMap { $0 }, read.lastCommitTime ?? floor)
            if let at = request.previousAt {
                previous = try? await batchGet(database, paths, consistency: .readTime(at)).documents.compactMap { $0 }
            }
        case .query(let query):
            let nq = try NormalizedQuery(query, database: database)
            try await ensureIndexes(for: nq)
            let execution = execution(nq, readTime: nil)
            let read = try await store.snapshot(DocumentSnapshotRead(database: db, scans: execution.scans, readsLastCommitTime: true))
            (documents, snapshot) = (execution.finish(read.scans).documents, read.lastCommitTime ?? floor)
            if let at = request.previousAt {
                previous = try? await runQuery(database, query, consistency: .readTime(at)).documents
            }
        }
        return ListenLoadResult(
            targetID: request.targetID, generation: request.generation, documents: documents, snapshot: snapshot, previous: previous)
    }
}
