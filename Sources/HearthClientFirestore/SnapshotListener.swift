import Foundation
import HearthFirestoreProto
import GRPCCore
import SwiftProtobuf
import Synchronization

/// What `addSnapshotListener` returns: `remove()` stops the listener.
public protocol ListenerRegistration: Sendable {
    func remove()
}

/// How a document changed between two query snapshots.
public struct DocumentChange: Sendable {
    public enum ChangeType: Sendable { case added, modified, removed }
    public let type: ChangeType
    public let document: QueryDocumentSnapshot
    /// Position in the previous snapshot (`NSNotFound` for added documents).
    public let oldIndex: UInt
    /// Position in this snapshot (`NSNotFound` for removed documents).
    public let newIndex: UInt
}

final class StreamRegistration: ListenerRegistration {
    let task: Mutex<Task<Void, Never>?> = Mutex(nil)
    func remove() { task.withLock { $0 }?.cancel() }
}

/// One Listen stream for one target, kept open (reconnecting with its resume token and backoff)
/// until removed. Changes are applied per Firestore's rules and a snapshot is delivered at each
/// consistent point (a target change with no target ids and a read time, once the target is current).
struct ListenLoop: Sendable {
    let firestore: Firestore
    let target: Google_Firestore_V1_Target
    let targetID: Int32 = 2
    /// Orders documents for query targets (nil for a single document).
    let order: (@Sendable ([String: Google_Firestore_V1_Value], String, [String: Google_Firestore_V1_Value], String) -> Bool)?
    let deliver: @Sendable ([Google_Firestore_V1_Document], Bool) -> Void
    let fail: @Sendable (any Error) -> Void

    func run() async {
        var resumeToken = Data()
        var documents: [String: Google_Firestore_V1_Document] = [:]
        var backoff = 1.0
        while !Task.isCancelled {
            let delivered = Mutex(false)
            do {
                var request = Google_Firestore_V1_ListenRequest()
                request.database = firestore.databaseName
                var t = target
                t.targetID = targetID
                if !resumeToken.isEmpty { t.resumeToken = resumeToken }
                request.addTarget = t
                let first = request
                let md = try await firestore.metadata()
                let stub = try firestore.stub()
                let state = Mutex((resume: resumeToken, docs: documents, current: false))
                try await stub.listen(metadata: md, requestProducer: { writer in
                    try await writer.write(first)
                    // Keep the request side open until the listener is removed.
                    while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
                }) { response in
                    for try await message in response.messages {
                        let snapshot: [Google_Firestore_V1_Document]? = try state.withLock { s in
                            switch message.responseType {
                            case .documentChange(let change):
                                if change.targetIds.contains(targetID) { s.docs[change.document.name] = change.document }
                                else if change.removedTargetIds.contains(targetID) { s.docs.removeValue(forKey: change.document.name) }
                            case .documentDelete(let delete): s.docs.removeValue(forKey: delete.document)
                            case .documentRemove(let remove): s.docs.removeValue(forKey: remove.document)
                            case .filter(let filter):
                                if filter.targetID == targetID && Int(filter.count) != s.docs.count {
                                    // The server's count disagrees: start over without the token.
                                    s.resume = Data()
                                    throw ListenReset()
                                }
                            case .targetChange(let change):
                                switch change.targetChangeType {
                                case .current: if change.targetIds.isEmpty || change.targetIds.contains(targetID) { s.current = true }
                                case .reset: s.docs = [:]
                                case .remove:
                                    let status = change.cause
                                    throw (FirestoreErrorCode(rawValue: Int(status.code)) ?? .unknown).error(status.message)
                                default: break
                                }
                                if !change.resumeToken.isEmpty, change.targetIds.isEmpty || change.targetIds.contains(targetID) { s.resume = change.resumeToken }
                                if change.targetIds.isEmpty, change.hasReadTime, s.current { return Array(s.docs.values) }
                            case nil: break
                            }
                            return nil
                        }
                        if let snapshot {
                            delivered.withLock { $0 = true }
                            deliver(sort(snapshot), false)
                        }
                    }
                }
                let s = state.withLock { $0 }
                resumeToken = s.resume
                documents = s.docs
            } catch is ListenReset {
                resumeToken = Data()
                documents = [:]
                continue
            } catch is CancellationError {
                return
            } catch let error as NSError where error.domain == FirestoreErrorDomain
                && ![FirestoreErrorCode.unavailable.rawValue, FirestoreErrorCode.unknown.rawValue, FirestoreErrorCode.internal.rawValue,
                     FirestoreErrorCode.deadlineExceeded.rawValue, FirestoreErrorCode.resourceExhausted.rawValue].contains(error.code) {
                fail(error)
                return
            } catch let error as RPCError where ![.unavailable, .unknown, .internalError, .deadlineExceeded, .resourceExhausted, .cancelled].contains(error.code) {
                if Task.isCancelled { return }
                fail((FirestoreErrorCode(rawValue: error.code.rawValue) ?? .unknown).error(error.message))
                return
            } catch {
                if Task.isCancelled { return }
            }
            // Transient: back off (1 s × 1.5 up to 60 s, ±50% jitter; from 1 s again after a good
            // snapshot) and resume with the token.
            if delivered.withLock({ $0 }) { backoff = 1 }
            try? await Task.sleep(for: .seconds(backoff * Double.random(in: 0.5...1.5)))
            backoff = min(backoff * 1.5, 60)
        }
    }

    func sort(_ docs: [Google_Firestore_V1_Document]) -> [Google_Firestore_V1_Document] {
        guard let order else { return docs }
        return docs.sorted { order($0.fields, $0.name, $1.fields, $1.name) }
    }

    struct ListenReset: Error {}
}

extension DocumentReference {
    /// Calls `listener` with the document now and at every change.
    @discardableResult
    public func addSnapshotListener(_ listener: @escaping @Sendable (DocumentSnapshot?, (any Error)?) -> Void) -> any ListenerRegistration {
        addSnapshotListener(includeMetadataChanges: false, listener: listener)
    }

    @discardableResult
    public func addSnapshotListener(
        includeMetadataChanges: Bool, listener: @escaping @Sendable (DocumentSnapshot?, (any Error)?) -> Void
    ) -> any ListenerRegistration {
        var target = Google_Firestore_V1_Target()
        var docs = Google_Firestore_V1_Target.DocumentsTarget()
        docs.documents = [client.documentName(path)]
        target.documents = docs
        let registration = StreamRegistration()
        let loop = ListenLoop(
            firestore: client, target: target, order: nil,
            deliver: { [self] documents, _ in listener(DocumentSnapshot(reference: self, document: documents.first), nil) },
            fail: { error in listener(nil, error) })
        registration.task.withLock { $0 = Task { await loop.run() } }
        return registration
    }

    /// The document's snapshots as an `AsyncSequence` (the listener is removed when iteration ends).
    public var snapshots: AsyncThrowingStream<DocumentSnapshot, any Error> {
        AsyncThrowingStream { continuation in
            let registration = addSnapshotListener { snapshot, error in
                if let snapshot { continuation.yield(snapshot) } else { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in registration.remove() }
        }
    }
}

extension Query {
    /// Calls `listener` with the query's results now and at every change.
    @discardableResult
    public func addSnapshotListener(_ listener: @escaping @Sendable (QuerySnapshot?, (any Error)?) -> Void) -> any ListenerRegistration {
        addSnapshotListener(includeMetadataChanges: false, listener: listener)
    }

    @discardableResult
    public func addSnapshotListener(
        includeMetadataChanges: Bool, listener: @escaping @Sendable (QuerySnapshot?, (any Error)?) -> Void
    ) -> any ListenerRegistration {
        if let executionError {
            listener(nil, executionError)
            return StreamRegistration()
        }
        var target = Google_Firestore_V1_Target()
        var q = Google_Firestore_V1_Target.QueryTarget()
        q.parent = parentPath.isEmpty ? "\(firestore.databaseName)/documents" : firestore.documentName(parentPath)
        q.structuredQuery = structuredQuery
        target.query = q
        let registration = StreamRegistration()
        let previous = Mutex<[QueryDocumentSnapshot]>([])
        let prefix = "\(firestore.databaseName)/documents/"
        let orders = orders
        let loop = ListenLoop(
            firestore: firestore, target: target, order: { a, an, b, bn in Query.precedes(a, an, b, bn, orders: orders) },
            deliver: { [self] documents, _ in
                let snapshots = documents.map { d in
                    QueryDocumentSnapshot(reference: DocumentReference(path: String(d.name.dropFirst(prefix.count)), firestore: firestore), document: d)
                }
                let old = previous.withLock { p in
                    defer { p = snapshots }
                    return p
                }
                listener(QuerySnapshot(query: self, documents: snapshots, documentChanges: Query.changes(from: old, to: snapshots)), nil)
            },
            fail: { error in listener(nil, error) })
        registration.task.withLock { $0 = Task { await loop.run() } }
        return registration
    }

    /// The query's snapshots as an `AsyncSequence` (the listener is removed when iteration ends).
    public var snapshots: AsyncThrowingStream<QuerySnapshot, any Error> {
        AsyncThrowingStream { continuation in
            let registration = addSnapshotListener { snapshot, error in
                if let snapshot { continuation.yield(snapshot) } else { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in registration.remove() }
        }
    }

    /// Whether document a comes before b under the query's order (then the name, in the last order's direction).
    static func precedes(
        _ a: [String: Google_Firestore_V1_Value], _ an: String, _ b: [String: Google_Firestore_V1_Value], _ bn: String,
        orders: [Google_Firestore_V1_StructuredQuery.Order]
    ) -> Bool {
        for order in orders where order.field.fieldPath != "__name__" {
            let c = ValueOrder.compare(ValueOrder.field(a, order.field.fieldPath), ValueOrder.field(b, order.field.fieldPath))
            if c != 0 { return order.direction == .descending ? c > 0 : c < 0 }
        }
        let descending = orders.last?.direction == .descending
        let c = ValueOrder.compareNames(an, bn)
        return descending ? c > 0 : c < 0
    }

    static func changes(from old: [QueryDocumentSnapshot], to new: [QueryDocumentSnapshot]) -> [DocumentChange] {
        let oldIndex = Dictionary(old.enumerated().map { ($1.reference.path, $0) }, uniquingKeysWith: { a, _ in a })
        let newIndex = Dictionary(new.enumerated().map { ($1.reference.path, $0) }, uniquingKeysWith: { a, _ in a })
        var out: [DocumentChange] = []
        for (i, doc) in old.enumerated() where newIndex[doc.reference.path] == nil {
            out.append(DocumentChange(type: .removed, document: doc, oldIndex: UInt(i), newIndex: UInt(NSNotFound)))
        }
        for (i, doc) in new.enumerated() {
            if let j = oldIndex[doc.reference.path] {
                if old[j].document?.updateTime != doc.document?.updateTime || old[j].document?.fields != doc.document?.fields {
                    out.append(DocumentChange(type: .modified, document: doc, oldIndex: UInt(j), newIndex: UInt(i)))
                }
            } else {
                out.append(DocumentChange(type: .added, document: doc, oldIndex: UInt(NSNotFound), newIndex: UInt(i)))
            }
        }
        return out
    }
}

/// Firestore's ordering of values: null < booleans < numbers < timestamps < strings < bytes <
/// references < geo points < arrays < maps.
enum ValueOrder {
    static func field(_ fields: [String: Google_Firestore_V1_Value], _ path: String) -> Google_Firestore_V1_Value? {
        guard let parsed = try? FieldPath.parse(dotted: path.replacingOccurrences(of: "`", with: "")) else { return nil }
        var level = fields
        for (i, segment) in parsed.segments.enumerated() {
            guard let v = level[segment] else { return nil }
            if i == parsed.segments.count - 1 { return v }
            guard case .mapValue(let m) = v.valueType else { return nil }
            level = m.fields
        }
        return nil
    }

    static func rank(_ v: Google_Firestore_V1_Value?) -> Int {
        switch v?.valueType {
        case .nullValue, nil: 0
        case .booleanValue: 1
        case .integerValue, .doubleValue: 2
        case .timestampValue: 3
        case .stringValue: 4
        case .bytesValue: 5
        case .referenceValue: 6
        case .geoPointValue: 7
        case .arrayValue: 8
        case .mapValue: 9
        default: 10
        }
    }

    static func sign<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a > b ? 1 : 0) }

    static func compare(_ a: Google_Firestore_V1_Value?, _ b: Google_Firestore_V1_Value?) -> Int {
        let ra = rank(a), rb = rank(b)
        guard ra == rb else { return sign(ra, rb) }
        switch (a?.valueType, b?.valueType) {
        case (.booleanValue(let x), .booleanValue(let y)): return sign(x ? 1 : 0, y ? 1 : 0)
        case (.timestampValue(let x), .timestampValue(let y)): return sign(x.seconds, y.seconds) != 0 ? sign(x.seconds, y.seconds) : sign(x.nanos, y.nanos)
        case (.stringValue(let x), .stringValue(let y)): return x == y ? 0 : (Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8)) ? -1 : 1)
        case (.bytesValue(let x), .bytesValue(let y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case (.referenceValue(let x), .referenceValue(let y)): return compareNames(x, y)
        case (.geoPointValue(let x), .geoPointValue(let y)): return sign(x.latitude, y.latitude) != 0 ? sign(x.latitude, y.latitude) : sign(x.longitude, y.longitude)
        case (.arrayValue(let x), .arrayValue(let y)):
            for (p, q) in zip(x.values, y.values) { let c = compare(p, q); if c != 0 { return c } }
            return sign(x.values.count, y.values.count)
        case (.mapValue(let x), .mapValue(let y)):
            let xk = x.fields.keys.sorted(), yk = y.fields.keys.sorted()
            for (p, q) in zip(xk, yk) {
                if p != q { return sign(p, q) }
                let c = compare(x.fields[p], y.fields[q]); if c != 0 { return c }
            }
            return sign(xk.count, yk.count)
        default:
            return compareNumbers(a, b)
        }
    }

    static func compareNumbers(_ a: Google_Firestore_V1_Value?, _ b: Google_Firestore_V1_Value?) -> Int {
        switch (a?.valueType, b?.valueType) {
        case (.integerValue(let x), .integerValue(let y)): return sign(x, y)
        case (.doubleValue(let x), .doubleValue(let y)):
            if x.isNaN || y.isNaN { return x.isNaN && y.isNaN ? 0 : (x.isNaN ? -1 : 1) }
            return sign(x, y)
        case (.integerValue(let x), .doubleValue(let y)): return -compareMixed(y, x)
        case (.doubleValue(let x), .integerValue(let y)): return compareMixed(x, y)
        default: return 0
        }
    }

    /// A double against an integer without losing precision (NaN first).
    static func compareMixed(_ d: Double, _ i: Int64) -> Int {
        if d.isNaN { return -1 }
        if d < -9.2233720368547758e18 { return -1 }
        if d >= 9.2233720368547758e18 { return 1 }
        let t = Int64(d.rounded(.towardZero))
        if t != i { return sign(t, i) }
        let frac = d - Double(t)
        return frac > 0 ? 1 : (frac < 0 ? -1 : 0)
    }

    /// Document names segment by segment.
    static func compareNames(_ a: String, _ b: String) -> Int {
        let x = a.split(separator: "/"), y = b.split(separator: "/")
        for (p, q) in zip(x, y) where p != q {
            return Array(p.utf8).lexicographicallyPrecedes(Array(q.utf8)) ? -1 : 1
        }
        return sign(x.count, y.count)
    }
}
