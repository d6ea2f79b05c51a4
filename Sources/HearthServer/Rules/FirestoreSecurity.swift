public import HearthCore
public import HearthDocuments
import HearthRules
public import Logging

/// Security rules on Firestore requests: which callers the rules judge, the requests they
/// build, and the errors a denial becomes. Admins bypass rules; without rules, production
/// denies every client and emulator mode allows every client (as Google's emulator does).
public struct FirestoreSecurity: Sendable {
    public let rules: RulesStore
    public let emulator: Bool
    let engine: DocumentEngine
    let logger: Logger

    public init(rules: RulesStore, emulator: Bool, engine: DocumentEngine, logger: Logger) {
        self.rules = rules
        self.emulator = emulator
        self.engine = engine
        self.logger = logger
    }

    enum Policy {
        case allowAll
        case denyAll
        case rules(RulesStore.Loaded)
    }

    func policy(_ identity: Identity, _ database: DatabaseName) async throws(HearthError) -> Policy {
        if identity.isAdmin { return .allowAll }
        try await rules.synchronize()
        if let loaded = rules.rules(for: database.project) { return .rules(loaded) }
        return emulator ? .allowAll : .rules(Self.defaultRules)
    }

    /// Production mode without a rules file: every client request is denied, except that the
    /// owner of a file-registry record may read it (the api port's `files/{fileId}`,
    /// docs/app-backend.md) — nobody but the server writes those.
    static let defaultRules: RulesStore.Loaded = {
        let text = """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /files/{fileId} {
                  allow read: if request.auth != null && resource.data.ownerUid == request.auth.uid;
                }
              }
            }
            """
        do {
            return RulesStore.Loaded(try Ruleset.compile(text, fileName: "<default rules>"), origin: "default rules")
        } catch {
            preconditionFailure("the default rules do not compile: \(error)")  // a constant, compiled by every test run
        }
    }()

    /// Emulator mode records coverage and explains denials; production keeps the message
    /// Firestore sends and logs the reason.
    var options: RulesEvaluationOptions { RulesEvaluationOptions(recordCoverage: emulator, explain: true) }

    static let deniedMessage = "Missing or insufficient permissions."

    func denial(_ decision: RulesDecision?, _ what: String) -> HearthError {
        let reason = decision?.reason ?? "No security rules are loaded; production mode denies every client request (but owners' reads of files/{fileId})."
        logger.debug("rules denied", metadata: ["request": "\(what)", "reason": "\(reason)"])
        if emulator { return HearthError(.permissionDenied, Self.deniedMessage + " " + reason) }
        return HearthError(.permissionDenied, Self.deniedMessage)
    }

    /// Evaluates one request; documents the rules read come from the engine (latest state).
    func evaluate(_ loaded: RulesStore.Loaded, _ request: RulesRequest, _ ledger: DocumentAccessLedger) async throws -> RulesDecision {
        let options = options
        let decision: RulesDecision
        if loaded.usesDocuments {
            decision = try await FetchingLookup().settle({ lookup in
                var ledger = ledger
                return loaded.ruleset.evaluate(request, documents: lookup, ledger: &ledger, options: options)
            }, fetch: { [engine] key in try await engine.latestDocuments(key.database, [key.path])[0]?.fields })
        } else {
            var ledger = ledger
            decision = loaded.ruleset.evaluate(request, documents: nil, ledger: &ledger, options: options)
        }
        loaded.record(decision.coverage)
        RulesMetrics.count("firestore", decision)
        return decision
    }

    // MARK: Reads

    /// A single-document read (`get`), judged against the stored document (nil = missing).
    public func checkGet(_ identity: Identity, _ database: DatabaseName, _ path: ResourcePath, _ document: Document?) async throws {
        try await checkGets(identity, database, [(path, document)])
    }

    /// Several document reads (batchGet, transactions): each must be allowed.
    public func checkGets(_ identity: Identity, _ database: DatabaseName, _ reads: [(ResourcePath, Document?)]) async throws {
        switch try await policy(identity, database) {
        case .allowAll: return
        case .denyAll: throw denial(nil, "get")
        case .rules(let loaded):
            let time = engine.clock.current()
            let ledger: DocumentAccessLedger = reads.count > 1 ? .batch : .singleDocument
            for (path, doc) in reads {
                let request = RulesRequest.firestore(
                    .get, database: database.database, path: path, auth: identity.rulesAuth, time: time, existing: doc?.fields)
                let d = try await evaluate(loaded, request, ledger)
                if !d.isAllowed { throw denial(d, "get \(path.text)") }
            }
        }
    }

    /// A query, aggregation or collection listing (`list`): allowed only if the rules hold
    /// for every document the query could return.
    public func checkQuery(_ identity: Identity, _ database: DatabaseName, _ query: Query) async throws {
        switch try await policy(identity, database) {
        case .allowAll: return
        case .denyAll: throw denial(nil, "list")
        case .rules(let loaded):
            let target: RulesRequest.Target = query.allDescendants
                ? .firestoreCollectionGroup(database: database.database, parent: query.parent, collectionId: query.collectionId)
                : .firestoreCollection(database: database.database, path: query.collectionPath)
            let request = RulesRequest(
                method: .list, target: target, auth: identity.rulesAuth, time: engine.clock.current(), query: Self.rulesQuery(query))
            let d = try await evaluate(loaded, request, .singleDocument)
            if !d.isAllowed { throw denial(d, "list \(query.collectionPath.text)") }
        }
    }

    /// Listing collection ids has no rule that could allow it: admins only (and every
    /// client in emulator mode without rules).
    public func checkListCollectionIds(_ identity: Identity, _ database: DatabaseName) async throws(HearthError) {
        switch try await policy(identity, database) {
        case .allowAll: return
        case .denyAll, .rules: throw denial(nil, "listCollectionIds")
        }
    }

    /// The authorizer for a commit or batch write by `identity` (nil = no rules apply).
    public func authorizer(_ identity: Identity, _ database: DatabaseName) async throws(HearthError) -> (any WriteAuthorizer)? {
        switch try await policy(identity, database) {
        case .allowAll: return nil
        case .denyAll: throw denial(nil, "write")
        case .rules(let loaded): return RulesWriteAuthorizer(loaded: loaded, auth: identity.rulesAuth, security: self)
        }
    }

    static func rulesQuery(_ q: Query) -> RulesQuery {
        RulesQuery(
            filter: q.filter.map(rulesFilter), limit: q.limit.map(Int64.init), offset: Int64(q.offset),
            orderBy: q.orderBy.map { RulesQuery.Order($0.field, descending: $0.descending) })
    }

    static func rulesFilter(_ f: Query.Filter) -> RulesQuery.Filter {
        switch f {
        case .field(let path, let op, let value): .field(path, RulesQuery.Operator(rawValue: op.rawValue)!, value)
        case .unary(let path, let op): .unary(path, RulesQuery.UnaryOperator(rawValue: op.rawValue)!)
        case .and(let fs): .and(fs.map(rulesFilter))
        case .or(let fs): .or(fs.map(rulesFilter))
        }
    }
}

/// Judges every change of a commit together (one document-access budget: 10 for a single
/// write, 20 for a batch or transaction), before the commit reaches the store.
struct RulesWriteAuthorizer: WriteAuthorizer {
    let loaded: RulesStore.Loaded
    let auth: RulesAuth?
    let security: FirestoreSecurity

    func authorize(_ changes: [DocumentChange], database: DatabaseName, time: Timestamp, documents: any DocumentPeek) async throws(HearthError) {
        let options = security.options
        // request.time as a server timestamp records it: millisecond precision, so
        // `request.resource.data.updated == request.time` holds for serverTimestamp().
        let requestTime = Timestamp(seconds: time.seconds, nanos: time.nanos - time.nanos % 1_000_000)
        let (loaded, auth) = (loaded, auth)
        // Every change is judged again in each round (one ledger for the whole commit); the
        // decisions of the last round count, up to the first denial.
        let decisions = try await FetchingLookup().settle({ lookup in
            var ledger: DocumentAccessLedger = changes.count > 1 ? .batch : .singleDocument
            var decisions: [(RulesMethod, ResourcePath, RulesDecision)] = []
            for change in changes {
                let method: RulesMethod = change.after == nil ? .delete : (change.before == nil ? .create : .update)
                let request = RulesRequest.firestore(
                    method, database: database.database, path: change.path, auth: auth, time: requestTime, existing: change.before?.fields,
                    after: change.after?.fields)
                let d = loaded.ruleset.evaluate(request, documents: lookup, ledger: &ledger, options: options)
                decisions.append((method, change.path, d))
                if !d.isAllowed { break }
            }
            return decisions
        }, fetch: { key in try await documents.document(database: key.database, path: key.path, afterWrites: key.afterWrites)?.fields })
        for (method, path, d) in decisions {
            loaded.record(d.coverage)
            RulesMetrics.count("firestore", d)
            if !d.isAllowed { throw security.denial(d, "\(method) \(path.text)") }
        }
    }
}
