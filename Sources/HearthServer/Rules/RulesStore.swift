public import HearthRules
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

    public init() {
        fromFile = Mutex(nil)
        perProject = Mutex([:])
    }

    /// The rules for a project: the emulator-loaded ones, else the file's, else none.
    public func rules(for project: String) -> Loaded? {
        if let p = perProject.withLock({ $0[project] }) { return p }
        return fromFile.withLock { $0 }
    }

    public func setFileRules(_ loaded: Loaded?) { fromFile.withLock { $0 = loaded } }

    public func setProjectRules(_ loaded: Loaded?, project: String) { perProject.withLock { $0[project] = loaded } }
}
