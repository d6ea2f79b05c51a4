import Foundation
import HearthCore
import HearthDocuments
import HearthPostgres
import HearthSQLite
import Logging

/// `hearth bench --phases engine-postgres`: the document engine on PostgreSQL next to SQLite in
/// the same run — commits of one new document, commits to one hot document, engine point gets
/// (the document cache) and the store's own point reads, below the cache. The PostgreSQL
/// database comes from `HEARTH_BENCH_POSTGRES_URL` (`postgres://user@host:port/db`; the schema
/// is migrated; documents go to a collection of their own per run).
struct PostgresBench {
    static let phase = "engine-postgres"
    static let urlVariable = "HEARTH_BENCH_POSTGRES_URL"

    let directory: String
    let clients: Int
    let duration: Double
    let logger: Logger

    struct MissingURL: Error, CustomStringConvertible {
        var description: String { "the \(PostgresBench.phase) phase needs \(PostgresBench.urlVariable)=postgres://… (a database it may migrate)" }
    }

    func run() async throws {
        guard let url = ProcessInfo.processInfo.environment[Self.urlVariable] else { throw MissingURL() }
        var settings = try PostgresSettings(url: url)
        settings.maximumConnections = max(settings.maximumConnections, min(clients, 64))
        try await PostgresSchema.migrate(settings, logger: logger)
        let backend = PostgresBackend(settings: settings, logger: logger)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let sqlite = try SQLiteDocumentStore(path: directory + "/documents.sqlite")
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The pool runs beside the measurements and stops with them.
            group.addTask { try await backend.run() }
            do {
                try await measure("sqlite", sqlite)
                try await measure("postgres", PostgresDocumentStore(backend: backend))
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }

    func measure(_ label: String, _ store: any DocumentStore) async throws {
        let engine = try await DocumentEngine(store: store, logger: logger)
        let db = DatabaseName(project: "demo-hearth", database: "(default)")
        let run = "bench-\(getpid())-\(Int(Date().timeIntervalSince1970))"
        let fields: [String: Value] = ["title": .string("hello world"), "n": .integer(5), "group": .integer(7), "score": .double(1.5)]
        print(try await GRDBBaseline.measure("\(label) engine: commit one new document", clients: clients, duration: duration) { i in
            _ = try await engine.commit(db, [.set(ResourcePath([run, "e\(i)"]), fields)])
        })
        let hot = ResourcePath([run + "-hot", "counter"])
        let increment = Write(path: hot, kind: .transform, transforms: [FieldTransform(field: FieldPath(["n"]), operation: .increment(.integer(1)))])
        print(try await GRDBBaseline.measure("\(label) engine: increment one hot document", clients: clients, duration: duration) { _ in
            _ = try await engine.commit(db, [increment])
        })
        print(try await GRDBBaseline.measure("\(label) engine: point get (document cache)", clients: clients, duration: duration) { i in
            _ = try await engine.get(db, ResourcePath([run, "e\(1 + i % 1000)"]))
        })
        print(try await GRDBBaseline.measure("\(label) store: point read, documents(_:_:at:)", clients: clients, duration: duration) { i in
            _ = try await store.documents("(default)", [ResourcePath([run, "e\(1 + i % 1000)"])], at: nil)
        })
    }
}
