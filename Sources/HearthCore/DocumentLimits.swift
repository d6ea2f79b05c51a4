/// Firestore's limits on documents and writes, with its error messages.
public enum DocumentLimits {
    public static let maxDocumentSize = 1_048_576
    public static let maxDepth = 20
    public static let maxWritesPerCommit = 500
    public static let maxDisjunctions = 30

    /// Firestore's storage-size formula for a document name: each segment's UTF-8 length + 1, plus 16.
    public static func nameSize(_ path: ResourcePath) -> Int {
        path.segments.reduce(16) { $0 + $1.utf8.count + 1 }
    }

    public static func valueSize(_ v: Value) -> Int {
        switch v {
        case .null, .boolean: 1
        case .integer, .double, .timestamp: 8
        case .geoPoint: 16
        case .string(let s): s.utf8.count + 1
        case .bytes(let b): b.count
        case .reference(let r): referenceSize(r)
        case .array(let a): a.reduce(0) { $0 + valueSize($1) }
        case .map(let m): mapSize(m)
        }
    }

    /// A reference is sized as its document name: the segments after `/documents/`.
    static func referenceSize(_ r: String) -> Int {
        let segments = r.split(separator: "/", omittingEmptySubsequences: false)
        let start = (segments.firstIndex(of: "documents") ?? -1) + 1
        return segments[start...].reduce(16) { $0 + $1.utf8.count + 1 }
    }

    public static func mapSize(_ m: [String: Value]) -> Int {
        m.reduce(0) { $0 + $1.key.utf8.count + 1 + valueSize($1.value) }
    }

    public static func documentSize(path: ResourcePath, fields: [String: Value]) -> Int {
        nameSize(path) + mapSize(fields) + 32
    }

    /// Depth of nesting: a map or array inside the document counts one level.
    public static func depth(_ v: Value) -> Int {
        switch v {
        case .array(let a): 1 + (a.map(depth).max() ?? 0)
        case .map(let m): 1 + (m.values.map(depth).max() ?? 0)
        default: 0
        }
    }

    /// Validates a complete document about to be stored.
    public static func validate(path: ResourcePath, fields: [String: Value]) throws(HearthError) {
        let size = documentSize(path: path, fields: fields)
        if size > maxDocumentSize {
            throw .invalidArgument(
                "Document '\(path.text)' cannot be written because its size (\(size) bytes) exceeds the maximum allowed size of 1,048,576 bytes.")
        }
        if fields.values.contains(where: { depth($0) > maxDepth }) {
            throw .invalidArgument(
                "Document '\(path.text)' cannot be written because it exceeds the maximum depth of \(maxDepth) nested levels of maps or arrays.")
        }
        try validateFieldNames(fields, path: path)
    }

    static func validateFieldNames(_ m: [String: Value], path: ResourcePath) throws(HearthError) {
        for (k, v) in m {
            if k.isEmpty { throw .invalidArgument("Document '\(path.text)' cannot contain an empty field name.") }
            if k.utf8.count > 1500 {
                throw .invalidArgument("Field name \"\(k.prefix(40))...\" is longer than 1500 bytes.")
            }
            if k.hasPrefix("__") && k.hasSuffix("__") && k.utf8.count >= 4 && !(k == "__type__" || k == "value") {
                throw .invalidArgument("Field name \"\(k)\" is invalid because it is reserved.")
            }
            if v.isVector, let elements = v.mapValue?["value"]?.arrayValue {
                if elements.isEmpty { throw .invalidArgument("Cannot have a zero length vector.") }
                if elements.count > 2048 { throw .invalidArgument("Vector field \"\(k)\" has more than 2048 dimensions.") }
                if !elements.allSatisfy(\.isNumber) { throw .invalidArgument("Vector field \"\(k)\" must hold only numbers.") }
            }
            if case .map(let sub) = v { try validateFieldNames(sub, path: path) }
            if case .array(let a) = v {
                for e in a {
                    if case .array = e {
                        throw .invalidArgument("Cannot have an array value directly inside another array (field \"\(k)\").")
                    }
                    if case .map(let sub) = e { try validateFieldNames(sub, path: path) }
                }
            }
        }
    }
}
