import Foundation
import HearthFirestoreProto
import SwiftProtobuf

/// A pending server timestamp as it lives in a locally applied document until the server's value
/// arrives: a map `{__type__: "server_timestamp", __local_write_time__: t, __previous_value__: v}`,
/// as Firebase's SDKs keep it. Snapshots read it per `ServerTimestampBehavior`.
enum ServerTimestamps {
    typealias Value = Google_Firestore_V1_Value

    static func isPending(_ map: Google_Firestore_V1_MapValue) -> Bool {
        if case .stringValue("server_timestamp") = map.fields["__type__"]?.valueType { true } else { false }
    }

    static func pending(localWriteTime: Google_Protobuf_Timestamp, previous: Value?) -> Value {
        var type = Value()
        type.stringValue = "server_timestamp"
        var time = Value()
        time.timestampValue = localWriteTime
        var map = Google_Firestore_V1_MapValue()
        map.fields = ["__type__": type, "__local_write_time__": time]
        if let previous {
            // Keep the value from before the first pending write only.
            if case .mapValue(let m) = previous.valueType, isPending(m) {
                if let p = m.fields["__previous_value__"] { map.fields["__previous_value__"] = p }
            } else {
                map.fields["__previous_value__"] = previous
            }
        }
        var v = Value()
        v.mapValue = map
        return v
    }

    static func localWriteTime(_ map: Google_Firestore_V1_MapValue) -> Google_Protobuf_Timestamp {
        if case .timestampValue(let t) = map.fields["__local_write_time__"]?.valueType { t } else { Google_Protobuf_Timestamp() }
    }
}

/// Applies `google.firestore.v1.Write`s to documents on the client: latency compensation for
/// pending writes (transforms estimated locally: server timestamps pending, increments,
/// minimum/maximum, array union/removal) and acknowledged writes (with the server's transform
/// results and commit time).
enum LocalWriteApplier {
    typealias Value = Google_Firestore_V1_Value
    typealias Fields = [String: Value]
    typealias Document = Google_Firestore_V1_Document

    /// The document after `write`, or nil if it does not exist afterwards. A failed precondition
    /// (`exists`) leaves the document as it was, as the server would refuse the write.
    static func apply(
        _ write: Google_Firestore_V1_Write, to document: Document?, name: String,
        localWriteTime: Google_Protobuf_Timestamp, transformResults: [Value]? = nil, commitTime: Google_Protobuf_Timestamp? = nil
    ) -> Document? {
        if write.hasCurrentDocument, case .exists(let mustExist) = write.currentDocument.conditionType, mustExist != (document != nil) {
            return document
        }
        var out: Document
        switch write.operation {
        case .delete: return nil
        case .update(let update):
            if write.hasUpdateMask {
                out = document ?? Document()
                for path in write.updateMask.fieldPaths {
                    let segments = LocalQueryEngine.splitCanonical(path)
                    if let v = LocalQueryEngine.field(update.fields, path) {
                        set(&out.fields, segments[...], v)
                    } else {
                        remove(&out.fields, segments[...])
                    }
                }
            } else {
                out = Document()
                out.fields = update.fields
            }
        case .transform(let transform):
            out = document ?? Document()
            applyTransforms(transform.fieldTransforms, to: &out, localWriteTime: localWriteTime, results: transformResults)
            out.name = name
            if let commitTime { out.updateTime = commitTime }
            return out
        default:
            return document
        }
        applyTransforms(write.updateTransforms, to: &out, localWriteTime: localWriteTime, results: transformResults)
        out.name = name
        if let commitTime {
            out.updateTime = commitTime
            if document == nil || !(document?.hasCreateTime ?? false) { out.createTime = document?.createTime ?? commitTime }
        }
        return out
    }

    static func applyTransforms(
        _ transforms: [Google_Firestore_V1_DocumentTransform.FieldTransform], to document: inout Document,
        localWriteTime: Google_Protobuf_Timestamp, results: [Value]?
    ) {
        for (i, t) in transforms.enumerated() {
            let segments = LocalQueryEngine.splitCanonical(t.fieldPath)
            let previous = LocalQueryEngine.field(document.fields, t.fieldPath)
            let value: Value
            if let results, i < results.count {
                value = results[i]
            } else {
                value = estimate(t, previous: previous, localWriteTime: localWriteTime)
            }
            set(&document.fields, segments[...], value)
        }
    }

    /// The local value of a transform before the server has applied it.
    static func estimate(_ t: Google_Firestore_V1_DocumentTransform.FieldTransform, previous: Value?, localWriteTime: Google_Protobuf_Timestamp) -> Value {
        switch t.transformType {
        case .setToServerValue: return ServerTimestamps.pending(localWriteTime: localWriteTime, previous: previous)
        case .increment(let n): return add(previous, n)
        case .maximum(let n):
            guard let p = numeric(previous) else { return n }
            return ValueOrder.compareNumbers(p, n) >= 0 ? p : n
        case .minimum(let n):
            guard let p = numeric(previous) else { return n }
            return ValueOrder.compareNumbers(p, n) <= 0 ? p : n
        case .appendMissingElements(let a):
            var values = LocalQueryEngine.elements(previous) ?? []
            for e in a.values where !values.contains(where: { LocalQueryEngine.equal($0, e) }) { values.append(e) }
            return array(values)
        case .removeAllFromArray(let a):
            let values = (LocalQueryEngine.elements(previous) ?? []).filter { v in !a.values.contains { LocalQueryEngine.equal(v, $0) } }
            return array(values)
        case nil: return previous ?? Value()
        }
    }

    static func numeric(_ v: Value?) -> Value? {
        switch v?.valueType {
        case .integerValue, .doubleValue: v
        default: nil
        }
    }

    /// `increment`: integers add with saturation; a double on either side gives a double; a
    /// non-number before becomes the operand.
    static func add(_ previous: Value?, _ operand: Value) -> Value {
        var out = Value()
        switch (numeric(previous)?.valueType, operand.valueType) {
        case (.integerValue(let a), .integerValue(let b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            out.integerValue = overflow ? (b > 0 ? Int64.max : Int64.min) : sum
        case (.integerValue(let a), .doubleValue(let b)): out.doubleValue = Double(a) + b
        case (.doubleValue(let a), .integerValue(let b)): out.doubleValue = a + Double(b)
        case (.doubleValue(let a), .doubleValue(let b)): out.doubleValue = a + b
        default: return operand
        }
        return out
    }

    static func array(_ values: [Value]) -> Value {
        var a = Google_Firestore_V1_ArrayValue()
        a.values = values
        var v = Value()
        v.arrayValue = a
        return v
    }

    static func set(_ fields: inout Fields, _ path: ArraySlice<String>, _ value: Value) {
        UserDataReader.set(&fields, path, value)
    }

    static func remove(_ fields: inout Fields, _ path: ArraySlice<String>) {
        guard let first = path.first else { return }
        if path.count == 1 { fields.removeValue(forKey: first); return }
        guard case .mapValue(var m) = fields[first]?.valueType else { return }
        remove(&m.fields, path.dropFirst())
        var v = Value()
        v.mapValue = m
        fields[first] = v
    }
}
