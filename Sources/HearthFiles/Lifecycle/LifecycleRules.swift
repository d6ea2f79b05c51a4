public import HearthCore
import Foundation

/// Declarative deletion rules run by ``LifecycleWorker`` (`--lifecycle FILE`):
///
/// ```json
/// {"intervalSeconds": 60, "batchSize": 200, "bucket": "demo-hearth.appspot.com",
///  "rules": [
///    {"cascade": "bottles/{bottleId}",
///     "when": [{"field": "expiresAt", "op": "<", "value": "now"}, {"field": "status", "op": "==", "value": "dead"}],
///     "storagePrefixes": ["bottles/{bottleId}/"]},
///    {"ttl": "sessions/{sessionId}", "field": "expireAt"},
///    {"storageAge": "tmp/", "maxAgeSeconds": 86400}]}
/// ```
public struct LifecycleRules: Sendable, Equatable {
    /// A document pattern: literal collection ids and `{variable}` document ids, ending in a document.
    public struct Pattern: Sendable, Equatable, CustomStringConvertible {
        public enum Segment: Sendable, Equatable {
            case literal(String)
            case variable(String)
        }

        public var segments: [Segment]

        public init(parsing text: String) throws(HearthError) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count >= 2, parts.count % 2 == 0 else {
                throw .invalidArgument("Pattern \(text) must name documents: collection/{id}[/collection/{id}…].")
            }
            segments = try parts.enumerated().map { (index, part) throws(HearthError) -> Segment in
                if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                    guard index % 2 == 1 else { throw .invalidArgument("Pattern \(text): collection ids cannot be variables.") }
                    return .variable(String(part.dropFirst().dropLast()))
                }
                guard !part.isEmpty, !part.contains("{"), !part.contains("}") else { throw .invalidArgument("Pattern \(text): bad segment \(part).") }
                return .literal(part)
            }
        }

        /// The collection id of the documents it matches.
        public var collectionID: String {
            if case .literal(let id) = segments[segments.count - 2] { return id }
            return ""
        }

        /// The variables' values if `path` matches.
        public func match(_ path: ResourcePath) -> [String: String]? {
            guard path.segments.count == segments.count else { return nil }
            var bound: [String: String] = [:]
            for (segment, value) in zip(segments, path.segments) {
                switch segment {
                case .literal(let literal): if literal != value { return nil }
                case .variable(let name): bound[name] = value
                }
            }
            return bound
        }

        public var description: String {
            segments.map { if case .literal(let l) = $0 { l } else if case .variable(let v) = $0 { "{\(v)}" } else { "" } }.joined(separator: "/")
        }
    }

    /// One condition on a document field; `now` compares with the time of the sweep.
    public struct Condition: Sendable, Equatable {
        public enum Operator: String, Sendable, Equatable { case lessThan = "<", lessThanOrEqual = "<=", equal = "==" }
        public var field: FieldPath
        public var op: Operator
        /// nil = now.
        public var value: Value?
    }

    /// A Realtime Database path with `{variable}` keys: `/bottles/{bottleId}`. Written in rules
    /// files as such in `database` lists, and as `database:/bottles/{bottleId}` where a cascade
    /// matches database nodes instead of documents.
    public struct DatabasePattern: Sendable, Equatable, CustomStringConvertible {
        public var segments: [Pattern.Segment]

        public init(parsing text: String) throws(HearthError) {
            guard text.hasPrefix("/"), text.count > 1 else { throw .invalidArgument("Database path \(text) must start with / and name a node.") }
            segments = try text.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map { (part) throws(HearthError) -> Pattern.Segment in
                let part = String(part)
                if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 { return .variable(String(part.dropFirst().dropLast())) }
                guard !part.isEmpty, !part.contains("{"), !part.contains("}"),
                    !part.contains(where: { ".$#[]".contains($0) || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true })
                else { throw .invalidArgument("Database path \(text): bad key \(part).") }
                return .literal(part)
            }
        }

        /// The keys with variables substituted; nil if one is unknown or its value could not be
        /// a database key (so a value can never point elsewhere in the tree).
        public func expand(_ bound: [String: String]) -> [String]? {
            var keys: [String] = []
            for segment in segments {
                switch segment {
                case .literal(let key): keys.append(key)
                case .variable(let name):
                    guard let value = bound[name], !value.isEmpty, value.utf8.count <= 768,
                        !value.contains(where: { "/.$#[]".contains($0) || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true })
                    else { return nil }
                    keys.append(value)
                }
            }
            return keys
        }

        public var description: String {
            "/" + segments.map { if case .literal(let l) = $0 { l } else if case .variable(let v) = $0 { "{\(v)}" } else { "" } }.joined(separator: "/")
        }
    }

    public enum Rule: Sendable, Equatable {
        /// Documents matching `pattern` that meet any condition: their storage prefixes, the
        /// listed database paths, their subcollections and themselves are deleted.
        case cascade(pattern: Pattern, when: [Condition], storagePrefixes: [String], database: [DatabasePattern] = [])
        /// Realtime Database nodes matching `pattern` (literal keys, the last one a variable:
        /// `/bottles/{bottleId}`) whose child fields meet any condition: their storage
        /// prefixes, the listed documents (with subcollections), the listed database paths,
        /// then the node itself are deleted.
        case databaseCascade(pattern: DatabasePattern, when: [Condition], storagePrefixes: [String], documents: [String] = [], database: [DatabasePattern] = [])
        /// Documents whose `field` (a timestamp) is in the past are deleted (Firestore TTL).
        case ttl(pattern: Pattern, field: FieldPath)
        /// Objects under `prefix` older than `maxAgeSeconds` are deleted.
        case storageAge(prefix: String, maxAgeSeconds: Int64)
        /// For documents matching `pattern` whose last variable names a uid without an account
        /// (deleted): the listed documents (with their subcollections) and storage objects (a
        /// name ending in `/` is a prefix) are deleted.
        case onAccountDeletion(pattern: Pattern, documents: [String], storage: [String], database: [DatabasePattern] = [])
    }

    public var rules: [Rule]
    public var intervalSeconds: Int
    public var batchSize: Int
    /// The bucket storage prefixes refer to; nil = the project's default bucket.
    public var bucket: String?

    public init(rules: [Rule], intervalSeconds: Int = 60, batchSize: Int = 200, bucket: String? = nil) {
        self.rules = rules
        self.intervalSeconds = intervalSeconds
        self.batchSize = batchSize
        self.bucket = bucket
    }

    /// Substitutes a matched document's variables into a storage prefix; nil if one is unknown.
    static func expand(_ template: String, _ bound: [String: String]) -> String? {
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}"), let value = bound[String(rest[rest.index(after: open)..<close])] else { return nil }
            out += value
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// Reads a rules file.
    public static func load(_ path: String) throws(HearthError) -> LifecycleRules {
        guard let data = FileManager.default.contents(atPath: path) else { throw .failedPrecondition("Cannot read lifecycle rules \(path).") }
        return try parse(JSON.parse(Array(data)), source: path)
    }

    public static func parse(_ json: JSON, source: String) throws(HearthError) -> LifecycleRules {
        guard json.objectValue != nil else { throw .invalidArgument("\(source): expected a JSON object.") }
        func int(_ key: String, _ value: JSON?, _ range: ClosedRange<Int64>, _ fallback: Int64) throws(HearthError) -> Int64 {
            guard let value else { return fallback }
            guard case .number(let text) = value, let number = Int64(text), range.contains(number) else {
                throw .invalidArgument("\(source): \(key) must be an integer in \(range.lowerBound)...\(range.upperBound).")
            }
            return number
        }
        var out = LifecycleRules(rules: [])
        for (key, _) in json.objectValue ?? [] where !["intervalSeconds", "batchSize", "bucket", "rules"].contains(key) {
            throw .invalidArgument("\(source): unknown setting \(key).")
        }
        out.intervalSeconds = Int(try int("intervalSeconds", json["intervalSeconds"], 1...86400, 60))
        out.batchSize = Int(try int("batchSize", json["batchSize"], 1...500, 200))
        out.bucket = json["bucket"]?.stringValue
        guard let rules = json["rules"]?.arrayValue else { throw .invalidArgument("\(source): rules must be a list.") }
        for (index, rule) in rules.enumerated() {
            let at = "\(source): rules[\(index)]"
            var databasePaths: [DatabasePattern] = []
            if let list = rule["database"] {
                guard let items = list.arrayValue else { throw .invalidArgument("\(at): database must be a list of paths.") }
                for item in items {
                    guard let text = item.stringValue else { throw .invalidArgument("\(at): database must be a list of paths.") }
                    do { databasePaths.append(try DatabasePattern(parsing: text)) } catch { throw .invalidArgument("\(at): \(error.message)") }
                }
            }
            if let pattern = rule["cascade"]?.stringValue {
                guard let when = rule["when"]?.arrayValue, !when.isEmpty else { throw .invalidArgument("\(at): cascade needs when: [conditions].") }
                var conditions: [Condition] = []
                for condition in when {
                    guard let field = condition["field"]?.stringValue, let opText = condition["op"]?.stringValue,
                        let op = Condition.Operator(rawValue: opText), let value = condition["value"]
                    else { throw .invalidArgument("\(at): a condition is {\"field\", \"op\": \"<\"|\"<=\"|\"==\", \"value\"}.") }
                    let parsed: Value?
                    switch value {
                    case .string("now"): parsed = nil
                    case .string(let text): parsed = .string(text)
                    case .bool(let flag): parsed = .boolean(flag)
                    case .number(let text): parsed = Int64(text).map(Value.integer) ?? Double(text).map(Value.double)
                    default: throw .invalidArgument("\(at): condition values are strings, numbers, booleans or \"now\".")
                    }
                    conditions.append(Condition(field: try FieldPath(parsing: field), op: op, value: parsed))
                }
                let prefixes = rule["storagePrefixes"]?.arrayValue?.compactMap(\.stringValue) ?? []
                if pattern.hasPrefix("database:") {
                    let parsed = try DatabasePattern(parsing: String(pattern.dropFirst("database:".count)))
                    guard case .variable? = parsed.segments.last, parsed.segments.dropLast().allSatisfy({ if case .literal = $0 { true } else { false } })
                    else { throw .invalidArgument("\(at): a database cascade's path is literal keys and then one variable, e.g. database:/bottles/{bottleId}.") }
                    let documents = rule["documents"]?.arrayValue?.compactMap(\.stringValue) ?? []
                    for document in documents { _ = try Pattern(parsing: document.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")) }
                    out.rules.append(
                        .databaseCascade(pattern: parsed, when: conditions, storagePrefixes: prefixes, documents: documents, database: databasePaths))
                } else {
                    out.rules.append(.cascade(pattern: try Pattern(parsing: pattern), when: conditions, storagePrefixes: prefixes, database: databasePaths))
                }
            } else if let pattern = rule["ttl"]?.stringValue {
                guard let field = rule["field"]?.stringValue else { throw .invalidArgument("\(at): ttl needs field.") }
                out.rules.append(.ttl(pattern: try Pattern(parsing: pattern), field: try FieldPath(parsing: field)))
            } else if let pattern = rule["onAccountDeletion"]?.stringValue {
                let documents = rule["documents"]?.arrayValue?.compactMap(\.stringValue) ?? []
                let storage = rule["storage"]?.arrayValue?.compactMap(\.stringValue) ?? []
                guard !documents.isEmpty || !storage.isEmpty || !databasePaths.isEmpty else {
                    throw .invalidArgument("\(at): onAccountDeletion needs documents, storage and/or database paths.")
                }
                let parsed = try Pattern(parsing: pattern)
                guard case .variable? = parsed.segments.last else {
                    throw .invalidArgument("\(at): onAccountDeletion's pattern must end in the uid variable, e.g. users/{uid}.")
                }
                for document in documents { _ = try Pattern(parsing: document.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")) }
                out.rules.append(.onAccountDeletion(pattern: parsed, documents: documents, storage: storage, database: databasePaths))
            } else if let prefix = rule["storageAge"]?.stringValue {
                out.rules.append(.storageAge(prefix: prefix, maxAgeSeconds: try int("maxAgeSeconds", rule["maxAgeSeconds"], 1...(3650 * 86400), 0)))
                if case .storageAge(_, 0)? = out.rules.last { throw .invalidArgument("\(at): storageAge needs maxAgeSeconds.") }
            } else {
                throw .invalidArgument("\(at): a rule is {\"cascade\"…}, {\"ttl\"…}, {\"storageAge\"…} or {\"onAccountDeletion\"…}.")
            }
        }
        return out
    }
}
