import HearthCore
import HearthDocuments
import HearthFirestoreProto
import SwiftProtobuf
import Foundation

/// Firestore's protobuf messages (`google.firestore.v1`) ↔ engine values, both directions.
/// This is the only place the gRPC wire format of values and documents is known; validation
/// messages are Firestore's, as the REST transport words them.
struct FirestoreProto {
    let database: DatabaseName

    var json: FirestoreJSON { FirestoreJSON(database: database) }

    // MARK: Timestamps

    static func timestamp(_ t: Timestamp) -> Google_Protobuf_Timestamp {
        Google_Protobuf_Timestamp(seconds: t.seconds, nanos: t.nanos)
    }

    static func timestamp(_ p: Google_Protobuf_Timestamp, _ at: @autoclosure () -> String) throws(HearthError) -> Timestamp {
        let t = Timestamp(seconds: p.seconds, nanos: p.nanos)
        guard p.nanos >= 0, p.nanos < 1_000_000_000, t.isValid else {
            throw .invalidArgument("Invalid value at '\(at())' (type.googleapis.com/google.protobuf.Timestamp): timestamp out of range.")
        }
        return t
    }

    // MARK: Decoding

    func value(_ v: Google_Firestore_V1_Value, _ at: @autoclosure () -> String) throws(HearthError) -> Value {
        switch v.valueType {
        case .nullValue?: return .null
        case .booleanValue(let b)?: return .boolean(b)
        case .integerValue(let i)?: return .integer(i)
        case .doubleValue(let d)?: return .double(d)
        case .stringValue(let s)?:
            if s.utf8.count > DocumentLimits.maxDocumentSize {
                throw .invalidArgument("Value for string field at '\(at()).string_value' is longer than 1,048,487 bytes.")
            }
            return .string(s)
        case .timestampValue(let t)?: return .timestamp(try Self.timestamp(t, "\(at()).timestamp_value").truncatedToMicroseconds)
        case .bytesValue(let b)?: return .bytes([UInt8](b))
        case .referenceValue(let r)?:
            try json.validateReference(r, "\(at()).reference_value")
            return .reference(r)
        case .geoPointValue(let g)?:
            guard g.latitude >= -90, g.latitude <= 90, g.longitude >= -180, g.longitude <= 180 else {
                throw .invalidArgument(
                    "Invalid value at '\(at()).geo_point_value': latitude must be in [-90, 90] and longitude in [-180, 180].")
            }
            return .geoPoint(latitude: g.latitude, longitude: g.longitude)
        case .arrayValue(let a)?:
            var out: [Value] = []
            out.reserveCapacity(a.values.count)
            for (i, e) in a.values.enumerated() { out.append(try value(e, "\(at()).array_value.values[\(i)]")) }
            return .array(out)
        case .mapValue(let m)?:
            return .map(try fields(m.fields, "\(at()).map_value.fields"))
        case .fieldReferenceValue?, .variableReferenceValue?, .functionValue?, .pipelineValue?:
            throw .invalidArgument("Invalid value at '\(at())': pipeline expressions are only allowed in pipelines.")
        case nil:
            throw .invalidArgument("Invalid value at '\(at())': a Value must set exactly one of its kinds, found 0.")
        }
    }

    func fields(_ fields: [String: Google_Firestore_V1_Value], _ at: @autoclosure () -> String) throws(HearthError) -> [String: Value] {
        var out: [String: Value] = [:]
        out.reserveCapacity(fields.count)
        for (k, v) in fields { out[k] = try value(v, "\(at())[\(k)]") }
        return out
    }

    func fieldPath(_ text: String, _ at: String) throws(HearthError) -> FieldPath {
        guard !text.isEmpty else { throw .invalidArgument("Missing field path at '\(at)'.") }
        return try FieldPath(parsing: text)
    }

    func mask(_ m: Google_Firestore_V1_DocumentMask) throws(HearthError) -> [FieldPath] {
        var out: [FieldPath] = []
        for p in m.fieldPaths { out.append(try FieldPath(parsing: p)) }
        return out
    }

    // MARK: Encoding

    func proto(_ v: Value) -> Google_Firestore_V1_Value {
        var out = Google_Firestore_V1_Value()
        switch v {
        case .null: out.valueType = .nullValue(.nullValue)
        case .boolean(let b): out.valueType = .booleanValue(b)
        case .integer(let i): out.valueType = .integerValue(i)
        case .double(let d): out.valueType = .doubleValue(d)
        case .timestamp(let t): out.valueType = .timestampValue(Self.timestamp(t))
        case .string(let s): out.valueType = .stringValue(s)
        case .bytes(let b): out.valueType = .bytesValue(Data(b))
        case .reference(let r): out.valueType = .referenceValue(r)
        case .geoPoint(let la, let lo):
            var g = Google_Type_LatLng()
            g.latitude = la
            g.longitude = lo
            out.valueType = .geoPointValue(g)
        case .array(let a):
            var arr = Google_Firestore_V1_ArrayValue()
            arr.values = a.map(proto)
            out.valueType = .arrayValue(arr)
        case .map(let m):
            var map = Google_Firestore_V1_MapValue()
            map.fields = protoFields(m)
            out.valueType = .mapValue(map)
        }
        return out
    }

    func protoFields(_ m: [String: Value]) -> [String: Google_Firestore_V1_Value] {
        var out: [String: Google_Firestore_V1_Value] = [:]
        out.reserveCapacity(m.count)
        for (k, v) in m { out[k] = proto(v) }
        return out
    }

    func proto(_ d: Document) -> Google_Firestore_V1_Document {
        var out = Google_Firestore_V1_Document()
        out.name = database.name(of: d.path)
        out.fields = protoFields(d.fields)
        out.createTime = Self.timestamp(d.createTime)
        out.updateTime = Self.timestamp(d.updateTime)
        return out
    }

    func proto(_ r: WriteResult) -> Google_Firestore_V1_WriteResult {
        var out = Google_Firestore_V1_WriteResult()
        if let t = r.updateTime { out.updateTime = Self.timestamp(t) }
        out.transformResults = r.transformResults.map(proto)
        return out
    }

    static func status(_ e: HearthError) -> Google_Rpc_Status {
        var s = Google_Rpc_Status()
        s.code = Int32(e.code.rawValue)
        s.message = e.message
        return s
    }
}
