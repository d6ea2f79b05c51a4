public import Foundation

// MARK: @DocumentID

/// Types a `@DocumentID` property may have.
public protocol DocumentIDWrappable {
    static func wrap(_ documentReference: DocumentReference) throws -> Self
}

extension String: DocumentIDWrappable {
    public static func wrap(_ documentReference: DocumentReference) throws -> String { documentReference.documentID }
}

extension DocumentReference: DocumentIDWrappable {
    public static func wrap(_ documentReference: DocumentReference) throws -> Self {
        guard let same = documentReference as? Self else { throw FirestoreDecodingError.decodingIsNotSupported("DocumentReference subclass") }
        return same
    }
}

/// Filled with the document's id (or reference) when decoded with `data(as:)`; never written.
@propertyWrapper
public struct DocumentID<Value: DocumentIDWrappable & Codable>: Codable {
    var value: Value?

    public init(wrappedValue value: Value?) { self.value = value }

    public var wrappedValue: Value? {
        get { value }
        set { value = newValue }
    }

    public init(from decoder: any Decoder) throws {
        guard let reference = decoder.userInfo[.documentRefUserInfoKey] as? DocumentReference else {
            value = nil  // decoded from data without a document: nothing to fill in
            return
        }
        value = try Value.wrap(reference)
    }

    /// Reached only through coders other than Firestore's (its containers skip the property).
    public func encode(to encoder: any Encoder) throws {
        throw FirestoreEncodingError.encodingIsNotSupported("DocumentID values can only be encoded with Firestore.Encoder")
    }
}

extension DocumentID: Equatable where Value: Equatable {}
extension DocumentID: Hashable where Value: Hashable {}
extension DocumentID: Sendable where Value: Sendable {}

// MARK: @ServerTimestamp

/// Types a `@ServerTimestamp` property may have.
public protocol ServerTimestampWrappable {
    static func wrap(_ timestamp: Timestamp) throws -> Self
    static func unwrap(_ value: Self) throws -> Timestamp
}

extension Date: ServerTimestampWrappable {
    public static func wrap(_ timestamp: Timestamp) throws -> Date { timestamp.dateValue() }
    public static func unwrap(_ value: Date) throws -> Timestamp { Timestamp(date: value) }
}

extension Timestamp: ServerTimestampWrappable {
    public static func wrap(_ timestamp: Timestamp) throws -> Timestamp { timestamp }
    public static func unwrap(_ value: Timestamp) throws -> Timestamp { value }
}

/// nil is written as `FieldValue.serverTimestamp()` (the server's commit time); a value as itself.
/// A stored null (a pending server timestamp) reads as nil.
@propertyWrapper
public struct ServerTimestamp<Value: ServerTimestampWrappable & Codable>: Codable {
    var value: Value?

    public init(wrappedValue value: Value?) { self.value = value }

    public var wrappedValue: Value? {
        get { value }
        set { value = newValue }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        value = container.decodeNil() ? nil : try Value.wrap(container.decode(Timestamp.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value {
            try container.encode(Value.unwrap(value))
        } else {
            try container.encode(FieldValue.serverTimestamp())
        }
    }
}

extension ServerTimestamp: Equatable where Value: Equatable {}
extension ServerTimestamp: Hashable where Value: Hashable {}
extension ServerTimestamp: Sendable where Value: Sendable {}

// MARK: @ExplicitNull

/// nil is written as null instead of being left out.
@propertyWrapper
public struct ExplicitNull<Value> {
    var value: Value?

    public init(wrappedValue value: Value?) { self.value = value }

    public var wrappedValue: Value? {
        get { value }
        set { value = newValue }
    }
}

extension ExplicitNull: Encodable where Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}

extension ExplicitNull: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        value = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}

extension ExplicitNull: Equatable where Value: Equatable {}
extension ExplicitNull: Hashable where Value: Hashable {}
extension ExplicitNull: Sendable where Value: Sendable {}

// MARK: Container overloads (chosen statically by synthesized Codable code)

extension KeyedEncodingContainer {
    /// `@DocumentID` properties are never written.
    public mutating func encode<T>(_ value: DocumentID<T>, forKey key: Key) throws {}
}

extension KeyedDecodingContainer {
    /// An absent key is fine: the id comes from the document's reference.
    public func decode<T>(_ type: DocumentID<T>.Type, forKey key: Key) throws -> DocumentID<T> {
        try DocumentID<T>(from: superDecoder(forKey: key))
    }

    /// An absent key reads as nil.
    public func decode<T>(_ type: ServerTimestamp<T>.Type, forKey key: Key) throws -> ServerTimestamp<T> {
        contains(key) ? try ServerTimestamp<T>(from: superDecoder(forKey: key)) : ServerTimestamp(wrappedValue: nil)
    }

    /// An absent key reads as nil.
    public func decode<T: Decodable>(_ type: ExplicitNull<T>.Type, forKey key: Key) throws -> ExplicitNull<T> {
        contains(key) ? try ExplicitNull<T>(from: superDecoder(forKey: key)) : ExplicitNull(wrappedValue: nil)
    }
}
