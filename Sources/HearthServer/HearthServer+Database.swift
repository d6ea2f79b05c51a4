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
        if let file = configuration.databaseRulesFile {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw HearthError(.failedPrecondition, "Cannot read the database rules file \(file).")
            }
            do {
                try await engine.setRules(
                    String(decoding: data, as: UTF8.self), namespace: DatabaseRESTResponder.defaultNamespace(configuration.project), auth: .admin)
            } catch let error as DatabaseError {
                throw HearthError(.failedPrecondition, "\(file): \(error.message)")
            }
            logger.info("loaded database rules", metadata: ["file": "\(file)"])
        }
        return engine
    }

    /// The database port's listener: REST and event streams, and the SDKs' WebSocket protocol
    /// (`/.ws`, ``DatabaseWebSocketEndpoint``).
    func databaseListener(authenticator: Authenticator, ready: ReadyFile) -> any Service {
        let sockets = DatabaseWebSocketEndpoint(
            engine: database, authenticator: authenticator,
            defaultNamespace: DatabaseRESTResponder.defaultNamespace(configuration.project), logger: logger)
        return listener(
            "database",
            DatabaseRESTResponder(engine: database, authenticator: authenticator, project: configuration.project, logger: logger),
            ready, server: sockets.transport)
    }
}
