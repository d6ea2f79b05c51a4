public import Foundation

extension Database {
    /// Encodes `Encodable` values as database data (`Database.Encoder` of FirebaseDatabaseSwift):
    /// through Foundation's `JSONEncoder` with these strategies, then into the SDK's own JSON.
    /// `nil` optionals are left out (the database has no nulls).
    public final class Encoder {
        public var dateEncodingStrategy: JSONEncoder.DateEncodingStrategy = .deferredToDate
        public var dataEncodingStrategy: JSONEncoder.DataEncodingStrategy = .base64
        public var keyEncodingStrategy: JSONEncoder.KeyEncodingStrategy = .useDefaultKeys
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        func encodeJSON<T: Encodable>(_ value: T) throws -> DatabaseJSON {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = dateEncodingStrategy
            encoder.dataEncodingStrategy = dataEncodingStrategy
            encoder.keyEncodingStrategy = keyEncodingStrategy
            encoder.userInfo = userInfo
            let data = try encoder.encode(value)
            do {
                return try DatabaseJSON.parse(String(decoding: data, as: UTF8.self))
            } catch {
                throw DatabaseError.invalidValue("Encoded JSON could not be read: \(error)").nsError
            }
        }

        /// The value as the `Any` that `setValue(_:)` takes.
        public func encode<T: Encodable>(_ value: T) throws -> Any {
            DatabaseNode(json: try encodeJSON(value)).appValue()
        }
    }

    /// Decodes database data into `Decodable` types (`DataSnapshot.data(as:)`): objects whose
    /// keys are mostly-dense integers decode as arrays, as the Apple SDK's values do.
    public final class Decoder {
        public var dateDecodingStrategy: JSONDecoder.DateDecodingStrategy = .deferredToDate
        public var dataDecodingStrategy: JSONDecoder.DataDecodingStrategy = .base64
        public var keyDecodingStrategy: JSONDecoder.KeyDecodingStrategy = .useDefaultKeys
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        func decode<T: Decodable>(_ type: T.Type, from node: DatabaseNode) throws -> T {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = dateDecodingStrategy
            decoder.dataDecodingStrategy = dataDecodingStrategy
            decoder.keyDecodingStrategy = keyDecodingStrategy
            decoder.userInfo = userInfo
            return try decoder.decode(type, from: Data(Self.plainJSON(node).serialized().utf8))
        }

        /// The node as plain JSON: no priorities, array-like objects as arrays.
        static func plainJSON(_ node: DatabaseNode) -> DatabaseJSON {
            switch node.content {
            case .leaf(let leaf): return leaf.json
            case .children(let children):
                if children.isEmpty { return .null }
                var maxIndex = -1
                var arrayLike = true
                for key in children.keys {
                    guard let index = DatabaseOrdering.integerKey(key), index >= 0, String(index) == key else {
                        arrayLike = false
                        break
                    }
                    maxIndex = max(maxIndex, index)
                }
                if arrayLike, maxIndex < 2 * children.count {
                    return .array((0...maxIndex).map { children[String($0)].map(plainJSON) ?? .null })
                }
                return .object(children.sorted { DatabaseOrdering.compareNames($0.key, $1.key) < 0 }.map { ($0.key, plainJSON($0.value)) })
            }
        }
    }
}
