import Foundation

/// A path to a field: `FieldPath(["address", "city"])`, or `FieldPath.documentID()` for the
/// document's name. Dotted strings (`"address.city"`) are parsed into one.
public struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    public let segments: [String]

    public init(_ fieldNames: [String]) {
        precondition(!fieldNames.isEmpty && fieldNames.allSatisfy { !$0.isEmpty }, "Invalid field path. Provided names must not be empty.")
        segments = fieldNames
    }

    public static func documentID() -> FieldPath { FieldPath(["__name__"]) }

    /// A dotted path as `updateData` and `whereField` take it; empty segments and `~*/[]` are refused.
    static func parse(dotted path: String) throws -> FieldPath {
        guard !path.isEmpty, path.rangeOfCharacter(from: CharacterSet(charactersIn: "~*/[]")) == nil else {
            throw FirestoreErrorCode.invalidArgument.error("Invalid field path (\(path)). Paths must not be empty, begin with '.', end with '.', or contain '..', '~', '*', '/', '[', or ']'")
        }
        let parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.allSatisfy({ !$0.isEmpty }) else {
            throw FirestoreErrorCode.invalidArgument.error("Invalid field path (\(path)). Paths must not be empty, begin with '.', end with '.', or contain '..'")
        }
        return FieldPath(parts)
    }

    /// The server's form: segments joined by dots, each quoted in backticks unless it is a simple identifier.
    public var canonical: String {
        segments.map { s in
            let simple = s.first.map { $0 == "_" || $0.isASCII && $0.isLetter } == true
                && s.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
            return simple ? s : "`" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "`", with: "\\`") + "`"
        }.joined(separator: ".")
    }

    public var description: String { canonical }

    func appending(_ segment: String) -> FieldPath { FieldPath(segments + [segment]) }

    func isPrefix(of other: FieldPath) -> Bool {
        segments.count <= other.segments.count && Array(other.segments.prefix(segments.count)) == segments
    }
}
