import Foundation

/// Sentinels for `setData`/`updateData` that the server resolves: delete a field, the commit
/// time, array unions and removals, increments, minimum and maximum.
public final class FieldValue: @unchecked Sendable, Encodable, Equatable {
    enum Kind {
        case delete
        case serverTimestamp
        case arrayUnion([Any])
        case arrayRemove([Any])
        case increment(NSNumber)
        case minimum(NSNumber)
        case maximum(NSNumber)
    }

    let kind: Kind

    init(_ kind: Kind) { self.kind = kind }

    public static func delete() -> FieldValue { FieldValue(.delete) }
    public static func serverTimestamp() -> FieldValue { FieldValue(.serverTimestamp) }
    public static func arrayUnion(_ elements: [Any]) -> FieldValue { FieldValue(.arrayUnion(elements)) }
    public static func arrayRemove(_ elements: [Any]) -> FieldValue { FieldValue(.arrayRemove(elements)) }
    public static func increment(_ l: Int64) -> FieldValue { FieldValue(.increment(NSNumber(value: l))) }
    public static func increment(_ d: Double) -> FieldValue { FieldValue(.increment(NSNumber(value: d))) }
    public static func minimum(_ l: Int64) -> FieldValue { FieldValue(.minimum(NSNumber(value: l))) }
    public static func minimum(_ d: Double) -> FieldValue { FieldValue(.minimum(NSNumber(value: d))) }
    public static func maximum(_ l: Int64) -> FieldValue { FieldValue(.maximum(NSNumber(value: l))) }
    public static func maximum(_ d: Double) -> FieldValue { FieldValue(.maximum(NSNumber(value: d))) }

    public static func == (a: FieldValue, b: FieldValue) -> Bool {
        switch (a.kind, b.kind) {
        case (.delete, .delete), (.serverTimestamp, .serverTimestamp): true
        case (.increment(let x), .increment(let y)), (.minimum(let x), .minimum(let y)), (.maximum(let x), .maximum(let y)): x == y
        case (.arrayUnion(let x), .arrayUnion(let y)), (.arrayRemove(let x), .arrayRemove(let y)): (x as NSArray).isEqual(to: y)
        default: false
        }
    }

    /// Only Firestore's encoder can write a FieldValue; others fail.
    public func encode(to encoder: any Encoder) throws {
        throw FirestoreEncodingError.encodingIsNotSupported("FieldValue values can only be encoded with Firestore.Encoder")
    }
}

/// Errors of Firestore's Codable support that other coders raise for Firestore-only types.
public enum FirestoreEncodingError: Error {
    case encodingIsNotSupported(String)
}

public enum FirestoreDecodingError: Error {
    case decodingIsNotSupported(String)
    case fieldNameConflict(String)
}
