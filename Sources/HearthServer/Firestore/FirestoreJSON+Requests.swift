import HearthCore
import HearthDocuments
import Foundation

/// Parsing of Firestore's request messages (writes, queries, transaction options).
extension FirestoreJSON {
    static let directions = ["DIRECTION_UNSPECIFIED": 0, "ASCENDING": 1, "DESCENDING": 2]
    static let fieldOperators = [
        "OPERATOR_UNSPECIFIED": 0, "LESS_THAN": 1, "LESS_THAN_OR_EQUAL": 2, "GREATER_THAN": 3, "GREATER_THAN_OR_EQUAL": 4,
        "EQUAL": 5, "NOT_EQUAL": 6, "ARRAY_CONTAINS": 7, "IN": 8, "ARRAY_CONTAINS_ANY": 9, "NOT_IN": 10,
    ]
    static let unaryOperators = ["OPERATOR_UNSPECIFIED": 0, "IS_NAN": 2, "IS_NULL": 3, "IS_NOT_NAN": 4, "IS_NOT_NULL": 5]
    static let compositeOperators = ["OPERATOR_UNSPECIFIED": 0, "AND": 1, "OR": 2]
    static let serverValues = ["SERVER_VALUE_UNSPECIFIED": 0, "REQUEST_TIME": 1]

    /// A `Document` message given as a write's body: its name (optional) and fields.
    func documentBody(_ json: JSON, _ at: String) throws(HearthError) -> (name: String?, fields: [String: Value]) {
        let o = try ProtoObject(json, at, allowed: ["name", "fields", "createTime", "updateTime"])
        return (try o.string("name"), try fields(o["fields"], "\(at).fields"))
    }

    func precondition(_ json: JSON?, _ at: String) throws(HearthError) -> Precondition? {
        guard let json else { return nil }
        let o = try ProtoObject(json, at, allowed: ["exists", "updateTime"])
        if o.members.count > 1 { throw .invalidArgument("Invalid value at '\(at)': only one of exists and updateTime may be set.") }
        if let e = try o.bool("exists") { return .exists(e) }
        if let t = try o.timestamp("updateTime") { return .updateTime(t) }
        return nil
    }

    func write(_ json: JSON, _ at: String) throws(HearthError) -> Write {
        let o = try ProtoObject(
            json, at, allowed: ["update", "delete", "transform", "updateMask", "updateTransforms", "currentDocument"])
        let kinds = ["update", "delete", "transform"].filter { o[$0] != nil }
        guard kinds.count == 1 else {
            throw .invalidArgument("Invalid value at '\(at)': a Write must set exactly one of update, delete or transform.")
        }
        var transforms: [FieldTransform] = []
        for (i, t) in try o.array("updateTransforms").enumerated() {
            transforms.append(try fieldTransform(t, "\(at).updateTransforms[\(i)]"))
        }
        let pre = try precondition(o["currentDocument"], "\(at).currentDocument")
        switch kinds[0] {
        case "update":
            let doc = try documentBody(o["update"]!, "\(at).update")
            guard let name = doc.name else { throw .invalidArgument("Invalid value at '\(at).update.name': a document name is required.") }
            let path = try database.documentPath(fromName: name)
            let mask = try self.mask(o["updateMask"], "\(at).updateMask")
            return Write(path: path, kind: .update(fields: doc.fields, mask: mask), transforms: transforms, precondition: pre)
        case "delete":
            guard o["updateMask"] == nil, transforms.isEmpty else {
                throw .invalidArgument("Invalid value at '\(at)': a delete cannot have an update mask or transforms.")
            }
            let name = try o.string("delete")!
            return Write(path: try database.documentPath(fromName: name), kind: .delete, precondition: pre)
        default:
            let t = try ProtoObject(o["transform"]!, "\(at).transform", allowed: ["document", "fieldTransforms"])
            guard let name = try t.string("document") else { throw .invalidArgument("Invalid value at '\(at).transform.document'.") }
            for (i, ft) in try t.array("fieldTransforms").enumerated() {
                transforms.append(try fieldTransform(ft, "\(at).transform.fieldTransforms[\(i)]"))
            }
            return Write(path: try database.documentPath(fromName: name), kind: .transform, transforms: transforms, precondition: pre)
        }
    }

    func fieldTransform(_ json: JSON, _ at: String) throws(HearthError) -> FieldTransform {
        let o = try ProtoObject(
            json, at,
            allowed: ["fieldPath", "setToServerValue", "increment", "maximum", "minimum", "appendMissingElements", "removeAllFromArray"])
        guard let p = try o.string("fieldPath") else { throw .invalidArgument("Invalid value at '\(at).fieldPath': required.") }
        let path = try FieldPath(parsing: p)
        let ops = o.keys.filter { $0 != "fieldPath" }
        guard ops.count == 1, let op = ops.first else {
            throw .invalidArgument("Invalid value at '\(at)': a FieldTransform must set exactly one transform.")
        }
        switch op {
        case "setToServerValue":
            guard try o.enumValue(op, Self.serverValues) == 1 else {
                throw .invalidArgument("Invalid value at '\(at).setToServerValue': must be REQUEST_TIME.")
            }
            return FieldTransform(field: path, operation: .serverTimestamp)
        case "increment": return FieldTransform(field: path, operation: .increment(try value(o[op]!, "\(at).increment")))
        case "maximum": return FieldTransform(field: path, operation: .maximum(try value(o[op]!, "\(at).maximum")))
        case "minimum": return FieldTransform(field: path, operation: .minimum(try value(o[op]!, "\(at).minimum")))
        default:
            let a = try ProtoObject(o[op]!, "\(at).\(op)", allowed: ["values"])
            var values: [Value] = []
            for (i, e) in try a.array("values").enumerated() { values.append(try value(e, "\(at).\(op).values[\(i)]")) }
            return FieldTransform(field: path, operation: op == "appendMissingElements" ? .appendMissingElements(values) : .removeAllFromArray(values))
        }
    }

    /// A StructuredQuery under a parent (the root or a document).
    func query(_ json: JSON, parent: ResourcePath, _ at: String) throws(HearthError) -> Query {
        let o = try ProtoObject(
            json, at, allowed: ["select", "from", "where", "orderBy", "startAt", "endAt", "offset", "limit", "findNearest"])
        if o["findNearest"] != nil {
            throw HearthError(.unimplemented, "Vector search (findNearest) is not supported by this server yet.")
        }
        let from = try o.array("from")
        guard from.count == 1 else { throw .invalidArgument("Query must have exactly one 'from' collection selector.") }
        let selector = try ProtoObject(from[0], "\(at).from[0]", allowed: ["collectionId", "allDescendants"])
        let collectionId = try selector.string("collectionId") ?? ""
        let allDescendants = try selector.bool("allDescendants") ?? false
        if !collectionId.isEmpty {
            try ResourcePath.validateId(collectionId, in: parent.appending(collectionId))
        }
        var q = Query(parent: parent, collectionId: collectionId, allDescendants: allDescendants)
        if let s = try o.object("select", allowed: ["fields"]) {
            var paths: [FieldPath] = []
            for (i, f) in try s.array("fields").enumerated() { paths.append(try fieldPath(f, "\(at).select.fields[\(i)]")) }
            q.select = paths
        }
        if let w = o["where"] { q.filter = try filter(w, "\(at).where") }
        for (i, ob) in try o.array("orderBy").enumerated() {
            let x = try ProtoObject(ob, "\(at).orderBy[\(i)]", allowed: ["field", "direction"])
            let dir = try x.enumValue("direction", Self.directions) ?? 0
            q.orderBy.append(Query.Order(try fieldPath(x["field"], "\(at).orderBy[\(i)].field"), descending: dir == 2))
        }
        q.startAt = try cursor(o["startAt"], "\(at).startAt")
        q.endAt = try cursor(o["endAt"], "\(at).endAt")
        if let off = try o.int32("offset") { q.offset = Int(off) }
        if let l = o["limit"] {
            let v: Int64
            if case .object = l {
                v = try ProtoObject(l, "\(at).limit", allowed: ["value"]).int64("value") ?? 0
            } else {
                v = try ProtoObject.int64(l, "\(at).limit")
            }
            guard let limit = Int32(exactly: v) else { throw .invalidArgument("Invalid value at '\(at).limit' (TYPE_INT32), \(v)") }
            q.limit = Int(limit)
        }
        return q
    }

    func cursor(_ json: JSON?, _ at: String) throws(HearthError) -> Query.Cursor? {
        guard let json else { return nil }
        let o = try ProtoObject(json, at, allowed: ["values", "before"])
        var values: [Value] = []
        for (i, v) in try o.array("values").enumerated() { values.append(try value(v, "\(at).values[\(i)]")) }
        return Query.Cursor(values: values, before: try o.bool("before") ?? false)
    }

    func filter(_ json: JSON, _ at: String) throws(HearthError) -> Query.Filter {
        let o = try ProtoObject(json, at, allowed: ["compositeFilter", "fieldFilter", "unaryFilter"])
        guard o.members.count == 1 else { throw .invalidArgument("Invalid value at '\(at)': a Filter must set exactly one filter type.") }
        if let c = try o.object("compositeFilter", allowed: ["op", "filters"]) {
            let op = try c.enumValue("op", Self.compositeOperators) ?? 0
            guard op != 0 else { throw .invalidArgument("Invalid value at '\(at).compositeFilter.op': operator is unspecified.") }
            var filters: [Query.Filter] = []
            for (i, f) in try c.array("filters").enumerated() { filters.append(try filter(f, "\(at).compositeFilter.filters[\(i)]")) }
            guard !filters.isEmpty else { throw .invalidArgument("A composite filter must contain at least one filter.") }
            // A one-filter AND is that filter; a one-filter OR stays an OR, as Firestore's
            // validation treats it (e.g. NOT_IN inside any OR is refused).
            if filters.count == 1 && op == 1 { return filters[0] }
            return op == 1 ? .and(filters) : .or(filters)
        }
        if let f = try o.object("fieldFilter", allowed: ["field", "op", "value"]) {
            let field = try fieldPath(f["field"], "\(at).fieldFilter.field")
            let opNumber = try f.enumValue("op", Self.fieldOperators) ?? 0
            let ops: [Int: Query.Operator] = [
                1: .lessThan, 2: .lessThanOrEqual, 3: .greaterThan, 4: .greaterThanOrEqual, 5: .equal, 6: .notEqual,
                7: .arrayContains, 8: .in, 9: .arrayContainsAny, 10: .notIn,
            ]
            guard let op = ops[opNumber] else { throw .invalidArgument("Invalid value at '\(at).fieldFilter.op': operator is unspecified.") }
            guard let vj = f["value"] else { throw .invalidArgument("Invalid value at '\(at).fieldFilter.value': a value is required.") }
            let v = try value(vj, "\(at).fieldFilter.value")
            if v.isNaN || v.typeOrder == .null, op != .equal && op != .notEqual {
                if op != .in && op != .notIn && op != .arrayContains && op != .arrayContainsAny {
                    throw .invalidArgument("Invalid query. Null and NaN only support '==' and '!=' comparisons.")
                }
            }
            // `== null` / `== NaN` mean IS_NULL / IS_NAN, as Firestore's SDKs translate them.
            if op == .equal && v.typeOrder == .null { return .unary(field, .isNull) }
            if op == .equal && v.isNaN { return .unary(field, .isNaN) }
            if op == .notEqual && v.typeOrder == .null { return .unary(field, .isNotNull) }
            if op == .notEqual && v.isNaN { return .unary(field, .isNotNaN) }
            return .field(field, op, v)
        }
        let u = try o.object("unaryFilter", allowed: ["op", "field"])!
        let opNumber = try u.enumValue("op", Self.unaryOperators) ?? 0
        let ops: [Int: Query.UnaryOperator] = [2: .isNaN, 3: .isNull, 4: .isNotNaN, 5: .isNotNull]
        guard let op = ops[opNumber] else { throw .invalidArgument("Invalid value at '\(at).unaryFilter.op': operator is unspecified.") }
        return .unary(try fieldPath(u["field"], "\(at).unaryFilter.field"), op)
    }

    func aggregations(_ json: [JSON], _ at: String) throws(HearthError) -> [Aggregation] {
        var out: [Aggregation] = []
        var unnamed = 0
        for (i, a) in json.enumerated() {
            let o = try ProtoObject(a, "\(at)[\(i)]", allowed: ["alias", "count", "sum", "avg"])
            let alias: String
            if let given = try o.string("alias"), !given.isEmpty {
                alias = given
            } else {
                unnamed += 1
                alias = "field_\(unnamed)"
            }
            if let c = try o.object("count", allowed: ["upTo"]) {
                var upTo: Int64?
                if let u = c["upTo"] {
                    if case .object = u {
                        upTo = try ProtoObject(u, "\(at)[\(i)].count.upTo", allowed: ["value"]).int64("value")
                    } else {
                        upTo = try ProtoObject.int64(u, "\(at)[\(i)].count.upTo")
                    }
                }
                out.append(Aggregation(alias: alias, kind: .count(upTo: upTo)))
            } else if let s = try o.object("sum", allowed: ["field"]) {
                out.append(Aggregation(alias: alias, kind: .sum(try fieldPath(s["field"], "\(at)[\(i)].sum.field"))))
            } else if let s = try o.object("avg", allowed: ["field"]) {
                out.append(Aggregation(alias: alias, kind: .avg(try fieldPath(s["field"], "\(at)[\(i)].avg.field"))))
            } else {
                throw .invalidArgument("Invalid value at '\(at)[\(i)]': an aggregation must be count, sum or avg.")
            }
        }
        return out
    }

    enum TransactionOptions {
        case readOnly(Timestamp?)
        case readWrite(retry: TransactionID?)
    }

    func transactionOptions(_ json: JSON?, _ at: String) throws(HearthError) -> TransactionOptions? {
        guard let json else { return nil }
        let o = try ProtoObject(json, at, allowed: ["readOnly", "readWrite"])
        if let r = try o.object("readOnly", allowed: ["readTime"]) { return .readOnly(try r.timestamp("readTime")) }
        if let w = try o.object("readWrite", allowed: ["retryTransaction"]) {
            return .readWrite(retry: try w.bytes("retryTransaction").map(TransactionID.init(bytes:)))
        }
        return .readWrite(retry: nil)
    }
}
