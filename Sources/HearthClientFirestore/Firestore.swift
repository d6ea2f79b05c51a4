import Foundation

/// Cloud Firestore's client. So far: the value model and the Codable mapping
/// (`Firestore.Encoder`/`Firestore.Decoder`); documents, queries, listeners and the offline
/// cache are the next steps (docs/client-sdk.md).
public final class Firestore: Sendable {
    init() {}
}

/// A document's location: `collection/doc[/collection/doc…]` relative to the database root.
public final class DocumentReference: @unchecked Sendable, Hashable, CustomStringConvertible {
    public let path: String

    package init(path: String) {
        self.path = path
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
