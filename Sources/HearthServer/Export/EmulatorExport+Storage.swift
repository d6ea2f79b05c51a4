import Foundation
package import HearthCore
package import HearthStorage

/// `storage_export/`: `buckets.json` (`{"buckets": [{"id"}]}`), and for each object its bytes
/// under `blobs/<path>` and the Storage emulator's `StoredFileMetadata` under
/// `metadata/<path>.json`, where `<path>` is `<bucket>/<the name's folders>/<encodeURIComponent(its last part)>`.
extension EmulatorExport {
    /// JavaScript's `encodeURIComponent`.
    package static func encodeURIComponent(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "!"), UInt8(ascii: "~"), UInt8(ascii: "*"),
                UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += String(format: "%%%02X", b)
            }
        }
        return out
    }

    /// The Storage emulator's relative path of an object (its `StorageLayer.path`).
    package static func storagePath(bucket: String, name: String) -> String {
        var parts = name.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let last = parts.popLast() else { return bucket + "/" + encodeURIComponent(name) }
        let file = encodeURIComponent(last + (name.hasSuffix("/") ? "/" : ""))
        return ([bucket] + parts + [file]).joined(separator: "/")
    }

    /// An object's `metadata/<path>.json`.
    package static func storageMetadataJSON(_ o: StorageObject) -> JSON {
        var m: [(String, JSON)] = [
            ("name", .string(o.name)), ("bucket", .string(o.bucket)), ("contentType", .string(o.contentType)),
            ("metageneration", .number(String(o.metageneration))), ("generation", .number(String(o.generation))),
            ("storageClass", .string("STANDARD")),
        ]
        if let v = o.contentDisposition { m.append(("contentDisposition", .string(v))) }
        if let v = o.cacheControl { m.append(("cacheControl", .string(v))) }
        if let v = o.contentLanguage { m.append(("contentLanguage", .string(v))) }
        if let v = o.contentEncoding { m.append(("contentEncoding", .string(v))) }
        if !o.custom.isEmpty { m.append(("customMetadata", .object(o.custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))) }
        m += [
            ("downloadTokens", .array(o.downloadTokens.map { .string($0) })), ("etag", .string(o.etag)),
            ("timeCreated", .string(o.created.rfc3339)), ("updated", .string(o.updated.rfc3339)),
            ("size", .number(String(o.size))), ("md5Hash", .string(o.md5Base64)), ("crc32c", .string(String(o.crc32c))),
        ]
        return .object(m)
    }

    /// What an imported object keeps: its name, bucket and attributes, and the MD5 and size the
    /// bytes must match.
    package struct ImportedObject: Sendable, Equatable {
        package var bucket: String
        package var name: String
        package var attributes: ObjectAttributes
        package var md5Base64: String?
        package var size: Int64?
    }

    package static func storageObject(_ bytes: [UInt8], file: String) throws(Failure) -> ImportedObject {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw Failure("\(file) is not JSON: \(error.message)") }
        func string(_ key: String) throws(Failure) -> String? {
            guard let v = json[key], !v.isNull else { return nil }
            guard let s = v.stringValue else { throw Failure("\(file): \(key) is not a string") }
            return s
        }
        guard json.objectValue != nil, let bucket = try string("bucket"), !bucket.isEmpty, let name = try string("name"), !name.isEmpty else {
            throw Failure("\(file) has no bucket and name")
        }
        var custom: [String: String] = [:]
        if let c = json["customMetadata"], !c.isNull {
            guard let members = c.objectValue else { throw Failure("\(file): customMetadata is not an object") }
            for (k, v) in members {
                guard let s = v.stringValue else { continue }  // the emulator keeps nulls for removed keys
                custom[k] = s
            }
        }
        var tokens: [String]? = nil
        switch json["downloadTokens"] {
        case .array(let items)?:
            tokens = try items.map { v throws(Failure) in
                guard let s = v.stringValue else { throw Failure("\(file): downloadTokens holds a non-string") }
                return s
            }
        case .string(let s)?:  // older emulators kept them comma-separated
            tokens = s.split(separator: ",").map(String.init)
        case nil, .null?: break
        default: throw Failure("\(file): downloadTokens is neither a list nor a string")
        }
        var size: Int64? = nil
        switch json["size"] {
        case .number(let s)?, .string(let s)?:
            guard let n = Int64(s), n >= 0 else { throw Failure("\(file): size \(s) is not a byte count") }
            size = n
        default: break
        }
        let attributes = ObjectAttributes(
            contentType: try string("contentType"), cacheControl: try string("cacheControl"),
            contentDisposition: try string("contentDisposition"), contentEncoding: try string("contentEncoding"),
            contentLanguage: try string("contentLanguage"), custom: custom, downloadTokens: tokens)
        return ImportedObject(bucket: bucket, name: name, attributes: attributes, md5Base64: try string("md5Hash"), size: size)
    }
}
