import Foundation
import HearthClient

/// A to-do item, in the shape of MakeItSo's `Task` model (written in our own words).
struct TaskItem: Codable, Identifiable, Equatable {
    enum Priority: String, Codable, CaseIterable { case none, low, medium, high }

    @DocumentID var id: String?
    var title: String
    var priority: Priority = .none
    var completed = false
    var userId: String?
    @ServerTimestamp var createdTime: Timestamp?
}
