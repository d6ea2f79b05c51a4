/// Firebase's key rules and limits for the Realtime Database, and the order-preserving byte
/// encoding of paths that persistent stores key their rows by.
public enum DatabaseLimits {
    /// Deepest path a value may reach (keys from the root).
    public static let maxDepth = 32
    /// Longest key, in UTF-8 bytes.
    public static let maxKeyBytes = 768
    /// Longest string value, in UTF-8 bytes.
    public static let maxStringBytes = 10 * 1024 * 1024
    /// Largest body a single write may carry (REST).
    public static let maxWriteBytes = 256 * 1024 * 1024

    /// Whether `key` may name a child: non-empty, at most 768 bytes, none of `. $ # [ ] /`
    /// and no ASCII control character.
    public static func isValidKey(_ key: String) -> Bool {
        guard !key.isEmpty, key.utf8.count <= maxKeyBytes else { return false }
        for byte in key.utf8 {
            switch byte {
            case 0x00...0x1F, 0x7F, UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"), UInt8(ascii: "["),
                UInt8(ascii: "]"), UInt8(ascii: "/"):
                return false
            default: continue
            }
        }
        return true
    }
}

/// A location in a namespace's tree: its keys from the root (empty = the root).
public struct DatabasePath: Sendable, Hashable, CustomStringConvertible {
    public var keys: [String]

    public init(_ keys: [String]) { self.keys = keys }

    public static let root = DatabasePath([])

    /// Parses a slash-separated path (`/users/alice`, empty segments ignored) and checks
    /// each key against Firebase's key rules and the depth limit.
    public static func parse(_ text: String) throws(DatabaseError) -> DatabasePath {
        let keys = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        for key in keys where !DatabaseLimits.isValidKey(key) {
            throw DatabaseError.invalidPath("Invalid token in path")
        }
        guard keys.count <= DatabaseLimits.maxDepth else {
            throw DatabaseError.invalidPath("Path exceeds the maximum depth of \(DatabaseLimits.maxDepth)")
        }
        return DatabasePath(keys)
    }

    public var description: String { "/" + keys.joined(separator: "/") }
    public var isRoot: Bool { keys.isEmpty }
    public var last: String? { keys.last }
    public var parent: DatabasePath? { keys.isEmpty ? nil : DatabasePath(Array(keys.dropLast())) }

    public func child(_ key: String) -> DatabasePath { DatabasePath(keys + [key]) }
    public func appending(_ other: DatabasePath) -> DatabasePath { DatabasePath(keys + other.keys) }

    /// Whether `self` is `other` or lies under it.
    public func isWithin(_ other: DatabasePath) -> Bool {
        keys.count >= other.keys.count && keys.starts(with: other.keys)
    }

    /// `self` relative to an ancestor (`self.isWithin(ancestor)` must hold).
    public func relative(to ancestor: DatabasePath) -> DatabasePath {
        DatabasePath(Array(keys.dropFirst(ancestor.keys.count)))
    }
}

/// The byte key of a path that persistent stores order rows by: each key's UTF-8 bytes
/// followed by a 0x00 separator (keys never contain control characters). A node's subtree
/// (the node and every descendant) is exactly the keys in ``subtreeRange(_:)``, so reading
/// a subtree is one range scan whatever the size of the rest of the tree.
public enum DatabasePathKey {
    public static func encode(_ path: DatabasePath) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(path.keys.reduce(0) { $0 + $1.utf8.count + 1 })
        for key in path.keys {
            out.append(contentsOf: key.utf8)
            out.append(0)
        }
        return out
    }

    public static func decode(_ bytes: some Collection<UInt8>) -> DatabasePath {
        DatabasePath(bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) })
    }

    /// The half-open byte range `[lower, upper)` holding the keys of `path` and all of its
    /// descendants; `upper` is nil for the root (no upper bound).
    public static func subtreeRange(_ path: DatabasePath) -> (lower: [UInt8], upper: [UInt8]?) {
        let lower = encode(path)
        guard !lower.isEmpty else { return (lower, nil) }
        var upper = lower
        upper[upper.count - 1] = 1  // the trailing 0x00 separator, bumped
        return (lower, upper)
    }
}
