import HearthCore
import HearthStorage
import Foundation

/// Object metadata as Firebase Storage's v0 API returns it.
enum StorageJSON {
    static func time(_ t: Timestamp) -> String {
        Timestamp(seconds: t.seconds, nanos: t.nanos - t.nanos % 1_000_000).rfc3339
    }

    static func v0(_ o: StorageObject) -> JSON {
        var m: [(String, JSON)] = [
            ("name", .string(o.name)), ("bucket", .string(o.bucket)), ("generation", .string(String(o.generation))),
            ("metageneration", .string(String(o.metageneration))), ("contentType", .string(o.contentType)),
            ("timeCreated", .string(time(o.created))), ("updated", .string(time(o.updated))), ("storageClass", .string("STANDARD")),
            ("size", .string(String(o.size))), ("md5Hash", .string(o.md5Base64)), ("crc32c", .string(o.crc32cBase64)),
            ("etag", .string(o.etag)), ("downloadTokens", .string(o.downloadTokens.joined(separator: ","))),
            ("contentEncoding", .string(o.contentEncoding ?? "identity")),
            ("contentDisposition", .string(o.contentDisposition ?? "inline")),
        ]
        if let l = o.contentLanguage { m.append(("contentLanguage", .string(l))) }
        if let c = o.cacheControl { m.append(("cacheControl", .string(c))) }
        if !o.custom.isEmpty { m.append(("metadata", .object(o.custom.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))) }
        return .object(m)
    }

    /// Upload metadata (`contentType`, `cacheControl`, …, `metadata{}`) from a JSON body.
    static func attributes(_ json: JSON, contentType fallback: String?) throws(HearthError) -> (name: String?, ObjectAttributes) {
        guard let members = json.objectValue else { throw .invalidArgument("The metadata must be a JSON object.") }
        var a = ObjectAttributes()
        var name: String?
        for (k, v) in members {
            func string() throws(HearthError) -> String? {
                if v.isNull { return nil }
                guard let s = v.stringValue else { throw .invalidArgument("Metadata field \(k) must be a string.") }
                return s
            }
            switch k {
            case "name": name = try string()
            case "contentType": a.contentType = try string()
            case "cacheControl": a.cacheControl = try string()
            case "contentDisposition": a.contentDisposition = try string()
            case "contentEncoding": a.contentEncoding = try string()
            case "contentLanguage": a.contentLanguage = try string()
            case "metadata":
                if v.isNull { continue }
                guard let custom = v.objectValue else { throw .invalidArgument("metadata must be an object of strings.") }
                for (ck, cv) in custom {
                    if cv.isNull { continue }
                    guard let s = cv.stringValue else { throw .invalidArgument("metadata.\(ck) must be a string.") }
                    if ck == "firebaseStorageDownloadTokens" {
                        a.downloadTokens = s.split(separator: ",").map(String.init)
                    } else {
                        a.custom[ck] = s
                    }
                }
            case "bucket", "size", "md5Hash", "crc32c", "generation", "metageneration", "timeCreated", "updated", "storageClass",
                 "etag", "downloadTokens", "fullPath", "kind", "id", "selfLink", "mediaLink":
                continue  // read-only or informational; checked against the bytes where it matters
            default:
                throw .invalidArgument("Unknown metadata field \"\(k)\".")
            }
        }
        if a.contentType == nil { a.contentType = fallback }
        return (name, a)
    }

    /// A PATCH body: fields present are set, `null` clears; `metadata` merges key by key.
    static func patch(_ json: JSON) throws(HearthError) -> ObjectPatch {
        guard let members = json.objectValue else { throw .invalidArgument("The metadata must be a JSON object.") }
        var p = ObjectPatch()
        for (k, v) in members {
            func change() throws(HearthError) -> ObjectPatch.Change {
                if v.isNull { return .clear }
                guard let s = v.stringValue else { throw .invalidArgument("Metadata field \(k) must be a string or null.") }
                return .set(s)
            }
            switch k {
            case "contentType": p.contentType = try change()
            case "cacheControl": p.cacheControl = try change()
            case "contentDisposition": p.contentDisposition = try change()
            case "contentEncoding": p.contentEncoding = try change()
            case "contentLanguage": p.contentLanguage = try change()
            case "metadata":
                if v.isNull {
                    p.custom = [:]
                    p.replaceCustom = true
                    continue
                }
                guard let custom = v.objectValue else { throw .invalidArgument("metadata must be an object.") }
                var m: [String: String?] = [:]
                for (ck, cv) in custom {
                    if cv.isNull { m[ck] = .some(nil); continue }
                    guard let s = cv.stringValue else { throw .invalidArgument("metadata.\(ck) must be a string or null.") }
                    if ck == "firebaseStorageDownloadTokens" { p.downloadTokens = s.split(separator: ",").map(String.init) } else { m[ck] = s }
                }
                p.custom = m
            case "name", "bucket", "size", "md5Hash", "crc32c", "generation", "metageneration", "timeCreated", "updated",
                 "storageClass", "etag", "downloadTokens", "fullPath":
                continue
            default:
                throw .invalidArgument("Unknown metadata field \"\(k)\".")
            }
        }
        return p
    }
}
