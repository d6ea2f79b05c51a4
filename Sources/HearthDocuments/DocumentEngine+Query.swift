public import HearthCore
import Logging

/// Query execution: each disjunct of the filter is served by one index scan that yields
/// candidates in query order; every candidate is checked in memory; scans stop as soon as
/// `offset + limit` results are known, so cost follows the result, not the collection.
extension DocumentEngine {
    public struct QueryResult: Sendable {
        public var documents: [Document]
        public var readTime: Timestamp
        /// How many matching documents the offset skipped.
        public var skippedResults: Int
    }

    public func runQuery(_ database: DatabaseName, _ query: Query, consistency: ReadConsistency = .latest) async throws -> QueryResult {
        let nq = try NormalizedQuery(query, database: database)
        try await ensureIndexes(for: nq)
        let (readTime, txn) = try snapshot(for: consistency, database: database)
        let execute = { [self] in try await self.executeQuery(nq, readTime: readTime) }
        var (docs, skipped) = try await execute()
        if let lock = txn?.lock {
            // A read-write transaction locks every document the query returns. One may have
            // changed between the scan and the lock: then the query runs again (a few times at
            // most; after that the check at commit decides).
            for attempt in 1...4 {
                let paths = docs.map(\.path)
                try await lockReads(lock, database, paths, mode: .shared)
                let current = try await batchGet(database, paths).documents
                if attempt == 4 || zip(docs, current).allSatisfy({ $0.updateTime == $1?.updateTime }) { break }
                (docs, skipped) = try await execute()
            }
        }
        if let txn { recordQuery(txn.id, nq, docs) }
        return QueryResult(documents: docs.map { $0.masked(query.select) }, readTime: readTime ?? clock.current(), skippedResults: skipped)
    }

    public struct AggregationResult: Sendable {
        public var values: [(alias: String, value: Value)]
        public var readTime: Timestamp
    }

    public func runAggregation(
        _ database: DatabaseName, _ query: Query, _ aggregations: [Aggregation], consistency: ReadConsistency = .latest
    ) async throws -> AggregationResult {
        guard !aggregations.isEmpty else { throw HearthError.invalidArgument("Aggregations can not be empty.") }
        guard aggregations.count <= 5 else { throw HearthError.invalidArgument("Aggregation queries support at most 5 aggregations.") }
        var aliases = Set<String>()
        for a in aggregations {
            guard aliases.insert(a.alias).inserted else {
                throw HearthError.invalidArgument("Aggregation aliases contain duplicate alias \(a.alias).")
            }
            if case .count(let upTo?) = a.kind, upTo <= 0 {
                throw HearthError.invalidArgument("up_to must be greater than zero.")
            }
        }
        // Firestore answers sum/avg from an index over the aggregated fields: only documents
        // that have every one of them take part (in every aggregation of the request, count
        // too), in that index's order, so the query's offset and limit count those documents
        // in order of the aggregated fields by field path (after explicit and inequality orders).
        let fields = aggregations.compactMap { a -> FieldPath? in
            switch a.kind {
            case .sum(let f), .avg(let f): f
            case .count: nil
            }
        }
        var q = query
        q.select = nil
        if !fields.isEmpty {
            var orders = query.orderBy
            var inequalities: [FieldPath] = []
            if let f = query.filter { NormalizedQuery.collectInequalities(f, into: &inequalities) }
            if !orders.contains(where: { $0.field.isDocumentName }) {
                let direction = orders.last?.descending ?? false
                for f in inequalities.sorted() where !f.isDocumentName && !orders.contains(where: { $0.field == f }) {
                    orders.append(Query.Order(f, descending: direction))
                }
                for f in fields.sorted() where !orders.contains(where: { $0.field == f }) {
                    orders.append(Query.Order(f, descending: direction))
                }
                q.orderBy = orders
            }
        }
        let result = try await runQuery(database, q, consistency: consistency)
        let docs = result.documents.filter { d in fields.allSatisfy { Value.map(d.fields).value(at: $0) != nil } }
        var values: [(String, Value)] = []
        for a in aggregations {
            switch a.kind {
            case .count(let upTo):
                let n = Int64(docs.count)
                values.append((a.alias, .integer(upTo.map { min($0, n) } ?? n)))
            case .sum(let field):
                values.append((a.alias, Self.sum(docs.compactMap { Value.map($0.fields).value(at: field) })))
            case .avg(let field):
                let numbers = docs.compactMap { Value.map($0.fields).value(at: field) }.filter(\.isNumber)
                if numbers.isEmpty {
                    values.append((a.alias, .null))
                } else {
                    var total = 0.0
                    for n in numbers {
                        switch n {
                        case .integer(let i): total += Double(i)
                        case .double(let d): total += d
                        default: break
                        }
                    }
                    values.append((a.alias, .double(total / Double(numbers.count))))
                }
            }
        }
        return AggregationResult(values: values, readTime: result.readTime)
    }

    /// Firestore's sum: integers stay integers until one overflows; any double makes a double.
    static func sum(_ values: [Value]) -> Value {
        var intSum: Int64 = 0
        var doubleSum = 0.0
        var isDouble = false
        for v in values {
            switch v {
            case .integer(let i):
                if isDouble {
                    doubleSum += Double(i)
                } else {
                    let (s, overflow) = intSum.addingReportingOverflow(i)
                    if overflow {
                        isDouble = true
                        doubleSum = Double(intSum) + Double(i)
                    } else {
                        intSum = s
                    }
                }
            case .double(let d):
                if !isDouble {
                    isDouble = true
                    doubleSum = Double(intSum)
                }
                doubleSum += d
            default: break
            }
        }
        return isDouble ? .double(doubleSum) : .integer(intSum)
    }

    // MARK: Execution

    /// A query worked out as the scans it needs (all read from one snapshot) and how their
    /// results combine into the answer.
    struct QueryExecution: Sendable {
        var scans: [DocumentScan]
        /// The documents (after the offset) and how many the offset skipped, from the scans' results.
        var finish: @Sendable ([[Document]]) -> (documents: [Document], skipped: Int)
    }

    /// Runs a query over one snapshot of the store (now, or at a past time from the history).
    func executeQuery(_ nq: NormalizedQuery, readTime: Timestamp?) async throws -> (documents: [Document], skipped: Int) {
        let execution = execution(nq, readTime: readTime)
        if execution.scans.isEmpty { return execution.finish([]) }
        let read = try await store.snapshot(DocumentSnapshotRead(database: nq.database.database, at: readTime, scans: execution.scans))
        return execution.finish(read.scans)
    }

    /// The scans of a query: one per disjunct of its filter, each an index scan in query order
    /// that stops at `offset + limit` matches, or (no index serves it) every document of the
    /// scope with an in-memory sort. At a past time, every document of the scope as it was.
    func execution(_ nq: NormalizedQuery, readTime: Timestamp?) -> QueryExecution {
        let q = nq.query
        let matches: @Sendable (Document) -> Bool = { nq.matches($0) }
        if readTime != nil {
            // At a past time: every document of the scope then (now, plus those changed since,
            // resolved to their state at the time), sorted here.
            return QueryExecution(scans: [DocumentScan(.documents(scope(nq)), filter: matches)]) { results in
                var docs = results[0].sorted { nq.compare($0, $1) < 0 }
                let skipped = min(q.offset, docs.count)
                docs = Array(docs.dropFirst(q.offset))
                if let l = q.limit, docs.count > l { docs.removeLast(docs.count - l) }
                return (docs, skipped)
            }
        }
        let need = q.limit.map { q.offset + $0 }
        if need == 0 { return QueryExecution(scans: []) { _ in ([], 0) } }
        let disjuncts = q.filter.map(DNF.expand) ?? [[]]
        // Per disjunct: the index of its scan among `scans` (nil: an empty range, nothing to
        // read) and whether its results still need sorting (no plan).
        var scans: [DocumentScan] = []
        var parts: [(scan: Int?, sort: Bool)] = []
        for d in disjuncts {
            guard let plan = plan(nq, d) else {
                parts.append((scans.count, true))
                scans.append(DocumentScan(.documents(scope(nq)), filter: matches))
                continue
            }
            let range = keyRange(plan, nq, d)
            if range.isEmpty {
                parts.append((nil, false))
                continue
            }
            let source: DocumentScanSource
            switch plan.source {
            case .names: source = .documents(scope(nq))
            case .index(let scopeKey): source = .index(scope: scopeKey)
            }
            parts.append((scans.count, false))
            scans.append(DocumentScan(source, range: range, reverse: plan.reverse, limit: need, filter: matches))
        }
        let combine = parts
        return QueryExecution(scans: scans) { results in
            func part(_ i: Int) -> [Document] {
                guard let s = combine[i].scan else { return [] }
                guard combine[i].sort else { return results[s] }
                var out = results[s].sorted { nq.compare($0, $1) < 0 }
                if let need, out.count > need { out.removeLast(out.count - need) }
                return out
            }
            var docs: [Document]
            if combine.count == 1 {
                docs = part(0)
            } else {
                var byPath: [ResourcePath: Document] = [:]
                for i in combine.indices {
                    for doc in part(i) { byPath[doc.path] = doc }
                }
                docs = byPath.values.sorted { nq.compare($0, $1) < 0 }
                if let need, docs.count > need { docs.removeLast(docs.count - need) }
            }
            let skipped = min(q.offset, docs.count)
            if q.offset > 0 { docs = Array(docs.dropFirst(q.offset)) }
            return (docs, skipped)
        }
    }

    func scope(_ nq: NormalizedQuery) -> IndexScope {
        if nq.query.allDescendants && nq.query.collectionId.isEmpty { return .descendants(nq.query.parent) }
        return nq.query.allDescendants ? .group(nq.query.collectionId) : .collection(nq.query.collectionPath)
    }

    /// The plan for one conjunction: which index, which key prefix, which columns follow it.
    struct Plan {
        enum Source { case names, index(scope: String) }
        var source: Source
        var prefix: [UInt8]
        /// The index's ordered columns after the prefix (field, stored descending), then the name.
        var columns: [(FieldPath, Bool)]
        var nameDescending: Bool
        var reverse: Bool
    }

    /// Equality-like constraints of a conjunction: (field, value, isArrayContains).
    static func equalities(_ conjunction: [Query.Filter]) -> [(FieldPath, Value, Bool)] {
        var out: [(FieldPath, Value, Bool)] = []
        for f in conjunction {
            switch f {
            case .field(let p, .equal, let v) where !p.isDocumentName && !v.isNaN:
                if !out.contains(where: { $0.0 == p && !$0.2 }) { out.append((p, v, false)) }
            case .unary(let p, .isNull):
                if !out.contains(where: { $0.0 == p && !$0.2 }) { out.append((p, .null, false)) }
            case .unary(let p, .isNaN):
                if !out.contains(where: { $0.0 == p && !$0.2 }) { out.append((p, .double(.nan), false)) }
            case .field(let p, .arrayContains, let v) where !v.isNaN:
                if !out.contains(where: { $0.2 }) { out.append((p, v, true)) }
            default: break
            }
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// The index definition a conjunction needs, or nil when built-in indexes (collection-scope
    /// single-field indexes, name order) serve it. Collection-group queries need a group-scope
    /// definition even for one field, as Firestore needs a single-field exemption for them.
    func requiredIndex(_ nq: NormalizedQuery, _ conjunction: [Query.Filter]) -> [IndexDefinition.Field]? {
        let eqs = Self.equalities(conjunction)
        let orderFields = nq.orders.dropLast().filter { !$0.field.isDocumentName }
        guard !nq.query.collectionId.isEmpty, nq.orders.last?.field.isDocumentName == true, orderFields.count == nq.orders.count - 1
        else { return nil }
        if orderFields.isEmpty && eqs.isEmpty { return nil }
        if !nq.query.allDescendants {
            if orderFields.isEmpty || (eqs.isEmpty && orderFields.count == 1) { return nil }
        } else if orderFields.isEmpty {
            // Served by one equality's group-scope single-field index; the rest is filtered.
            let eq = eqs.first(where: { !$0.2 }) ?? eqs[0]
            return [IndexDefinition.Field(eq.0, eq.2 ? .contains : .ascending)]
        }
        return eqs.map { IndexDefinition.Field($0.0, $0.2 ? .contains : .ascending) }
            + orderFields.map { IndexDefinition.Field($0.field, $0.descending ? .descending : .ascending) }
    }

    /// Finds an index whose equality part matches as a set and whose order part matches
    /// exactly (forward scan) or fully reversed (reverse scan). With no order part, the scan
    /// direction follows the query's `__name__` direction against the index's.
    func findIndex(_ db: String, _ nq: NormalizedQuery, _ required: [IndexDefinition.Field], eqCount: Int) -> (IndexDefinition, Bool)? {
        for def in compositeIndexes(db)
        where def.collectionGroup == nq.query.collectionId && def.groupScope == nq.query.allDescendants
            && def.fields.count == required.count
        {
            let eqPart = Set(def.fields.prefix(eqCount).map { $0.mode == .descending ? IndexDefinition.Field($0.path, .ascending) : $0 })
            guard eqPart == Set(required.prefix(eqCount)) else { continue }
            let have = Array(def.fields.dropFirst(eqCount)), want = Array(required.dropFirst(eqCount))
            if want.isEmpty {
                let nameDescending = nq.orders.last?.descending ?? false
                return (def, nameDescending != (def.fields.last?.mode == .descending))
            }
            // The index stores names in its last field's direction; the query's name order must
            // match it (forward) or be its reverse together with every field (reverse scan).
            let queryNameDescending = nq.orders.last?.descending ?? false
            let indexNameDescending = def.fields.last?.mode == .descending
            if have == want && queryNameDescending == indexNameDescending { return (def, false) }
            let flipped = want.map { IndexDefinition.Field($0.path, $0.mode == .ascending ? .descending : .ascending) }
            if have == flipped && queryNameDescending != indexNameDescending { return (def, true) }
        }
        return nil
    }

    /// Creates (or, with strict indexes, demands) the composite indexes a query needs.
    func ensureIndexes(for nq: NormalizedQuery) async throws {
        let db = nq.database.database
        let disjuncts = nq.query.filter.map(DNF.expand) ?? [[]]
        for d in disjuncts {
            guard let required = requiredIndex(nq, d) else { continue }
            let eqCount = required.count - (nq.orders.count - 1)
            if findIndex(db, nq, required, eqCount: eqCount) != nil { continue }
            let proposed = IndexDefinition(
                id: 0, database: db, collectionGroup: nq.query.collectionId, groupScope: nq.query.allDescendants,
                fields: required, automatic: true)
            if configuration.strictIndexes {
                throw HearthError.failedPrecondition(
                    "The query requires an index. Declare it in firestore.indexes.json: \(proposed.summary)")
            }
            try await createIndex(proposed)
        }
    }

    /// Adds a composite index and back-fills its entries from the existing documents. Commits
    /// planned with the indexes known before are refused by the store and planned again.
    public func createIndex(_ proposed: IndexDefinition) async throws {
        let created = try await store.createIndex(proposed) { doc, def in IndexEntries.composite(doc, def) }
        // Ours, or one another writer created first: the cache follows storage.
        try await reloadIndexes()
        if let created {
            logger.notice("created composite index", metadata: ["index": "\(created.summary)", "automatic": "\(created.automatic)"])
        }
    }

    func plan(_ nq: NormalizedQuery, _ conjunction: [Query.Filter]) -> Plan? {
        let db = nq.database.database
        if nq.query.collectionId.isEmpty { return nil }
        let scopeKey = scope(nq).key
        let eqs = Self.equalities(conjunction)
        guard nq.orders.last?.field.isDocumentName == true else { return nil }
        let orderFields = nq.orders.dropLast()
        guard !orderFields.contains(where: { $0.field.isDocumentName }) else { return nil }
        let nameDesc = nq.orders.last!.descending
        if orderFields.isEmpty && eqs.isEmpty {
            return Plan(source: .names, prefix: [], columns: [], nameDescending: false, reverse: nameDesc)
        }
        if !nq.query.allDescendants && orderFields.isEmpty {
            // One equality (preferring a plain one) from the built-in single-field index.
            let eq = eqs.first(where: { !$0.2 }) ?? eqs[0]
            var prefix = IndexEntries.singleFieldPrefix(eq.2 ? IndexDefinition.singleFieldContains : IndexDefinition.singleFieldAscending, eq.0)
            IndexKey.append(eq.1, to: &prefix)
            return Plan(source: .index(scope: scopeKey), prefix: prefix, columns: [], nameDescending: false, reverse: nameDesc)
        }
        if !nq.query.allDescendants && eqs.isEmpty && orderFields.count == 1 {
            let o = orderFields.first!
            // The single-field index stores the name ascending; a mixed direction needs a sort.
            guard o.descending == nameDesc else { return nil }
            return Plan(
                source: .index(scope: scopeKey), prefix: IndexEntries.singleFieldPrefix(IndexDefinition.singleFieldAscending, o.field),
                columns: [(o.field, false)], nameDescending: false, reverse: o.descending)
        }
        guard let required = requiredIndex(nq, conjunction),
              let (def, reverse) = findIndex(db, nq, required, eqCount: required.count - orderFields.count)
        else {
            return nil
        }
        let eqCount = required.count - orderFields.count
        var prefix = IndexEntries.prefix(def.id)
        for f in def.fields.prefix(eqCount) {
            guard let eq = eqs.first(where: { $0.0 == f.path && ($0.2 == (f.mode == .contains)) }) else { return nil }
            IndexKey.append(eq.1, descending: f.mode == .descending, to: &prefix)
        }
        let columns = def.fields.dropFirst(eqCount).map { ($0.path, $0.mode == .descending) }
        let scope = def.groupScope ? IndexScope.group(def.collectionGroup).key : IndexScope.collection(nq.query.collectionPath).key
        return Plan(source: .index(scope: scope), prefix: prefix, columns: columns, nameDescending: def.fields.last?.mode == .descending, reverse: reverse)
    }

    // MARK: Key ranges

    /// The key range a plan scans: the prefix, narrowed by inequalities on the first column
    /// and by the cursors.
    func keyRange(_ plan: Plan, _ nq: NormalizedQuery, _ conjunction: [Query.Filter]) -> KeyRange {
        var lower = plan.prefix
        var upper = IndexKey.successor(ofPrefix: plan.prefix)
        func raiseLower(_ k: [UInt8]) { if lower.lexicographicallyPrecedes(k) { lower = k } }
        func lowerUpper(_ k: [UInt8]?) {
            guard let k else { return }
            if let u = upper { if k.lexicographicallyPrecedes(u) { upper = k } } else { upper = k }
        }
        if let (field, desc) = plan.columns.first {
            for f in conjunction {
                guard case .field(let p, let op, let v) = f, p == field, !v.isNaN else { continue }
                var k = plan.prefix
                IndexKey.append(v, descending: desc, to: &k)
                let typeRange = Self.typeRange(v, desc: desc, prefix: plan.prefix)
                // In stored-key terms, "greater" values lie above when ascending, below when descending.
                let greater: Bool
                let inclusive: Bool
                switch op {
                case .greaterThan: (greater, inclusive) = (true, false)
                case .greaterThanOrEqual: (greater, inclusive) = (true, true)
                case .lessThan: (greater, inclusive) = (false, false)
                case .lessThanOrEqual: (greater, inclusive) = (false, true)
                default: continue
                }
                let above = greater != desc
                if above {
                    raiseLower(inclusive ? k : (IndexKey.successor(ofPrefix: k) ?? k))
                    lowerUpper(typeRange.upper)
                } else {
                    lowerUpper(inclusive ? IndexKey.successor(ofPrefix: k) : k)
                    if let l = typeRange.lower { raiseLower(l) }
                }
            }
        } else if case .names = plan.source {
            // __name__ inequalities bound a name scan.
            for f in conjunction {
                guard case .field(let p, let op, .reference(let name)) = f, p.isDocumentName,
                      let path = try? nq.database.position(fromName: name)
                else { continue }
                let k = IndexKey.encodePath(path)
                switch op {
                case .greaterThan: raiseLower(IndexKey.successor(ofPrefix: k) ?? k)
                case .greaterThanOrEqual: raiseLower(k)
                case .lessThan: lowerUpper(k)
                case .lessThanOrEqual: lowerUpper(IndexKey.successor(ofPrefix: k))
                default: continue
                }
            }
        }
        for (cursor, isStart) in [(nq.query.startAt, true), (nq.query.endAt, false)] {
            guard let cursor, let k = cursorKey(plan, nq, cursor) else { continue }
            let succ = IndexKey.successor(ofPrefix: k)
            // In scan direction: a start cursor bounds the low end of a forward scan.
            let boundsLow = isStart != plan.reverse
            if boundsLow {
                let includeAt = isStart ? cursor.before : !cursor.before
                raiseLower(includeAt ? k : (succ ?? k))
            } else {
                let includeAt = isStart ? cursor.before : !cursor.before
                lowerUpper(includeAt ? succ : k)
            }
        }
        return KeyRange(lower: lower, upper: upper)
    }

    /// The stored key of a cursor position: the prefix, then its values as the index stores them.
    func cursorKey(_ plan: Plan, _ nq: NormalizedQuery, _ cursor: Query.Cursor) -> [UInt8]? {
        var k = plan.prefix
        for (i, v) in cursor.values.enumerated() {
            if i < plan.columns.count {
                IndexKey.append(v, descending: plan.columns[i].1, to: &k)
            } else {
                guard case .reference(let name) = v, let path = try? nq.database.position(fromName: name) else { return nil }
                IndexKey.appendPath(path, descending: plan.nameDescending, to: &k)
            }
        }
        return k
    }

    /// The key range holding every value of the same type as `v` (numbers include NaN).
    static func typeRange(_ v: Value, desc: Bool, prefix: [UInt8]) -> KeyRange {
        let (lo, hi) = IndexKey.tagRange(of: v.typeOrder)
        if desc { return KeyRange(lower: prefix + [~hi], upper: prefix + [~lo + 1]) }
        return KeyRange(lower: prefix + [lo], upper: prefix + [hi + 1])
    }
}
