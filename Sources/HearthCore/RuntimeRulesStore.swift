import Synchronization

/// Security rules loaded while the server runs (emulator mode: the Firestore emulator's
/// `PUT /emulator/v1/projects/{p}:securityRules`, Storage's `/internal/setRules` and
/// `/internal/reset`), as a ``RuntimeRulesStore`` keeps them.
public struct RuntimeRules: Sendable, Equatable {
    /// `firestore` or `storage`.
    public var service: String
    /// The project they hold for, or `""` for every project (Storage's rules replace the file's).
    public var scope: String
    /// The file name given with them (shown in compile errors and coverage).
    public var fileName: String
    /// The rules' text; nil when they were cleared (Storage's `/internal/reset`).
    public var source: String?

    public init(service: String, scope: String, fileName: String, source: String?) {
        self.service = service
        self.scope = scope
        self.fileName = fileName
        self.source = source
    }
}

/// Where rules loaded at run time are kept so that every server sharing the store judges with
/// them: servers over one PostgreSQL database (`PostgresRuntimeRulesStore`) read its version
/// before each request the rules judge and load what changed. One server alone keeps them in
/// its `RulesStore` and needs none. Conformance: `RuntimeRulesStoreConformance`.
public protocol RuntimeRulesStore: Sendable {
    /// A number that grows with every ``publish(_:)``: unchanged means nothing changed.
    func version() async throws -> Int64
    /// Every entry, and the version they make up.
    func snapshot() async throws -> (version: Int64, rules: [RuntimeRules])
    /// Replaces the entry of `rules.service` and `rules.scope`; returns the version it made.
    @discardableResult
    func publish(_ rules: RuntimeRules) async throws -> Int64
}

/// The store in memory: servers of one process (tests) sharing it.
public final class InMemoryRuntimeRulesStore: RuntimeRulesStore {
    private let state = Mutex<(version: Int64, rules: [String: RuntimeRules])>((0, [:]))

    public init() {}

    public func version() async throws -> Int64 { state.withLock { $0.version } }

    public func snapshot() async throws -> (version: Int64, rules: [RuntimeRules]) {
        state.withLock { s in (s.version, s.rules.keys.sorted().map { s.rules[$0]! }) }
    }

    public func publish(_ rules: RuntimeRules) async throws -> Int64 {
        state.withLock { s in
            s.version += 1
            s.rules[rules.service + "\u{0}" + rules.scope] = rules
            return s.version
        }
    }
}
