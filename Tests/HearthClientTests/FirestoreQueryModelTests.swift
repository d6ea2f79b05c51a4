import Foundation
import SwiftProtobuf
import Testing

import HearthClientCore
import HearthFirestoreProto
@testable import HearthClientFirestore

/// The wire form of queries and the transaction bookkeeping, without a server.
@Suite struct FirestoreQueryModelTests {
    let db: Firestore = {
        let name = "model-\(UUID().uuidString)"
        HearthApp.configure(name: name, options: HearthOptions(projectID: "p"))
        return Firestore.firestore(app: HearthApp.app(name: name)!)
    }()

    func orders(_ q: Google_Firestore_V1_StructuredQuery) -> [String] {
        q.orderBy.map { "\($0.field.fieldPath) \($0.direction == .descending ? "desc" : "asc")" }
    }

    @Test func ordersAreNormalizedAsTheSDKSendsThem() {
        let c = db.collection("c")
        #expect(orders(c.structuredQuery) == ["__name__ asc"])
        #expect(orders(c.order(by: "a", descending: true).structuredQuery) == ["a desc", "__name__ desc"])
        // inequality fields not ordered explicitly follow, sorted, in the last explicit direction
        let q = c.whereField("z", isGreaterThan: 1).whereField("b", isNotEqualTo: 2).whereField("a", isEqualTo: 3).order(by: "m", descending: true)
        #expect(orders(q.structuredQuery) == ["m desc", "b desc", "z desc", "__name__ desc"])
        #expect(orders(q.aggregationQuery) == ["m desc"], "aggregations send only the explicit orders")
        #expect(orders(c.order(by: FieldPath.documentID()).order(by: "x").structuredQuery) == ["__name__ asc", "x asc"])
    }

    @Test func limitToLastFlipsOrdersAndSwapsCursors() throws {
        let q = db.collection("c").order(by: "a").start(after: [1]).end(at: [9]).limit(toLast: 3)
        #expect(q.limitToLast)
        let wire = q.structuredQuery
        #expect(orders(wire) == ["a desc", "__name__ desc"])
        #expect(wire.limit.value == 3)
        // end(at: 9) becomes the start, before 9 (including it); start(after: 1) the end, before 1 (excluding it)
        #expect(wire.startAt.values.map(\.integerValue) == [9] && wire.startAt.before == true)
        #expect(wire.endAt.values.map(\.integerValue) == [1] && wire.endAt.before == true)
        #expect(q.orders.map(\.direction) == [.ascending, .ascending], "the app's order is not flipped")

        let first = db.collection("c").order(by: "a").start(after: [1]).end(at: [9]).limit(to: 3)
        #expect(!first.limitToLast)
        #expect(first.structuredQuery.startAt.before == false && first.structuredQuery.endAt.before == false)
    }

    @Test func filtersHaveTheirWireForm() {
        let c = db.collection("c")
        let q = c.whereField("n", isEqualTo: NSNull()).whereField("d", isNotEqualTo: Double.nan)
            .whereFilter(.orFilter([.whereField("x", isEqualTo: 1), .andFilter([.whereField("y", isLessThan: 2)])]))
        let filters = q.structuredQuery.where.compositeFilter
        #expect(filters.op == .and && filters.filters.count == 3)
        #expect(filters.filters[0].unaryFilter.op == .isNull)
        #expect(filters.filters[1].unaryFilter.op == .isNotNan)
        let or = filters.filters[2].compositeFilter
        #expect(or.op == .or && or.filters.count == 2)
        #expect(or.filters[1].fieldFilter.field.fieldPath == "y", "a one-filter AND is the filter itself")
        // document ids become references in the collection
        let byID = c.whereField(FieldPath.documentID(), in: ["a", "b"]).structuredQuery.where.fieldFilter
        #expect(byID.value.arrayValue.values.map(\.referenceValue) == ["projects/p/databases/(default)/documents/c/a", "projects/p/databases/(default)/documents/c/b"])
        #expect(db.collectionGroup("c").whereField(FieldPath.documentID(), isEqualTo: "x/1/c/2").executionError == nil)
        #expect(db.collectionGroup("c").whereField(FieldPath.documentID(), isEqualTo: "x/1/c").executionError != nil)
    }

    @Test func theFirstBuildErrorIsKept() {
        let q = db.collection("c").limit(to: 0).whereField("a", isNotEqualTo: 1).whereField("b", isNotEqualTo: 2)
        #expect(q.executionError?.localizedDescription == "Invalid Query. Query limit (0) is invalid. Limit must be positive.")
        #expect(db.collection("c").whereField("a..b", isEqualTo: 1).executionError?.code == FirestoreErrorCode.invalidArgument.rawValue)
    }

    // MARK: Transactions

    func timestamp(_ seconds: Int64) -> Google_Protobuf_Timestamp { Google_Protobuf_Timestamp(seconds: seconds, nanos: 0) }

    @Test func transactionPreconditionsFollowWhatWasRead() throws {
        var state = TransactionState()
        try state.recordRead("d/read", updateTime: timestamp(5))
        try state.recordRead("d/missing", updateTime: nil)
        try state.recordRead("d/verified", updateTime: timestamp(7))
        try state.recordRead("d/read", updateTime: timestamp(5))
        #expect(throws: (any Error).self) { try state.recordRead("d/read", updateTime: timestamp(6)) }

        func write(_ name: String) -> Google_Firestore_V1_Write {
            var w = Google_Firestore_V1_Write()
            w.update.name = name
            w.currentDocument.exists = true
            return w
        }
        try state.update("d/read", write("d/read"))
        state.set("d/missing", write("d/missing"))
        state.set("d/blind", write("d/blind"))
        try state.update("d/other", write("d/other"))
        state.set("d/read", write("d/read"))
        #expect(throws: (any Error).self) { try state.checkCanRead() }

        let writes = try state.commitWrites()
        #expect(writes.count == 6)
        #expect(writes[0].currentDocument.updateTime.seconds == 5, "update of a read document: its version")
        #expect(writes[1].currentDocument.conditionType == .exists(false), "set of a document read as missing")
        #expect(!writes[2].hasCurrentDocument, "a blind set has no precondition")
        #expect(writes[3].currentDocument.exists == true, "a blind update needs the document")
        #expect(!writes[4].hasCurrentDocument, "only the first write of a document carries the precondition")
        #expect(writes[5].verify == "d/verified" && writes[5].currentDocument.updateTime.seconds == 7)

        var missing = TransactionState()
        try missing.recordRead("d/x", updateTime: nil)
        #expect(throws: (any Error).self) { try missing.update("d/x", write("d/x")) }
    }

    @Test func transactionRetriesBackOffAndStop() {
        var policy = TransactionRetryPolicy(maxAttempts: 3)
        #expect(policy.startAttempt(jitter: 0.9) == 0, "the first attempt runs at once")
        let aborted = FirestoreErrorCode.aborted.error("x")
        #expect(policy.shouldRetry(after: aborted, permanentlyFailed: false))
        #expect(policy.startAttempt(jitter: 0.5) == 1.0)
        #expect(policy.startAttempt(jitter: 0) == 0.75, "1.5 s ± 50%")
        #expect(!policy.shouldRetry(after: aborted, permanentlyFailed: false), "attempts used up")

        let fresh = TransactionRetryPolicy(maxAttempts: 5)
        for code in [FirestoreErrorCode.aborted, .alreadyExists, .failedPrecondition, .unavailable, .deadlineExceeded, .unauthenticated] {
            #expect(fresh.shouldRetry(after: code.error("x"), permanentlyFailed: false), "\(code)")
        }
        for code in [FirestoreErrorCode.invalidArgument, .notFound, .permissionDenied, .outOfRange, .unimplemented, .dataLoss] {
            #expect(!fresh.shouldRetry(after: code.error("x"), permanentlyFailed: false), "\(code)")
        }
        #expect(!fresh.shouldRetry(after: aborted, permanentlyFailed: true))
        #expect(!fresh.shouldRetry(after: NSError(domain: "app", code: 10), permanentlyFailed: false))
        #expect(TransactionOptions().maxAttempts == 5 && TransactionOptions(maxAttempts: 2).maxAttempts == 2)
    }
}
