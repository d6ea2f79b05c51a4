import Foundation

/// A document's location: `collection/doc[/collection/doc…]` relative to the database root.
public final class DocumentReference: @unchecked Sendable, Hashable, CustomStringConvertible {
    public let path: String
    /// The database it belongs to (nil for references made outside a client, e.g. in tests).
    public let firestore: Firestore?

    package init(path: String, firestore: Firestore? = nil) {
        self.path = path
        self.firestore = firestore
    }

    public var documentID: String { path.split(separator: "/").last.map(String.init) ?? "" }

    public var description: String { "<DocumentReference: \(path)>" }

    public static func == (a: DocumentReference, b: DocumentReference) -> Bool { a.path == b.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }
}

extension DocumentReference: Codable {
    /// Only Firestore's coders can carry a reference; others fail (as in the Apple SDK).
    public func encode(to encoder: any Encoder) throws {
        throw FirestoreEncodingError.encodingIsNotSupported("DocumentReference values can only be encoded with Firestore.Encoder")
    }

    public convenience init(from decoder: any Decoder) throws {
        throw FirestoreDecodingError.decodingIsNotSupported("DocumentReference values can only be decoded with Firestore.Decoder")
    }
}

extension CodingUserInfoKey {
    /// The reference of the document being decoded, for `@DocumentID`.
    public static let documentRefUserInfoKey = CodingUserInfoKey(rawValue: "DocumentRefUserInfoKey")!
}
