import HearthCore
import HearthDatabase

/// A REST request to the database port, parsed: namespace, path, method and the query
/// parameters Firebase's REST API defines.
struct DatabaseRESTRequest {
    enum Method: String {
        case get = "GET", put = "PUT", post = "POST", patch = "PATCH", delete = "DELETE"
    }

    enum Format { case plain, export }
    enum Print { case normal, pretty, silent }

    var namespace: String
    var path: DatabasePath
    /// `/.settings/rules.json`.
    var isRules = false
    var method: Method
    var print: Print = .normal
    var format: Format = .plain
    var shallow = false
    var download: String?
    var sizeLimit: Int?
    var query: DatabaseQuery?
    /// `auth=` or `access_token=`.
    var credential: String?
    /// `auth_variable_override`: absent (nil), or the JSON (`.null` for `null`).
    var authOverride: JSON?

    /// `writeSizeLimit` in bytes replaced plus written (Firebase states the levels as time
    /// budgets; Hearth applies them as these sizes).
    static let sizeLimits: [String: Int?] = [
        "tiny": 10 * 1024, "small": 1024 * 1024, "medium": 16 * 1024 * 1024, "large": 64 * 1024 * 1024, "unlimited": nil,
    ]

    static let queryNames: Set<String> = ["orderBy", "equalTo", "startAt", "startAfter", "endAt", "endBefore", "limitToFirst", "limitToLast"]

    static func parse(
        rawPath: String, method rawMethod: String, overrideHeader: String?, query rawQuery: String?, host: String?, defaultNamespace: String
    ) throws(DatabaseError) -> DatabaseRESTRequest {
        let parameters: [(String, String)]
        do { parameters = try HTTPSupport.queryParameters(rawQuery) } catch {
            throw DatabaseError(.invalidQuery, "Invalid query string: \(error.message)")
        }
        var q: [String: String] = [:]
        for (name, value) in parameters where q[name] == nil { q[name] = value }

        var methodName = rawMethod.uppercased()
        if methodName == "POST", let override = overrideHeader ?? q["x-http-method-override"] { methodName = override.uppercased() }
        guard let method = Method(rawValue: methodName) else {
            throw DatabaseError(.invalidQuery, "Invalid method: \(methodName)")
        }

        // Path: `/{segments}.json`, each segment percent-decoded.
        guard rawPath.hasSuffix(".json") else {
            throw DatabaseError.invalidPath("REST requests must address a path ending in .json")
        }
        let trimmed = String(rawPath.dropLast(5))
        var keys: [String] = []
        for segment in trimmed.split(separator: "/", omittingEmptySubsequences: true) {
            guard let key = HTTPSupport.percentDecode(segment) else { throw DatabaseError.invalidPath("Invalid token in path") }
            keys.append(key)
        }
        let namespace = try Self.namespace(q["ns"], host: host, defaultNamespace: defaultNamespace)
        var request = DatabaseRESTRequest(namespace: namespace, path: .root, method: method)
        if keys == [".settings", "rules"] {
            request.isRules = true
        } else {
            for key in keys where !DatabaseLimits.isValidKey(key) { throw DatabaseError.invalidPath("Invalid token in path") }
            guard keys.count <= DatabaseLimits.maxDepth else {
                throw DatabaseError.invalidPath("Path exceeds the maximum depth of \(DatabaseLimits.maxDepth)")
            }
            request.path = DatabasePath(keys)
        }

        switch q["print"] {
        case nil: break
        case "pretty": request.print = .pretty
        case "silent": request.print = .silent
        case let other?: throw DatabaseError(.invalidQuery, "print must be either 'pretty' or 'silent', not '\(other)'")
        }
        switch q["format"] {
        case nil, "strict": break
        case "export": request.format = .export
        case let other?: throw DatabaseError(.invalidQuery, "format must be 'export', not '\(other)'")
        }
        switch q["shallow"] {
        case nil, "false": break
        case "true": request.shallow = true
        case let other?: throw DatabaseError(.invalidQuery, "shallow must be either 'true' or 'false', not '\(other)'")
        }
        request.download = q["download"]
        if let timeout = q["timeout"] { _ = try Self.timeout(timeout) }
        if let limit = q["writeSizeLimit"] {
            guard let bytes = Self.sizeLimits[limit] else {
                throw DatabaseError(.invalidQuery, "writeSizeLimit must be one of tiny, small, medium, large or unlimited")
            }
            request.sizeLimit = bytes
        }
        request.credential = q["auth"] ?? q["access_token"]
        if let override = q["auth_variable_override"] {
            do { request.authOverride = try JSON.parse(override) } catch {
                throw DatabaseError(.invalidQuery, "auth_variable_override must be JSON")
            }
            guard request.authOverride?.isNull == true || request.authOverride?.objectValue != nil else {
                throw DatabaseError(.invalidQuery, "auth_variable_override must be a JSON object or null")
            }
        }
        request.query = try Self.query(q)
        if request.shallow && request.query != nil {
            throw DatabaseError(.invalidQuery, "Mixing 'shallow' and querying parameters is not supported")
        }
        return request
    }

    static func namespace(_ parameter: String?, host: String?, defaultNamespace: String) throws(DatabaseError) -> String {
        if let parameter {
            guard Self.isValidNamespace(parameter) else { throw DatabaseError(.invalidQuery, "Invalid namespace: \(parameter)") }
            return parameter
        }
        if let host {
            let name = host.split(separator: ":").first.map(String.init) ?? host
            let labels = name.split(separator: ".")
            if labels.count >= 2, labels.dropFirst().joined(separator: ".") == "localhost", isValidNamespace(String(labels[0])) {
                return String(labels[0])
            }
        }
        return defaultNamespace
    }

    /// Namespaces are database names: lowercase letters, digits and `-`, 1 to 63 characters.
    static func isValidNamespace(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 63
            && name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }
    }

    /// `timeout=<n>ms|s|min`, at most 15 minutes; returns milliseconds.
    static func timeout(_ text: String) throws(DatabaseError) -> Int {
        let units: [(String, Int)] = [("ms", 1), ("min", 60_000), ("s", 1000)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            if let count = Int(text.dropLast(suffix.count)), count > 0, count * factor <= 15 * 60_000 { return count * factor }
        }
        throw DatabaseError(.invalidQuery, "timeout must be a positive number of ms, s or min, at most 15min")
    }

    static func query(_ q: [String: String]) throws(DatabaseError) -> DatabaseQuery? {
        guard let orderText = q["orderBy"] else {
            if q.keys.contains(where: { queryNames.contains($0) }) {
                throw DatabaseError(.invalidQuery, "orderBy must be defined when other query parameters are defined")
            }
            return nil
        }
        guard let orderJSON = try? JSON.parse(orderText), let order = orderJSON.stringValue else {
            throw DatabaseError(.invalidQuery, "orderBy must be a valid JSON encoded path")
        }
        var query: DatabaseQuery
        switch order {
        case "$key": query = DatabaseQuery(order: .key)
        case "$value": query = DatabaseQuery(order: .value)
        case "$priority": query = DatabaseQuery(order: .priority)
        default:
            guard let path = try? DatabasePath.parse(order), !path.isRoot else {
                throw DatabaseError(.invalidQuery, "orderBy must be a valid JSON encoded path")
            }
            query = DatabaseQuery(order: .child(path))
        }
        func bound(_ name: String) throws(DatabaseError) -> DatabaseQuery.Bound? {
            guard let text = q[name] else { return nil }
            guard let json = try? JSON.parse(text) else {
                throw DatabaseError(.invalidQuery, "Constraint index field must be a JSON primitive")
            }
            if json.isNull { return .some(nil) }
            guard let scalar = DatabaseScalar(json) else {
                throw DatabaseError(.invalidQuery, "Constraint index field must be a JSON primitive")
            }
            return .some(scalar)
        }
        func limit(_ name: String) throws(DatabaseError) -> Int? {
            guard let text = q[name] else { return nil }
            guard let value = Int(text), value > 0 else { throw DatabaseError(.invalidQuery, "\(name) must be a positive integer") }
            return value
        }
        query.startAt = try bound("startAt")
        query.startAfter = try bound("startAfter")
        query.endAt = try bound("endAt")
        query.endBefore = try bound("endBefore")
        query.equalTo = try bound("equalTo")
        query.limitToFirst = try limit("limitToFirst")
        query.limitToLast = try limit("limitToLast")
        return try query.validated()
    }
}
