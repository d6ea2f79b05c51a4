import Foundation
import Testing

@testable import HearthClientFirestore

/// The Codable mapping against the rules in shared/reference/client-sdk.md §5, on MakeItSo-shaped models.
struct FirestoreCodableTests {
    enum Priority: String, Codable { case low, medium, high }

    struct Place: Codable, Equatable {
        var name: String
        var location: GeoPoint
    }

    /// MakeItSo's task, in our words.
    struct TaskItem: Codable, Equatable {
        @DocumentID var id: String?
        var title: String
        var priority: Priority
        var completed: Bool = false
        var userId: String?
        @ServerTimestamp var createdTime: Timestamp?
        var dueDate: Date?
        var tags: [String] = []
        var place: Place?
        var attachment: Data?
        var link: URL?
        @ExplicitNull var note: String?
    }

    let encoder = Firestore.Encoder()
    let decoder = Firestore.Decoder()

    @Test func encodingFollowsFirebasesRules() throws {
        let due = Date(timeIntervalSince1970: 1_700_000_000.25)
        let task = TaskItem(
            id: "ignored", title: "Write docs", priority: .high, userId: nil, createdTime: nil, dueDate: due, tags: ["a", "b"],
            place: Place(name: "home", location: GeoPoint(latitude: 52.5, longitude: 13.4)), attachment: Data([1, 2, 3]),
            link: URL(string: "https://example.com/x"), note: nil)
        let data = try encoder.encode(task)
        #expect(data["id"] == nil, "@DocumentID is never written")
        #expect(data["userId"] == nil, "nil optionals are left out")
        #expect(data["note"] is NSNull, "@ExplicitNull writes null")
        #expect((data["createdTime"] as? FieldValue) == FieldValue.serverTimestamp(), "a nil @ServerTimestamp asks for the commit time")
        #expect(data["dueDate"] as? Timestamp == Timestamp(date: due))
        #expect(data["title"] as? String == "Write docs")
        #expect(data["priority"] as? String == "high")
        #expect(data["completed"] as? Bool == false)
        #expect(data["tags"] as? [String] == ["a", "b"])
        let place = try #require(data["place"] as? [String: Any])
        #expect(place["location"] as? GeoPoint == GeoPoint(latitude: 52.5, longitude: 13.4))
        #expect(data["attachment"] as? Data == Data([1, 2, 3]))
        #expect(data["link"] as? String == "https://example.com/x")

        var stamped = task
        stamped.createdTime = Timestamp(seconds: 10, nanoseconds: 5)
        #expect(try encoder.encode(stamped)["createdTime"] as? Timestamp == Timestamp(seconds: 10, nanoseconds: 5))
    }

    @Test func decodingFillsTheIdAndReadsPendingTimestampsAsNil() throws {
        let reference = DocumentReference(path: "tasks/t42")
        let stored: [String: Any] = [
            "id": "a stored field named id is ignored", "title": "Ship", "priority": "low", "completed": true,
            "createdTime": NSNull(), "dueDate": Timestamp(seconds: 1_700_000_000, nanoseconds: 0), "tags": ["x"],
            "attachment": "AQID", "note": NSNull(),
        ]
        let task = try decoder.decode(TaskItem.self, from: stored, in: reference)
        #expect(task.id == "t42")
        #expect(task.title == "Ship" && task.priority == .low && task.completed)
        #expect(task.createdTime == nil)
        #expect(task.dueDate == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(task.attachment == Data([1, 2, 3]), "bytes also decode from base64 strings")
        #expect(task.note == nil && task.userId == nil && task.place == nil)

        var withoutTimestamp = stored
        withoutTimestamp.removeValue(forKey: "createdTime")
        withoutTimestamp.removeValue(forKey: "note")
        #expect(try decoder.decode(TaskItem.self, from: withoutTimestamp).createdTime == nil)
        #expect(try decoder.decode(TaskItem.self, from: withoutTimestamp).id == nil, "no reference, no id")

        var stamped = stored
        stamped["createdTime"] = Timestamp(seconds: 5, nanoseconds: 6)
        #expect(try decoder.decode(TaskItem.self, from: stamped).createdTime == Timestamp(seconds: 5, nanoseconds: 6))
    }

    @Test func roundTripsThroughBothCoders() throws {
        let task = TaskItem(
            id: nil, title: "Round", priority: .medium, completed: true, userId: "u1", createdTime: Timestamp(seconds: 1, nanoseconds: 2),
            dueDate: Date(timeIntervalSince1970: 1_234_567_890.5), tags: [], place: Place(name: "p", location: GeoPoint(latitude: 0, longitude: 0)),
            attachment: Data(), link: nil, note: "n")
        #expect(try decoder.decode(TaskItem.self, from: try encoder.encode(task)) == task)
    }

    @Test func numbersDecodeOnlyWhenTheyFit() throws {
        struct Counter: Codable { var n: Int; var small: Int8? }
        #expect(try decoder.decode(Counter.self, from: ["n": 3.0]).n == 3, "an integral double is an integer")
        #expect(throws: DecodingError.self) { try decoder.decode(Counter.self, from: ["n": 3.5]) }
        #expect(throws: DecodingError.self) { try decoder.decode(Counter.self, from: ["n": Int64(1), "small": Int64(300)]) }
        #expect(throws: DecodingError.self) { try decoder.decode(Counter.self, from: ["n": "3"]) }
        #expect(throws: DecodingError.self) { try decoder.decode(Counter.self, from: [:]) }
        struct Big: Codable { var u: UInt64 }
        #expect(throws: EncodingError.self) { try encoder.encode(Big(u: .max)) }
        struct Real: Codable { var d: Double }
        #expect(throws: EncodingError.self) { try encoder.encode(Real(d: .nan)) }
    }

    @Test func datesAreTimestampsAndNotStringsOrNumbers() throws {
        struct Event: Codable { var at: Date }
        #expect(throws: DecodingError.self) { try decoder.decode(Event.self, from: ["at": "2026-01-01T00:00:00Z"]) }
        #expect(throws: DecodingError.self) { try decoder.decode(Event.self, from: ["at": 1_700_000_000.0]) }
        var seconds = Firestore.Encoder()
        seconds.dateEncodingStrategy = .secondsSince1970
        #expect(try seconds.encode(Event(at: Date(timeIntervalSince1970: 12))).first?.value as? Double == 12)
    }

    @Test func onlyKeyedTopLevelsAndFirestoreOnlyTypesStayInFirestoresCoders() throws {
        #expect(throws: EncodingError.self) { try encoder.encode([1, 2, 3]) }
        // under JSONEncoder: Timestamp and GeoPoint are plain structs; references and sentinels refuse
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Timestamp(seconds: 3, nanoseconds: 4))) as? [String: Int]
        #expect(json == ["seconds": 3, "nanoseconds": 4])
        #expect(throws: FirestoreEncodingError.self) { try JSONEncoder().encode([DocumentReference(path: "a/b")]) }
        #expect(throws: FirestoreEncodingError.self) { try JSONEncoder().encode([FieldValue.delete()]) }
        struct WithRef: Codable { var owner: DocumentReference }
        let ref = DocumentReference(path: "users/alice")
        let encoded = try encoder.encode(WithRef(owner: ref))
        #expect(encoded["owner"] as? DocumentReference == ref)
        #expect(try decoder.decode(WithRef.self, from: encoded).owner == ref)
    }

    @Test func timestampsConvertDatesToTheNanosecond() {
        let t = Timestamp(date: Date(timeIntervalSince1970: -1.5))
        #expect(t.seconds == -2 && t.nanoseconds == 500_000_000)
        #expect(Timestamp(seconds: 1, nanoseconds: 0) < Timestamp(seconds: 1, nanoseconds: 1))
        #expect(Timestamp(seconds: 7, nanoseconds: 250_000_000).dateValue() == Date(timeIntervalSince1970: 7.25))
    }
}
