import HearthCore

/// A compiled rules file: immutable, shareable between threads, and cheap to evaluate.
///
/// ```swift
/// let rules = try Ruleset.compile(text, fileName: "firestore.rules")
/// var ledger = DocumentAccessLedger.singleDocument
/// let decision = rules.evaluate(.firestore(.get, path: ResourcePath(parsing: "users/alice"),
///                                          auth: RulesAuth(uid: "alice"), time: now, existing: data),
///                               documents: store, ledger: &ledger)
/// if !decision.isAllowed { print(decision.reason) }
/// ```
public final class Ruleset: Sendable {
    public let source: RulesSource
    /// `1` or `2` (`rules_version`).
    public let version: Int
    public let service: RulesService
    /// The file's top-level scope; its only child is the `service` block.
    public let root: RulesBlock
    /// Every expression node, indexed by ``Expr/id`` (for coverage reports).
    public let expressions: [Expr]
    /// Diagnostics that did not prevent loading.
    public let warnings: [Diagnostic]
    /// The full match path of every block (`/databases/{database}/documents/users/{userId}`).
    let fullPatterns: [ObjectIdentifier: String]

    private init(source: RulesSource, version: Int, service: RulesService, root: RulesBlock, expressions: [Expr],
                 warnings: [Diagnostic]) {
        self.source = source
        self.version = version
        self.service = service
        self.root = root
        self.expressions = expressions
        self.warnings = warnings
        var patterns: [ObjectIdentifier: String] = [:]
        func walk(_ b: RulesBlock, _ prefix: String) {
            let here = prefix + b.patternText
            patterns[ObjectIdentifier(b)] = here
            for c in b.matches { walk(c, here) }
        }
        walk(root, "")
        fullPatterns = patterns
    }

    /// Compiles a rules file. Throws every error found (with warnings), each renderable as
    /// `file:line:col: message` plus the source line and a caret line.
    public static func compile(_ text: String, fileName: String = "firestore.rules") throws(RulesCompileError) -> Ruleset {
        let source = RulesSource(name: fileName, text: text)
        if source.bytes.count > HearthRules.maxSourceBytes {
            let start = SourcePosition(offset: 0, line: 1, column: 1)
            throw RulesCompileError(source: source, diagnostics: [
                Diagnostic(.error, "The ruleset is \(source.bytes.count) bytes; the limit is \(HearthRules.maxSourceBytes) bytes.",
                           at: SourceRange(start: start, end: start)),
            ])
        }
        var parser = Parser(source: source)
        let parsed = parser.parseFile()
        var diagnostics = parsed.diagnostics
        var checker = Checker(version2: parsed.version == "2", service: parsed.service)
        checker.check(parsed.root)
        diagnostics += checker.diagnostics
        diagnostics.sort { ($0.range.start.offset, $0.severity == .error ? 0 : 1) < ($1.range.start.offset, $1.severity == .error ? 0 : 1) }
        guard !diagnostics.contains(where: { $0.severity == .error }), let service = parsed.service else {
            throw RulesCompileError(source: source, diagnostics: diagnostics)
        }
        return Ruleset(source: source, version: parsed.version == "2" ? 2 : 1, service: service, root: parsed.root,
                       expressions: parsed.expressions, warnings: diagnostics)
    }

    /// The source text of an expression.
    public func text(of e: Expr) -> String { source.text(of: e.range) }

    /// `file:line:col` of a range.
    public func location(_ r: SourceRange) -> String { source.location(r) }

    // MARK: Evaluation

    /// Decides one request.
    ///
    /// Every complete match of the request path is found; within them, every `allow` whose
    /// methods cover the request's method is evaluated in source order until one is `true`
    /// (allow). `false`, an error or a non-boolean denies that statement; no statement
    /// allowing means deny. `get()`/`exists()`/`getAfter()`/`existsAfter()` read through
    /// `documents` and count against `ledger` (share one ledger across the writes of a batch
    /// or transaction). A `list` request is judged for every document its query could return
    /// (see `QueryModel`): the request's ``RulesRequest/query`` supplies the constraints.
    public func evaluate(_ request: RulesRequest, documents: (any RulesDocumentLookup)? = nil,
                         ledger: inout DocumentAccessLedger, options: RulesEvaluationOptions = .default) -> RulesDecision {
        func deny(_ reason: String) -> RulesDecision {
            RulesDecision(outcome: .deny, rule: nil, reason: reason, attempts: [], steps: 0, documentAccesses: 0,
                          coverage: options.recordCoverage ? RulesCoverage(expressionCount: expressions.count) : nil,
                          debugOutput: [])
        }
        guard request.target.service == service else {
            return deny("This ruleset is for \(service.rawValue), not \(request.target.service.rawValue).")
        }
        if service == .storage, request.method == .list, version < 2 {
            return deny("Storage 'list' requests need rules_version = '2'.")
        }
        guard request.method == .list else {
            return evaluateOnce(request, elements: Self.elements(request.target, documentId: nil), query: nil,
                                documents: documents, ledger: &ledger, options: options)
        }
        guard let disjuncts = QueryModel.disjuncts(of: request.query?.filter, limit: 100) else {
            return deny("The query has more than 100 disjunctions (OR, in, array-contains-any).")
        }
        var total: RulesDecision?
        for conjunction in disjuncts {
            let model = QueryModel(conjunction)
            var d = evaluateOnce(request, elements: Self.elements(request.target, documentId: model.documentId),
                                 query: model, documents: documents, ledger: &ledger, options: options)
            if var t = total {
                t.steps += d.steps
                t.documentAccesses += d.documentAccesses
                t.debugOutput += d.debugOutput
                if let c = d.coverage { t.coverage?.merge(c) }
                d.steps = t.steps
                d.documentAccesses = t.documentAccesses
                d.debugOutput = t.debugOutput
                d.coverage = t.coverage
                total = t
            } else {
                total = d
            }
            if !d.isAllowed {
                if disjuncts.count > 1 {
                    let where_ = conjunction.map { "\($0.0.canonical) \($0.1.rawValue) \(RulesValue($0.2))" }.joined(separator: " && ")
                    d.reason = "for the part of the query where \(where_.isEmpty ? "(no filter)" : where_): " + d.reason
                }
                return d
            }
        }
        return total!
    }

    /// The path elements a target is matched against.
    static func elements(_ target: RulesRequest.Target, documentId: String?) -> [PathElement] {
        let last: PathElement = documentId.map { .segment($0) } ?? .unknownId
        switch target {
        case .firestoreDocument(let db, let path):
            return (["databases", db, "documents"] + path.segments).map { .segment($0) }
        case .firestoreCollection(let db, let path):
            return (["databases", db, "documents"] + path.segments).map { .segment($0) } + [last]
        case .firestoreCollectionGroup(let db, let parent, let collectionId):
            return (["databases", db, "documents"] + parent.segments).map { .segment($0) } + [.anyPath, .segment(collectionId), last]
        case .storageObject(let bucket, let name):
            return RulesPath.storageObject(bucket: bucket, name: name).segments.map { .segment($0) }
        case .storagePrefix(let bucket, let prefix):
            let segs = ["b", bucket, "o"] + prefix.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            return segs.map { .segment($0) } + [last]
        }
    }

    /// `request.path`: the document's (or object's) path; for queries, the collection's.
    static func requestPath(_ target: RulesRequest.Target) -> RulesPath {
        switch target {
        case .firestoreDocument(let db, let path), .firestoreCollection(let db, let path):
            return RulesPath.firestoreDocument(database: db, path: path.segments)
        case .firestoreCollectionGroup(let db, let parent, let collectionId):
            return RulesPath.firestoreDocument(database: db, path: parent.segments + [collectionId])
        case .storageObject(let bucket, let name):
            return RulesPath.storageObject(bucket: bucket, name: name)
        case .storagePrefix(let bucket, let prefix):
            return RulesPath(["b", bucket, "o"] + prefix.split(separator: "/").map(String.init))
        }
    }

    func evaluateOnce(_ request: RulesRequest, elements: [PathElement], query: QueryModel?,
                      documents: (any RulesDocumentLookup)?, ledger: inout DocumentAccessLedger,
                      options: RulesEvaluationOptions) -> RulesDecision {
        let evaluator = Evaluator(ruleset: self, request: request, options: options, documents: documents, ledger: ledger,
                                  requestPath: Self.requestPath(request.target), query: query)
        defer { ledger = evaluator.ledger }
        let fileScope = Scope(parent: nil, functions: root.functions)
        var matcher = Matcher(elements: elements, version2: version == 2)
        var matches: [(RulesBlock, Scope)] = []
        for service in root.matches {
            let serviceScope = Scope(parent: fileScope, functions: service.functions)
            for m in service.matches { matcher.collect(m, from: 0, parent: serviceScope, into: &matches) }
        }
        let method = request.method
        var attempts: [RulesDecision.Attempt] = []
        func decision(_ outcome: RulesDecision.Outcome, _ rule: SourceRange?, _ reason: String) -> RulesDecision {
            RulesDecision(outcome: outcome, rule: rule, reason: reason, attempts: attempts, steps: evaluator.steps,
                          documentAccesses: evaluator.accesses, coverage: evaluator.coverage,
                          debugOutput: evaluator.debugOutput)
        }
        if matcher.exhausted {
            return decision(.deny, nil, "Matching the request path against the rules took too many steps.")
        }
        for (block, scope) in matches {
            for allow in block.allows where allow.covers(method) {
                let head = allow.headText
                let pathText = fullPatterns[ObjectIdentifier(block)] ?? block.patternText
                guard let condition = allow.condition else {
                    attempts.append(.init(rule: allow.range, statement: head, matchPath: pathText, result: .allowed))
                    return decision(.allow, allow.range, allow.allowReason)
                }
                evaluator.blame = nil
                let result: RulesDecision.Attempt.Result
                do throws(EvalError) {
                    let v = try evaluator.concrete(condition, scope)
                    switch v {
                    case .bool(true): result = .allowed
                    case .bool(false):
                        let b = evaluator.blame ?? condition
                        result = .denied(at: b.range, expression: source.text(of: b.range))
                    default: result = .notBoolean(type: v.typeName)
                    }
                } catch {
                    if error.fatal {
                        attempts.append(.init(rule: allow.range, statement: head, matchPath: pathText,
                                              result: .error(message: error.message, at: error.range)))
                        return decision(.deny, nil, "Denied: \(location(error.range)): \(error.message)")
                    }
                    result = .error(message: error.message, at: error.range)
                }
                attempts.append(.init(rule: allow.range, statement: head, matchPath: pathText, result: result))
                if case .allowed = result { return decision(.allow, allow.range, allow.allowReason) }
            }
        }
        return decision(.deny, nil, denialReason(method, elements, matches.isEmpty, attempts, options.explain))
    }

    func denialReason(_ method: RulesMethod, _ elements: [PathElement], _ noMatch: Bool,
                      _ attempts: [RulesDecision.Attempt], _ explain: Bool) -> String {
        let pathText = "/" + elements.map { el -> String in
            switch el {
            case .segment(let s): s
            case .unknownId: "{any document}"
            case .anyPath: "…"
            }
        }.joined(separator: "/")
        if noMatch { return "Denied: no match block covers \(pathText)." }
        if attempts.isEmpty { return "Denied: no allow statement grants '\(method.rawValue)' on \(pathText)." }
        guard explain else { return "Denied: no allow statement for '\(method.rawValue)' was true." }
        let parts = attempts.map { a -> String in
            let head = "`\(a.statement)` at \(location(a.rule))"
            switch a.result {
            case .allowed: return "\(head) allowed"
            case .denied(let at, let text): return "\(head) was false: `\(text)` at \(location(at)) was false"
            case .error(let message, let at): return "\(head) failed: \(location(at)): \(message)"
            case .notBoolean(let type): return "\(head) gave a \(type), not a bool"
            }
        }
        let joined = parts.joined(separator: "; ")
        return "Denied: " + joined + (joined.hasSuffix(".") ? "" : ".")
    }
}
