public import HearthRules

/// The outcome of one case of a cases file.
public struct RulesCaseResult: Sendable {
    public var name: String
    public var passed: Bool
    /// The decision (nil when the case could not be run).
    public var decision: RulesDecision?
    /// `allowed by firestore.rules:12:7 "allow read: if …"`, `denied: …`, or what failed.
    public var message: String
}

extension RulesTestBed {
    /// Seeds the bed with a cases file's documents, time and bucket.
    public func load(_ file: RulesCasesFile) {
        for (k, v) in file.documents { documents[k] = v }
        if let t = file.time { time = t }
        if let b = file.bucket { bucket = b }
    }

    /// Decides one case and compares it with its expectation.
    public func run(_ c: RulesCasesFile.Case) -> RulesCaseResult {
        if ruleset.service == .storage, c.request.data != nil, c.request.object == nil {
            return RulesCaseResult(name: c.name, passed: false, decision: nil,
                                   message: "\"data\" of a Storage case may only hold object properties (size, contentType, metadata, …)")
        }
        let d = decide(c.request)
        if let problem = mismatch(d, expected: c.expect, reason: c.reason) {
            return RulesCaseResult(name: c.name, passed: false, decision: d, message: problem)
        }
        return RulesCaseResult(name: c.name, passed: true, decision: d, message: explanation(d))
    }

    /// Runs every case of a file (after loading its documents).
    public func run(_ file: RulesCasesFile) -> [RulesCaseResult] {
        load(file)
        return file.cases.map { run($0) }
    }
}
