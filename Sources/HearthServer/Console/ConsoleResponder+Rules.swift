import HearthCore
import HearthDatabase
import HearthRules
import HearthTesting
import Hummingbird
import NIOCore

/// The rules in force, the playground (one request decided by the active rules, with the
/// deciding line and Hearth's explanation), and coverage since the rules loaded.
extension ConsoleResponder {
    func rulesInForce() async throws -> Response {
        try await firestoreRules.synchronize()
        try await storageRules.synchronize()
        func describe(_ store: RulesStore) -> JSON {
            guard let loaded = store.rules(for: configuration.project) else { return .null }
            return .object([
                ("fileName", .string(loaded.ruleset.source.name)), ("source", .string(loaded.ruleset.source.text)),
                ("origin", .string(loaded.origin)),
            ])
        }
        var databaseRules = JSON.null
        let namespace = "\(configuration.project)-default-rtdb"
        if let program = try await database.rules(namespace: namespace) as? DatabaseRulesAuthorizer.Program, !program.isDefault {
            databaseRules = .object([
                ("fileName", .string(program.ruleset.source.name)), ("source", .string(program.ruleset.source.text)),
                ("origin", .string("namespace \(namespace)")),
            ])
        }
        return HTTPSupport.json(.object([
            ("firestore", describe(firestoreRules)), ("storage", describe(storageRules)), ("database", databaseRules),
        ]))
    }

    /// `{"service": "firestore"|"storage", "documents": {path: fields}, "case": {method, path, auth, data, resource}}`
    /// in the format of `hearth rules test` cases files (docs/rules-testing.md), `expect` left out.
    func simulate(_ request: Request) async throws -> Response {
        var request = request
        let body = try JSON.parse(try await request.collectBody(limit: maxBody).readableBytesView)
        let service = body["service"]?.stringValue ?? "firestore"
        guard service == "firestore" || service == "storage" else {
            throw HearthError.invalidArgument("The playground simulates Firestore and Storage rules (service \"\(service)\").")
        }
        try await (service == "storage" ? storageRules : firestoreRules).synchronize()
        guard let loaded = (service == "storage" ? storageRules : firestoreRules).rules(for: configuration.project) else {
            throw HearthError(.failedPrecondition, "No \(service) rules are loaded on this server.")
        }
        guard var theCase = body["case"]?.objectValue else { throw HearthError.invalidArgument("Missing \"case\".") }
        theCase.removeAll { $0.0 == "expect" }
        theCase.append(("expect", .string("allow")))
        let file = JSON.object([
            ("documents", body["documents"] ?? .object([])), ("bucket", .string(configuration.defaultBucket)),
            ("cases", .array([.object(theCase)])),
        ])
        let cases = try RulesCasesFile.parse(String(decoding: file.serializedBytes(), as: UTF8.self))
        let bed: RulesTestBed
        do {
            bed = try RulesTestBed(
                rules: loaded.ruleset.source.text, fileName: loaded.ruleset.source.name, documents: cases.documents,
                bucket: configuration.defaultBucket)
        } catch {
            throw HearthError(.failedPrecondition, "The rules in force do not compile: \(error)")
        }
        let decision = bed.decide(cases.cases[0].request)
        var lines = [bed.explanation(decision)]
        for attempt in decision.attempts {
            let outcome: String
            switch attempt.result {
            case .allowed: outcome = "true"
            case .denied(let at, let expression): outcome = "false at \(loaded.ruleset.location(at)): \(expression)"
            case .error(let message, let at): outcome = "error at \(loaded.ruleset.location(at)): \(message)"
            case .notBoolean(let type): outcome = "not a boolean (\(type))"
            }
            lines.append("  \(loaded.ruleset.location(attempt.rule)) \(attempt.statement) (match \(attempt.matchPath)) → \(outcome)")
        }
        if decision.attempts.isEmpty && !decision.isAllowed { lines.append("  no allow statement matches this method and path") }
        var members: [(String, JSON)] = [
            ("outcome", .string(decision.outcome.rawValue)), ("reason", .string(decision.reason)),
            ("explanation", .string(lines.joined(separator: "\n"))),
        ]
        if let rule = decision.rule ?? decision.attempts.first?.rule {
            members.append(("line", .number(rule.start.line)))
            members.append(("column", .number(rule.start.column)))
        }
        return HTTPSupport.json(.object(members))
    }

    func coverage(_ request: Request) async throws -> Response {
        let params = try HTTPSupport.queryParameters(request.uri.query)
        let service = params.last { $0.0 == "service" }?.1 ?? "firestore"
        guard service == "firestore" || service == "storage" else { throw HearthError.invalidArgument("Unknown service \"\(service)\".") }
        try await (service == "storage" ? storageRules : firestoreRules).synchronize()
        guard let loaded = (service == "storage" ? storageRules : firestoreRules).rules(for: configuration.project) else {
            throw HearthError(.failedPrecondition, "No \(service) rules are loaded on this server.")
        }
        return HTTPSupport.json(RulesCoverageReport(ruleset: loaded.ruleset, coverage: loaded.accumulatedCoverage).jsonValue())
    }
}
