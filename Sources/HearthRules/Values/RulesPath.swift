/// A path value: `/databases/(default)/documents/users/alice`, or the part of a request path
/// a `{name=**}` wildcard matched. Equality is segment by segment.
public struct RulesPath: Sendable, Hashable, CustomStringConvertible {
    public var segments: [String]

    public init(_ segments: [String]) { self.segments = segments }

    /// Parses `a/b/c` or `/a/b/c` (empty segments are dropped).
    public init(parsing text: String) {
        segments = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    /// `/databases/{database}/documents/{path}`, the `request.path` of a Firestore document.
    public static func firestoreDocument(database: String, path: [String]) -> RulesPath {
        RulesPath(["databases", database, "documents"] + path)
    }

    /// `/b/{bucket}/o/{name split on /}`, the `request.path` of a Storage object.
    public static func storageObject(bucket: String, name: String) -> RulesPath {
        RulesPath(["b", bucket, "o"] + name.split(separator: "/", omittingEmptySubsequences: false).map(String.init))
    }

    /// For a Firestore document path: the database id and the document path after
    /// `documents` (nil when this is not `/databases/{db}/documents/{even number of segments}`).
    public var firestoreDocument: (database: String, path: [String])? {
        guard segments.count >= 5, segments[0] == "databases", segments[2] == "documents",
              (segments.count - 3) % 2 == 0 else { return nil }
        return (segments[1], Array(segments[3...]))
    }

    public var description: String { "/" + segments.joined(separator: "/") }
}
