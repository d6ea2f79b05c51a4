import HearthCore
import HearthDatabase
import Logging
import ServiceLifecycle
import Foundation
import Synchronization

/// Reloads the Realtime Database rules file (`--database-rules`, `firebase.json`
/// `database.rules`) into its namespace when the file changes (modification time, size or
/// inode, polled): the engine compiles it, rebuilds the `.indexOn` indexes it changes and
/// tells the event streams, as `PUT /.settings/rules.json` does. A file that does not parse
/// is logged and the rules in force stay.
struct DatabaseRulesFileWatcher: Service {
    let path: String
    let namespace: String
    let engine: DatabaseEngine
    let logger: Logger
    let interval: Duration
    /// The version of the file last loaded or looked at.
    let seen = RulesFileWatcher.StampBox()

    init(path: String, namespace: String, engine: DatabaseEngine, logger: Logger, interval: Duration = .milliseconds(500)) {
        self.path = path
        self.namespace = namespace
        self.engine = engine
        self.logger = logger
        self.interval = interval
    }

    /// Takes the file as it is now as loaded (the server loaded it at start).
    func rememberCurrentVersion() {
        let version = RulesFileWatcher.stamp(path)
        seen.stamp.withLock { $0 = version }
    }

    /// Reads the file and makes it the namespace's rules (throws what is wrong with it).
    func load() async throws {
        let version = RulesFileWatcher.stamp(path)
        seen.stamp.withLock { $0 = version }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HearthError(.failedPrecondition, "Cannot read the database rules file \(path).")
        }
        do {
            try await engine.setRules(String(decoding: data, as: UTF8.self), namespace: namespace, auth: .admin)
        } catch let error as DatabaseError {
            throw HearthError(.failedPrecondition, "\(path): \(error.message)")
        }
    }

    func run() async throws {
        try? await cancelWhenGracefulShutdown { try await watch() }
    }

    func watch() async throws {
        while !Task.isCancelled {
            try await Task.sleep(for: interval)
            let now = RulesFileWatcher.stamp(path)
            let changed = seen.stamp.withLock { last in
                defer { last = now }
                return now != last && now != nil
            }
            guard changed else { continue }
            do {
                try await load()
                logger.notice("reloaded database rules", metadata: ["file": "\(path)", "namespace": "\(namespace)"])
            } catch let error as HearthError {
                logger.error("database rules not reloaded; the previous rules stay in force\n\(error.message)")
            } catch {
                logger.error("database rules not reloaded; the previous rules stay in force\n\(error)")
            }
        }
    }
}
