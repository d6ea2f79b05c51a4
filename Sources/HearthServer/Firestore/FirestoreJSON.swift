import HearthCore
import HearthDocuments
import Foundation

/// Firestore's `Value`, `Document` and result messages in proto3 JSON, both directions.
/// This is the only place the Firestore REST wire format is known.
struct FirestoreJSON {
    let database: DatabaseName

    static let valueKinds: Set<String> = [
        "nullValue", "booleanValue", "integerValue", "doubleValue", "timestampValue", "stringValue", "bytesValue",
        "referenceValue", "geoPointValue", "arrayValue", "mapValue",
    ]

    // MARK: Decoding

    func value(_ json: JSON, _ at: @autoclosure () -> String) throws(HearthError) -> Value {
        // Fast path for the common scalar kinds; anything unusual takes the checked path.
        if case .object(let members) = json, members.count == 1 {
            switch members[0] {
            case ("stringValue", .string(let s)) where s.utf8.count <= DocumentLimits.maxDocumentSize: return .string(s)
            case ("integerValue", .string(let n)), ("integerValue", .number(let n)):
                if let i = Int64(n) { return .integer(i) }
            case ("booleanValue", .bool(let b)): return .boolean(b)
            case ("doubleValue", .number(let n)):
                if let d = Double(n) { return .double(d) }
            case ("nullValue", .null): return .null
            case ("mapValue", .object(let m)) where m.count == 1 && m[0].0 == "fields":
                return .map(try fields(m[0].1, "\(at()).mapValue.fields"))
            default: break
            }
        }
        return try checkedValue(json, at())
    }

    func checkedValue(_ json: JSON, _ at: String) throws(HearthError) -> Value {
        let o = try ProtoObject(json, at, allowed: Self.valueKinds)
        guard o.members.count == 1, let (kind, v) = o.members.first else {
            throw .invalidArgument("Invalid value at '\(at)': a Value must set exactly one of its kinds, found \(o.members.count).")
        }
        let here = "\(at).\(kind)"
        switch kind {
        case "nullValue":
            switch v {
            case .null, .string("NULL_VALUE"), .number("0"): return .null
            default: throw .invalidArgument("Invalid value at '\(here)' (type.googleapis.com/google.protobuf.NullValue), \(v.serialized())")
            }
        case "booleanValue":
            guard let b = try o.bool(kind) else { return .null }
            return .boolean(b)
        case "integerValue":
            return .integer(try ProtoObject.int64(v, here))
        case "doubleValue":
            switch v {
            case .number(let n):
                guard let d = Double(n) else { break }
                return .double(d)
            case .string(let s):
                switch s {
                case "NaN": return .double(.nan)
                case "Infinity": return .double(.infinity)
                case "-Infinity": return .double(-.infinity)
                default: if let d = Double(s), !s.isEmpty, s.first != "+" { return .double(d) }
                }
            default: break
            }
            throw .invalidArgument("Invalid value at '\(here)' (TYPE_DOUBLE), \(v.serialized())")
        case "timestampValue":
            guard let t = try o.timestamp(kind) else { return .null }
            return .timestamp(t.truncatedToMicroseconds)
        case "stringValue":
            guard let s = try o.string(kind) else { return .null }
            if s.utf8.count > DocumentLimits.maxDocumentSize {
                throw .invalidArgument("Value for string field at '\(here)' is longer than 1,048,487 bytes.")
            }
            return .string(s)
        case "bytesValue":
            guard let b = try o.bytes(kind) else { return .null }
            return .bytes(b)
        case "referenceValue":
            guard let s = try o.string(kind) else { return .null }
            try validateReference(s, here)
            return .reference(s)
        case "geoPointValue":
            let g = try ProtoObject(v, here, allowed: ["latitude", "longitude"])
            let lat = try double(g["latitude"], "\(here).latitude") ?? 0
            let lng = try double(g["longitude"], "\(here).longitude") ?? 0
            guard lat >= -90, lat <= 90, lng >= -180, lng <= 180 else {
                throw .invalidArgument("Invalid value at '\(here)': latitude must be in [-90, 90] and longitude in [-180, 180].")
            }
            return .geoPoint(latitude: lat, longitude: lng)
        case "arrayValue":
            let a = try ProtoObject(v, here, allowed: ["values"])
            var out: [Value] = []
            for (i, e) in try a.array("values").enumerated() { out.append(try value(e, "\(here).values[\(i)]")) }
            return .array(out)
        default:  // mapValue
            let m = try ProtoObject(v, here, allowed: ["fields"])
            return .map(try fields(m["fields"], "\(here).fields"))
        }
    }

    func double(_ json: JSON?, _ at: String) throws(HearthError) -> Double? {
        guard let json else { return nil }
        switch json {
        case .number(let n): if let d = Double(n) { return d }
        case .string(let s): if let d = Double(s) { return d }
        default: break
        }
        throw .invalidArgument("Invalid value at '\(at)' (TYPE_DOUBLE), \(json.serialized())")
    }

    func fields(_ json: JSON?, _ at: @autoclosure () -> String) throws(HearthError) -> [String: Value] {
        guard let json else { return [:] }
        guard case .object(let pairs) = json else {
            throw .invalidArgument("Invalid JSON payload received. Expected an object for '\(at())'.")
        }
        var out: [String: Value] = [:]
        out.reserveCapacity(pairs.count)
        for (k, v) in pairs { out[k] = try value(v, "\(at())[\(k)]") }
        return out
    }

    func validateReference(_ s: String, _ at: String) throws(HearthError) {
        let parts = s.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 7, parts[0] == "projects", parts[2] == "databases", parts[4] == "documents", (parts.count - 5) % 2 == 0
        else { throw .invalidArgument("Invalid value at '\(at)': \"\(s)\" is not a valid document reference.") }
        let path = ResourcePath(parts.dropFirst(5).map(String.init))
        try path.validateAsPosition()
        guard String(parts[1]) == database.project, String(parts[3]) == database.database else {
            throw .invalidArgument("Invalid value at '\(at)': reference \"\(s)\" is in a different database than \"\(database.text)\".")
        }
    }

    func fieldPath(_ json: JSON?, _ at: String) throws(HearthError) -> FieldPath {
        guard let json else { throw .invalidArgument("Missing field reference at '\(at)'.") }
        let o = try ProtoObject(json, at, allowed: ["fieldPath"])
        guard let s = try o.string("fieldPath") else { throw .invalidArgument("Missing field path at '\(at)'.") }
        return try FieldPath(parsing: s)
    }

    func mask(_ json: JSON?, _ at: String) throws(HearthError) -> [FieldPath]? {
        guard let json else { return nil }
        let o = try ProtoObject(json, at, allowed: ["fieldPaths"])
        var out: [FieldPath] = []
        for p in try o.array("fieldPaths") {
            guard case .string(let s) = p else { throw .invalidArgument("Invalid value at '\(at).fieldPaths': expected strings.") }
            out.append(try FieldPath(parsing: s))
        }
        return out
    }

    // MARK: Encoding

    func json(_ v: Value) -> JSON {
        switch v {
        case .null: .object([("nullValue", .null)])
        case .boolean(let b): .object([("booleanValue", .bool(b))])
        case .integer(let i): .object([("integerValue", .string(String(i)))])
        case .double(let d): .object([("doubleValue", Self.double(d))])
        case .timestamp(let t): .object([("timestampValue", .string(t.rfc3339))])
        case .string(let s): .object([("stringValue", .string(s))])
        case .bytes(let b): .object([("bytesValue", .string(Data(b).base64EncodedString()))])
        case .reference(let r): .object([("referenceValue", .string(r))])
        case .geoPoint(let la, let lo):
            .object([("geoPointValue", .object([("latitude", Self.double(la)), ("longitude", Self.double(lo))]))])
        case .array(let a):
            .object([("arrayValue", a.isEmpty ? .object([]) : .object([("values", .array(a.map(json)))]))])
        case .map(let m):
            .object([("mapValue", m.isEmpty ? .object([]) : .object([("fields", fieldsJSON(m))]))])
        }
    }

    static func double(_ d: Double) -> JSON {
        if d.isNaN { return .string("NaN") }
        if d.isInfinite { return .string(d < 0 ? "-Infinity" : "Infinity") }
        return .number("\(d)")
    }

    func fieldsJSON(_ m: [String: Value]) -> JSON {
        .object(ValueOrdering.sortedKeys(m).map { ($0, json(m[$0]!)) })
    }

    func document(_ d: Document) -> JSON {
        var members: [(String, JSON)] = [("name", .string(database.name(of: d.path)))]
        if !d.fields.isEmpty { members.append(("fields", fieldsJSON(d.fields))) }
        members.append(("createTime", .string(d.createTime.rfc3339)))
        members.append(("updateTime", .string(d.updateTime.rfc3339)))
        return .object(members)
    }

    func writeResult(_ r: WriteResult) -> JSON {
        var members: [(String, JSON)] = []
        if let t = r.updateTime { members.append(("updateTime", .string(t.rfc3339))) }
        if !r.transformResults.isEmpty { members.append(("transformResults", .array(r.transformResults.map(json)))) }
        return .object(members)
    }

    static func status(_ e: HearthError) -> JSON {
        .object([("code", .number(e.code.rawValue)), ("message", .string(e.message))])
    }
}
