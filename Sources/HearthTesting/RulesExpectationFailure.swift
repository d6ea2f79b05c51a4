public import HearthRules

/// A request was not decided as a test expected. Its description names the request, the
/// expectation and the rule (`file:line:col` and text) or the denial reason that decided.
public struct RulesExpectationFailure: Error, Sendable, CustomStringConvertible {
    public var expected: RulesDecision.Outcome
    public var request: RulesTestRequest
    public var decision: RulesDecision
    /// What went wrong, e.g. `expected deny, but allowed by firestore.rules:5:7 "allow read"`.
    public var message: String
    /// `Module/File.swift:line` of the failing expectation.
    public var location: String

    public var description: String { "\(location): \(request): \(message)" }
}
