import HearthCore
import Testing
@testable import HearthRules

/// One request against a rules file, with the expected decision (from `Fixtures/cases-*.json`).
struct RulesCase: Sendable, CustomTestStringConvertible {
    var file: String
    var name: String
    var rules: String
    var documents: JSON?
    var json: JSON
    var loadError: String?

    var testDescription: String { "\(file): \(name)" }

    static func all() -> [RulesCase] {
        Fixtures.load(prefix: "cases-").flatMap { file, result -> [RulesCase] in
            switch result {
            case .failure(let e):
                return [RulesCase(file: file, name: "load", rules: "", json: .null, loadError: "\(e)")]
            case .success(let j):
                let rules = Fixtures.text(j["rules"]) ?? ""
                return (j["cases"]?.arrayValue ?? []).map { c in
                    RulesCase(file: file, name: c["name"]?.stringValue ?? "?", rules: Fixtures.text(c["rules"]) ?? rules,
                              documents: j["documents"], json: c)
                }
            }
        }
    }
}

/// Turns a fixture case into requests and evaluates them, as a server would.
struct CaseRunner {
    let ruleset: Ruleset
    let documents: JSON?

    static let defaultTime = Timestamp(rfc3339: "2024-01-01T00:30:00Z")!

    func auth(_ j: JSON?) -> RulesAuth? {
        guard let j, !j.isNull else { return nil }
        let uid = j.stringValue ?? j["uid"]?.stringValue ?? "?"
        var token: [String: Value] = [
            "sub": .string(uid), "user_id": .string(uid),
            "firebase": .map(["sign_in_provider": .string("custom"), "identities": .map([:])]),
        ]
        for (k, v) in Fixtures.fields(j["token"]) ?? [:] { token[k] = v }
        return RulesAuth(uid: uid, token: token)
    }

    var storedDocuments: [String: [String: Value]] {
        var out: [String: [String: Value]] = [:]
        for (k, v) in documents?.objectValue ?? [] { out["(default)/" + k] = Fixtures.fields(v) ?? [:] }
        return out
    }

    func query(_ j: JSON?) -> RulesQuery {
        guard let j else { return RulesQuery() }
        func filter(_ triple: JSON) -> RulesQuery.Filter {
            let a = triple.arrayValue ?? []
            let field = try! FieldPath(parsing: a[0].stringValue!)
            let op = a[1].stringValue!
            switch op {
            case "isNull": return .unary(field, .isNull)
            case "isNotNull": return .unary(field, .isNotNull)
            default: return .field(field, RulesQuery.Operator(rawValue: op)!, Fixtures.value(a[2]))
            }
        }
        var parts: [RulesQuery.Filter] = (j["where"]?.arrayValue ?? []).map(filter)
        if let ors = j["or"]?.arrayValue {
            parts.append(.or(ors.map { branch in .and((branch.arrayValue ?? []).map(filter)) }))
        }
        let order = (j["orderBy"]?.arrayValue ?? []).map { o -> RulesQuery.Order in
            let a = o.arrayValue ?? []
            return RulesQuery.Order(try! FieldPath(parsing: a[0].stringValue!), descending: a.count > 1 && a[1].stringValue == "desc")
        }
        return RulesQuery(filter: parts.isEmpty ? nil : (parts.count == 1 ? parts[0] : .and(parts)),
                          limit: j["limit"]?.intValue.map(Int64.init), offset: Int64(j["offset"]?.intValue ?? 0), orderBy: order)
    }

    func storageObject(_ j: JSON?, name: String, bucket: String) -> RulesValue? {
        guard let j, !j.isNull else { return nil }
        var meta: [String: String] = [:]
        for (k, v) in j["metadata"]?.objectValue ?? [] { meta[k] = v.stringValue ?? "" }
        return RulesStorageObject(
            name: j["name"]?.stringValue ?? name, bucket: bucket, size: Int64(j["size"]?.intValue ?? 0),
            contentType: j["contentType"]?.stringValue, metadata: meta, md5Hash: j["md5Hash"]?.stringValue,
            generation: j["generation"]?.intValue.map(Int64.init)).rulesValue
    }

    /// The request a case describes, and the documents `get()` can see.
    func request(_ c: JSON) -> (RulesRequest, RulesDocumentSet) {
        let method = RulesMethod(rawValue: c["method"]?.stringValue ?? "get")!
        let path = c["path"]?.stringValue ?? ""
        let time = c["time"]?.stringValue.flatMap { Timestamp(rfc3339: $0) } ?? Self.defaultTime
        let auth = auth(c["auth"])
        var docs = RulesDocumentSet(before: storedDocuments)
        for (k, v) in c["after"]?.objectValue ?? [] { docs.writes["(default)/" + k] = .some(Fixtures.fields(v)) }
        if ruleset.service == .storage {
            let bucket = c["bucket"]?.stringValue ?? "bucket"
            let target: RulesRequest.Target = method == .list ? .storagePrefix(bucket: bucket, prefix: path)
                : .storageObject(bucket: bucket, name: path)
            let r = RulesRequest(method: method, target: target, auth: auth, time: time,
                                 resource: method == .list ? nil : storageObject(c["resource"], name: path, bucket: bucket),
                                 newResource: storageObject(c["data"], name: path, bucket: bucket))
            return (r, docs)
        }
        let rp = ResourcePath(parsing: path)
        if method == .list {
            let q = query(c["query"])
            if let group = c["collectionGroup"]?.stringValue {
                return (RulesRequest(method: .list, target: .firestoreCollectionGroup(database: "(default)", parent: rp, collectionId: group),
                                     auth: auth, time: time, query: q), docs)
            }
            return (.firestoreQuery(collection: rp, auth: auth, time: time, query: q), docs)
        }
        let existing: [String: Value]? = c["resource"] != nil ? Fixtures.fields(c["resource"]) : docs.before["(default)/" + path]
        let after = Fixtures.fields(c["data"])
        let key = "(default)/" + path
        if docs.writes[key] == nil {
            switch method {
            case .create, .update: docs.writes[key] = .some(after)
            case .delete: docs.writes[key] = .some(nil)
            default: break
            }
        }
        return (.firestore(method, path: rp, auth: auth, time: time, existing: existing, after: after), docs)
    }

    func options(_ c: JSON) -> RulesEvaluationOptions {
        var o = RulesEvaluationOptions()
        if let s = c["maxSteps"]?.intValue { o.maxSteps = s }
        return o
    }

    func ledger(_ c: JSON) -> DocumentAccessLedger {
        if c["ledger"]?.stringValue == "batch" { return .batch }
        return ruleset.service == .storage ? .storage : .singleDocument
    }
}

/// Merges a batch entry over its parent case.
func merged(_ parent: JSON, _ child: JSON) -> JSON {
    var members = (parent.objectValue ?? []).filter { k, _ in k != "batch" && !(child[k] != nil) }
    members += child.objectValue ?? []
    return .object(members)
}

@Suite("Requests against rules files")
struct CaseFixtureTests {
    @Test(arguments: RulesCase.all())
    func decision(_ c: RulesCase) throws {
        if let e = c.loadError { Issue.record("fixture \(c.file) failed to load: \(e)"); return }
        let ruleset: Ruleset
        do {
            ruleset = try Ruleset.compile(c.rules, fileName: "test.rules")
        } catch {
            #expect(c.json["expect"]?.stringValue == "compile error", "rules failed to compile:\n\(error.rendered)")
            return
        }
        #expect(c.json["expect"]?.stringValue != "compile error", "rules compiled but should not")
        let runner = CaseRunner(ruleset: ruleset, documents: c.documents)
        let steps = c.json["batch"]?.arrayValue.map { $0.map { merged(c.json, $0) } } ?? [c.json]
        var ledger = runner.ledger(c.json)
        for (i, step) in steps.enumerated() {
            let (request, docs) = runner.request(step)
            let d = ruleset.evaluate(request, documents: docs, ledger: &ledger, options: runner.options(step))
            let label = steps.count > 1 ? "[\(i)] " : ""
            #expect(d.outcome.rawValue == step["expect"]?.stringValue, "\(label)\(d.reason)")
            if let r = step["reason"]?.stringValue {
                #expect(d.reason.contains(r), "\(label)reason \(d.reason) lacks \(r)")
            }
            if let n = step["accesses"]?.intValue {
                #expect(d.documentAccesses == n, "\(label)document accesses")
            }
        }
    }

    @Test func fixturesArePresent() {
        #expect(RulesCase.all().count > 80)
    }
}
