import Foundation
import Testing

import HearthClientAuth
import HearthClientCore
import HearthFirestoreProto
@testable import HearthClientFirestore

/// The Firestore client over gRPC against a live Hearth, in the shape of MakeItSo's task repository.
@Suite(.serialized) struct FirestoreClientTests {
    struct TaskItem: Codable, Equatable {
        @DocumentID var id: String?
        var title: String
        var completed = false
        var userId: String?
        @ServerTimestamp var createdTime: Timestamp?
    }

    func withFirestore(_ body: @Sendable @escaping (Firestore, Auth) async throws -> Void) async throws {
        try await FirestoreTestTarget.withFirestore(body)
    }

    func code(_ error: any Error) -> FirestoreErrorCode? {
        let e = error as NSError
        return e.domain == FirestoreErrorDomain ? FirestoreErrorCode(rawValue: e.code) : nil
    }

    @Test func aTaskRepositoryAddsQueriesUpdatesAndDeletes() async throws {
        try await withFirestore { db, auth in
            let uid = try await auth.signInAnonymously().user.uid
            let tasks = db.collection("tasks")
            let first = try await tasks.addDocument(from: TaskItem(title: "Buy milk", userId: uid))
            try await Task.sleep(for: .milliseconds(5))
            _ = try await tasks.addDocument(from: TaskItem(title: "Write docs", userId: uid))
            _ = try await tasks.addDocument(from: TaskItem(title: "Someone else's", userId: "other"))
            #expect(first.documentID.count == 20)

            let mine = try await tasks.whereField("userId", isEqualTo: uid).order(by: "createdTime").getDocuments()
            let items = try mine.documents.map { try $0.data(as: TaskItem.self) }
            #expect(items.map(\.title) == ["Buy milk", "Write docs"])
            #expect(items[0].id == first.documentID)
            #expect(items.allSatisfy { $0.createdTime != nil }, "the server filled in the timestamps")
            #expect(items[0].createdTime! < items[1].createdTime!)

            try await first.updateData(["completed": true, "meta.edits": FieldValue.increment(Int64(1))])
            let updated = try await first.getDocument()
            #expect(updated.exists)
            #expect(updated.get("completed") as? Bool == true)
            #expect(updated.get("meta.edits") as? Int64 == 1)
            var item = try updated.data(as: TaskItem.self)
            item.title = "Buy oat milk"
            try await first.setData(from: item, merge: true)
            #expect(try await first.getDocument(as: TaskItem.self).title == "Buy oat milk")
            #expect(try await first.getDocument().get("meta.edits") as? Int64 == 1, "a merge keeps other fields")

            try await first.delete()
            let gone = try await first.getDocument()
            #expect(!gone.exists && gone.data() == nil)
            #expect(try gone.data(as: TaskItem?.self) == nil)
            do {
                try await first.updateData(["completed": false])
                Issue.record("updating a deleted document succeeded")
            } catch {
                #expect(code(error) == .notFound)
            }
        }
    }

    @Test func batchesCommitTogetherAndQueriesFilter() async throws {
        try await withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let scores = db.collection("scores")
            let batch = db.batch()
            for (i, name) in ["ada", "grace", "linus", "barbara"].enumerated() {
                try batch.setData(["name": name, "points": i * 10, "tags": i % 2 == 0 ? ["even"] : ["odd"]], forDocument: scores.document(name))
            }
            try await batch.commit()
            let top = try await scores.whereField("points", isGreaterThanOrEqualTo: 10).order(by: "points", descending: true).limit(to: 2).getDocuments()
            #expect(top.documents.map(\.documentID) == ["barbara", "linus"])
            let even = try await scores.whereField("tags", arrayContains: "even").getDocuments()
            #expect(Set(even.documents.map(\.documentID)) == ["ada", "linus"])
            let some = try await scores.whereField("name", in: ["ada", "grace"]).getDocuments()
            #expect(some.count == 2)
            // collection groups reach nested collections with the same id
            try await db.document("teams/t1").collection("scores").document("x").setData(["points": 1])
            #expect(try await db.collectionGroup("scores").getDocuments().count == 5)
        }
    }
}

/// Snapshot listeners over the Listen stream, as MakeItSo's repository uses them.
@Suite(.serialized) struct FirestoreListenerTests {
    func withFirestore(_ body: @Sendable @escaping (Firestore, Auth) async throws -> Void) async throws {
        try await FirestoreClientTests().withFirestore(body)
    }

    @Test func aQueryListenerSeesAddsChangesAndRemovesInOrder() async throws {
        try await withFirestore { db, auth in
            let uid = try await auth.signInAnonymously().user.uid
            let tasks = db.collection("tasks")
            try await tasks.document("a").setData(["userId": uid, "rank": 2, "title": "second"])
            let snapshots = tasks.whereField("userId", isEqualTo: uid).order(by: "rank").snapshots
            var iterator = snapshots.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.documents.map(\.documentID) == ["a"])
            #expect(first.documentChanges.map(\.type) == [.added])

            try await tasks.document("b").setData(["userId": uid, "rank": 1, "title": "first"])
            let second = try #require(try await iterator.next())
            #expect(second.documents.map(\.documentID) == ["b", "a"], "ordered by rank")
            #expect(second.documentChanges.map(\.type) == [.added])
            #expect(second.documentChanges.first?.newIndex == 0)

            try await tasks.document("a").updateData(["title": "changed"])
            let third = try #require(try await iterator.next())
            #expect(third.documentChanges.map(\.type) == [.modified])
            #expect(third.documents.last?.get("title") as? String == "changed")

            try await tasks.document("b").delete()
            let fourth = try #require(try await iterator.next())
            #expect(fourth.documents.map(\.documentID) == ["a"])
            #expect(fourth.documentChanges.map(\.type) == [.removed])
            #expect(fourth.documentChanges.first?.oldIndex == 0)

            // someone else's task never shows up
            try await tasks.document("c").setData(["userId": "other", "rank": 0])
            try await tasks.document("a").updateData(["rank": 5])
            let fifth = try #require(try await iterator.next())
            #expect(fifth.documents.map(\.documentID) == ["a"])
        }
    }

    @Test func aDocumentListenerSeesCreationAndDeletion() async throws {
        try await withFirestore { db, auth in
            _ = try await auth.signInAnonymously()
            let ref = db.document("profiles/p1")
            var iterator = ref.snapshots.makeAsyncIterator()
            let missing = try #require(try await iterator.next())
            #expect(!missing.exists)
            try await ref.setData(["name": "Ada"])
            let created = try #require(try await iterator.next())
            #expect(created.exists && created.get("name") as? String == "Ada")
            try await ref.delete()
            let deleted = try #require(try await iterator.next())
            #expect(!deleted.exists)
        }
    }

    @Test func valuesOrderAsFirestoreOrdersThem() {
        func v(_ build: (inout Google_Firestore_V1_Value) -> Void) -> Google_Firestore_V1_Value {
            var x = Google_Firestore_V1_Value()
            build(&x)
            return x
        }
        let ordered = [
            v { $0.nullValue = .nullValue }, v { $0.booleanValue = false }, v { $0.booleanValue = true },
            v { $0.doubleValue = .nan }, v { $0.integerValue = -1 }, v { $0.doubleValue = 0.5 }, v { $0.integerValue = 1 },
            v { $0.timestampValue.seconds = 1 }, v { $0.stringValue = "a" }, v { $0.stringValue = "b" }, v { $0.bytesValue = Data([0]) },
            v { $0.referenceValue = "projects/p/databases/d/documents/a/b" }, v { $0.geoPointValue.latitude = 1 },
            v { $0.arrayValue.values = [] }, v { $0.mapValue.fields = [:] },
        ]
        for i in ordered.indices {
            for j in ordered.indices {
                #expect(ValueOrder.compare(ordered[i], ordered[j]) == (i < j ? -1 : (i > j ? 1 : 0)), "\(i) vs \(j)")
            }
        }
    }
}
