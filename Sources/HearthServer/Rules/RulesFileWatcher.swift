import HearthRules
public import Logging
public import ServiceLifecycle
import Foundation
import Synchronization

/// Loads a rules file and reloads it when it changes, without a restart. A file that does
/// not compile is reported (`file:line:col` with the source line and a caret) and never
/// replaces the rules in force.
public struct RulesFileWatcher: Service {
    public let path: String
    public let store: RulesStore
    let logger: Logger
    let interval: Duration
    /// The version of the file last looked at, so a change made before watching starts counts.
    let seen = StampBox()

    public init(path: String, store: RulesStore, logger: Logger, interval: Duration = .milliseconds(500)) {
        self.path = path
        self.store = store
        self.logger = logger
        self.interval = interval
    }

    /// What identifies a version of the file: modification time, size and inode.
    final class StampBox: Sendable {
        let stamp = Mutex<Stamp?>(nil)
    }

    struct Stamp: Equatable, Sendable {
        var modified: Date?
        var size: Int?
        var inode: Int?
    }

    func stamp() -> Stamp? { Self.stamp(path) }

    static func stamp(_ path: String) -> Stamp? {
        guard let a = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        return Stamp(modified: a[.modificationDate] as? Date, size: (a[.size] as? NSNumber)?.intValue,
                     inode: (a[.systemFileNumber] as? NSNumber)?.intValue)
    }

    /// Compiles the file; on success it becomes the rules in force.
    @discardableResult
    public func load() throws -> RulesStore.Loaded {
        let version = stamp()
        seen.stamp.withLock { $0 = version }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RulesLoadError(message: "Cannot read rules file \(path).")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw RulesLoadError(message: "Rules file \(path) is not UTF-8.")
        }
        let ruleset: Ruleset
        do {
            ruleset = try Ruleset.compile(text, fileName: path)
        } catch {
            throw RulesLoadError(message: "Rules file \(path) does not compile:\n" + error.rendered)
        }
        let loaded = RulesStore.Loaded(ruleset, origin: path)
        store.setFileRules(loaded)
        for w in ruleset.warnings { logger.warning("rules warning", metadata: ["warning": "\(w.rendered(in: ruleset.source))"]) }
        return loaded
    }

    public func run() async throws {
        try? await cancelWhenGracefulShutdown { try await watch() }
    }

    func watch() async throws {
        while !Task.isCancelled {
            try await Task.sleep(for: interval)
            let now = stamp()
            let changed = seen.stamp.withLock { last in
                defer { last = now }
                return now != last && now != nil
            }
            guard changed else { continue }
            do {
                try load()
                logger.notice("reloaded security rules", metadata: ["file": "\(path)"])
            } catch let e as RulesLoadError {
                logger.error("security rules not reloaded; the previous rules stay in force\n\(e.message)")
            }
        }
    }
}

public struct RulesLoadError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
