import HearthCore
import HearthDatabase
import HearthSQLite
import Hummingbird
import ServiceLifecycle
import Foundation
import Logging

extension HearthServer {
    /// The Realtime Database over `<data-dir>/database.sqlite`, with the authorizer in force
    /// (``DatabaseRulesAuthorizer``: the JSON rules language) and the rules file,
    /// if any, loaded into the default namespace.
    static func openDatabase(_ configuration: ServerConfiguration, directory: String, logger: Logger) async throws -> DatabaseEngine {
        let path = URL(fileURLWithPath: directory).appendingPathComponent("database.sqlite").path
        let store = try SQLiteDatabaseTreeStore(path: path)
        let engine = DatabaseEngine(store: store, authorizer: DatabaseRulesAuthorizer(emulator: configuration.emulator))
        if let watcher = databaseRulesWatcher(configuration, engine: engine, logger: logger) {
            try await watcher.load()
            logger.info("loaded database rules", metadata: ["file": "\(watcher.path)"])
        }
        return engine
    }

    /// The watcher of the rules file, if one is configured: it loads the file into the
    /// default namespace at start, then reloads it whenever it changes.
    static func databaseRulesWatcher(_ configuration: ServerConfiguration, engine: DatabaseEngine, logger: Logger) -> DatabaseRulesFileWatcher? {
        configuration.databaseRulesFile.map {
            DatabaseRulesFileWatcher(
                path: $0, namespace: DatabaseRESTResponder.defaultNamespace(configuration.project), engine: engine, logger: logger)
        }
    }

    /// The database port's listener: REST and event streams, and the SDKs' WebSocket protocol
    /// (`/.ws`, ``DatabaseWebSocketEndpoint``).
    func databaseListener(authenticator: Authenticator, ready: ReadyFile) -> any Service {
        let sockets = DatabaseWebSocketEndpoint(
            engine: database, authenticator: authenticator,
            defaultNamespace: DatabaseRESTResponder.defaultNamespace(configuration.project), logger: logger)
        return listener(
            "database",
            DatabaseRESTResponder(
                engine: database, authenticator: authenticator, project: configuration.project, logger: logger,
                emulator: configuration.emulator, maxBody: configuration.limits.requestBytes(.database)),
            ready, server: sockets.transport)
    }
}
