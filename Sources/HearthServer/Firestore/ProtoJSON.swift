import HearthCore
import Foundation

/// Reading proto3 JSON: a message is an object whose keys are the fields' JSON names
/// (lowerCamelCase) or their proto names (snake_case); unknown keys are rejected as
/// Google's servers reject them.
struct ProtoObject {
    let members: [String: JSON]
    let context: String

    init(_ json: JSON, _ context: String, allowed: Set<String>) throws(HearthError) {
        guard case .object(let pairs) = json else {
            throw .invalidArgument("Invalid JSON payload received. Expected an object for '\(context)', got \(json.typeName).")
        }
        var m: [String: JSON] = [:]
        for (k, v) in pairs {
            let name = ProtoObject.camel(k)
            guard allowed.contains(name) else {
                throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(k)\" at '\(context)': Cannot find field.")
            }
            if case .null = v, name != "nullValue" { continue }
            m[name] = v
        }
        members = m
        self.context = context
    }

    static func camel(_ s: String) -> String {
        guard s.contains("_") else { return s }
        var out = ""
        var upper = false
        for c in s {
            if c == "_" { upper = true; continue }
            out.append(upper ? Character(c.uppercased()) : c)
            upper = false
        }
        return out
    }

    subscript(_ key: String) -> JSON? { members[key] }
    var isEmpty: Bool { members.isEmpty }
    var keys: Dictionary<String, JSON>.Keys { members.keys }

    func where_(_ key: String) -> String { "\(context).\(key)" }

    func string(_ key: String) throws(HearthError) -> String? {
        guard let v = members[key] else { return nil }
        guard case .string(let s) = v else {
            throw .invalidArgument("Invalid value at '\(where_(key))' (TYPE_STRING), \(v.serialized())")
        }
        return s
    }

    func bool(_ key: String) throws(HearthError) -> Bool? {
        guard let v = members[key] else { return nil }
        switch v {
        case .bool(let b): return b
        case .string("true"): return true
        case .string("false"): return false
        default: throw .invalidArgument("Invalid value at '\(where_(key))' (TYPE_BOOL), \(v.serialized())")
        }
    }

    func int64(_ key: String) throws(HearthError) -> Int64? {
        guard let v = members[key] else { return nil }
        return try ProtoObject.int64(v, where_(key))
    }

    func int32(_ key: String) throws(HearthError) -> Int32? {
        guard let v = try int64(key) else { return nil }
        guard let i = Int32(exactly: v) else { throw .invalidArgument("Invalid value at '\(where_(key))' (TYPE_INT32), \(v)") }
        return i
    }

    static func int64(_ v: JSON, _ at: String) throws(HearthError) -> Int64 {
        switch v {
        case .number(let n), .string(let n):
            if let i = Int64(n) { return i }
            // Exponent or fraction forms that are still exact integers ("1e3", "5.0").
            if let d = Double(n), d.rounded() == d, d >= -9.223372036854775808e18, d < 9.223372036854775808e18, !n.isEmpty {
                return Int64(d)
            }
            throw .invalidArgument("Invalid value at '\(at)' (TYPE_INT64), \(v.serialized())")
        default:
            throw .invalidArgument("Invalid value at '\(at)' (TYPE_INT64), \(v.serialized())")
        }
    }

    func object(_ key: String, allowed: Set<String>) throws(HearthError) -> ProtoObject? {
        guard let v = members[key] else { return nil }
        return try ProtoObject(v, where_(key), allowed: allowed)
    }

    func array(_ key: String) throws(HearthError) -> [JSON] {
        guard let v = members[key] else { return [] }
        guard case .array(let a) = v else {
            throw .invalidArgument("Invalid value at '\(where_(key))': expected a list, got \(v.typeName).")
        }
        return a
    }

    func bytes(_ key: String) throws(HearthError) -> [UInt8]? {
        guard let s = try string(key) else { return nil }
        guard let b = ProtoObject.base64(s) else {
            throw .invalidArgument("Invalid value at '\(where_(key))' (TYPE_BYTES), Base64 decoding failed for \"\(s)\"")
        }
        return b
    }

    func timestamp(_ key: String) throws(HearthError) -> Timestamp? {
        guard let s = try string(key) else { return nil }
        guard let t = Timestamp(rfc3339: s), t.isValid else {
            throw .invalidArgument("Invalid value at '\(where_(key))' (type.googleapis.com/google.protobuf.Timestamp), Field '\(where_(key))', Invalid time format: Failed to parse input")
        }
        return t
    }

    /// An enum given by name or, with `enum-encoding=int`, by number.
    func enumValue(_ key: String, _ names: [String: Int]) throws(HearthError) -> Int? {
        guard let v = members[key] else { return nil }
        switch v {
        case .string(let s):
            if let n = names[s] { return n }
        case .number(let n):
            if let i = Int(n), names.values.contains(i) { return i }
        default: break
        }
        throw .invalidArgument("Invalid value at '\(where_(key))', \(v.serialized())")
    }

    /// Standard or URL-safe base64, padded or not.
    static func base64(_ s: String) -> [UInt8]? {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map(Array.init)
    }
}
