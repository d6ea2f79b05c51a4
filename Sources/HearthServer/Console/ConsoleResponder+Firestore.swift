import HearthCore
import HearthDocuments
import Hummingbird
import HTTPTypes
import NIOCore
import Synchronization

/// Composite indexes, and a query's results kept live through the engine's Listen machinery
/// (server-sent events: one `snapshot` event with the whole result set per consistent change).
extension ConsoleResponder {
    var defaultDatabase: DatabaseName { DatabaseName(project: configuration.project, database: "(default)") }

    func listIndexes() async throws -> Response {
        let definitions = try await engine.compositeIndexes(database: defaultDatabase.database)
        let prefix = "projects/\(configuration.project)/databases/(default)/collectionGroups/"
        let items: [JSON] = definitions.map { d in
            .object([
                ("name", .string(prefix + d.collectionGroup + "/indexes/\(d.id)")),
                ("collectionGroup", .string(d.collectionGroup)),
                ("queryScope", .string(d.groupScope ? "COLLECTION_GROUP" : "COLLECTION")),
                ("fields", .array(d.fields.map { f in
                    f.mode == .contains
                        ? .object([("fieldPath", .string(f.path.canonical)), ("arrayConfig", .string("CONTAINS"))])
                        : .object([("fieldPath", .string(f.path.canonical)), ("order", .string(f.mode.rawValue))])
                })),
                ("state", .string("READY")),
                ("automatic", .bool(d.automatic)),
            ])
        }
        return HTTPSupport.json(.object([("indexes", .array(items))]))
    }

    /// `POST /api/firestore/indexes?collectionGroup=tasks` with the Admin API's index body
    /// (`queryScope`, `fields: [{fieldPath, order | arrayConfig}]`).
    func createIndex(_ request: Request, principal: ConsolePrincipal) async throws -> Response {
        let params = try HTTPSupport.queryParameters(request.uri.query)
        guard let group = params.last(where: { $0.0 == "collectionGroup" })?.1, !group.isEmpty, !group.contains("/") else {
            throw HearthError.invalidArgument("Name the collection group (?collectionGroup=…, without \"/\").")
        }
        var request = request
        let body = try JSON.parse(try await request.collectBody(limit: maxBody).readableBytesView)
        let scope = body["queryScope"]?.stringValue ?? "COLLECTION"
        guard scope == "COLLECTION" || scope == "COLLECTION_GROUP" else {
            throw HearthError.invalidArgument("queryScope must be COLLECTION or COLLECTION_GROUP.")
        }
        guard let list = body["fields"]?.arrayValue, list.count >= 2 else {
            throw HearthError.invalidArgument("A composite index needs at least two fields.")
        }
        var fields: [IndexDefinition.Field] = []
        for f in list {
            guard let raw = f["fieldPath"]?.stringValue else { throw HearthError.invalidArgument("Every field needs a fieldPath.") }
            let path: FieldPath
            do { path = try FieldPath(parsing: raw) } catch { throw HearthError.invalidArgument("Invalid field path \"\(raw)\".") }
            let mode: IndexDefinition.Mode
            switch (f["order"]?.stringValue, f["arrayConfig"]?.stringValue) {
            case ("ASCENDING", nil): mode = .ascending
            case ("DESCENDING", nil): mode = .descending
            case (nil, "CONTAINS"): mode = .contains
            default: throw HearthError.invalidArgument("Field \"\(raw)\": give order ASCENDING/DESCENDING or arrayConfig CONTAINS.")
            }
            guard !fields.contains(where: { $0.path == path }) else { throw HearthError.invalidArgument("Field \"\(raw)\" appears twice.") }
            fields.append(.init(path, mode))
        }
        guard fields.filter({ $0.mode == .contains }).count <= 1 else {
            throw HearthError.invalidArgument("An index may hold at most one array-contains field.")
        }
        let definition = IndexDefinition(
            id: 0, database: defaultDatabase.database, collectionGroup: group, groupScope: scope == "COLLECTION_GROUP", fields: fields,
            automatic: false)
        try await engine.createIndex(definition)
        logger.notice("console created an index", metadata: ["user": "\(principal.name)", "index": "\(definition.summary)"])
        return try await listIndexes()
    }

    /// `GET /api/firestore/listen?parent=<document path or empty>&query=<structuredQuery JSON>`.
    func listen(_ request: Request) async throws -> Response {
        let params = try HTTPSupport.queryParameters(request.uri.query)
        func param(_ k: String) -> String? { params.last { $0.0 == k }?.1 }
        let parentText = param("parent") ?? ""
        let parent = ResourcePath(parsing: parentText)
        guard parentText.isEmpty || parent.isDocument else { throw HearthError.invalidArgument("parent must be empty or a document path.") }
        guard let text = param("query") else { throw HearthError.invalidArgument("Missing query (a structuredQuery as JSON).") }
        let json = FirestoreJSON(database: defaultDatabase)
        let query = try json.query(try JSON.parse(text), parent: parent, "structured_query")
        let normalized = try NormalizedQuery(query, database: defaultDatabase)
        let engine = self.engine
        let database = defaultDatabase
        let (commands, continuation) = AsyncStream<ListenCommand>.makeStream()
        continuation.yield(.add(ListenTarget(id: 1, spec: .query(query))))
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // The engine hands batches to a @Sendable callback; the writer belongs to this task.
            // Events cross through a small buffer (a slow browser loses intermediate snapshots,
            // never the latest one).
            let (events, sink) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(64))
            defer { continuation.finish() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let state = Mutex(ListenView())
                    do {
                        try await engine.listen(database: database, commands: commands, authorize: nil) { outputs in
                            let event: String? = state.withLock { view in view.apply(outputs, normalized, json) }
                            sink.yield(event ?? ": tick\n\n")
                        }
                    } catch let e as HearthError {
                        let data = JSON.object([("code", .string(e.code.statusName)), ("message", .string(e.message))])
                        sink.yield("event: failure\ndata: \(String(decoding: data.serializedBytes(), as: UTF8.self))\n\n")
                    } catch {
                        // Cancelled: the browser went away.
                    }
                    sink.finish()
                }
                // Throws once the browser has gone; leaving the group cancels the listener.
                for await event in events {
                    try await writer.write(ByteBuffer(string: event))
                }
                group.cancelAll()
            }
            try await writer.finish(nil)
        })
    }
}

/// The current result set of the console's one live query.
struct ListenView: Sendable {
    var documents: [ResourcePath: Document] = [:]
    var current = false
    var changedSinceSnapshot = true

    /// Applies a batch; returns a `snapshot` event when the view is consistent and changed.
    mutating func apply(_ outputs: [ListenOutput], _ query: NormalizedQuery, _ json: FirestoreJSON) -> String? {
        var readTime: Timestamp?
        for output in outputs {
            switch output {
            case .document(let d, let ids, let removed):
                if ids.contains(1) { documents[d.path] = d; changedSinceSnapshot = true }
                else if removed.contains(1) { documents[d.path] = nil; changedSinceSnapshot = true }
            case .documentDelete(let p, _, _), .documentRemove(let p, _, _):
                if documents.removeValue(forKey: p) != nil { changedSinceSnapshot = true }
            case .targetChange(let kind, let ids, _, _, let time):
                if kind == .current && ids.contains(1) { current = true }
                if kind == .reset { documents = [:]; changedSinceSnapshot = true }
                if ids.isEmpty, let time { readTime = time }
            case .existenceFilter:
                break
            }
        }
        guard current, let readTime, changedSinceSnapshot else { return nil }
        changedSinceSnapshot = false
        var ordered = Array(documents.values)
        ordered.sort { query.compare($0, $1) < 0 }
        if let limit = query.query.limit { ordered = Array(ordered.prefix(Int(limit))) }
        let data = JSON.object([("documents", .array(ordered.map(json.document))), ("readTime", .string(readTime.rfc3339))])
        return "event: snapshot\ndata: \(String(decoding: data.serializedBytes(), as: UTF8.self))\n\n"
    }
}
