import Foundation
import HearthFirestoreProto
import SwiftProtobuf

/// What `setData`/`updateData` turn into: the fields to write, the mask (nil: replace the whole
/// document), the server-side transforms, and whether the document must already exist.
struct ParsedWrite: Equatable {
    var fields: [String: Google_Firestore_V1_Value]
    var mask: [FieldPath]?
    var transforms: [Google_Firestore_V1_DocumentTransform.FieldTransform]
    var mustExist: Bool

    /// The `Write` for the document `name` (`projects/…/documents/…`).
    func write(name: String) -> Google_Firestore_V1_Write {
        var w = Google_Firestore_V1_Write()
        var doc = Google_Firestore_V1_Document()
        doc.name = name
        doc.fields = fields
        w.update = doc
        if let mask {
            var m = Google_Firestore_V1_DocumentMask()
            m.fieldPaths = mask.map(\.canonical)
            w.updateMask = m
        }
        w.updateTransforms = transforms
        if mustExist { w.currentDocument.exists = true }
        return w
    }
}

/// Turns app data (`[String: Any]` of Swift values, `Timestamp`, `GeoPoint`, `DocumentReference`,
/// `FieldValue`…) into Firestore values and writes, with the Apple SDK's rules and messages.
struct UserDataReader {
    /// `projects/{p}/databases/{d}`.
    let databaseName: String

    enum Context {
        case set, mergeSet, update, argument
        var allowsDelete: Bool { self == .mergeSet || self == .update }
        var name: String {
            switch self {
            case .set, .mergeSet: "setData()"
            case .update: "updateData()"
            case .argument: "a query or array"
            }
        }
    }

    static func invalid(_ message: String) -> NSError { FirestoreErrorCode.invalidArgument.error("Invalid data. \(message)") }

    // MARK: Writes

    func parseSet(_ data: [String: Any]) throws -> ParsedWrite {
        var state = ParseState(context: .set)
        let fields = try parseMap(data, path: nil, state: &state)
        return ParsedWrite(fields: fields, mask: nil, transforms: state.transforms, mustExist: false)
    }

    /// `merge: true`: only the fields present (leaves) are written; deletes allowed.
    func parseMergeSet(_ data: [String: Any], mergeFields: [FieldPath]? = nil) throws -> ParsedWrite {
        var state = ParseState(context: .mergeSet)
        let fields = try parseMap(data, path: nil, state: &state)
        let transformed = Set(state.transforms.map(\.fieldPath))
        if let mergeFields {
            for field in mergeFields where !state.leaves.contains(where: { field.isPrefix(of: $0) }) && !transformed.contains(where: { $0 == field.canonical || $0.hasPrefix(field.canonical + ".") }) {
                throw FirestoreErrorCode.invalidArgument.error("Field '\(field.canonical)' is specified in your field mask but missing from your input data.")
            }
            let kept = state.transforms.filter { t in mergeFields.contains { t.fieldPath == $0.canonical || t.fieldPath.hasPrefix($0.canonical + ".") } }
            return ParsedWrite(fields: Self.filter(fields, to: mergeFields), mask: mergeFields, transforms: kept, mustExist: false)
        }
        return ParsedWrite(fields: fields, mask: state.leaves, transforms: state.transforms, mustExist: false)
    }

    /// `updateData`: keys are dotted paths (`"address.city"`) or `FieldPath`s.
    func parseUpdate(_ data: [AnyHashable: Any]) throws -> ParsedWrite {
        var state = ParseState(context: .update)
        var fields: [String: Google_Firestore_V1_Value] = [:]
        var mask: [FieldPath] = []
        let entries: [(FieldPath, Any)] = try data.map { key, value in
            if let path = key.base as? FieldPath { return (path, value) }
            if let path = key.base as? String { return (try FieldPath.parse(dotted: path), value) }
            throw Self.invalid("Use FieldPath or String keys in updateData (found \(type(of: key.base))).")
        }
        for (path, value) in entries.sorted(by: { $0.0.canonical < $1.0.canonical }) {
            if let other = mask.first(where: { $0.isPrefix(of: path) || path.isPrefix(of: $0) }) {
                throw FirestoreErrorCode.invalidArgument.error("Invalid data. Field '\(other.canonical)' and field '\(path.canonical)' cannot both be updated: one contains the other.")
            }
            let before = state.transforms.count
            if let sentinel = value as? FieldValue, case .delete = sentinel.kind {
                mask.append(path)
                continue
            }
            let parsed = try parseValue(value, path: path, state: &state)
            if state.transforms.count > before && parsed == nil { continue }  // a transform only: not in the mask
            if let parsed { Self.set(&fields, path.segments[...], parsed) }
            mask.append(path)
        }
        return ParsedWrite(fields: fields, mask: mask, transforms: state.transforms, mustExist: true)
    }

    /// A value given to a query filter or cursor: no sentinels.
    func parseArgument(_ value: Any) throws -> Google_Firestore_V1_Value {
        var state = ParseState(context: .argument)
        guard let parsed = try parseValue(value, path: nil, state: &state) else {
            throw Self.invalid("FieldValue sentinels cannot be used in queries.")
        }
        return parsed
    }

    // MARK: Values

    struct ParseState {
        let context: Context
        var transforms: [Google_Firestore_V1_DocumentTransform.FieldTransform] = []
        /// Field paths written (leaves: scalars, arrays, empty maps) and deletes, for merges.
        var leaves: [FieldPath] = []
        var inArray = false
    }

    func parseMap(_ data: [String: Any], path: FieldPath?, state: inout ParseState) throws -> [String: Google_Firestore_V1_Value] {
        var out: [String: Google_Firestore_V1_Value] = [:]
        if data.isEmpty, let path, state.context == .mergeSet { state.leaves.append(path) }
        for (key, value) in data {
            guard !key.isEmpty else { throw Self.invalid("Document fields cannot be empty\(path.map { " (found in field \($0.canonical))" } ?? "").") }
            let childPath = path?.appending(key) ?? FieldPath([key])
            if let parsed = try parseValue(value, path: childPath, state: &state) { out[key] = parsed }
        }
        return out
    }

    /// nil: the value was a sentinel, recorded as a transform or a delete.
    func parseValue(_ value: Any, path: FieldPath?, state: inout ParseState) throws -> Google_Firestore_V1_Value? {
        let found = path.map { " (found in field \($0.canonical))" } ?? ""
        var v = Google_Firestore_V1_Value()
        switch value {
        case let sentinel as FieldValue:
            return try parseSentinel(sentinel, path: path, state: &state)
        case let map as [String: Any]:
            var m = Google_Firestore_V1_MapValue()
            m.fields = try parseMap(map, path: path, state: &state)
            v.mapValue = m
            return v
        case let array as [Any]:
            guard !state.inArray else { throw Self.invalid("Nested arrays are not supported\(found).") }
            var a = Google_Firestore_V1_ArrayValue()
            var inner = state
            inner.inArray = true
            for element in array {
                guard let parsed = try parseValue(element, path: path, state: &inner) else {
                    throw Self.invalid("FieldValue sentinels are not supported inside arrays\(found).")
                }
                a.values.append(parsed)
            }
            state.transforms = inner.transforms
            v.arrayValue = a
        case is NSNull: v.nullValue = .nullValue
        case let b as Bool: v.booleanValue = b
        case let i as Int: v.integerValue = Int64(i)
        case let i as Int64: v.integerValue = i
        case let i as Int32: v.integerValue = Int64(i)
        case let i as Int16: v.integerValue = Int64(i)
        case let i as Int8: v.integerValue = Int64(i)
        case let i as UInt8: v.integerValue = Int64(i)
        case let i as UInt16: v.integerValue = Int64(i)
        case let i as UInt32: v.integerValue = Int64(i)
        case let i as UInt:
            guard let x = Int64(exactly: i) else { throw Self.invalid("\(i) is too large for Firestore's 64-bit integers\(found).") }
            v.integerValue = x
        case let i as UInt64:
            guard let x = Int64(exactly: i) else { throw Self.invalid("\(i) is too large for Firestore's 64-bit integers\(found).") }
            v.integerValue = x
        case let d as Double: v.doubleValue = d
        case let f as Float: v.doubleValue = Double(f)
        case let n as NSNumber:
            switch String(cString: n.objCType) {
            case "c", "B": v.booleanValue = n.boolValue
            case "f", "d": v.doubleValue = n.doubleValue
            default: v.integerValue = n.int64Value
            }
        case let s as String: v.stringValue = s
        case let d as Data: v.bytesValue = d
        case let t as Timestamp: v.timestampValue = Self.protoTimestamp(t)
        case let d as Date: v.timestampValue = Self.protoTimestamp(Timestamp(date: d))
        case let g as GeoPoint:
            var ll = Google_Type_LatLng()
            ll.latitude = g.latitude
            ll.longitude = g.longitude
            v.geoPointValue = ll
        case let r as DocumentReference: v.referenceValue = "\(databaseName)/documents/\(r.path)"
        default:
            throw Self.invalid("Unsupported type: \(type(of: value))\(found)")
        }
        if let path, state.context == .mergeSet, !state.inArray { state.leaves.append(path) }
        return v
    }

    func parseSentinel(_ sentinel: FieldValue, path: FieldPath?, state: inout ParseState) throws -> Google_Firestore_V1_Value? {
        let method: String = switch sentinel.kind {
        case .delete: "FieldValue.delete()"
        case .serverTimestamp: "FieldValue.serverTimestamp()"
        case .arrayUnion: "FieldValue.arrayUnion()"
        case .arrayRemove: "FieldValue.arrayRemove()"
        case .increment: "FieldValue.increment()"
        case .minimum: "FieldValue.minimum()"
        case .maximum: "FieldValue.maximum()"
        }
        guard let path, state.context != .argument else {
            throw Self.invalid("\(method) can only be used with updateData() and setData()")
        }
        guard !state.inArray else { throw Self.invalid("\(method) is not currently supported inside arrays") }
        var t = Google_Firestore_V1_DocumentTransform.FieldTransform()
        t.fieldPath = path.canonical
        switch sentinel.kind {
        case .delete:
            guard state.context.allowsDelete else {
                throw Self.invalid("FieldValue.delete() can only be used with updateData() and setData() with merge:true (found in field \(path.canonical))")
            }
            if state.context == .mergeSet { state.leaves.append(path) }
            return nil
        case .serverTimestamp: t.setToServerValue = .requestTime
        case .increment(let n): t.increment = try number(n)
        case .minimum(let n): t.minimum = try number(n)
        case .maximum(let n): t.maximum = try number(n)
        case .arrayUnion(let elements), .arrayRemove(let elements):
            var a = Google_Firestore_V1_ArrayValue()
            var inner = ParseState(context: .argument)
            inner.inArray = true
            for e in elements {
                guard let parsed = try parseValue(e, path: path, state: &inner) else {
                    throw Self.invalid("\(method) elements cannot be FieldValue sentinels (found in field \(path.canonical))")
                }
                a.values.append(parsed)
            }
            if case .arrayUnion = sentinel.kind { t.appendMissingElements = a } else { t.removeAllFromArray = a }
        }
        state.transforms.append(t)
        return nil
    }

    func number(_ n: NSNumber) throws -> Google_Firestore_V1_Value {
        var v = Google_Firestore_V1_Value()
        switch String(cString: n.objCType) {
        case "f", "d": v.doubleValue = n.doubleValue
        default: v.integerValue = n.int64Value
        }
        return v
    }

    static func protoTimestamp(_ t: Timestamp) -> Google_Protobuf_Timestamp {
        var p = Google_Protobuf_Timestamp()
        p.seconds = t.seconds
        p.nanos = t.nanoseconds
        return p
    }

    static func set(_ fields: inout [String: Google_Firestore_V1_Value], _ path: ArraySlice<String>, _ value: Google_Firestore_V1_Value) {
        guard let first = path.first else { return }
        if path.count == 1 { fields[first] = value; return }
        var child = fields[first].flatMap { v -> [String: Google_Firestore_V1_Value]? in
            if case .mapValue(let m) = v.valueType { return m.fields } else { return nil }
        } ?? [:]
        set(&child, path.dropFirst(), value)
        var m = Google_Firestore_V1_MapValue()
        m.fields = child
        var v = Google_Firestore_V1_Value()
        v.mapValue = m
        fields[first] = v
    }

    /// The parts of `fields` under the given paths.
    static func filter(_ fields: [String: Google_Firestore_V1_Value], to paths: [FieldPath]) -> [String: Google_Firestore_V1_Value] {
        var out: [String: Google_Firestore_V1_Value] = [:]
        for path in paths {
            var current: Google_Firestore_V1_Value?
            var level = fields
            for (i, segment) in path.segments.enumerated() {
                guard let v = level[segment] else { current = nil; break }
                if i == path.segments.count - 1 { current = v }
                else if case .mapValue(let m) = v.valueType { level = m.fields } else { current = nil; break }
            }
            if let current { set(&out, path.segments[...], current) }
        }
        return out
    }
}

/// Turns Firestore values into app data: `Int64`, `Double`, `Bool`, `String`, `Data`,
/// `Timestamp`, `GeoPoint`, `DocumentReference`, `NSNull`, arrays and maps.
struct UserDataWriter {
    let databaseName: String
    var firestore: Firestore? = nil
    /// How a server timestamp still pending locally reads.
    var serverTimestampBehavior: ServerTimestampBehavior = .none

    func convert(_ fields: [String: Google_Firestore_V1_Value]) -> [String: Any] { fields.mapValues(convert) }

    func convert(_ value: Google_Firestore_V1_Value) -> Any {
        switch value.valueType {
        case .nullValue, nil: NSNull()
        case .booleanValue(let b): b
        case .integerValue(let i): i
        case .doubleValue(let d): d
        case .timestampValue(let t): Timestamp(seconds: t.seconds, nanoseconds: t.nanos)
        case .stringValue(let s): s
        case .bytesValue(let d): d
        case .referenceValue(let r):
            DocumentReference(path: r.hasPrefix(databaseName + "/documents/") ? String(r.dropFirst(databaseName.count + 11)) : r, firestore: firestore)
        case .geoPointValue(let g): GeoPoint(latitude: g.latitude, longitude: g.longitude)
        case .arrayValue(let a): a.values.map(convert)
        case .mapValue(let m) where ServerTimestamps.isPending(m):
            switch serverTimestampBehavior {
            case .none: NSNull()
            case .estimate: convert(Self.timestampValue(ServerTimestamps.localWriteTime(m)))
            case .previous: m.fields["__previous_value__"].map(convert) ?? NSNull()
            }
        case .mapValue(let m): convert(m.fields)
        case .fieldReferenceValue(let s), .variableReferenceValue(let s): s
        case .functionValue, .pipelineValue: NSNull()
        }
    }

    static func timestampValue(_ t: Google_Protobuf_Timestamp) -> Google_Firestore_V1_Value {
        var v = Google_Firestore_V1_Value()
        v.timestampValue = t
        return v
    }
}
