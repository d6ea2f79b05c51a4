import Foundation
import HearthClient
import Synchronization

/// The user's tasks, kept current by a snapshot listener, as MakeItSo's repository keeps them.
final class TaskRepository: Sendable {
    let db: Firestore
    let tasks = Mutex<[TaskItem]>([])
    let registration = Mutex<(any ListenerRegistration)?>(nil)
    /// Each snapshot's titles, for whoever waits on a state.
    let updates: AsyncStream<[TaskItem]>
    let continuation: AsyncStream<[TaskItem]>.Continuation

    init(db: Firestore = Firestore.firestore()) {
        self.db = db
        (updates, continuation) = AsyncStream.makeStream()
    }

    func subscribe(userId: String) {
        let query = db.collection("tasks").whereField("userId", isEqualTo: userId).order(by: "createdTime")
        let r = query.addSnapshotListener { [self] snapshot, error in
            guard let snapshot else {
                print("listener error: \(error.map { "\($0)" } ?? "unknown")")
                return
            }
            let items = snapshot.documents.compactMap { try? $0.data(as: TaskItem.self) }
            tasks.withLock { $0 = items }
            let changes = snapshot.documentChanges.map { "\($0.type) \($0.document.documentID.prefix(6))" }.joined(separator: ", ")
            print("snapshot: \(items.count) tasks [\(items.map { "\($0.title)\($0.completed ? " ✓" : "")" }.joined(separator: ", "))] changes: \(changes)")
            continuation.yield(items)
        }
        registration.withLock { $0 = r }
    }

    func unsubscribe() {
        registration.withLock { $0 }?.remove()
        continuation.finish()
    }

    func add(_ task: TaskItem) async throws {
        try await db.collection("tasks").addDocument(from: task)
    }

    func update(_ task: TaskItem) async throws {
        guard let id = task.id else { return }
        try await db.collection("tasks").document(id).setData(from: task, merge: true)
    }

    func remove(_ task: TaskItem) async throws {
        guard let id = task.id else { return }
        try await db.collection("tasks").document(id).delete()
    }
}
