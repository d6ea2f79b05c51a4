import Foundation

extension Firestore {
    /// Encodes a `Codable` value as document data (`[String: Any]`) following Firebase's mapping:
    /// `Date` → `Timestamp` (default strategy), `Data` → bytes, `URL` → string, nested types →
    /// maps; `Timestamp`, `GeoPoint`, `FieldValue` and `DocumentReference` pass through; nil
    /// optionals are omitted (use `@ExplicitNull` to write null); `@DocumentID` is never written.
    public struct Encoder: Sendable {
        public enum DateEncodingStrategy: Sendable {
            case timestamp
            case secondsSince1970
            case millisecondsSince1970
            case iso8601
        }

        public var dateEncodingStrategy: DateEncodingStrategy = .timestamp
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        public func encode<T: Encodable>(_ value: T) throws -> [String: Any] {
            let encoder = FirestoreValueEncoder(options: self, codingPath: [])
            let node = try encoder.box(value)
            guard case .map(let map) = node else {
                throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "Top-level \(T.self) is not allowed."))
            }
            return map.resolve()
        }
    }
}

/// The tree being built: values, and arrays/maps that containers keep filling after they are nested.
enum EncodedNode {
    case value(Any)
    case array(ArrayBox)
    case map(MapBox)

    func resolve() -> Any {
        switch self {
        case .value(let v): v
        case .array(let a): a.resolve()
        case .map(let m): m.resolve()
        }
    }
}

final class ArrayBox {
    var items: [EncodedNode] = []
    func resolve() -> [Any] { items.map { $0.resolve() } }
}

final class MapBox {
    var items: [String: EncodedNode] = [:]
    func resolve() -> [String: Any] { items.mapValues { $0.resolve() } }
}

struct FirestoreKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { stringValue = "Index \(intValue)"; self.intValue = intValue }
}

final class FirestoreValueEncoder: Swift.Encoder {
    let options: Firestore.Encoder
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }
    /// What this encoder's single container produced (or the container it opened).
    var node: EncodedNode?

    init(options: Firestore.Encoder, codingPath: [any CodingKey]) {
        self.options = options
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let box: MapBox
        if case .map(let existing) = node { box = existing } else { box = MapBox(); node = .map(box) }
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self, box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let box: ArrayBox
        if case .array(let existing) = node { box = existing } else { box = ArrayBox(); node = .array(box) }
        return UnkeyedContainer(encoder: self, box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(encoder: self, codingPath: codingPath) }

    /// One value as a node: pass-through types as themselves, the rest through their `encode(to:)`.
    func box<T: Encodable>(_ value: T, at path: [any CodingKey]? = nil) throws -> EncodedNode {
        let path = path ?? codingPath
        switch value {
        case let v as Timestamp: return .value(v)
        case let v as GeoPoint: return .value(v)
        case let v as FieldValue: return .value(v)
        case let v as DocumentReference: return .value(v)
        case let v as Data: return .value(v)
        case let v as URL: return .value(v.absoluteString)
        case let v as Decimal: return .value(NSDecimalNumber(decimal: v).doubleValue)
        case let v as Date:
            switch options.dateEncodingStrategy {
            case .timestamp: return .value(Timestamp(date: v))
            case .secondsSince1970: return .value(v.timeIntervalSince1970)
            case .millisecondsSince1970: return .value(v.timeIntervalSince1970 * 1000)
            case .iso8601: return .value(ISO8601DateFormatter().string(from: v))
            }
        default:
            let nested = FirestoreValueEncoder(options: options, codingPath: path)
            try value.encode(to: nested)
            // A type that encodes nothing is an empty map, as Firebase's encoder has it.
            return nested.node ?? .map(MapBox())
        }
    }

    static func check(_ d: Double, _ path: [any CodingKey]) throws -> Double {
        guard d.isFinite else {
            throw EncodingError.invalidValue(d, .init(codingPath: path, debugDescription: "Unable to encode \(d) directly in Firestore: non-conforming floating-point values are not allowed."))
        }
        return d
    }

    static func integer<T: BinaryInteger>(_ v: T, _ path: [any CodingKey]) throws -> Int64 {
        guard let i = Int64(exactly: v) else {
            throw EncodingError.invalidValue(v, .init(codingPath: path, debugDescription: "\(v) does not fit in Firestore's 64-bit integers."))
        }
        return i
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: FirestoreValueEncoder
        let box: MapBox
        var codingPath: [any CodingKey]

        func set(_ node: EncodedNode, _ key: Key) { box.items[key.stringValue] = node }

        mutating func encodeNil(forKey key: Key) throws { set(.value(NSNull()), key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { set(.value(value), key) }
        mutating func encode(_ value: String, forKey key: Key) throws { set(.value(value), key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { set(.value(try FirestoreValueEncoder.check(value, codingPath + [key])), key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { set(.value(try FirestoreValueEncoder.check(Double(value), codingPath + [key])), key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { set(.value(Int64(value)), key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { set(.value(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { set(.value(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { set(.value(Int64(value)), key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { set(.value(value), key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { set(.value(try FirestoreValueEncoder.integer(value, codingPath + [key])), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.value(Int64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.value(Int64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.value(Int64(value)), key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.value(try FirestoreValueEncoder.integer(value, codingPath + [key])), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            set(try encoder.box(value, at: codingPath + [key]), key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = MapBox()
            set(.map(nested), key)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder: encoder, box: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            set(.array(nested), key)
            return UnkeyedContainer(encoder: encoder, box: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Swift.Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

        mutating func superEncoder(forKey key: Key) -> any Swift.Encoder {
            let nested = FirestoreValueEncoder(options: encoder.options, codingPath: codingPath + [key])
            let map = MapBox()
            nested.node = .map(map)
            set(.map(map), key)
            return nested
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let encoder: FirestoreValueEncoder
        let box: ArrayBox
        var codingPath: [any CodingKey]
        var count: Int { box.items.count }
        var key: any CodingKey { FirestoreKey(intValue: count) }

        mutating func encodeNil() throws { box.items.append(.value(NSNull())) }
        mutating func encode(_ value: Bool) throws { box.items.append(.value(value)) }
        mutating func encode(_ value: String) throws { box.items.append(.value(value)) }
        mutating func encode(_ value: Double) throws { box.items.append(.value(try FirestoreValueEncoder.check(value, codingPath + [key]))) }
        mutating func encode(_ value: Float) throws { box.items.append(.value(try FirestoreValueEncoder.check(Double(value), codingPath + [key]))) }
        mutating func encode(_ value: Int) throws { box.items.append(.value(Int64(value))) }
        mutating func encode(_ value: Int64) throws { box.items.append(.value(value)) }
        mutating func encode(_ value: Int32) throws { box.items.append(.value(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { box.items.append(.value(try FirestoreValueEncoder.integer(value, codingPath + [key]))) }
        mutating func encode<T: Encodable>(_ value: T) throws { box.items.append(try encoder.box(value, at: codingPath + [key])) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let nested = MapBox()
            let path = codingPath + [key]
            box.items.append(.map(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder: encoder, box: nested, codingPath: path))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            let path = codingPath + [key]
            box.items.append(.array(nested))
            return UnkeyedContainer(encoder: encoder, box: nested, codingPath: path)
        }

        mutating func superEncoder() -> any Swift.Encoder {
            let nested = FirestoreValueEncoder(options: encoder.options, codingPath: codingPath + [key])
            let map = MapBox()
            nested.node = .map(map)
            box.items.append(.map(map))
            return nested
        }
    }

    struct SingleContainer: SingleValueEncodingContainer {
        let encoder: FirestoreValueEncoder
        var codingPath: [any CodingKey]

        func set(_ node: EncodedNode) { encoder.node = node }

        mutating func encodeNil() throws { set(.value(NSNull())) }
        mutating func encode(_ value: Bool) throws { set(.value(value)) }
        mutating func encode(_ value: String) throws { set(.value(value)) }
        mutating func encode(_ value: Double) throws { set(.value(try FirestoreValueEncoder.check(value, codingPath))) }
        mutating func encode(_ value: Float) throws { set(.value(try FirestoreValueEncoder.check(Double(value), codingPath))) }
        mutating func encode(_ value: Int) throws { set(.value(Int64(value))) }
        mutating func encode(_ value: Int8) throws { set(.value(Int64(value))) }
        mutating func encode(_ value: Int16) throws { set(.value(Int64(value))) }
        mutating func encode(_ value: Int32) throws { set(.value(Int64(value))) }
        mutating func encode(_ value: Int64) throws { set(.value(value)) }
        mutating func encode(_ value: UInt) throws { set(.value(try FirestoreValueEncoder.integer(value, codingPath))) }
        mutating func encode(_ value: UInt8) throws { set(.value(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { set(.value(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { set(.value(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { set(.value(try FirestoreValueEncoder.integer(value, codingPath))) }
        mutating func encode<T: Encodable>(_ value: T) throws { set(try encoder.box(value, at: codingPath)) }
    }
}
