import Foundation

extension Firestore {
    /// Decodes document data (`[String: Any]`) into a `Decodable` type by Firebase's rules: the
    /// inverse of ``Firestore/Encoder``; integers decode from stored doubles only when integral;
    /// `Data` also from base64 strings; missing keys are nil for optionals and `keyNotFound`
    /// otherwise; `@DocumentID` is filled from the document's reference.
    public struct Decoder: Sendable {
        public enum DateDecodingStrategy: Sendable {
            case timestamp
            case secondsSince1970
            case millisecondsSince1970
            case iso8601
        }

        public var dateDecodingStrategy: DateDecodingStrategy = .timestamp
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        public func decode<T: Decodable>(_ type: T.Type, from data: [String: Any], in reference: DocumentReference? = nil) throws -> T {
            var info: [CodingUserInfoKey: Any] = userInfo
            if let reference { info[.documentRefUserInfoKey] = reference }
            return try FirestoreValueDecoder(value: data, codingPath: [], options: self, userInfo: info).unbox(T.self)
        }
    }
}

struct FirestoreValueDecoder: Swift.Decoder {
    /// The value here; nil when the key is absent.
    let value: Any?
    let codingPath: [any CodingKey]
    let options: Firestore.Decoder
    let userInfo: [CodingUserInfoKey: Any]

    func at(_ value: Any?, _ key: any CodingKey) -> FirestoreValueDecoder {
        FirestoreValueDecoder(value: value, codingPath: codingPath + [key], options: options, userInfo: userInfo)
    }

    func mismatch<T>(_ type: T.Type) -> DecodingError {
        let found = value.map { "\(Swift.type(of: $0))" } ?? "nothing"
        return .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "Expected to decode \(type) but found \(found) instead."))
    }

    var isNull: Bool { value == nil || value is NSNull }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let map = value as? [String: Any] else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(Keyed<Key>(decoder: self, map: map))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let array = value as? [Any] else { throw mismatch([Any].self) }
        return Unkeyed(decoder: self, array: array)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    // MARK: Scalars

    func bool() throws -> Bool {
        if let b = value as? Bool { return b }
        throw mismatch(Bool.self)
    }

    func string() throws -> String {
        if let s = value as? String { return s }
        throw mismatch(String.self)
    }

    func double() throws -> Double {
        switch value {
        case let d as Double: return d
        case let i as Int64: return Double(i)
        case let i as Int: return Double(i)
        case let n as NSNumber where !(value is Bool): return n.doubleValue
        default: throw mismatch(Double.self)
        }
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let result: T?
        switch value {
        case let i as Int64: result = T(exactly: i)
        case let i as Int: result = T(exactly: i)
        case let d as Double: result = d.rounded() == d ? T(exactly: d) : nil
        case let n as NSNumber where !(value is Bool): result = T(exactly: n.doubleValue)
        default: throw mismatch(type)
        }
        guard let result else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "Stored number \(value!) does not fit in \(type)."))
        }
        return result
    }

    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is Timestamp.Type, is GeoPoint.Type, is DocumentReference.Type:
            if let v = value as? T { return v }
            throw mismatch(type)
        case is Date.Type:
            switch options.dateDecodingStrategy {
            case .timestamp:
                if let t = value as? Timestamp { return t.dateValue() as! T }
                throw mismatch(type)
            case .secondsSince1970: return Date(timeIntervalSince1970: try double()) as! T
            case .millisecondsSince1970: return Date(timeIntervalSince1970: try double() / 1000) as! T
            case .iso8601:
                guard let d = ISO8601DateFormatter().date(from: try string()) else {
                    throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "Expected an ISO 8601 date."))
                }
                return d as! T
            }
        case is Data.Type:
            if let d = value as? Data { return d as! T }
            if let s = value as? String, let d = Data(base64Encoded: s) { return d as! T }
            throw mismatch(type)
        case is URL.Type:
            guard let url = URL(string: try string()) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "Invalid URL string."))
            }
            return url as! T
        case is Decimal.Type:
            return Decimal(try double()) as! T
        default:
            return try T(from: self)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: FirestoreValueDecoder
        let map: [String: Any]
        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [Key] { map.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { map[key.stringValue] != nil }

        func child(_ key: Key) throws -> FirestoreValueDecoder {
            guard let v = map[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
            }
            return decoder.at(v, key)
        }

        func decodeNil(forKey key: Key) throws -> Bool { decoder.at(map[key.stringValue], key).isNull }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).bool() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).string() }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).double() }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try child(key).double()) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).integer(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).integer(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).integer(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).integer(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).integer(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).integer(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).integer(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).integer(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).integer(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).integer(type) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).unbox(type) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try child(key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
        func superDecoder() throws -> any Swift.Decoder { decoder.at(map["super"], FirestoreKey(stringValue: "super")) }
        /// The decoder at `key`, present or not (how the property wrappers read an absent key as nil).
        func superDecoder(forKey key: Key) throws -> any Swift.Decoder { decoder.at(map[key.stringValue], key) }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: FirestoreValueDecoder
        let array: [Any]
        var currentIndex = 0
        var codingPath: [any CodingKey] { decoder.codingPath }
        var count: Int? { array.count }
        var isAtEnd: Bool { currentIndex >= array.count }

        mutating func next() throws -> FirestoreValueDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "Unkeyed container is at end."))
            }
            defer { currentIndex += 1 }
            return decoder.at(array[currentIndex], FirestoreKey(intValue: currentIndex))
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, array[currentIndex] is NSNull else { return false }
            currentIndex += 1
            return true
        }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next().bool() }
        mutating func decode(_ type: String.Type) throws -> String { try next().string() }
        mutating func decode(_ type: Double.Type) throws -> Double { try next().double() }
        mutating func decode(_ type: Float.Type) throws -> Float { Float(try next().double()) }
        mutating func decode(_ type: Int.Type) throws -> Int { try next().integer(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().integer(type) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().unbox(type) }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
        mutating func superDecoder() throws -> any Swift.Decoder { try next() }
    }

    struct Single: SingleValueDecodingContainer {
        let decoder: FirestoreValueDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { decoder.isNull }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool() }
        func decode(_ type: String.Type) throws -> String { try decoder.string() }
        func decode(_ type: Double.Type) throws -> Double { try decoder.double() }
        func decode(_ type: Float.Type) throws -> Float { Float(try decoder.double()) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(type) }
    }
}
