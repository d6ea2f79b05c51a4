import Foundation
import Synchronization

/// Paths and app values: how what apps pass (`Any`) becomes wire JSON, and keys are checked.
package enum DatabaseValues {
    /// `"/a//b/"` → `["a", "b"]`.
    package static func segments(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    /// Firebase's key rule: no `.`, `#`, `$`, `[`, `]`, `/` or control characters, at most 768 bytes.
    package static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= 768
            && !key.unicodeScalars.contains { ".#$[]/".unicodeScalars.contains($0) || $0.value < 0x20 || $0.value == 0x7F }
    }

    package static func isValidPath(_ segments: [String]) -> Bool {
        segments.allSatisfy(isValidKey) || (segments.first == ".info" && segments.dropFirst().allSatisfy(isValidKey))
    }

    /// The wire JSON of an app value: `nil`/`NSNull`, `Bool`, integers, floating point,
    /// `NSNumber`, `String`, dictionaries with string keys, arrays; `ServerValue` placeholders
    /// and `.priority`/`.value` pass through. Anything else is an error the write reports.
    package static func json(_ value: Any?) throws(DatabaseError) -> DatabaseJSON {
        guard let value = unwrap(value) else { return .null }
        switch value {
        case is NSNull: return .null
        case let b as Bool where type(of: value) == Bool.self: return .bool(b)
        case let n as NSNumber where type(of: value) is NSNumber.Type:
            // A real NSNumber (from Objective-C or JSONSerialization): booleans are CFBoolean / "c".
            if isBoolean(n) { return .bool(n.boolValue) }
            guard n.doubleValue.isFinite else { throw .invalidValue("Cannot store a non-finite number.") }
            return .number(n.doubleValue)
        case let s as String: return .string(s)
        case let n as Int: return .number(Double(n))
        case let n as Int64: return .number(Double(n))
        case let n as Int32: return .number(Double(n))
        case let n as Int16: return .number(Double(n))
        case let n as Int8: return .number(Double(n))
        case let n as UInt: return .number(Double(n))
        case let n as UInt64: return .number(Double(n))
        case let n as UInt32: return .number(Double(n))
        case let n as UInt16: return .number(Double(n))
        case let n as UInt8: return .number(Double(n))
        case let n as Double:
            guard n.isFinite else { throw .invalidValue("Cannot store a non-finite number (\(n)).") }
            return .number(n)
        case let n as Float:
            guard n.isFinite else { throw .invalidValue("Cannot store a non-finite number (\(n)).") }
            return .number(Double(n))
        case let n as NSNumber:
            if isBoolean(n) { return .bool(n.boolValue) }
            guard n.doubleValue.isFinite else { throw .invalidValue("Cannot store a non-finite number.") }
            return .number(n.doubleValue)
        case let dictionary as [String: Any]:
            return try object(dictionary.map { ($0.key, $0.value) })
        case let dictionary as [AnyHashable: Any]:
            var members: [(String, Any)] = []
            for (key, member) in dictionary {
                guard let key = key.base as? String else { throw .invalidValue("Keys must be strings, not \(key.base).") }
                members.append((key, member))
            }
            return try object(members)
        case let array as [Any]:
            return .array(try array.map { item throws(DatabaseError) in try json(item) })
        default:
            throw .invalidValue("Cannot store an object of type \(type(of: value)).")
        }
    }

    static func object(_ members: [(String, Any)]) throws(DatabaseError) -> DatabaseJSON {
        var out: [(String, DatabaseJSON)] = []
        for (key, member) in members.sorted(by: { $0.0 < $1.0 }) {
            guard isValidKey(key) || [".sv", ".priority", ".value"].contains(key) else {
                throw .invalidValue("Invalid key in object: \(key). Keys must be non-empty and cannot contain '.' '#' '$' '[' or ']'.")
            }
            out.append((key, try json(member)))
        }
        return .object(out)
    }

    /// `Optional<Any>.none` wrapped in an `Any` counts as nil.
    static func unwrap(_ value: Any?) -> Any? {
        guard let value else { return nil }
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let inner = mirror.children.first else { return nil }
            return unwrap(inner.value)
        }
        return value
    }

    static func isBoolean(_ number: NSNumber) -> Bool {
        #if canImport(Darwin)
        return CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
        let type = String(cString: number.objCType)
        return type == "c" || type == "B"
        #endif
    }

    /// A scalar for query bounds and priorities.
    package static func leaf(_ value: Any?) throws(DatabaseError) -> DatabaseLeaf? {
        switch try json(value) {
        case .null: nil
        case .bool(let b): .bool(b)
        case .number(let n): .number(n)
        case .string(let s): .string(s)
        default: throw .invalidValue("Query bounds and priorities must be strings, numbers, booleans or nil.")
        }
    }
}

/// Firebase push ids: 8 characters of milliseconds then 12 random ones, in an alphabet that
/// sorts like the time; ids made in the same millisecond increment the random part.
package enum PushID {
    static let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
    static let state = Mutex<(time: Int64, random: [Int])>((0, []))

    package static func make(now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) -> String {
        let random: [Int] = state.withLock { state in
            if now == state.time, state.random.count == 12 {
                var i = 11
                while i >= 0, state.random[i] == 63 {
                    state.random[i] = 0
                    i -= 1
                }
                if i >= 0 { state.random[i] += 1 }
            } else {
                state.time = now
                state.random = (0..<12).map { _ in Int.random(in: 0..<64) }
            }
            return state.random
        }
        var time = now
        var head = [Character](repeating: "-", count: 8)
        for i in stride(from: 7, through: 0, by: -1) {
            head[i] = alphabet[Int(time % 64)]
            time /= 64
        }
        return String(head) + String(random.map { alphabet[$0] })
    }
}
