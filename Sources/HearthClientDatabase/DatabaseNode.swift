import Crypto
import Foundation

/// A scalar: what a leaf holds, and what a priority can be (numbers and strings only).
package enum DatabaseLeaf: Sendable, Equatable, Hashable {
    case bool(Bool)
    case number(Double)
    case string(String)

    package var json: DatabaseJSON {
        switch self {
        case .bool(let b): .bool(b)
        case .number(let n): .number(n)
        case .string(let s): .string(s)
        }
    }

    /// The value as the Apple SDK hands it to apps: `Bool`, `Int` for integral numbers that fit, else `Double`, `String`.
    package var appValue: Any {
        switch self {
        case .bool(let b): b
        case .number(let n): (n == n.rounded() && abs(n) < 9_007_199_254_740_992) ? Int(n) as Any : n as Any
        case .string(let s): s
        }
    }
}

/// One node of the client's copy of the tree: a leaf or children (none = the node does not
/// exist, Firebase's null), with an optional priority.
package struct DatabaseNode: Sendable, Equatable {
    package enum Content: Sendable, Equatable {
        case leaf(DatabaseLeaf)
        case children([String: DatabaseNode])
    }

    package var content: Content
    package var priority: DatabaseLeaf?

    package static let empty = DatabaseNode(content: .children([:]), priority: nil)

    package init(content: Content, priority: DatabaseLeaf? = nil) {
        self.content = content
        self.priority = priority
    }

    package init(leaf: DatabaseLeaf, priority: DatabaseLeaf? = nil) {
        self.init(content: .leaf(leaf), priority: priority)
    }

    package var isEmpty: Bool {
        if case .children(let children) = content { return children.isEmpty }
        return false
    }

    package var children: [String: DatabaseNode] {
        if case .children(let children) = content { return children }
        return [:]
    }

    package var leaf: DatabaseLeaf? {
        if case .leaf(let leaf) = content { return leaf }
        return nil
    }

    package func child(_ key: String) -> DatabaseNode {
        if key == ".priority" { return priority.map { DatabaseNode(leaf: $0) } ?? .empty }
        return children[key] ?? .empty
    }

    package func child(atPath path: [String]) -> DatabaseNode {
        var node = self
        for key in path {
            node = node.child(key)
            if node.isEmpty { return .empty }
        }
        return node
    }

    /// This node with `node` at `path` (an empty node deletes); parents that end up without
    /// children stop existing, as in Firebase.
    package func setting(_ path: ArraySlice<String>, to node: DatabaseNode) -> DatabaseNode {
        guard let first = path.first else { return node }
        if first == ".priority" {
            var copy = self
            if !copy.isEmpty { copy.priority = node.leaf }
            return copy
        }
        var children = self.children
        let updated = child(first).setting(path.dropFirst(), to: node)
        if updated.isEmpty { children.removeValue(forKey: first) } else { children[first] = updated }
        if children.isEmpty { return .empty }
        return DatabaseNode(content: .children(children), priority: priority)
    }

    package func setting(_ path: [String], to node: DatabaseNode) -> DatabaseNode { setting(path[...], to: node) }

    // MARK: JSON (export format: `.priority`, `.value`)

    /// The node for JSON in export format; arrays become children "0", "1", …; nulls vanish.
    package init(json: DatabaseJSON) {
        switch json {
        case .null: self = .empty
        case .bool(let b): self.init(leaf: .bool(b))
        case .number(let n): self.init(leaf: .number(n))
        case .string(let s): self.init(leaf: .string(s))
        case .array(let items):
            var children: [String: DatabaseNode] = [:]
            for (i, item) in items.enumerated() {
                let node = DatabaseNode(json: item)
                if !node.isEmpty { children[String(i)] = node }
            }
            self.init(content: .children(children))
        case .object(let members):
            var children: [String: DatabaseNode] = [:]
            var priority: DatabaseLeaf?
            var value: DatabaseLeaf?
            for (key, member) in members {
                switch key {
                case ".priority":
                    switch member {
                    case .number(let n): priority = .number(n)
                    case .string(let s): priority = .string(s)
                    default: priority = nil
                    }
                case ".value": value = DatabaseNode(json: member).leaf
                default:
                    let node = DatabaseNode(json: member)
                    if !node.isEmpty { children[key] = node }
                }
            }
            if let value {
                self.init(leaf: value, priority: priority)
            } else {
                self.init(content: .children(children), priority: children.isEmpty ? nil : priority)
            }
        }
    }

    /// Export format: what the server hashes and what a transaction writes back.
    package func exportJSON() -> DatabaseJSON {
        switch content {
        case .leaf(let leaf):
            guard let priority else { return leaf.json }
            return .object([(".value", leaf.json), (".priority", priority.json)])
        case .children(let children):
            if children.isEmpty { return .null }
            var members = children.sorted { DatabaseOrdering.compareNames($0.key, $1.key) < 0 }.map { ($0.key, $0.value.exportJSON()) }
            if let priority { members.append((".priority", priority.json)) }
            return .object(members)
        }
    }

    /// The value as the Apple SDK gives it (`DataSnapshot.value`): `NSNull` for no data,
    /// `[String: Any]`, `[Any]` for objects whose keys are mostly-dense integers (Firebase's
    /// array rule), or a scalar.
    package func appValue(withPriority: Bool = false) -> Any {
        switch content {
        case .leaf(let leaf):
            guard withPriority, let priority else { return leaf.appValue }
            return [".value": leaf.appValue, ".priority": priority.appValue] as [String: Any]
        case .children(let children):
            if children.isEmpty { return NSNull() }
            if !withPriority, let array = arrayValue(children) { return array }
            var object: [String: Any] = [:]
            for (key, child) in children { object[key] = child.appValue(withPriority: withPriority) }
            if withPriority, let priority { object[".priority"] = priority.appValue }
            return object
        }
    }

    func arrayValue(_ children: [String: DatabaseNode]) -> [Any]? {
        var maxIndex = -1
        for key in children.keys {
            guard let index = DatabaseOrdering.integerKey(key), index >= 0, String(index) == key else { return nil }
            maxIndex = max(maxIndex, index)
        }
        guard maxIndex < 2 * children.count else { return nil }
        var array = [Any](repeating: NSNull(), count: maxIndex + 1)
        for (key, child) in children { array[Int(key)!] = child.appValue() }
        return array
    }

    // MARK: Hash (what a transaction's put carries as `h`)

    /// The SDKs' data hash: Base64 of SHA-1 of the type/IEEE-754/priority text, children in
    /// priority order; `""` for no data.
    package var hash: String {
        let text = hashText
        guard !text.isEmpty else { return "" }
        return Data(Insecure.SHA1.hash(data: Data(text.utf8))).base64EncodedString()
    }

    var hashText: String {
        if isEmpty { return "" }
        var text = ""
        if let priority { text += "priority:" + Self.leafHashText(priority) + ":" }
        switch content {
        case .leaf(let leaf): return text + Self.leafHashText(leaf)
        case .children(let children):
            let ordered = children.sorted { DatabaseIndex.priority.compare(($0.key, $0.value), ($1.key, $1.value)) < 0 }
            for (key, child) in ordered {
                let childHash = child.hash
                if !childHash.isEmpty { text += ":" + key + ":" + childHash }
            }
            return text
        }
    }

    static func leafHashText(_ leaf: DatabaseLeaf) -> String {
        switch leaf {
        case .bool(let b):
            return "boolean:" + (b ? "true" : "false")
        case .number(let n):
            let hex = String(n.bitPattern, radix: 16)
            return "number:" + String(repeating: "0", count: 16 - hex.count) + hex
        case .string(let s):
            return "string:" + s
        }
    }
}
