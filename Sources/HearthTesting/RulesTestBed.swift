import Foundation
public import HearthCore
public import HearthRules

/// A ruleset with seeded documents, for deciding requests in tests without a server.
///
/// ```swift
/// let bed = try RulesTestBed(rules: rulesText, documents: ["users/alice": ["owner": .string("alice")]])
/// try bed.expectAllowed(.get, "/users/alice", as: "alice")
/// try bed.expectDenied(.update, "/users/bob", as: "alice", data: ["owner": .string("alice")])
/// ```
///
/// The `expect…` helpers throw a ``RulesExpectationFailure`` naming the rule or the reason
/// that decided; in a Swift Testing `@Test func … throws` a thrown failure fails the test.
/// Every decision's coverage is accumulated in ``coverage``.
public final class RulesTestBed {
    public let ruleset: Ruleset
    /// Stored Firestore documents by path (`users/alice`), in the `(default)` database.
    public var documents: [String: [String: Value]]
    /// `request.time` for requests that do not set one.
    public var time: Timestamp
    /// Options for every evaluation (coverage is always recorded).
    public var options: RulesEvaluationOptions
    /// The Storage bucket of Storage requests.
    public var bucket: String
    /// Coverage merged over every request decided so far.
    public private(set) var coverage: RulesCoverage

    /// Compiles `rules`; a compile error is thrown with its `file:line:col` diagnostics.
    public init(rules: String, fileName: String = "firestore.rules", documents: [String: [String: Value]] = [:],
                time: Timestamp? = nil, bucket: String = "default-bucket") throws(RulesCompileError) {
        let compiled = try Ruleset.compile(rules, fileName: fileName)
        var seeded: [String: [String: Value]] = [:]
        for (k, v) in documents { seeded[RulesTestRequest.trimmed(k)] = v }
        ruleset = compiled
        self.documents = seeded
        self.time = time ?? RulesTestBed.now()
        self.bucket = bucket
        options = RulesEvaluationOptions()
        coverage = RulesCoverage(expressionCount: compiled.expressions.count)
    }

    /// The coverage report of every request decided so far.
    public var coverageReport: RulesCoverageReport { RulesCoverageReport(ruleset: ruleset, coverage: coverage) }

    static func now() -> Timestamp {
        Timestamp(microseconds: Int64(Date().timeIntervalSince1970 * 1_000_000))
    }

    // MARK: Deciding

    /// Decides a request as a server would, against ``documents``. `getAfter()` sees the
    /// request's own write.
    public func decide(_ r: RulesTestRequest) -> RulesDecision {
        var opts = options
        opts.recordCoverage = true
        let (request, lookup) = rulesRequest(r)
        var ledger: DocumentAccessLedger = ruleset.service == .storage ? .storage : .singleDocument
        let d = ruleset.evaluate(request, documents: lookup, ledger: &ledger, options: opts)
        if let c = d.coverage { coverage.merge(c) }
        return d
    }

    /// The resolved method of a request (`read`/`write` shorthands resolved).
    public func resolvedMethod(_ r: RulesTestRequest) -> RulesMethod {
        switch r.method {
        case .get, .read: return .get
        case .list: return .list
        case .create: return .create
        case .update: return .update
        case .delete: return .delete
        case .write:
            let exists: Bool
            if ruleset.service == .storage {
                exists = r.existingObject != nil
                if r.object == nil { return .delete }
            } else {
                exists = documents[RulesTestRequest.trimmed(r.path)] != nil
                if r.data == nil { return .delete }
            }
            return exists ? .update : .create
        }
    }

    func rulesRequest(_ r: RulesTestRequest) -> (RulesRequest, RulesDocumentSet) {
        let method = resolvedMethod(r)
        let path = RulesTestRequest.trimmed(r.path)
        let time = r.time ?? self.time
        var docs = RulesDocumentSet()
        for (k, v) in documents { docs.before[RulesDocumentSet.key(database: "(default)", path: ResourcePath(parsing: k))] = v }
        if ruleset.service == .storage {
            let target: RulesRequest.Target = method == .list
                ? .storagePrefix(bucket: bucket, prefix: path.isEmpty ? "" : path + "/")
                : .storageObject(bucket: bucket, name: path)
            func fill(_ o: RulesStorageObject?) -> RulesValue? {
                guard var o else { return nil }
                if o.name.isEmpty { o.name = path }
                if o.bucket.isEmpty { o.bucket = bucket }
                return o.rulesValue
            }
            let request = RulesRequest(method: method, target: target, auth: r.auth, time: time,
                                       resource: method == .list ? nil : fill(r.existingObject),
                                       newResource: method == .create || method == .update ? fill(r.object) : nil)
            return (request, docs)
        }
        let rp = ResourcePath(parsing: path)
        if method == .list {
            let q = r.query ?? RulesQuery()
            if let group = r.collectionGroup {
                return (RulesRequest(method: .list,
                                     target: .firestoreCollectionGroup(database: "(default)", parent: rp, collectionId: group),
                                     auth: r.auth, time: time, query: q), docs)
            }
            return (.firestoreQuery(collection: rp, auth: r.auth, time: time, query: q), docs)
        }
        let key = RulesDocumentSet.key(database: "(default)", path: rp)
        switch method {
        case .create, .update: docs.writes[key] = .some(r.data ?? [:])
        case .delete: docs.writes[key] = .some(nil)
        default: break
        }
        let after = method == .create || method == .update ? (r.data ?? [:]) : nil
        return (.firestore(method, path: rp, auth: r.auth, time: time, existing: documents[path], after: after), docs)
    }

    // MARK: Expectations

    /// Decides `request` and throws unless it is allowed. Returns the decision.
    @discardableResult
    public func expectAllowed(_ request: RulesTestRequest, fileID: String = #fileID, line: Int = #line) throws(RulesExpectationFailure)
        -> RulesDecision
    {
        try expect(.allow, request, reason: nil, fileID: fileID, line: line)
    }

    /// Decides `request` and throws unless it is denied (and, when given, unless the denial's
    /// reason contains `reason`). Returns the decision.
    @discardableResult
    public func expectDenied(_ request: RulesTestRequest, reason: String? = nil, fileID: String = #fileID, line: Int = #line)
        throws(RulesExpectationFailure) -> RulesDecision
    {
        try expect(.deny, request, reason: reason, fileID: fileID, line: line)
    }

    /// `try bed.expectAllowed(.get, "/users/alice", as: "alice")`; `data` is the document
    /// after a write, `query` the constraints of a `list`.
    @discardableResult
    public func expectAllowed(_ method: RulesTestRequest.Method, _ path: String, as uid: String? = nil,
                              claims: [String: Value] = [:], data: [String: Value]? = nil, query: RulesQuery? = nil,
                              fileID: String = #fileID, line: Int = #line) throws(RulesExpectationFailure) -> RulesDecision {
        try expect(.allow, RulesTestRequest(method, path, auth: uid.map { RulesTestRequest.auth($0, claims: claims) },
                                            data: data, query: query), reason: nil, fileID: fileID, line: line)
    }

    /// `try bed.expectDenied(.update, "/users/bob", as: "alice", data: [...])`.
    @discardableResult
    public func expectDenied(_ method: RulesTestRequest.Method, _ path: String, as uid: String? = nil,
                             claims: [String: Value] = [:], data: [String: Value]? = nil, query: RulesQuery? = nil,
                             reason: String? = nil, fileID: String = #fileID, line: Int = #line)
        throws(RulesExpectationFailure) -> RulesDecision
    {
        try expect(.deny, RulesTestRequest(method, path, auth: uid.map { RulesTestRequest.auth($0, claims: claims) },
                                           data: data, query: query), reason: reason, fileID: fileID, line: line)
    }

    /// Storage: `try bed.expectAllowed(.create, "users/alice/cat.png", as: "alice",
    /// upload: RulesStorageObject(name: "", bucket: "", size: 1024, contentType: "image/png"))`.
    @discardableResult
    public func expectAllowed(_ method: RulesTestRequest.Method, object path: String, as uid: String? = nil,
                              upload: RulesStorageObject? = nil, existing: RulesStorageObject? = nil,
                              fileID: String = #fileID, line: Int = #line) throws(RulesExpectationFailure) -> RulesDecision {
        try expect(.allow, RulesTestRequest(method, path, auth: uid.map { RulesTestRequest.auth($0) }, object: upload,
                                            existingObject: existing), reason: nil, fileID: fileID, line: line)
    }

    /// Storage: the request must be denied.
    @discardableResult
    public func expectDenied(_ method: RulesTestRequest.Method, object path: String, as uid: String? = nil,
                             upload: RulesStorageObject? = nil, existing: RulesStorageObject? = nil, reason: String? = nil,
                             fileID: String = #fileID, line: Int = #line) throws(RulesExpectationFailure) -> RulesDecision {
        try expect(.deny, RulesTestRequest(method, path, auth: uid.map { RulesTestRequest.auth($0) }, object: upload,
                                           existingObject: existing), reason: reason, fileID: fileID, line: line)
    }

    /// Decides `request` and checks the outcome (and a reason substring).
    @discardableResult
    public func expect(_ outcome: RulesDecision.Outcome, _ request: RulesTestRequest, reason: String? = nil,
                       fileID: String = #fileID, line: Int = #line) throws(RulesExpectationFailure) -> RulesDecision {
        let d = decide(request)
        if let problem = mismatch(d, expected: outcome, reason: reason) {
            throw RulesExpectationFailure(expected: outcome, request: request, decision: d,
                                          message: problem, location: "\(fileID):\(line)")
        }
        return d
    }

    /// Why a decision does not meet an expectation, or nil when it does.
    public func mismatch(_ d: RulesDecision, expected: RulesDecision.Outcome, reason: String?) -> String? {
        if d.outcome != expected {
            return "expected \(expected.rawValue), but " + explanation(d)
        }
        if let reason, !d.reason.contains(reason) {
            return "denied as expected, but the reason does not contain \"\(reason)\": \(d.reason)"
        }
        return nil
    }

    /// `allowed by firestore.rules:12:7 "allow read: if …"` or `denied: <reason>`.
    public func explanation(_ d: RulesDecision) -> String {
        guard d.isAllowed else {
            return "denied: " + (d.reason.hasPrefix("Denied: ") ? String(d.reason.dropFirst(8)) : d.reason)
        }
        guard let rule = d.rule else { return "allowed: " + d.reason }
        var text = ruleset.source.text(of: rule).split(whereSeparator: \.isNewline)
            .map { $0.trimmingPrefix(while: \.isWhitespace) }.joined(separator: " ")
        if text.count > 100 { text = String(text.prefix(97)) + "…" }
        return "allowed by \(ruleset.location(rule)) \"\(text)\""
    }
}
