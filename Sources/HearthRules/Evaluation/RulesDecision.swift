/// The answer to a request: allow or deny, the rule that decided, and why.
public struct RulesDecision: Sendable, CustomStringConvertible {
    public enum Outcome: String, Sendable { case allow, deny }

    /// One `allow` statement that applied to the request, and what its condition gave.
    public struct Attempt: Sendable {
        public enum Result: Sendable {
            case allowed
            /// The condition was false; `at` is the sub-expression that made it so.
            case denied(at: SourceRange, expression: String)
            /// The condition produced an error (which denies); `at` is where it arose.
            case error(message: String, at: SourceRange)
            /// The condition produced something other than a boolean.
            case notBoolean(type: String)
        }

        public var rule: SourceRange
        /// `allow read, write` as written.
        public var statement: String
        /// The match path of the block (`/databases/{database}/documents/users/{userId}`).
        public var matchPath: String
        public var result: Result
    }

    public var outcome: Outcome
    public var isAllowed: Bool { outcome == .allow }
    /// The `allow` statement that granted the request (nil when denied).
    public var rule: SourceRange?
    /// A human-readable explanation with `file:line:col` locations.
    public var reason: String
    /// Every `allow` statement evaluated, in order.
    public var attempts: [Attempt]
    /// Expression evaluation steps used.
    public var steps: Int
    /// Document accesses (`get`, `exists`, …) this evaluation counted.
    public var documentAccesses: Int
    /// Per-expression counts, when ``RulesEvaluationOptions/recordCoverage`` is set.
    public var coverage: RulesCoverage?
    /// What `debug()` calls printed: `file:line:col: value`.
    public var debugOutput: [String]

    public var description: String { "\(outcome.rawValue): \(reason)" }
}

/// Limits and extras for one evaluation.
public struct RulesEvaluationOptions: Sendable {
    /// Expression nodes evaluated per request before the request is denied.
    public var maxSteps: Int
    /// Calls made from inside user functions (Firebase: 20, so a condition may call `f1`,
    /// which calls down to `f21`). Deeper static chains are rejected at compile time.
    public var maxCallDepth: Int
    /// Record per-expression evaluation counts in the decision.
    public var recordCoverage: Bool
    /// Build a detailed reason for denials (which sub-expression was false or errored).
    /// Allowed requests cost the same either way.
    public var explain: Bool

    public init(maxSteps: Int = 10_000, maxCallDepth: Int = 20, recordCoverage: Bool = false, explain: Bool = true) {
        self.maxSteps = maxSteps
        self.maxCallDepth = maxCallDepth
        self.recordCoverage = recordCoverage
        self.explain = explain
    }

    public static var `default`: RulesEvaluationOptions { RulesEvaluationOptions() }
}

/// How often each expression of a ruleset was evaluated and what it gave. Indexed by
/// ``Expr/id``; merge the coverage of many decisions to build a report.
public struct RulesCoverage: Sendable, Hashable {
    public struct Counts: Sendable, Hashable {
        public var evaluations = 0
        public var trueCount = 0
        public var falseCount = 0
        public var errorCount = 0
        /// Evaluations that produced a non-boolean value.
        public var valueCount: Int { evaluations - trueCount - falseCount - errorCount }
    }

    public private(set) var counts: [Counts]

    public init(expressionCount: Int) { counts = Array(repeating: Counts(), count: expressionCount) }

    public subscript(id: Int) -> Counts { id >= 0 && id < counts.count ? counts[id] : Counts() }

    public mutating func merge(_ other: RulesCoverage) {
        if other.counts.count > counts.count { counts += Array(repeating: Counts(), count: other.counts.count - counts.count) }
        for i in other.counts.indices {
            counts[i].evaluations += other.counts[i].evaluations
            counts[i].trueCount += other.counts[i].trueCount
            counts[i].falseCount += other.counts[i].falseCount
            counts[i].errorCount += other.counts[i].errorCount
        }
    }

    mutating func record(_ id: Int, _ outcome: Int) {
        counts[id].evaluations += 1
        switch outcome {
        case 1: counts[id].trueCount += 1
        case 0: counts[id].falseCount += 1
        case -1: counts[id].errorCount += 1
        default: break
        }
    }
}

extension RulesCoverage {
    /// One expression of the ruleset with its counts, for reports.
    public struct Entry: Sendable {
        public var id: Int
        public var range: SourceRange
        public var text: String
        public var counts: Counts
    }

    /// Every expression of `ruleset` in source order with its counts (including those never
    /// evaluated, which have zero counts) — the data behind an HTML or JSON coverage report.
    public func entries(for ruleset: Ruleset) -> [Entry] {
        ruleset.expressions
            .filter { if case .error = $0.kind { false } else { true } }
            .map { Entry(id: $0.id, range: $0.range, text: ruleset.text(of: $0), counts: self[$0.id]) }
            .sorted { ($0.range.start.offset, -$0.range.end.offset) < ($1.range.start.offset, -$1.range.end.offset) }
    }
}
