import Crypto
package import HearthCore
package import HearthDatabase

/// A protocol error on a Realtime Database socket: the server reports it with a control `e`
/// message and closes the connection (as Firebase does for what it cannot read).
package struct DatabaseWebSocketProtocolError: Error, Sendable, Equatable {
    package enum Reason: Sendable, Equatable {
        /// A frame or reassembled message that is not a JSON object of the protocol.
        case malformed
        /// A message larger than ``DatabaseWebSocketFrames/maxMessageBytes``.
        case tooBig
    }

    package var reason: Reason
    package var message: String

    package init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
}

/// Frame splitting of the Realtime Database protocol (v5): a message longer than 16384
/// characters travels as a frame holding only the decimal count of the frames that follow,
/// then that many frames to concatenate. A bare `0` is the clients' keepalive.
package enum DatabaseWebSocketFrames {
    /// The SDKs' frame size (UTF-16 code units, as JS and Java count string lengths).
    package static let maxFrameCharacters = 16384
    /// The largest message the server reassembles (the SDKs' 16 MB write limit plus the
    /// envelope); more is a protocol error that closes the connection.
    package static let maxMessageBytes = 16 * 1024 * 1024 + 64 * 1024

    /// `message` as the frames to send: itself when short, else the count then the pieces,
    /// cut on Unicode scalar boundaries (never splitting a surrogate pair).
    package static func split(_ message: String, maxCharacters: Int = maxFrameCharacters) -> [String] {
        guard message.utf16.count > maxCharacters else { return [message] }
        var pieces: [String] = []
        var current = String.UnicodeScalarView()
        var units = 0
        for scalar in message.unicodeScalars {
            let width = scalar.utf16.count
            if units + width > maxCharacters {
                pieces.append(String(current))
                current = String.UnicodeScalarView()
                units = 0
            }
            current.append(scalar)
            units += width
        }
        if !current.isEmpty { pieces.append(String(current)) }
        return [String(pieces.count)] + pieces
    }

    /// Reassembles the frames a client sends into messages.
    package struct Reassembler: Sendable {
        var remaining = 0
        var buffer = ""
        var bytes = 0

        package init() {}

        /// The complete message `frame` ends, nil while one is incomplete or for a keepalive.
        package mutating func receive(_ frame: String) throws(DatabaseWebSocketProtocolError) -> String? {
            if remaining > 0 {
                bytes += frame.utf8.count
                guard bytes <= DatabaseWebSocketFrames.maxMessageBytes else { throw Self.tooBig }
                buffer += frame
                remaining -= 1
                guard remaining == 0 else { return nil }
                defer {
                    buffer = ""
                    bytes = 0
                }
                return buffer
            }
            if frame.utf8.count <= 6, !frame.isEmpty, frame.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let count = Int(frame) {
                // `0`: keepalive. A count: that many frames follow.
                guard count > 0 else { return nil }
                guard count <= DatabaseWebSocketFrames.maxMessageBytes / 1024 else { throw Self.tooBig }
                remaining = count
                return nil
            }
            guard frame.utf8.count <= DatabaseWebSocketFrames.maxMessageBytes else { throw Self.tooBig }
            return frame
        }

        static let tooBig = DatabaseWebSocketProtocolError(.tooBig, "Message exceeds the maximum size.")
    }
}

/// A message from a client: a request (`{"t":"d","d":{"r":n,"a":action,"b":body}}`) or a
/// control message (`{"t":"c","d":{"t":type,"d":…}}`).
package enum DatabaseWebSocketInbound: Sendable, Equatable {
    case request(id: Int64, action: String, body: JSON)
    case control(type: String, data: JSON)

    package static func parse(_ text: String) throws(DatabaseWebSocketProtocolError) -> DatabaseWebSocketInbound {
        let json: JSON
        do { json = try JSON.parse(text) } catch {
            throw DatabaseWebSocketProtocolError(.malformed, "Invalid JSON in message.")
        }
        guard json.objectValue != nil, let type = json["t"]?.stringValue, let data = json["d"], data.objectValue != nil else {
            throw DatabaseWebSocketProtocolError(.malformed, "Messages must be objects with \"t\" and \"d\".")
        }
        switch type {
        case "d":
            guard case .number(let lexeme)? = data["r"], let id = Int64(lexeme), id >= 0 else {
                throw DatabaseWebSocketProtocolError(.malformed, "Data messages must carry a request number \"r\".")
            }
            guard let action = data["a"]?.stringValue else {
                throw DatabaseWebSocketProtocolError(.malformed, "Data messages must carry an action \"a\".")
            }
            let body = data["b"] ?? .object([])
            guard body.objectValue != nil else {
                throw DatabaseWebSocketProtocolError(.malformed, "The body \"b\" of a data message must be an object.")
            }
            return .request(id: id, action: action, body: body)
        case "c":
            guard let control = data["t"]?.stringValue else {
                throw DatabaseWebSocketProtocolError(.malformed, "Control messages must carry a type.")
            }
            return .control(type: control, data: data["d"] ?? .null)
        default:
            throw DatabaseWebSocketProtocolError(.malformed, "Unknown message type \"\(type)\".")
        }
    }
}

/// The messages the server sends.
package enum DatabaseWebSocketOutbound {
    /// The hello: server time (integer ms), protocol version, host and session id.
    package static func hello(timestamp: Int64, host: String, session: String) -> String {
        control("h", .object([("ts", .number(String(timestamp))), ("v", .string("5")), ("h", .string(host)), ("s", .string(session))]))
    }

    package static func control(_ type: String, _ data: JSON) -> String {
        JSON.object([("t", .string("c")), ("d", .object([("t", .string(type)), ("d", data)]))]).serialized()
    }

    /// The answer to request `id`.
    package static func response(_ id: Int64, status: String, data: JSON) -> String {
        JSON.object([
            ("t", .string("d")),
            ("d", .object([("r", .number(String(id))), ("b", .object([("s", .string(status)), ("d", data)]))])),
        ]).serialized()
    }

    /// A push: `d` (overwrite at `p`), `m` (merge of children at `p`), `c` (listen revoked),
    /// `ac` (auth revoked).
    package static func push(_ action: String, _ body: JSON) -> String {
        JSON.object([("t", .string("d")), ("d", .object([("a", .string(action)), ("b", body)]))]).serialized()
    }

    /// A data push for the listen tagged `tag` (nil: a default listen). Paths are sent without
    /// the leading slash, as Firebase does.
    package static func data(_ action: String, path: DatabasePath, data: JSON, tag: Int64?) -> String {
        var body: [(String, JSON)] = [("p", .string(path.keys.joined(separator: "/"))), ("d", data)]
        if let tag { body.append(("t", .number(String(tag)))) }
        return push(action, .object(body))
    }
}

/// A listen's query as the SDKs send it (`q`: `sp`, `sn`, `ep`, `en`, `sin`, `ein`, `l`,
/// `vf`, `i`), applied to a location's node. Key tie-breakers (`sn`/`en`) are honoured; the
/// sentinel names `[MIN_NAME]`/`[MAX_NAME]` make a bound exclusive.
package struct DatabaseWireQuery: Sendable, Equatable {
    package var order: DatabaseQuery.Order = .priority
    package var start: (value: DatabaseScalar?, name: String?, inclusive: Bool)?
    package var end: (value: DatabaseScalar?, name: String?, inclusive: Bool)?
    package var limit: Int?
    package var fromLeft = true
    /// The object as received (sent back in a `c` revocation, which JS matches by it).
    package var wire: JSON

    static let minName = "[MIN_NAME]", maxName = "[MAX_NAME]"

    package static func == (a: DatabaseWireQuery, b: DatabaseWireQuery) -> Bool { a.wire == b.wire }

    package static func parse(_ json: JSON) throws(DatabaseError) -> DatabaseWireQuery {
        guard let members = json.objectValue else { throw DatabaseError.invalidQuery("Invalid query: q must be an object.") }
        var query = DatabaseWireQuery(wire: json)
        let known: Set<String> = ["sp", "sn", "ep", "en", "sin", "ein", "l", "vf", "i"]
        for (key, _) in members where !known.contains(key) { throw DatabaseError.invalidQuery("Invalid query parameter: \(key)") }
        switch json["i"] {
        case nil, .string(".priority")?: query.order = .priority
        case .string(".key")?: query.order = .key
        case .string(".value")?: query.order = .value
        case .string(let child)?:
            let path = try DatabasePath.parse(child)
            guard !path.isRoot else { throw DatabaseError.invalidQuery("Invalid query: empty index path.") }
            query.order = .child(path)
        default: throw DatabaseError.invalidQuery("Invalid query: i must be a string.")
        }
        func bound(_ valueKey: String, _ nameKey: String, _ inclusiveKey: String, sentinel: String) throws(DatabaseError)
            -> (DatabaseScalar?, String?, Bool)?
        {
            guard let raw = json[valueKey] else {
                if json[nameKey] != nil { throw DatabaseError.invalidQuery("Invalid query: \(nameKey) without \(valueKey).") }
                return nil
            }
            let value: DatabaseScalar?
            if raw.isNull { value = nil } else {
                guard let scalar = DatabaseScalar(raw) else { throw DatabaseError.invalidQuery("Invalid query: \(valueKey) must be a scalar.") }
                value = scalar
            }
            var name: String?
            switch json[nameKey] {
            case nil: break
            case .string(let text)?: name = text
            default: throw DatabaseError.invalidQuery("Invalid query: \(nameKey) must be a string.")
            }
            var inclusive = true
            switch json[inclusiveKey] {
            case nil: break
            case .bool(let flag)?: inclusive = flag
            default: throw DatabaseError.invalidQuery("Invalid query: \(inclusiveKey) must be a boolean.")
            }
            if name == sentinel { inclusive = false }
            return (value, name, inclusive)
        }
        if let start = try bound("sp", "sn", "sin", sentinel: maxName) { query.start = (start.0, start.1, start.2) }
        if let end = try bound("ep", "en", "ein", sentinel: minName) { query.end = (end.0, end.1, end.2) }
        if query.order == .key {
            for bound in [query.start, query.end] {
                guard let bound else { continue }
                guard case .string? = bound.value else { throw DatabaseError.invalidQuery("Invalid query: key bounds must be strings.") }
            }
        }
        switch json["l"] {
        case nil: break
        case .number(let lexeme)?:
            guard let limit = Int(lexeme), limit > 0 else { throw DatabaseError.invalidQuery("Invalid query: l must be a positive integer.") }
            query.limit = limit
        default: throw DatabaseError.invalidQuery("Invalid query: l must be a positive integer.")
        }
        switch json["vf"] {
        case nil, .string("l")?: query.fromLeft = true
        case .string("r")?: query.fromLeft = false
        default: throw DatabaseError.invalidQuery("Invalid query: vf must be \"l\" or \"r\".")
        }
        return query
    }

    /// The engine query for the value bounds (without limits); key tie-breaks are applied after.
    var valueQuery: DatabaseQuery {
        var query = DatabaseQuery(order: order)
        // A real key tie-break keeps the value bound inclusive; ``apply`` then drops by key.
        if let start {
            let byName = order != .key && start.name != nil && start.name != Self.maxName && start.name != Self.minName
            if start.inclusive || byName { query.startAt = .some(start.value) } else { query.startAfter = .some(start.value) }
        }
        if let end {
            let byName = order != .key && end.name != nil && end.name != Self.maxName && end.name != Self.minName
            if end.inclusive || byName { query.endAt = .some(end.value) } else { query.endBefore = .some(end.value) }
        }
        return query
    }

    func sortValue(_ node: DatabaseNode) -> DatabaseScalar? {
        switch order {
        case .key: nil
        case .value: node.children.isEmpty ? node.value : nil
        case .priority: node.priority
        case .child(let path): node.descendant(path).value
        }
    }

    func isObject(_ node: DatabaseNode) -> Bool {
        switch order {
        case .value: !node.children.isEmpty
        case .child(let path): !node.descendant(path).children.isEmpty
        default: false
        }
    }

    /// `node` with only the children the query selects.
    package func apply(_ node: DatabaseNode) -> DatabaseNode {
        var keys = valueQuery.selectedKeys(node)
        if order != .key {
            if let start, let name = start.name, name != Self.maxName, name != Self.minName {
                // Children whose value equals the start value and whose key precedes the start name.
                while let first = keys.first, let child = node.children[first], !isObject(child),
                    DatabaseOrdering.compare(sortValue(child), start.value) == 0
                {
                    let cmp = DatabaseOrdering.compareKeys(first, name)
                    guard cmp < 0 || (cmp == 0 && !start.inclusive) else { break }
                    keys.removeFirst()
                }
            }
            if let end, let name = end.name, name != Self.maxName, name != Self.minName {
                while let last = keys.last, let child = node.children[last], !isObject(child),
                    DatabaseOrdering.compare(sortValue(child), end.value) == 0
                {
                    let cmp = DatabaseOrdering.compareKeys(last, name)
                    guard cmp > 0 || (cmp == 0 && !end.inclusive) else { break }
                    keys.removeLast()
                }
            }
        }
        if let limit, keys.count > limit {
            keys = fromLeft ? Array(keys.prefix(limit)) : Array(keys.suffix(limit))
        }
        var out = DatabaseNode()
        for key in keys { out.children[key] = node.children[key] }
        return out
    }
}

/// The hash the SDKs compute of their cached data (`h` of a transaction's put): Base64 of
/// the SHA-1 of a text built from the node (types, IEEE-754 hex numbers, priorities, children
/// in priority order); `""` for null.
package enum DatabaseWireHash {
    package static func hash(_ node: DatabaseNode) -> String {
        let text = hashText(node)
        guard !text.isEmpty else { return "" }
        return Base64.encode(Array(Insecure.SHA1.hash(data: Array(text.utf8))))
    }

    static func hashText(_ node: DatabaseNode) -> String {
        if node.isEmpty { return "" }
        var text = ""
        if let priority = node.priority { text += "priority:" + scalarText(priority) + ":" }
        if let value = node.value, node.children.isEmpty { return text + scalarText(value) }
        var body = ""
        for (key, child) in node.children.sorted(by: { priorityPrecedes($0, $1) }) {
            let childHash = hash(child)
            if !childHash.isEmpty { body += ":" + key + ":" + childHash }
        }
        if body.isEmpty && text.isEmpty { return "" }
        return text + body
    }

    static func scalarText(_ scalar: DatabaseScalar) -> String {
        switch scalar {
        case .bool(let value): "boolean:" + (value ? "true" : "false")
        case .number(let value): "number:" + ieeeHex(value)
        case .string(let value): "string:" + value
        }
    }

    /// 16 lower-case hex digits of the big-endian IEEE-754 double.
    static func ieeeHex(_ value: Double) -> String {
        let hex = String(value.bitPattern, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Priority index order: no priority first, then numbers by value, then strings, then keys.
    static func priorityPrecedes(_ a: (key: String, value: DatabaseNode), _ b: (key: String, value: DatabaseNode)) -> Bool {
        let byPriority = DatabaseOrdering.compare(a.value.priority, b.value.priority)
        if byPriority != 0 { return byPriority < 0 }
        return DatabaseOrdering.keyPrecedes(a.key, b.key)
    }
}
