/// A slash-separated path relative to a database's `documents` root: `users/alice`
/// (a document: even length) or `users/alice/posts` (a collection: odd length).
public struct ResourcePath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var segments: [String]

    public init(_ segments: [String]) { self.segments = segments }
    public static let root = ResourcePath([])

    /// Equality and hashing by UTF-8 bytes, as Firestore compares names (not by Unicode
    /// canonical equivalence, as Swift's `String ==` does).
    public static func == (a: ResourcePath, b: ResourcePath) -> Bool {
        a.segments.count == b.segments.count && zip(a.segments, b.segments).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }

    public func hash(into hasher: inout Hasher) {
        for s in segments {
            hasher.combine(s.utf8.count)
            for b in s.utf8 { hasher.combine(b) }
        }
    }

    public init(parsing text: String) {
        segments = text.isEmpty ? [] : text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    }

    public var isDocument: Bool { !segments.isEmpty && segments.count % 2 == 0 }
    public var isCollection: Bool { segments.count % 2 == 1 }
    public var isRoot: Bool { segments.isEmpty }
    public var lastSegment: String { segments.last ?? "" }
    public var parent: ResourcePath { ResourcePath(Array(segments.dropLast())) }
    public var text: String { segments.joined(separator: "/") }
    public var description: String { text }

    /// The collection id of a document path (`posts` for `users/a/posts/p1`).
    public var collectionId: String { segments.count >= 2 ? segments[segments.count - 2] : "" }

    public func appending(_ segment: String) -> ResourcePath { ResourcePath(segments + [segment]) }

    public func isPrefix(of other: ResourcePath) -> Bool {
        segments.count <= other.segments.count && Array(other.segments.prefix(segments.count)) == segments
    }

    /// Firestore orders document names segment by segment, each segment by its UTF-8 bytes
    /// (numeric ids `__id123__` first, by number).
    public static func < (a: ResourcePath, b: ResourcePath) -> Bool {
        for i in 0..<min(a.segments.count, b.segments.count) {
            let c = ValueOrdering.compareSegments(a.segments[i], b.segments[i])
            if c != 0 { return c < 0 }
        }
        return a.segments.count < b.segments.count
    }

    /// The integer of a numeric id segment, `__id<integer>__` (Datastore's integer ids, which
    /// clients use as positions: `__id-9223372036854775808__` is before every document).
    public static func numericID<S: StringProtocol>(_ segment: S) -> Int64? {
        let u = segment.utf8
        guard u.count > 6, segment.hasPrefix("__id"), segment.hasSuffix("__") else { return nil }
        let digits = segment.dropFirst(4).dropLast(2)
        guard let first = digits.first, first == "-" || first.isASCII && first.isNumber,
            digits.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        return Int64(String(digits))
    }

    /// Checks a position given as a document name (a query cursor): Firestore's id rules,
    /// except that numeric ids are allowed.
    public func validateAsPosition() throws(HearthError) {
        for s in segments where ResourcePath.numericID(s) == nil { try ResourcePath.validateId(s, in: self) }
    }

    /// Checks every segment against Firestore's id rules.
    public func validate() throws(HearthError) {
        for s in segments { try ResourcePath.validateId(s, in: self) }
    }

    public static func validateId(_ id: String, in path: ResourcePath) throws(HearthError) {
        if id.isEmpty {
            throw .invalidArgument("Document path \"\(path.text)\" contains an empty path segment.")
        }
        if id == "." || id == ".." {
            throw .invalidArgument("Resource id \"\(id)\" is invalid because it is reserved.")
        }
        if id.utf8.count > 1500 {
            throw .invalidArgument("Resource id \"\(id.prefix(40))...\" is invalid because it is longer than 1500 bytes.")
        }
        if id.hasPrefix("__") && id.hasSuffix("__") && id.utf8.count >= 4 {
            throw .invalidArgument("Resource id \"\(id)\" is invalid because it is reserved.")
        }
    }
}

/// A database within a project: `projects/{project}/databases/{database}`.
public struct DatabaseName: Sendable, Hashable, CustomStringConvertible {
    public var project: String
    public var database: String

    public init(project: String, database: String) {
        self.project = project
        self.database = database
    }

    public var text: String { "projects/\(project)/databases/\(database)" }
    public var documentsRoot: String { text + "/documents" }
    public var description: String { text }

    /// The full resource name of a document or collection path.
    public func name(of path: ResourcePath) -> String {
        path.isRoot ? documentsRoot : documentsRoot + "/" + path.text
    }

    /// Parses `projects/p/databases/d/documents[/path]` and returns the path after `documents`.
    public func path(fromName name: String) throws(HearthError) -> ResourcePath {
        let root = documentsRoot
        if name == root { return .root }
        guard name.hasPrefix(root + "/") else {
            throw .invalidArgument("Document name \"\(name)\" lies outside database \"\(text)\" or is malformed.")
        }
        let path = ResourcePath(parsing: String(name.dropFirst(root.count + 1)))
        try path.validate()
        return path
    }

    /// Parses a document name used as a position (a cursor): numeric ids are allowed.
    public func position(fromName name: String) throws(HearthError) -> ResourcePath {
        let root = documentsRoot
        guard name.hasPrefix(root + "/") else {
            throw .invalidArgument("Document name \"\(name)\" lies outside database \"\(text)\" or is malformed.")
        }
        let path = ResourcePath(parsing: String(name.dropFirst(root.count + 1)))
        try path.validateAsPosition()
        return path
    }

    public func documentPath(fromName name: String) throws(HearthError) -> ResourcePath {
        let path = try path(fromName: name)
        guard path.isDocument else {
            throw .invalidArgument("Document name \"\(name)\" has odd number of segments, expected a document path.")
        }
        return path
    }
}
