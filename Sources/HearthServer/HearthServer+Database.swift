import HearthCore
package import HearthDatabase
package import HearthDocuments
import Hummingbird
import ServiceLifecycle
import Foundation
import Logging

extension HearthServer {
    /// The Realtime Database's authorizer for the composition root: ``DatabaseRulesAuthorizer``,
    /// the JSON rules language (the rules file, if any, is loaded by ``init(configuration:engines:readiness:logger:)``).
    package static func databaseAuthorizer(emulator: Bool) -> any DatabaseAuthorizer {
        DatabaseRulesAuthorizer(emulator: emulator)
    }

    /// The Firestore index definitions of `firestore.indexes.json` (the Firebase CLI's format) for `database`.
    package static func indexDefinitions(file: String, database: String) throws -> [IndexDefinition] {
        try IndexesFile.load(file, database: database)
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
