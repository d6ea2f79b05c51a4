/// The answer of the Realtime Database rules to one read or write: allowed or denied, the
/// rule that decided, and an explanation with `file:line:col` locations (for emulator mode).
public struct DatabaseRulesDecision: Sendable, CustomStringConvertible {
    public enum Outcome: String, Sendable {
        case allow
        /// No `.read`/`.write` on the way from the root granted the operation.
        case deny
        /// A `.write` granted the write but a `.validate` rule did not pass.
        case validationFailed = "validate-fail"
    }

    /// One rule evaluated for the request, and what it gave.
    public struct Attempt: Sendable {
        public enum Result: Sendable, Equatable {
            case allowed
            /// The rule was false; `at` is the sub-expression that made it so.
            case denied(at: SourceRange, expression: String)
            /// The rule failed with an error (which denies); `at` is where it arose.
            case error(message: String, at: SourceRange)
            /// The rule produced something other than a boolean (which denies).
            case notBoolean(type: String)
        }

        /// `.read`, `.write` or `.validate`.
        public var kind: String
        /// The rule's place in the rules tree (`/users/$uid/.write`).
        public var rulePath: String
        /// The data location it was evaluated at (`/users/alice`).
        public var dataPath: String
        public var rule: SourceRange
        public var result: Result
    }

    public var outcome: Outcome
    public var isAllowed: Bool { outcome == .allow }
    /// The rule that decided: the granting `.read`/`.write`, or the failing `.validate`; nil
    /// when no rule applied at all.
    public var rule: SourceRange?
    /// `file:line:col` of ``rule``.
    public var location: String?
    /// A human-readable explanation: which rule, where, and why.
    public var reason: String
    /// Every rule evaluated, in order.
    public var attempts: [Attempt]
    /// Expression evaluation steps used.
    public var steps: Int

    public var description: String { "\(outcome.rawValue): \(reason)" }
}

/// Limits for one request.
public struct DatabaseRulesLimits: Sendable {
    /// Expression nodes evaluated (over every rule of the request, including each
    /// `.validate` of a large write) before the request is denied.
    public var maxSteps: Int
    /// Longest string a rule may build with `+` or `replace()`.
    public var maxStringLength: Int

    public init(maxSteps: Int = 1_000_000, maxStringLength: Int = 10 * 1024 * 1024) {
        self.maxSteps = maxSteps
        self.maxStringLength = maxStringLength
    }
}
