import HearthCore
import Testing
@testable import HearthRules

/// One request of `Fixtures/database-cases.json` against its rules, with the expected outcome.
struct DatabaseRulesCase: Sendable, CustomTestStringConvertible {
    var group: String
    var name: String
    var rules: String
    var data: JSON?
    var maxSteps: Int?
    var json: JSON
    var loadError: String?

    var testDescription: String { "\(group): \(name)" }

    static func all() -> [DatabaseRulesCase] {
        Fixtures.load(prefix: "database-cases").flatMap { file, result -> [DatabaseRulesCase] in
            switch result {
            case .failure(let e):
                return [DatabaseRulesCase(group: file, name: "load", rules: "", json: .null, loadError: "\(e)")]
            case .success(let document):
                return (document["groups"]?.arrayValue ?? []).flatMap { group -> [DatabaseRulesCase] in
                    let groupName = group["name"]?.stringValue ?? "?"
                    return (group["cases"]?.arrayValue ?? []).map { c in
                        DatabaseRulesCase(group: groupName, name: c["name"]?.stringValue ?? "?",
                                          rules: DatabaseRulesCase.rulesText(c["rules"] ?? group["rules"]),
                                          data: c["data"] ?? group["data"], maxSteps: group["maxSteps"]?.intValue, json: c)
                    }
                }
            }
        }
    }

    /// Rules as a JSON object (serialized) or as lines of text (comments allowed).
    static func rulesText(_ j: JSON?) -> String {
        if let lines = j?.arrayValue { return lines.compactMap(\.stringValue).joined(separator: "\n") + "\n" }
        return j?.serialized() ?? ""
    }
}

/// Tree edits the way the database engine applies them, for building `newRoot`.
enum TreeEdit {
    static func path(_ text: String) -> [String] { text.split(separator: "/").map(String.init) }

    /// `tree` with `value` set at `path` (null deletes; empty objects disappear).
    static func set(_ tree: JSON?, _ path: ArraySlice<String>, _ value: JSON) -> JSON? {
        guard let key = path.first else { return prune(value) }
        var members = tree?.objectValue ?? []
        let existing = members.first { $0.0 == key }?.1
        let updated = set(existing, path.dropFirst(), value)
        members.removeAll { $0.0 == key }
        if let updated { members.append((key, updated)) }
        members.sort { $0.0 < $1.0 }
        if members.allSatisfy({ $0.0.hasPrefix(".") }) { return nil }
        return .object(members)
    }

    static func prune(_ value: JSON) -> JSON? {
        switch value {
        case .null: return nil
        case .object(let members):
            let kept = members.compactMap { k, v in prune(v).map { (k, $0) } }
            return kept.allSatisfy({ $0.0.hasPrefix(".") }) && !kept.contains(where: { $0.0 == ".value" }) ? nil : .object(kept)
        default: return value
        }
    }

    /// Replaces `{".sv": "timestamp"}` with `now`.
    static func resolve(_ value: JSON, now: Int64) -> JSON {
        switch value {
        case .object(let members):
            if members.count == 1, members[0].0 == ".sv", members[0].1.stringValue == "timestamp" { return .number(String(now)) }
            return .object(members.map { ($0.0, resolve($0.1, now: now)) })
        default: return value
        }
    }
}

/// Runs a fixture case as the database engine would: reads, sets, and multi-path updates
/// (each updated path checked against the tree after the whole update).
struct DatabaseRulesCaseRunner {
    let ruleset: DatabaseRuleset

    static func auth(_ j: JSON?) -> DatabaseRulesAuth? {
        guard let j, !j.isNull else { return nil }
        if let uid = j.stringValue { return DatabaseRulesAuth(uid: uid, provider: "password", token: .object([("sub", .string(uid))])) }
        if let override = j["override"] { return DatabaseRulesAuth(authVariable: override) }
        return DatabaseRulesAuth(uid: j["uid"]?.stringValue ?? "?", provider: j["provider"]?.stringValue ?? "password",
                                 token: j["token"] ?? .object([]))
    }

    static func query(_ j: JSON?) -> DatabaseRulesQuery? {
        guard let j, !j.isNull else { return nil }
        var q = DatabaseRulesQuery()
        if j["orderByKey"]?.boolValue == true { q.orderBy = .key }
        if j["orderByValue"]?.boolValue == true { q.orderBy = .value }
        if j["orderByPriority"]?.boolValue == true { q.orderBy = .priority }
        if let child = j["orderByChild"]?.stringValue { q.orderBy = .child(child) }
        q.startAt = j["startAt"]
        q.endAt = j["endAt"]
        q.equalTo = j["equalTo"]
        q.limitToFirst = j["limitToFirst"]?.intValue
        q.limitToLast = j["limitToLast"]?.intValue
        return q
    }

    func run(_ c: JSON, data: JSON?) async throws -> DatabaseRulesDecision {
        let path = TreeEdit.path(c["path"]?.stringValue ?? "/")
        let auth = Self.auth(c["auth"])
        let now = Int64(c["now"]?.intValue ?? 1_700_000_000_000)
        let before = DatabaseRulesTree(data.flatMap { TreeEdit.prune($0) })
        switch c["op"]?.stringValue {
        case "read":
            return try await ruleset.read(path: path, auth: auth, root: before, query: Self.query(c["query"]), now: now)
        case "write":
            let value = TreeEdit.resolve(c["value"] ?? .null, now: now)
            let after = DatabaseRulesTree(TreeEdit.set(before.root, path[...], value))
            return try await ruleset.write(path: path, auth: auth, root: before, newRoot: after, now: now)
        case "update":
            var tree = before.root
            let updates = c["update"]?.objectValue ?? []
            for (relative, value) in updates {
                tree = TreeEdit.set(tree, (path + TreeEdit.path(relative))[...], TreeEdit.resolve(value, now: now))
            }
            let after = DatabaseRulesTree(tree)
            var last: DatabaseRulesDecision?
            for (relative, _) in updates {
                let decision = try await ruleset.write(path: path + TreeEdit.path(relative), auth: auth, root: before, newRoot: after,
                                                       now: now)
                if !decision.isAllowed { return decision }
                last = decision
            }
            return last!
        default:
            Issue.record("unknown op in \(c.serialized())")
            throw DatabaseRulesFixtureError.badCase
        }
    }
}

enum DatabaseRulesFixtureError: Error { case badCase }

@Suite("Realtime Database rules: fixture cases")
struct DatabaseRulesFixtureTests {
    @Test("database-cases.json", arguments: DatabaseRulesCase.all())
    func fixture(_ c: DatabaseRulesCase) async throws {
        if let e = c.loadError {
            Issue.record("fixture file failed to load: \(e)")
            return
        }
        let ruleset: DatabaseRuleset
        do throws(RulesCompileError) {
            ruleset = try DatabaseRuleset.parse(c.rules, fileName: "database.rules.json",
                                                limits: DatabaseRulesLimits(maxSteps: c.maxSteps ?? 1_000_000))
        } catch {
            Issue.record("rules did not compile:\n\(error.rendered)")
            return
        }
        let decision = try await DatabaseRulesCaseRunner(ruleset: ruleset).run(c.json, data: c.data)
        let expected = c.json["expect"]?.stringValue ?? "?"
        #expect(decision.outcome.rawValue == expected, "\(decision.reason)")
        if let reason = c.json["reason"]?.stringValue {
            #expect(decision.reason.contains(reason), "reason was: \(decision.reason)")
        }
    }

    @Test func fixtureFileHasEnoughCases() {
        let cases = DatabaseRulesCase.all()
        #expect(cases.count >= 60)
        let outcomes = Set(cases.compactMap { $0.json["expect"]?.stringValue })
        #expect(outcomes == ["allow", "deny", "validate-fail"])
    }
}
