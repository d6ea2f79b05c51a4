import HearthCore
import HearthDatabase
import HearthSQLite
import Hummingbird
import ServiceLifecycle
import Foundation

extension HearthServer {
    /// The Realtime Database over `<data-dir>/database.sqlite`, with the authorizer in force
    /// (``DatabaseRulesAuthorizer``: the JSON rules language).
    static func openDatabase(_ configuration: ServerConfiguration, directory: String) throws -> DatabaseEngine {
        let path = URL(fileURLWithPath: directory).appendingPathComponent("database.sqlite").path
        let store = try SQLiteDatabaseTreeStore(path: path)
        return DatabaseEngine(store: store, authorizer: DatabaseRulesAuthorizer(emulator: configuration.emulator))
    }

    /// The database port's listener (REST and event streams).
    func databaseListener(authenticator: Authenticator, ready: ReadyFile) -> any Service {
        listener(
            "database",
            DatabaseRESTResponder(engine: database, authenticator: authenticator, project: configuration.project, logger: logger),
            ready)
    }
}
