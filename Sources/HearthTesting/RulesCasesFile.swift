public import HearthCore
public import HearthRules

/// A file of test cases for `hearth rules test` (format: docs/rules-testing.md).
///
/// ```json
/// {"documents": {"users/alice": {"owner": "alice", "born": {"$timestamp": "2000-01-01T00:00:00Z"}}},
///  "cases": [{"name": "owner reads", "method": "get", "path": "/users/alice", "auth": "alice", "expect": "allow"}]}
/// ```
public struct RulesCasesFile: Sendable {
    /// One case: a request and the expected decision.
    public struct Case: Sendable {
        public var name: String
        public var request: RulesTestRequest
        public var expect: RulesDecision.Outcome
        /// A substring the decision's reason must contain.
        public var reason: String?

        public init(name: String, request: RulesTestRequest, expect: RulesDecision.Outcome, reason: String? = nil) {
            self.name = name
            self.request = request
            self.expect = expect
            self.reason = reason
        }
    }

    /// Stored Firestore documents by path.
    public var documents: [String: [String: Value]]
    /// `request.time` for every case that sets none (the current time when nil).
    public var time: Timestamp?
    /// The Storage bucket.
    public var bucket: String?
    public var cases: [Case]

    public init(documents: [String: [String: Value]] = [:], time: Timestamp? = nil, bucket: String? = nil, cases: [Case]) {
        self.documents = documents
        self.time = time
        self.bucket = bucket
        self.cases = cases
    }

    /// Parses a cases file. Errors name the case and the field at fault.
    public static func parse(_ text: String) throws(HearthError) -> RulesCasesFile {
        let root = try JSON.parse(text)
        guard let members = root.objectValue else { throw bad("the file must hold a JSON object with \"cases\"") }
        let known: Set<String> = ["documents", "cases", "time", "bucket", "title", "description", "$schema"]
        for (k, _) in members where !known.contains(k) { throw bad("unknown top-level key \"\(k)\"") }
        var documents: [String: [String: Value]] = [:]
        if let docs = root["documents"], !docs.isNull {
            guard let entries = docs.objectValue else { throw bad("\"documents\" must be an object of path → fields") }
            for (path, fields) in entries {
                let p = RulesTestRequest.trimmed(path)
                guard ResourcePath(parsing: p).isDocument else {
                    throw bad("documents: \"\(path)\" is not a document path (collection/id[/collection/id…])")
                }
                guard case .map(let m) = try TypedJSON.value(fields, at: "documents[\"\(path)\"]") else {
                    throw bad("documents[\"\(path)\"] must be an object of fields")
                }
                documents[p] = m
            }
        }
        var time: Timestamp?
        if let t = root["time"], !t.isNull { time = try TypedJSON.timestamp(t, at: "time") }
        let bucket = root["bucket"]?.stringValue
        guard let list = root["cases"]?.arrayValue else { throw bad("\"cases\" must be an array") }
        var cases: [Case] = []
        for (i, c) in list.enumerated() {
            cases.append(try parseCase(c, index: i))
        }
        return RulesCasesFile(documents: documents, time: time, bucket: bucket, cases: cases)
    }

    static func bad(_ message: String) -> HearthError { HearthError(.invalidArgument, message) }

    static func parseCase(_ c: JSON, index: Int) throws(HearthError) -> Case {
        let name = c["name"]?.stringValue ?? "case \(index + 1)"
        let at = "cases[\(index)] (\(name))"
        guard c.objectValue != nil else { throw bad("\(at): a case must be an object") }
        let known: Set<String> = ["name", "method", "path", "auth", "data", "query", "collectionGroup", "resource",
                                  "expect", "reason", "time", "note"]
        for (k, _) in c.objectValue ?? [] where !known.contains(k) { throw bad("\(at): unknown key \"\(k)\"") }
        guard let m = c["method"]?.stringValue, let method = RulesTestRequest.Method(rawValue: m) else {
            throw bad("\(at): \"method\" must be one of get, list, create, update, delete, read, write")
        }
        guard let path = c["path"]?.stringValue else { throw bad("\(at): \"path\" is required") }
        guard let e = c["expect"]?.stringValue, let expect = RulesDecision.Outcome(rawValue: e) else {
            throw bad("\(at): \"expect\" must be \"allow\" or \"deny\"")
        }
        var request = RulesTestRequest(method, path)
        request.auth = try auth(c["auth"], at: at)
        if let d = c["data"], !d.isNull {
            // Firestore: the document's fields; Storage: the uploaded object.
            if d.objectValue?.allSatisfy({ storageKeys.contains($0.0) }) == true {
                request.object = try storageObject(d, at: at + ".data")
            }
            guard case .map(let fields) = try TypedJSON.value(d, at: at + ".data") else {
                throw bad("\(at): \"data\" must be an object")
            }
            request.data = fields
        }
        if let r = c["resource"], !r.isNull { request.existingObject = try storageObject(r, at: at + ".resource") }
        if let q = c["query"], !q.isNull { request.query = try query(q, at: at + ".query") }
        request.collectionGroup = c["collectionGroup"]?.stringValue
        if let t = c["time"] { request.time = try TypedJSON.timestamp(t, at: at + ".time") }
        return Case(name: name, request: request, expect: expect, reason: c["reason"]?.stringValue)
    }

    static let storageKeys: Set<String> = ["name", "size", "contentType", "metadata", "md5Hash", "crc32c", "etag",
                                           "generation", "metageneration", "timeCreated", "updated",
                                           "contentDisposition", "contentEncoding", "contentLanguage", "cacheControl"]

    /// `null`, `"alice"`, or `{"uid": "alice", "token": {claims}}`.
    static func auth(_ j: JSON?, at: String) throws(HearthError) -> RulesAuth? {
        guard let j, !j.isNull else { return nil }
        if let uid = j.stringValue { return RulesTestRequest.auth(uid) }
        guard let uid = j["uid"]?.stringValue else { throw bad("\(at): \"auth\" must be null, a uid, or {\"uid\", \"token\"}") }
        var claims: [String: Value] = [:]
        if let t = j["token"], !t.isNull {
            guard case .map(let m) = try TypedJSON.value(t, at: at + ".auth.token") else {
                throw bad("\(at): \"auth.token\" must be an object of claims")
            }
            claims = m
        }
        return RulesTestRequest.auth(uid, claims: claims)
    }

    /// A Storage object: `{"size": 1024, "contentType": "image/png", "metadata": {"k": "v"}}`.
    static func storageObject(_ j: JSON, at: String) throws(HearthError) -> RulesStorageObject {
        guard let members = j.objectValue else { throw bad("\(at) must be an object") }
        for (k, _) in members where !storageKeys.contains(k) {
            throw bad("\(at): unknown Storage object property \"\(k)\" (known: \(storageKeys.sorted().joined(separator: ", ")))")
        }
        func int(_ k: String) throws(HearthError) -> Int64? {
            guard let v = j[k], !v.isNull else { return nil }
            guard case .integer(let i) = try TypedJSON.value(v, at: at + "." + k) else { throw bad("\(at).\(k) must be an integer") }
            return i
        }
        func string(_ k: String) throws(HearthError) -> String? {
            guard let v = j[k], !v.isNull else { return nil }
            guard let s = v.stringValue else { throw bad("\(at).\(k) must be a string") }
            return s
        }
        var metadata: [String: String] = [:]
        if let m = j["metadata"], !m.isNull {
            guard let entries = m.objectValue else { throw bad("\(at).metadata must be an object of strings") }
            for (k, v) in entries {
                guard let s = v.stringValue else { throw bad("\(at).metadata.\(k) must be a string") }
                metadata[k] = s
            }
        }
        func time(_ k: String) throws(HearthError) -> Timestamp? {
            guard let v = j[k], !v.isNull else { return nil }
            return try TypedJSON.timestamp(v, at: at + "." + k)
        }
        return RulesStorageObject(
            name: try string("name") ?? "", bucket: "", size: try int("size") ?? 0, contentType: try string("contentType"),
            metadata: metadata, md5Hash: try string("md5Hash"), crc32c: try string("crc32c"), etag: try string("etag"),
            generation: try int("generation"), metageneration: try int("metageneration"), timeCreated: try time("timeCreated"),
            updated: try time("updated"), contentDisposition: try string("contentDisposition"),
            contentEncoding: try string("contentEncoding"), contentLanguage: try string("contentLanguage"),
            cacheControl: try string("cacheControl"))
    }

    /// `{"where": [["field", "op", value], …], "or": [[[…], …], …], "orderBy": [["f", "desc"]], "limit": 10, "offset": 0}`.
    static func query(_ j: JSON, at: String) throws(HearthError) -> RulesQuery {
        guard let members = j.objectValue else { throw bad("\(at) must be an object") }
        for (k, _) in members where !["where", "or", "orderBy", "limit", "offset"].contains(k) {
            throw bad("\(at): unknown key \"\(k)\" (known: where, or, orderBy, limit, offset)")
        }
        func filter(_ t: JSON, _ here: String) throws(HearthError) -> RulesQuery.Filter {
            guard let a = t.arrayValue, a.count >= 2, let f = a[0].stringValue, let op = a[1].stringValue else {
                throw bad("\(here) must be [\"field\", \"op\", value]")
            }
            let field = try FieldPath(parsing: f)
            switch op {
            case "isNull": return .unary(field, .isNull)
            case "isNotNull": return .unary(field, .isNotNull)
            case "isNaN": return .unary(field, .isNaN)
            case "isNotNaN": return .unary(field, .isNotNaN)
            default:
                guard let o = RulesQuery.Operator(rawValue: op) else {
                    throw bad("\(here): unknown operator \"\(op)\" (==, !=, <, <=, >, >=, in, not-in, array-contains, array-contains-any, isNull, isNotNull)")
                }
                guard a.count == 3 else { throw bad("\(here) must be [\"field\", \"\(op)\", value]") }
                return .field(field, o, try TypedJSON.value(a[2], at: here + "[2]"))
            }
        }
        var parts: [RulesQuery.Filter] = []
        if let w = j["where"] {
            guard let list = w.arrayValue else { throw bad("\(at).where must be an array of [field, op, value]") }
            for (i, t) in list.enumerated() { parts.append(try filter(t, "\(at).where[\(i)]")) }
        }
        if let o = j["or"] {
            guard let branches = o.arrayValue else { throw bad("\(at).or must be an array of arrays of [field, op, value]") }
            var ors: [RulesQuery.Filter] = []
            for (i, b) in branches.enumerated() {
                guard let list = b.arrayValue else { throw bad("\(at).or[\(i)] must be an array of [field, op, value]") }
                var and: [RulesQuery.Filter] = []
                for (k, t) in list.enumerated() { and.append(try filter(t, "\(at).or[\(i)][\(k)]")) }
                ors.append(.and(and))
            }
            parts.append(.or(ors))
        }
        var order: [RulesQuery.Order] = []
        for (i, o) in (j["orderBy"]?.arrayValue ?? []).enumerated() {
            if let f = o.stringValue { order.append(RulesQuery.Order(try FieldPath(parsing: f))); continue }
            guard let a = o.arrayValue, let f = a.first?.stringValue else {
                throw bad("\(at).orderBy[\(i)] must be \"field\" or [\"field\", \"asc\"|\"desc\"]")
            }
            order.append(RulesQuery.Order(try FieldPath(parsing: f), descending: a.count > 1 && a[1].stringValue == "desc"))
        }
        func int(_ k: String) throws(HearthError) -> Int64? {
            guard let v = j[k], !v.isNull else { return nil }
            guard case .integer(let i) = try TypedJSON.value(v, at: at + "." + k) else { throw bad("\(at).\(k) must be an integer") }
            return i
        }
        return RulesQuery(filter: parts.isEmpty ? nil : (parts.count == 1 ? parts[0] : .and(parts)),
                          limit: try int("limit"), offset: try int("offset") ?? 0, orderBy: order)
    }
}
