import Foundation
import Testing

import HearthClientAuth
import HearthClientCore
import HearthFirestoreProto
@testable import HearthClientFirestore

/// `Filter` composition, cursors, `limit(toLast:)` and the Apple SDK's query errors, through the
/// client against a live server (Hearth, or Google's emulator: `FirestoreTestTarget`).
@Suite(.serialized) struct FirestoreQueryTests {
    func code(_ error: any Error) -> FirestoreErrorCode? {
        let e = error as NSError
        return e.domain == FirestoreErrorDomain ? FirestoreErrorCode(rawValue: e.code) : nil
    }

    /// Six cities; two share a population so that cursors need the document name to be exact.
    func seed(_ db: Firestore) async throws -> CollectionReference {
        let cities = db.collection("cities")
        let batch = db.batch()
        let rows: [(String, String, Int, [String], Any)] = [
            ("sf", "CA", 870_000, ["west", "coast"], "San Francisco"),
            ("la", "CA", 3_900_000, ["west", "coast"], "Los Angeles"),
            ("dc", "DC", 690_000, ["east"], "Washington"),
            ("tok", "TK", 9_700_000, ["asia"], "Tokyo"),
            ("bj", "BJ", 690_000, ["asia"], "Beijing"),
            ("nul", "XX", 10, [], NSNull()),
        ]
        for (id, state, population, regions, name) in rows {
            try batch.setData(
                ["state": state, "population": population, "regions": regions, "name": name, "address": ["city": id.uppercased()]],
                forDocument: cities.document(id))
        }
        try await batch.commit()
        return cities
    }

    func ids(_ query: Query) async throws -> [String] { try await query.getDocuments().documents.map(\.documentID) }

    @Test func orAndAndFiltersCompose() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let cities = try await seed(db)
            let either = cities.whereFilter(.orFilter([.whereField("state", isEqualTo: "CA"), .whereField("population", isGreaterThan: 5_000_000)]))
            #expect(Set(try await ids(either)) == ["sf", "la", "tok"])

            let nested = cities.whereFilter(
                .andFilter([
                    .whereField("regions", arrayContainsAny: ["asia", "east"]),
                    .orFilter([.whereField("population", isLessThan: 700_000), .whereField("state", isEqualTo: "TK")]),
                ]))
            #expect(Set(try await ids(nested)) == ["dc", "tok", "bj"])

            // an OR mixed with a plain where, a one-element OR, and an empty composite (ignored)
            let mixed = cities.whereField("state", isEqualTo: "CA")
                .whereFilter(.orFilter([.whereField("name", isEqualTo: "Los Angeles")]))
                .whereFilter(.andFilter([]))
            #expect(try await ids(mixed) == ["la"])

            #expect(Set(try await ids(cities.whereFilter(.whereField("population", isGreaterOrEqualTo: 3_900_000)))) == ["la", "tok"])
            #expect(try await ids(cities.whereFilter(.whereField("state", notIn: ["CA", "DC", "TK", "BJ"]))) == ["nul"])
            #expect(try await ids(cities.whereFilter(.whereField("regions", arrayContains: "east"))) == ["dc"])
        }
    }

    @Test func fieldPathsDocumentIDsAndNulls() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let cities = try await seed(db)
            #expect(try await ids(cities.whereField(FieldPath(["address", "city"]), isEqualTo: "SF")) == ["sf"])
            #expect(try await ids(cities.whereField(FieldPath.documentID(), in: ["la", "dc"])) == ["dc", "la"])
            #expect(try await ids(cities.whereField(FieldPath.documentID(), isEqualTo: cities.document("tok"))) == ["tok"])
            #expect(try await ids(cities.whereField(FieldPath.documentID(), isGreaterThan: "sf")) == ["tok"])
            #expect(try await ids(cities.whereField("name", isEqualTo: NSNull())) == ["nul"])
            #expect(try await ids(cities.whereField("name", isNotEqualTo: NSNull())).count == 5)
            #expect(try await ids(cities.whereField(FieldPath(["state"]), isNotEqualTo: "CA").order(by: "state")) == ["bj", "dc", "tok", "nul"])
        }
    }

    @Test func cursorsByValueAndByDocument() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let cities = try await seed(db)
            let byPopulation = cities.order(by: "population")
            #expect(try await ids(byPopulation) == ["nul", "bj", "dc", "sf", "la", "tok"])
            #expect(try await ids(byPopulation.start(at: [690_000])) == ["bj", "dc", "sf", "la", "tok"])
            #expect(try await ids(byPopulation.start(after: [690_000])) == ["sf", "la", "tok"])
            #expect(try await ids(byPopulation.end(at: [870_000])) == ["nul", "bj", "dc", "sf"])
            #expect(try await ids(byPopulation.end(before: [870_000])) == ["nul", "bj", "dc"])

            // A document cursor carries the document's name: "after bj" skips bj but not dc,
            // which has the same population.
            let bj = try await cities.document("bj").getDocument()
            #expect(try await ids(byPopulation.start(afterDocument: bj)) == ["dc", "sf", "la", "tok"])
            #expect(try await ids(byPopulation.start(atDocument: bj)) == ["bj", "dc", "sf", "la", "tok"])
            #expect(try await ids(byPopulation.end(beforeDocument: bj)) == ["nul"])
            #expect(try await ids(byPopulation.end(atDocument: bj)) == ["nul", "bj"])

            // With an inequality and no explicit order, the implicit order is the inequality's
            // field, then the name; the cursor takes both from the document.
            let big = cities.whereField("population", isGreaterThan: 100)
            #expect(try await ids(big.start(afterDocument: bj)) == ["dc", "sf", "la", "tok"])
            // Descending: implicit name order follows the last explicit direction.
            let down = cities.order(by: "population", descending: true)
            let dc = try await cities.document("dc").getDocument()
            #expect(try await ids(down.start(afterDocument: dc)) == ["bj", "nul"])
            // Paging: each page starts after the previous page's last document.
            var pages: [[String]] = []
            var page = try await byPopulation.limit(to: 4).getDocuments()
            pages.append(page.documents.map(\.documentID))
            page = try await byPopulation.start(afterDocument: page.documents.last!).limit(to: 4).getDocuments()
            pages.append(page.documents.map(\.documentID))
            #expect(pages == [["nul", "bj", "dc", "sf"], ["la", "tok"]])
        }
    }

    @Test func limitToLastReturnsTheLastResultsInOrder() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let cities = try await seed(db)
            let byPopulation = cities.order(by: "population")
            #expect(try await ids(byPopulation.limit(toLast: 2)) == ["la", "tok"])
            #expect(try await ids(cities.order(by: "population", descending: true).limit(toLast: 2)) == ["bj", "nul"])
            // cursors are swapped on the wire and keep their meaning
            #expect(try await ids(byPopulation.end(before: [3_900_000]).limit(toLast: 2)) == ["dc", "sf"])
            #expect(try await ids(byPopulation.start(at: [690_000]).end(at: [870_000]).limit(toLast: 2)) == ["dc", "sf"])
            #expect(try await ids(byPopulation.start(after: [870_000]).limit(toLast: 5)) == ["la", "tok"])
            let dc = try await cities.document("dc").getDocument()
            #expect(try await ids(byPopulation.end(beforeDocument: dc).limit(toLast: 1)) == ["bj"])

            // a listener sees the same results in the same order
            var iterator = byPopulation.limit(toLast: 3).snapshots.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.documents.map(\.documentID) == ["sf", "la", "tok"])
            try await cities.document("big").setData(["population": 20_000_000, "state": "ZZ"])
            let second = try #require(try await iterator.next())
            #expect(second.documents.map(\.documentID) == ["la", "tok", "big"])
        }
    }

    @Test func queriesTheAppleSDKRefusesFailWithItsMessages() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let cities = try await seed(db)
            let cases: [(Query, String)] = [
                (cities.limit(toLast: 2), "limit(toLast:) queries require specifying at least one OrderBy() clause."),
                (cities.whereField("a", isNotEqualTo: 1).whereField("b", isNotEqualTo: 2), "Invalid Query. You cannot use more than one 'notEqual' filter."),
                (cities.whereField("a", notIn: [1]).whereFilter(.orFilter([.whereField("b", isEqualTo: 1), .whereField("c", notIn: [2])])),
                 "Invalid Query. You cannot use more than one 'notIn' filter."),
                (cities.whereField("a", in: [1]).whereField("b", notIn: [2]), "Invalid Query. You cannot use 'notIn' filters with 'in' filters."),
                (cities.whereField("a", isNotEqualTo: 1).whereField("b", notIn: [2]), "Invalid Query. You cannot use 'notIn' filters with 'notEqual' filters."),
                (cities.whereField("a", in: []), "Invalid Query. A non-empty array is required for 'in' filters."),
                (cities.order(by: "population").start(at: [1, 2]), "Invalid query. You are trying to start or end a query using more values than were specified in the order by."),
                (cities.start(at: [1]).order(by: "population"), "Invalid query. You are trying to start or end a query using more values than were specified in the order by."),
                (cities.order(by: "population").start(at: [1]).order(by: "state"), "Invalid query. You must not specify a starting point before specifying the order by."),
                (cities.order(by: "population").end(at: [1]).order(by: "state"), "Invalid query. You must not specify an ending point before specifying the order by."),
                (cities.limit(to: 0), "Invalid Query. Query limit (0) is invalid. Limit must be positive."),
                (cities.whereField(FieldPath.documentID(), arrayContains: "x"), "Invalid query. You can't perform arrayContains queries on document ID since document IDs are not arrays."),
                (cities.whereField(FieldPath.documentID(), isEqualTo: "a/b"), "Invalid query. When querying a collection by document ID you must provide a plain document ID, but 'a/b' contains a '/' character."),
                (cities.whereField(FieldPath.documentID(), isEqualTo: 7), "Invalid query. When querying by document ID you must provide a valid string or DocumentReference, but it was of type: Int"),
                (cities.order(by: FieldPath.documentID()).start(at: [7]), "Invalid query. Expected a string for the document ID."),
            ]
            for (query, message) in cases {
                do {
                    _ = try await query.getDocuments()
                    Issue.record("accepted: \(message)")
                } catch {
                    #expect(code(error) == .invalidArgument, "\(message)")
                    #expect((error as NSError).localizedDescription == message)
                }
            }
            // a missing document cannot be a cursor
            let missing = try await cities.document("nope").getDocument()
            do {
                _ = try await cities.order(by: "population").start(atDocument: missing).getDocuments()
                Issue.record("a missing document was accepted as a cursor")
            } catch {
                #expect((error as NSError).localizedDescription == "Invalid query. You are trying to start or end a query using a document that doesn't exist.")
            }
            // listeners and aggregations report the same error
            var iterator = cities.limit(toLast: 1).snapshots.makeAsyncIterator()
            await #expect(throws: (any Error).self) { _ = try await iterator.next() }
            await #expect(throws: (any Error).self) { _ = try await cities.limit(to: -1).count.getAggregation(source: .server) }
            // completion form
            let (snapshot, error): (QuerySnapshot?, (any Error)?) = await withCheckedContinuation { continuation in
                cities.whereField("a", in: []).getDocuments { continuation.resume(returning: ($0, $1)) }
            }
            #expect(snapshot == nil && error.map(code) == .invalidArgument)
        }
    }
}

/// `count`, `sum` and `average` over `RunAggregationQuery`.
@Suite(.serialized) struct FirestoreAggregateTests {
    @Test func countSumAndAverage() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let orders = db.collection("orders")
            let batch = db.batch()
            for (i, (amount, weight)) in [(10, 1.5), (20, 2.5), (30, 3.0), (40, 0.0)].enumerated() {
                try batch.setData(["amount": amount, "weight": weight, "open": i % 2 == 0, "meta": ["n": i]], forDocument: orders.document("o\(i)"))
            }
            try batch.setData(["amount": "not a number", "open": true], forDocument: orders.document("text"))
            try await batch.commit()

            #expect(try await orders.count.getAggregation(source: .server).count.intValue == 5)
            #expect(try await orders.whereField("open", isEqualTo: true).count.getAggregation(source: .server).count.intValue == 3)
            #expect(try await orders.order(by: "amount").limit(to: 2).count.getAggregation(source: .server).count.intValue == 2)

            let sum = AggregateField.sum("amount"), average = AggregateField.average("amount")
            let weights = AggregateField.sum(FieldPath(["weight"])), nested = AggregateField.average("meta.n")
            let snapshot = try await orders.aggregate([.count(), sum, average, weights, nested, .sum("amount")]).getAggregation(source: .server)
            // With sum/average over fields in the same request, only documents that have every
            // aggregated field take part (Firestore and its emulator agree): "text" has no weight.
            #expect(snapshot.count.intValue == 4)
            #expect((snapshot.get(sum) as? NSNumber)?.int64Value == 100)
            #expect((snapshot.get(average) as? NSNumber)?.doubleValue == 25)
            #expect((snapshot.get(weights) as? NSNumber)?.doubleValue == 7.0)
            #expect((snapshot.get(nested) as? NSNumber)?.doubleValue == 1.5)
            #expect(snapshot.query.query === orders)

            // no numbers: the sum is 0, the average null
            let none = try await orders.whereField("open", isEqualTo: false).whereField("amount", isGreaterThan: 1000)
                .aggregate([.sum("amount"), .average("amount"), .count()]).getAggregation(source: .server)
            #expect((none.get(.sum("amount")) as? NSNumber)?.int64Value == 0)
            #expect(none.get(.average("amount")) is NSNull)
            #expect(none.count.intValue == 0)

            // the completion form
            let (result, error): (AggregateQuerySnapshot?, (any Error)?) = await withCheckedContinuation { continuation in
                orders.count.getAggregation(source: .server) { continuation.resume(returning: ($0, $1)) }
            }
            #expect(error == nil && result?.count.intValue == 5)
        }
    }
}

/// `runTransaction`: optimistic reads, preconditions, verify writes and retries, as the Apple SDK.
@Suite(.serialized) struct FirestoreTransactionTests {
    /// A transaction's result carried through a continuation.
    struct Unchecked: @unchecked Sendable { let value: Any? }

    final class Counter: @unchecked Sendable {
        let lock = NSLock()
        var value = 0
        func increment() -> Int { lock.lock(); defer { lock.unlock() }; value += 1; return value }
    }

    func code(_ error: any Error) -> FirestoreErrorCode? {
        let e = error as NSError
        return e.domain == FirestoreErrorDomain ? FirestoreErrorCode(rawValue: e.code) : nil
    }

    @Test func contendedIncrementsAllLand() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let counter = db.document("counters/shared")
            try await counter.setData(["value": 0])
            let attempts = Counter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<5 {
                    group.addTask {
                        for _ in 0..<10 {
                            // Five contenders on one document: the default 5 attempts can all
                            // lose on a loaded machine (as in the Apple SDK), so allow more.
                            _ = try await db.runTransaction(options: TransactionOptions(maxAttempts: 25), { transaction, errorPointer in
                                _ = attempts.increment()
                                let snapshot: DocumentSnapshot
                                do {
                                    snapshot = try transaction.getDocument(counter)
                                } catch {
                                    errorPointer?.pointee = error as NSError
                                    return nil
                                }
                                let value = snapshot.get("value") as? Int64 ?? 0
                                transaction.updateData(["value": value + 1], forDocument: counter)
                                return value + 1
                            })
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await counter.getDocument().get("value") as? Int64 == 50)
            #expect(attempts.value >= 50)
        }
    }

    @Test func resultsErrorsAndReadsBeforeWrites() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let a = db.document("accounts/a"), b = db.document("accounts/b"), missing = db.document("accounts/none")
            try await a.setData(["balance": 100])
            try await b.setData(["balance": 0])

            // a transfer returns its value, through async and completion forms
            let moved = try await db.runTransaction { transaction, errorPointer in
                guard let from = try? transaction.getDocument(a), let to = try? transaction.getDocument(b) else { return nil }
                let amount: Int64 = 30
                transaction.updateData(["balance": (from.get("balance") as! Int64) - amount], forDocument: a)
                transaction.setData(["balance": (to.get("balance") as! Int64) + amount], forDocument: b, merge: true)
                return amount
            }
            #expect(moved as? Int64 == 30)
            #expect(try await a.getDocument().get("balance") as? Int64 == 70)
            #expect(try await b.getDocument().get("balance") as? Int64 == 30)
            let (value, error): (Unchecked, (any Error)?) = await withCheckedContinuation { continuation in
                db.runTransaction({ transaction, _ in
                    transaction.deleteDocument(b)
                    return "deleted"
                }) { continuation.resume(returning: (Unchecked(value: $0), $1)) }
            }
            #expect(value.value as? String == "deleted" && error == nil)
            #expect(try await b.getDocument().exists == false)

            // a read after a write fails with the Apple SDK's error, and nothing is written
            let runs = Counter()
            do {
                _ = try await db.runTransaction { transaction, errorPointer in
                    _ = runs.increment()
                    transaction.setData(["balance": 1], forDocument: a)
                    do {
                        _ = try transaction.getDocument(b)
                    } catch {
                        errorPointer?.pointee = error as NSError
                    }
                    return nil
                }
                Issue.record("a read after a write was accepted")
            } catch {
                #expect(code(error) == .invalidArgument)
                #expect((error as NSError).localizedDescription == "Firestore transactions require all reads to be executed before all writes")
            }
            #expect(runs.value == 1, "invalid argument is not retried")
            #expect(try await a.getDocument().get("balance") as? Int64 == 70)

            // an error of the app's own domain ends the transaction at once
            let ownRuns = Counter()
            do {
                _ = try await db.runTransaction { transaction, errorPointer in
                    _ = ownRuns.increment()
                    errorPointer?.pointee = NSError(domain: "app", code: 42, userInfo: nil)
                    return nil
                }
                Issue.record("the app's error was ignored")
            } catch {
                #expect((error as NSError).domain == "app" && (error as NSError).code == 42)
            }
            #expect(ownRuns.value == 1)

            // updating a document read as missing fails locally
            do {
                _ = try await db.runTransaction { transaction, _ in
                    _ = try? transaction.getDocument(missing)
                    transaction.updateData(["x": 1], forDocument: missing)
                    return nil
                }
                Issue.record("an update of a missing document was accepted")
            } catch {
                #expect((error as NSError).localizedDescription == "Can't update a document that doesn't exist.")
            }
            // creating it (read as missing: precondition exists=false) works
            _ = try await db.runTransaction { transaction, _ in
                _ = try? transaction.getDocument(missing)
                transaction.setData(["created": true], forDocument: missing)
                return nil
            }
            #expect(try await missing.getDocument().get("created") as? Bool == true)
        }
    }

    @Test func aDocumentReadButNotWrittenIsVerified() async throws {
        try await FirestoreTestTarget.withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let source = db.document("rates/usd"), target = db.document("prices/item")
            try await source.setData(["rate": 2])
            let runs = Counter()
            let price = try await db.runTransaction { transaction, errorPointer in
                let run = runs.increment()
                guard let rate = (try? transaction.getDocument(source))?.get("rate") as? Int64 else { return nil }
                if run == 1 {
                    // someone else changes the rate after this attempt read it
                    _ = try? Transaction.waitFor { try await source.setData(["rate": 3]) }
                }
                transaction.setData(["price": 10 * rate], forDocument: target)
                return 10 * rate
            }
            #expect(runs.value == 2, "the verify write failed the first commit")
            #expect(price as? Int64 == 30)
            #expect(try await target.getDocument().get("price") as? Int64 == 30)

            // with one attempt allowed, the conflict is the answer
            let (_, error): (Unchecked, (any Error)?) = await withCheckedContinuation { continuation in
                db.runTransaction(with: TransactionOptions(maxAttempts: 1), block: { transaction, _ in
                    _ = try? transaction.getDocument(source)
                    _ = try? Transaction.waitFor { try await source.setData(["rate": 4]) }
                    transaction.setData(["price": 0], forDocument: target)
                    return nil
                }) { continuation.resume(returning: (Unchecked(value: $0), $1)) }
            }
            let failed = try #require(error)
            #expect([.failedPrecondition, .aborted].contains(code(failed)), "\(failed)")
            #expect(try await target.getDocument().get("price") as? Int64 == 30)
        }
    }
}
