import Foundation
import Testing

import HearthClientAuth
import HearthClientCore
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
        try await LiveServer.with { ports in
            var options = HearthOptions(projectID: "demo-hearth")
            options.authPort = ports["auth"]!
            options.firestorePort = ports["firestore"]!
            let name = "firestore-\(UUID().uuidString)"
            HearthApp.configure(name: name, options: options)
            let app = HearthApp.app(name: name)!
            let auth = Auth.auth(app: app, userStore: FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)))
            let db = Firestore.firestore(app: app)
            try await body(db, auth)
            await db.terminate()
        }
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
