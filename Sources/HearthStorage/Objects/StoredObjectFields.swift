public import HearthCore

/// The JSON texts an object row keeps for its custom metadata, download tokens and a multipart
/// upload's attributes — one encoding for every ``ObjectMetadataStore`` backend (SQLite and
/// PostgreSQL), so a row reads the same from either store (and a copy between them is a plain
/// column copy).
package enum StoredObjectFields {
    /// Whether a name holds U+0000. S3 keys and GCS names may carry one on the wire, but neither
    /// backend can store it faithfully (PostgreSQL's text refuses it; SQLite's C-string binding
    /// would cut the name at it, aliasing "a\0b" with "a"). So a name with one is in no row: a
    /// lookup by it finds nothing, and storing one is refused (``refuseNUL(_:)``).
    package static func holdsNUL(_ text: String) -> Bool { text.utf8.contains(0) }

    /// INVALID_ARGUMENT if any of `names` holds U+0000 (see ``holdsNUL(_:)``).
    package static func refuseNUL(_ names: String...) throws {
        if names.contains(where: holdsNUL) {
            throw HearthError(.invalidArgument, "Bucket and object names cannot contain the NUL character (U+0000).")
        }
    }

    package static func encodeCustom(_ custom: [String: String]) -> String {
        JSON.object(custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).serialized()
    }

    package static func decodeCustom(_ text: String) -> [String: String] {
        guard text != "{}", let json = try? JSON.parse(Array(text.utf8)) else { return [:] }
        var custom: [String: String] = [:]
        for (key, value) in json.objectValue ?? [] { custom[key] = value.stringValue }
        return custom
    }

    package static func encodeTokens(_ tokens: [String]) -> String {
        JSON.array(tokens.map { .string($0) }).serialized()
    }

    package static func decodeTokens(_ text: String) -> [String] {
        guard text != "[]" else { return [] }
        return (try? JSON.parse(Array(text.utf8)))?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    package static func encodeAttributes(_ attributes: ObjectAttributes) -> String { attributesJSON(attributes).serialized() }

    /// The metadata fields of `attributes` (not its download tokens) as a JSON object.
    package static func attributesJSON(_ attributes: ObjectAttributes) -> JSON {
        var members: [(String, JSON)] = []
        func put(_ key: String, _ value: String?) { if let value { members.append((key, .string(value))) } }
        put("contentType", attributes.contentType)
        put("cacheControl", attributes.cacheControl)
        put("contentDisposition", attributes.contentDisposition)
        put("contentEncoding", attributes.contentEncoding)
        put("contentLanguage", attributes.contentLanguage)
        members.append(("custom", .object(attributes.custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        return JSON.object(members)
    }

    package static func decodeAttributes(_ text: String) -> ObjectAttributes {
        guard let json = try? JSON.parse(Array(text.utf8)) else { return ObjectAttributes() }
        return attributes(json)
    }

    /// The attributes ``attributesJSON(_:)`` wrote.
    package static func attributes(_ json: JSON) -> ObjectAttributes {
        var attributes = ObjectAttributes(
            contentType: json["contentType"]?.stringValue, cacheControl: json["cacheControl"]?.stringValue,
            contentDisposition: json["contentDisposition"]?.stringValue, contentEncoding: json["contentEncoding"]?.stringValue,
            contentLanguage: json["contentLanguage"]?.stringValue)
        for (key, value) in json["custom"]?.objectValue ?? [] { attributes.custom[key] = value.stringValue }
        return attributes
    }
}
