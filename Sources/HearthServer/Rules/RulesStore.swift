public import HearthCore
public import HearthRules
public import Logging
import Synchronization

/// The security rules in force for one service (Firestore or Storage), replaced atomically:
/// rules from a file apply to every project; in emulator mode, rules loaded through the
/// emulator endpoint apply to their project and take precedence.
public final class RulesStore: Sendable {
    /// A compiled ruleset and what the server needs to know about it.
    public final class Loaded: Sendable {
        public let ruleset: Ruleset
        /// Where it came from: a file path or `emulator endpoint`.
        public let origin: String
        /// Whether any rule calls `get`, `exists`, `getAfter` or `existsAfter` (reads then run
        /// inside a storage snapshot so those calls can see documents).
        public let usesDocuments: Bool
        /// Expression counts over every evaluation (recorded in emulator mode).
        let coverage: Mutex<RulesCoverage>

        public init(_ ruleset: Ruleset, origin: String) {
            self.ruleset = ruleset
            self.origin = origin
            usesDocuments = ruleset.expressions.contains { e in
                guard case .call(let f, _) = e.kind else { return false }
                switch f.kind {
                case .identifier(let name), .member(_, let name): return ["get", "exists", "getAfter", "existsAfter"].contains(name)
                default: return false
                }
            }
            coverage = Mutex(RulesCoverage(expressionCount: ruleset.expressions.count))
        }

        public var accumulatedCoverage: RulesCoverage { coverage.withLock { $0 } }

        func record(_ c: RulesCoverage?) {
            guard let c else { return }
            coverage.withLock { $0.merge(c) }
        }
    }

    let fromFile: Mutex<Loaded?>
    let perProject: Mutex<[String: Loaded]>
    /// `firestore` or `storage`: this store's entries in ``shared``.
    let service: String
    /// Where rules loaded at run time go, so that every server sharing it judges with them (nil:
    /// this server alone; they live here only).
    let shared: (any RuntimeRulesStore)?
    /// The shared version last loaded (-1: none yet), and each scope's text as last loaded (so an
    /// unchanged entry keeps its compiled ruleset and coverage).
    let synchronized = Mutex<(version: Int64, sources: [String: String?])>((-1, [:]))
    let logger: Logger

    /// Rules for `service` (`firestore` or `storage`); with `shared`, those loaded at run time
    /// are published there and loaded from there (``synchronize()``).
    public init(service: String = "", shared: (any RuntimeRulesStore)? = nil, logger: Logger = Logger(label: "hearth.rules")) {
        fromFile = Mutex(nil)
        perProject = Mutex([:])
        self.service = service
        self.shared = shared
        self.logger = logger
    }

    /// The rules for a project: the emulator-loaded ones, else the file's, else none.
    public func rules(for project: String) -> Loaded? {
        if let p = perProject.withLock({ $0[project] }) { return p }
        return fromFile.withLock { $0 }
    }

    public func setFileRules(_ loaded: Loaded?) { fromFile.withLock { $0 = loaded } }

    public func setProjectRules(_ loaded: Loaded?, project: String) { perProject.withLock { $0[project] = loaded } }

    /// Loads rules at run time (the emulator's endpoints): `loaded`, compiled from `source`, for
    /// `scope` — a project, or `""` for every project (replacing the file's); nil clears. With a
    /// shared store they are published there first, so every server sharing it judges with them.
    public func publish(_ loaded: Loaded?, source: String?, fileName: String, scope: String) async throws {
        if let shared {
            do {
                try await shared.publish(RuntimeRules(service: service, scope: scope, fileName: fileName, source: source))
            } catch let error as HearthError {
                throw error
            } catch {
                throw HearthError(.unavailable, "The rules could not be published to the other servers: \(error)")
            }
            synchronized.withLock { $0.sources[scope] = .some(source) }
        }
        install(loaded, scope: scope)
    }

    func install(_ loaded: Loaded?, scope: String) {
        if scope.isEmpty { setFileRules(loaded) } else { setProjectRules(loaded, project: scope) }
    }

    /// With a shared store: loads what other servers published since the last call (one read of
    /// the version when nothing changed). Call it before judging a request with these rules.
    /// UNAVAILABLE when the store cannot be read.
    public func synchronize() async throws(HearthError) {
        guard let shared else { return }
        do {
            let version = try await shared.version()
            if version == synchronized.withLock({ $0.version }) { return }
            let snapshot = try await shared.snapshot()
            for entry in snapshot.rules where entry.service == service {
                if synchronized.withLock({ $0.sources[entry.scope] }) == .some(entry.source) { continue }
                var loaded: Loaded?
                if let source = entry.source {
                    do {
                        loaded = Loaded(try Ruleset.compile(source, fileName: entry.fileName), origin: "emulator endpoint")
                    } catch {
                        // Published by a server whose compiler accepted them (another version of Hearth).
                        logger.error(
                            "rules published by another server do not compile here; keeping the ones in force",
                            metadata: ["service": "\(service)", "scope": "\(entry.scope)", "error": "\(error)"])
                        continue
                    }
                }
                install(loaded, scope: entry.scope)
                synchronized.withLock { $0.sources[entry.scope] = .some(entry.source) }
            }
            synchronized.withLock { s in s.version = max(s.version, snapshot.version) }
        } catch let error as HearthError {
            throw error
        } catch {
            throw HearthError(.unavailable, "The security rules could not be read from the database: \(error)")
        }
    }
}
