import HearthCore
import HearthDocuments
import HearthRules
import Hummingbird
import NIOCore

/// The Firestore emulator's control endpoints (emulator mode only):
/// - `DELETE /emulator/v1/projects/{p}/databases/{d}/documents` clears a database;
/// - `PUT /emulator/v1/projects/{p}:securityRules` with `{"rules":{"files":[{"name","content"}]}}`
///   replaces the project's security rules (a file that does not compile changes nothing);
/// - `GET /emulator/v1/projects/{p}:ruleCoverage` (JSON) and `:ruleCoverage.html`: how often
///   each expression of the project's rules was evaluated and what it gave, since they loaded.
extension FirestoreRESTResponder {
    func emulatorControl(_ request: inout Request, _ segments: [String]) async throws -> Response {
        let path = request.uri.path
        guard emulator, segments.count >= 4, segments[1] == "v1", segments[2] == "projects" else {
            throw HearthError(.notFound, "Not found: \(path)")
        }
        if request.method == .delete, segments.count == 7, segments[4] == "databases", segments[6] == "documents" {
            let db = DatabaseName(project: segments[3], database: segments[5])
            try await engine.clear(db)
            logger.info("cleared database", metadata: ["database": "\(db)"])
            return HTTPSupport.json(.object([]))
        }
        if segments.count == 4, let colon = segments[3].lastIndex(of: ":") {
            let project = String(segments[3][..<colon])
            let verb = String(segments[3][segments[3].index(after: colon)...])
            switch (request.method, verb) {
            case (.put, "securityRules"):
                return try await putSecurityRules(project, try await body(&request))
            case (.get, "ruleCoverage"), (.get, "ruleCoverage.html"):
                try await security.rules.synchronize()
                guard let loaded = security.rules.rules(for: project) else {
                    throw HearthError(.notFound, "No security rules are loaded for project \(project).")
                }
                let report = RulesCoverageReport(ruleset: loaded.ruleset, coverage: loaded.accumulatedCoverage)
                if verb == "ruleCoverage" {
                    return HTTPSupport.json(report.jsonValue())
                }
                return Response(
                    status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: report.html())))
            default: break
            }
        }
        throw HearthError(.notFound, "Not found: \(request.method) \(path)")
    }

    func putSecurityRules(_ project: String, _ body: JSON) async throws -> Response {
        guard let files = body["rules"]?["files"]?.arrayValue, let file = files.first,
              let content = file["content"]?.stringValue
        else {
            throw HearthError.invalidArgument("Expected {\"rules\":{\"files\":[{\"name\":\"firestore.rules\",\"content\":\"…\"}]}}.")
        }
        guard files.count == 1 else { throw HearthError.invalidArgument("Exactly one rules file is supported, got \(files.count).") }
        let name = file["name"]?.stringValue ?? "firestore.rules"
        let ruleset: Ruleset
        do {
            ruleset = try Ruleset.compile(content, fileName: name)
        } catch {
            throw HearthError.invalidArgument("Error compiling rules:\n" + error.rendered)
        }
        guard ruleset.service == .firestore else {
            throw HearthError.invalidArgument("Error compiling rules:\n\(name): this ruleset is for \(ruleset.service.rawValue), not cloud.firestore.")
        }
        try await security.rules.publish(RulesStore.Loaded(ruleset, origin: "emulator endpoint"), source: content, fileName: name, scope: project)
        logger.info("loaded security rules", metadata: ["project": "\(project)", "file": "\(name)"])
        return HTTPSupport.json(.object([]))
    }
}
