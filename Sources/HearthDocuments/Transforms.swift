public import HearthCore

extension Value {
    /// Strict identity: same type and same bits (1 and 1.0 differ, NaN is itself). Used to
    /// decide whether a write changed a document.
    public func identical(to other: Value) -> Bool {
        switch (self, other) {
        case (.null, .null): true
        case (.boolean(let a), .boolean(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.timestamp(let a), .timestamp(let b)): a == b
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.bytes(let a), .bytes(let b)): a == b
        case (.reference(let a), .reference(let b)): a.utf8.elementsEqual(b.utf8)
        case (.geoPoint(let a, let b), .geoPoint(let c, let d)): a.bitPattern == c.bitPattern && b.bitPattern == d.bitPattern
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.identical(to: $1) }
        case (.map(let a), .map(let b)): Value.identical(a, b)
        default: false
        }
    }

    public static func identical(_ a: [String: Value], _ b: [String: Value]) -> Bool {
        guard a.count == b.count else { return false }
        for (k, v) in a {
            guard let w = b[k], v.identical(to: w) else { return false }
        }
        // Keys that are canonically equivalent but differ in bytes count as a change.
        let ka = a.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        let kb = b.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        if ka != kb { return false }
        return true
    }
}

/// Firestore's field transforms, with its numeric rules.
enum Transforms {
    /// Applies one transform to the current value; returns the new value (also the transform result).
    static func apply(_ op: FieldTransform.Operation, to current: Value?, commitTime: Timestamp) -> (value: Value, result: Value) {
        switch op {
        case .serverTimestamp:
            // REQUEST_TIME has millisecond precision (google.firestore.v1.DocumentTransform).
            let t = Timestamp(seconds: commitTime.seconds, nanos: commitTime.nanos - commitTime.nanos % 1_000_000)
            return (.timestamp(t), .timestamp(t))
        case .increment(let operand):
            let v = increment(current, operand)
            return (v, v)
        case .maximum(let operand):
            let v = extremum(current, operand, wantMax: true)
            return (v, v)
        case .minimum(let operand):
            let v = extremum(current, operand, wantMax: false)
            return (v, v)
        case .appendMissingElements(let elements):
            var array = current?.arrayValue ?? []
            for e in elements where !array.contains(where: { arrayEquivalent($0, e) }) { array.append(e) }
            return (.array(array), .null)
        case .removeAllFromArray(let elements):
            let array = (current?.arrayValue ?? []).filter { a in !elements.contains { arrayEquivalent(a, $0) } }
            return (.array(array), .null)
        }
    }

    /// Equality for array transforms: numbers across types, NaN equals NaN, null equals null.
    static func arrayEquivalent(_ a: Value, _ b: Value) -> Bool {
        if a.isNaN && b.isNaN { return true }
        return a.typeOrder == b.typeOrder && ValueOrdering.compare(a, b) == 0
    }

    static func increment(_ current: Value?, _ operand: Value) -> Value {
        switch (current, operand) {
        case (.integer(let a)?, .integer(let b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            if overflow { return .integer(b > 0 ? .max : .min) }
            return .integer(sum)
        case (.integer(let a)?, .double(let b)): return .double(Double(a) + b)
        case (.double(let a)?, .integer(let b)): return .double(a + Double(b))
        case (.double(let a)?, .double(let b)): return .double(a + b)
        default: return operand
        }
    }

    static func extremum(_ current: Value?, _ operand: Value, wantMax: Bool) -> Value {
        guard let current, current.isNumber else { return operand }
        if current.isNaN { return current }
        if operand.isNaN { return operand }
        let c = ValueOrdering.compare(operand, current)
        if c == 0 { return current }
        return (c > 0) == wantMax ? operand : current
    }

    /// Transform operands must be numbers (increment, maximum, minimum).
    static func validate(_ t: FieldTransform) throws(HearthError) {
        if t.field.isDocumentName {
            throw .invalidArgument("Cannot transform the __name__ field.")
        }
        switch t.operation {
        case .increment(let v), .maximum(let v), .minimum(let v):
            guard v.isNumber else {
                throw .invalidArgument("Increment, maximum and minimum transforms require a numeric operand (field \(t.field.canonical)).")
            }
        default: break
        }
    }
}
