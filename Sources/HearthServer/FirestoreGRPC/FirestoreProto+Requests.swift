import HearthCore
import HearthDocuments
import HearthFirestoreProto
import SwiftProtobuf
import Foundation

/// Firestore's request messages (writes, queries, aggregations, transaction options) as engine values.
extension FirestoreProto {
    func precondition(_ p: Google_Firestore_V1_Precondition) throws(HearthError) -> Precondition? {
        switch p.conditionType {
        case .exists(let e)?: return .exists(e)
        case .updateTime(let t)?: return .updateTime(try Self.timestamp(t, "current_document.update_time"))
        case nil: return nil
        }
    }

    /// One `Write`. A `verify` write becomes a transform-only write with no transforms and an
    /// existence (or update-time) precondition — the engine then changes nothing and only
    /// checks the document — or, for `exists: false`, a delete that must find nothing;
    /// `VerifySkippingAuthorizer` keeps the rules from judging it as an update or a delete.
    func write(_ w: Google_Firestore_V1_Write, _ at: String) throws(HearthError) -> Write {
        var transforms: [FieldTransform] = []
        for (i, t) in w.updateTransforms.enumerated() {
            transforms.append(try fieldTransform(t, "\(at).update_transforms[\(i)]"))
        }
        let pre = w.hasCurrentDocument ? try precondition(w.currentDocument) : nil
        switch w.operation {
        case .update(let doc)?:
            guard !doc.name.isEmpty else { throw .invalidArgument("Invalid value at '\(at).update.name': a document name is required.") }
            let path = try database.documentPath(fromName: doc.name)
            let mask = w.hasUpdateMask ? try self.mask(w.updateMask) : nil
            let fields = try self.fields(doc.fields, "\(at).update.fields")
            return Write(path: path, kind: .update(fields: fields, mask: mask), transforms: transforms, precondition: pre)
        case .delete(let name)?:
            guard !w.hasUpdateMask, transforms.isEmpty else {
                throw .invalidArgument("Invalid value at '\(at)': a delete cannot have an update mask or transforms.")
            }
            return Write(path: try database.documentPath(fromName: name), kind: .delete, precondition: pre)
        case .transform(let t)?:
            guard !t.document.isEmpty else { throw .invalidArgument("Invalid value at '\(at).transform.document'.") }
            for (i, ft) in t.fieldTransforms.enumerated() {
                transforms.append(try fieldTransform(ft, "\(at).transform.field_transforms[\(i)]"))
            }
            return Write(path: try database.documentPath(fromName: t.document), kind: .transform, transforms: transforms, precondition: pre)
        case .verify(let name)?:
            guard !w.hasUpdateMask, transforms.isEmpty else {
                throw .invalidArgument("Invalid value at '\(at)': a verify cannot have an update mask or transforms.")
            }
            let path = try database.documentPath(fromName: name)
            let condition: Precondition
            switch pre {
            case .updateTime(let t)?: condition = .updateTime(t)
            case .exists(false)?:
                // "Must not exist" — what the mobile SDKs send for a document a transaction read
                // as missing and did not write. A delete under that precondition is exactly it:
                // a no-op on a missing document, ALREADY_EXISTS on an existing one.
                return Write(path: path, kind: .delete, precondition: .exists(false))
            case .exists(true)?, nil: condition = .exists(true)
            }
            return Write(path: path, kind: .transform, precondition: condition)
        case nil:
            throw .invalidArgument("Invalid value at '\(at)': a Write must set exactly one of update, delete, transform or verify.")
        }
    }

    /// Indexes of the `verify` writes of a list.
    static func verifyIndexes(_ writes: [Google_Firestore_V1_Write]) -> Set<Int> {
        var out = Set<Int>()
        for (i, w) in writes.enumerated() { if case .verify? = w.operation { out.insert(i) } }
        return out
    }

    func fieldTransform(_ t: Google_Firestore_V1_DocumentTransform.FieldTransform, _ at: String) throws(HearthError) -> FieldTransform {
        let path = try fieldPath(t.fieldPath, "\(at).field_path")
        switch t.transformType {
        case .setToServerValue(let v)?:
            guard v == .requestTime else { throw .invalidArgument("Invalid value at '\(at).set_to_server_value': must be REQUEST_TIME.") }
            return FieldTransform(field: path, operation: .serverTimestamp)
        case .increment(let v)?: return FieldTransform(field: path, operation: .increment(try value(v, "\(at).increment")))
        case .maximum(let v)?: return FieldTransform(field: path, operation: .maximum(try value(v, "\(at).maximum")))
        case .minimum(let v)?: return FieldTransform(field: path, operation: .minimum(try value(v, "\(at).minimum")))
        case .appendMissingElements(let a)?:
            var values: [Value] = []
            for (i, e) in a.values.enumerated() { values.append(try value(e, "\(at).append_missing_elements.values[\(i)]")) }
            return FieldTransform(field: path, operation: .appendMissingElements(values))
        case .removeAllFromArray(let a)?:
            var values: [Value] = []
            for (i, e) in a.values.enumerated() { values.append(try value(e, "\(at).remove_all_from_array.values[\(i)]")) }
            return FieldTransform(field: path, operation: .removeAllFromArray(values))
        case nil:
            throw .invalidArgument("Invalid value at '\(at)': a FieldTransform must set exactly one transform.")
        }
    }

    // MARK: Queries

    /// A StructuredQuery under a parent (the root or a document).
    func query(_ q: Google_Firestore_V1_StructuredQuery, parent: ResourcePath, _ at: String) throws(HearthError) -> Query {
        if q.hasFindNearest {
            throw HearthError(.unimplemented, "Vector search (findNearest) is not supported by this server yet.")
        }
        guard q.from.count == 1 else { throw .invalidArgument("Query must have exactly one 'from' collection selector.") }
        let selector = q.from[0]
        if !selector.collectionID.isEmpty {
            try ResourcePath.validateId(selector.collectionID, in: parent.appending(selector.collectionID))
        }
        var out = Query(parent: parent, collectionId: selector.collectionID, allDescendants: selector.allDescendants)
        if q.hasSelect {
            var paths: [FieldPath] = []
            for (i, f) in q.select.fields.enumerated() { paths.append(try fieldPath(f.fieldPath, "\(at).select.fields[\(i)]")) }
            out.select = paths
        }
        if q.hasWhere { out.filter = try filter(q.`where`, "\(at).where") }
        for (i, o) in q.orderBy.enumerated() {
            out.orderBy.append(Query.Order(try fieldPath(o.field.fieldPath, "\(at).order_by[\(i)].field"), descending: o.direction == .descending))
        }
        if q.hasStartAt { out.startAt = try cursor(q.startAt, "\(at).start_at") }
        if q.hasEndAt { out.endAt = try cursor(q.endAt, "\(at).end_at") }
        out.offset = Int(q.offset)
        if q.hasLimit { out.limit = Int(q.limit.value) }
        return out
    }

    func cursor(_ c: Google_Firestore_V1_Cursor, _ at: String) throws(HearthError) -> Query.Cursor {
        var values: [Value] = []
        for (i, v) in c.values.enumerated() { values.append(try value(v, "\(at).values[\(i)]")) }
        return Query.Cursor(values: values, before: c.before)
    }

    func filter(_ f: Google_Firestore_V1_StructuredQuery.Filter, _ at: String) throws(HearthError) -> Query.Filter {
        switch f.filterType {
        case .compositeFilter(let c)?:
            guard c.op == .and || c.op == .or else {
                throw .invalidArgument("Invalid value at '\(at).composite_filter.op': operator is unspecified.")
            }
            var filters: [Query.Filter] = []
            for (i, sub) in c.filters.enumerated() { filters.append(try filter(sub, "\(at).composite_filter.filters[\(i)]")) }
            guard !filters.isEmpty else { throw .invalidArgument("A composite filter must contain at least one filter.") }
            // As the REST transport: a one-filter AND is that filter; a one-filter OR stays an OR.
            if filters.count == 1 && c.op == .and { return filters[0] }
            return c.op == .and ? .and(filters) : .or(filters)
        case .fieldFilter(let ff)?:
            let field = try fieldPath(ff.field.fieldPath, "\(at).field_filter.field")
            let op: Query.Operator
            switch ff.op {
            case .lessThan: op = .lessThan
            case .lessThanOrEqual: op = .lessThanOrEqual
            case .greaterThan: op = .greaterThan
            case .greaterThanOrEqual: op = .greaterThanOrEqual
            case .equal: op = .equal
            case .notEqual: op = .notEqual
            case .arrayContains: op = .arrayContains
            case .in: op = .in
            case .arrayContainsAny: op = .arrayContainsAny
            case .notIn: op = .notIn
            case .unspecified, .UNRECOGNIZED:
                throw .invalidArgument("Invalid value at '\(at).field_filter.op': operator is unspecified.")
            }
            guard ff.hasValue else { throw .invalidArgument("Invalid value at '\(at).field_filter.value': a value is required.") }
            let v = try value(ff.value, "\(at).field_filter.value")
            if v.isNaN || v.typeOrder == .null, op != .equal && op != .notEqual,
               op != .in && op != .notIn && op != .arrayContains && op != .arrayContainsAny {
                throw .invalidArgument("Invalid query. Null and NaN only support '==' and '!=' comparisons.")
            }
            if op == .equal && v.typeOrder == .null { return .unary(field, .isNull) }
            if op == .equal && v.isNaN { return .unary(field, .isNaN) }
            if op == .notEqual && v.typeOrder == .null { return .unary(field, .isNotNull) }
            if op == .notEqual && v.isNaN { return .unary(field, .isNotNaN) }
            return .field(field, op, v)
        case .unaryFilter(let u)?:
            let op: Query.UnaryOperator
            switch u.op {
            case .isNan: op = .isNaN
            case .isNull: op = .isNull
            case .isNotNan: op = .isNotNaN
            case .isNotNull: op = .isNotNull
            case .unspecified, .UNRECOGNIZED:
                throw .invalidArgument("Invalid value at '\(at).unary_filter.op': operator is unspecified.")
            }
            guard case .field(let ref)? = u.operandType else {
                throw .invalidArgument("Missing field reference at '\(at).unary_filter.field'.")
            }
            return .unary(try fieldPath(ref.fieldPath, "\(at).unary_filter.field"), op)
        case nil:
            throw .invalidArgument("Invalid value at '\(at)': a Filter must set exactly one filter type.")
        }
    }

    func aggregations(_ list: [Google_Firestore_V1_StructuredAggregationQuery.Aggregation], _ at: String) throws(HearthError) -> [Aggregation] {
        var out: [Aggregation] = []
        var unnamed = 0
        for (i, a) in list.enumerated() {
            let alias: String
            if !a.alias.isEmpty {
                alias = a.alias
            } else {
                unnamed += 1
                alias = "field_\(unnamed)"
            }
            switch a.`operator` {
            case .count(let c)?: out.append(Aggregation(alias: alias, kind: .count(upTo: c.hasUpTo ? c.upTo.value : nil)))
            case .sum(let s)?: out.append(Aggregation(alias: alias, kind: .sum(try fieldPath(s.field.fieldPath, "\(at)[\(i)].sum.field"))))
            case .avg(let s)?: out.append(Aggregation(alias: alias, kind: .avg(try fieldPath(s.field.fieldPath, "\(at)[\(i)].avg.field"))))
            case nil: throw .invalidArgument("Invalid value at '\(at)[\(i)]': an aggregation must be count, sum or avg.")
            }
        }
        return out
    }

    func transactionOptions(_ o: Google_Firestore_V1_TransactionOptions) throws(HearthError) -> FirestoreJSON.TransactionOptions {
        switch o.mode {
        case .readOnly(let r)?:
            if case .readTime(let t)? = r.consistencySelector { return .readOnly(try Self.timestamp(t, "options.read_only.read_time")) }
            return .readOnly(nil)
        case .readWrite(let w)?:
            return .readWrite(retry: w.retryTransaction.isEmpty ? nil : TransactionID(bytes: [UInt8](w.retryTransaction)))
        case nil:
            return .readWrite(retry: nil)
        }
    }
}
