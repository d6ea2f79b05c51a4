public import HearthCore

extension RulesValue {
    /// A document field value as rules see it. Integers stay `int`, doubles `float`,
    /// geo points become `latlng`, arrays `list`, and a reference
    /// (`projects/p/databases/d/documents/c/id`) becomes the path `/databases/d/documents/c/id`.
    public init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .boolean(let b): self = .bool(b)
        case .integer(let i): self = .int(i)
        case .double(let d): self = .float(d)
        case .timestamp(let t): self = .timestamp(t)
        case .string(let s): self = .string(s)
        case .bytes(let b): self = .bytes(b)
        case .reference(let name): self = .path(RulesValue.path(fromReference: name))
        case .geoPoint(let la, let lo): self = .latlng(latitude: la, longitude: lo)
        case .array(let a): self = .list(a.map(RulesValue.init))
        case .map(let m): self = .map(RulesValue.fields(m))
        }
    }

    /// Converts document fields.
    public static func fields(_ m: [String: Value]) -> [String: RulesValue] {
        var out: [String: RulesValue] = [:]
        out.reserveCapacity(m.count)
        for (k, v) in m { out[k] = RulesValue(v) }
        return out
    }

    /// `projects/p/databases/d/documents/a/b` → `/databases/d/documents/a/b`.
    public static func path(fromReference name: String) -> RulesPath {
        var segs = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if segs.count >= 2, segs[0] == "projects" { segs.removeFirst(2) }
        return RulesPath(segs)
    }

    /// The Firestore value, where one exists. Paths of documents become references in
    /// `project`; other paths become strings. Sets become arrays. Durations and map diffs
    /// have no Firestore form (nil).
    public func toValue(project: String) -> Value? {
        switch self {
        case .null: return .null
        case .bool(let b): return .boolean(b)
        case .int(let i): return .integer(i)
        case .float(let d): return .double(d)
        case .string(let s): return .string(s)
        case .bytes(let b): return .bytes(b)
        case .timestamp(let t): return .timestamp(t)
        case .latlng(let a, let o): return .geoPoint(latitude: a, longitude: o)
        case .path(let p):
            if p.firestoreDocument != nil { return .reference("projects/\(project)/" + p.segments.joined(separator: "/")) }
            return .string(p.description)
        case .list(let l):
            var out: [Value] = []
            for e in l {
                guard let v = e.toValue(project: project) else { return nil }
                out.append(v)
            }
            return .array(out)
        case .set(let s): return RulesValue.list(s.elements).toValue(project: project)
        case .map(let m):
            var out: [String: Value] = [:]
            for (k, e) in m {
                guard let v = e.toValue(project: project) else { return nil }
                out[k] = v
            }
            return .map(out)
        case .duration, .mapDiff: return nil
        }
    }

    /// The value of a Firestore document as `resource`/`get()` return it: `data`, `id`, and
    /// `__name__` (the document's full path).
    public static func firestoreResource(database: String, path: ResourcePath, data: [String: Value]) -> RulesValue {
        .map([
            "data": .map(fields(data)),
            "id": .string(path.lastSegment),
            "__name__": .path(RulesPath.firestoreDocument(database: database, path: path.segments)),
        ])
    }
}

/// A Cloud Storage object as `resource` / `request.resource` show it.
public struct RulesStorageObject: Sendable {
    public var name: String
    public var bucket: String
    public var size: Int64
    public var contentType: String?
    public var metadata: [String: String]
    public var md5Hash: String?
    public var crc32c: String?
    public var etag: String?
    public var generation: Int64?
    public var metageneration: Int64?
    public var timeCreated: Timestamp?
    public var updated: Timestamp?
    public var contentDisposition: String?
    public var contentEncoding: String?
    public var contentLanguage: String?
    public var cacheControl: String?

    public init(name: String, bucket: String, size: Int64, contentType: String? = nil, metadata: [String: String] = [:],
                md5Hash: String? = nil, crc32c: String? = nil, etag: String? = nil, generation: Int64? = nil,
                metageneration: Int64? = nil, timeCreated: Timestamp? = nil, updated: Timestamp? = nil,
                contentDisposition: String? = nil, contentEncoding: String? = nil, contentLanguage: String? = nil,
                cacheControl: String? = nil) {
        self.name = name
        self.bucket = bucket
        self.size = size
        self.contentType = contentType
        self.metadata = metadata
        self.md5Hash = md5Hash
        self.crc32c = crc32c
        self.etag = etag
        self.generation = generation
        self.metageneration = metageneration
        self.timeCreated = timeCreated
        self.updated = updated
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.contentLanguage = contentLanguage
        self.cacheControl = cacheControl
    }

    /// The map rules see. Properties that are not set are absent (reading them errors), as
    /// for `request.resource`, which has no generation, etag or times.
    public var rulesValue: RulesValue {
        var m: [String: RulesValue] = [
            "name": .string(name), "bucket": .string(bucket), "size": .int(size),
            "metadata": .map(metadata.mapValues { .string($0) }),
        ]
        func put(_ k: String, _ v: String?) { if let v { m[k] = .string(v) } }
        put("contentType", contentType)
        put("md5Hash", md5Hash)
        put("crc32c", crc32c)
        put("etag", etag)
        put("contentDisposition", contentDisposition)
        put("contentEncoding", contentEncoding)
        put("contentLanguage", contentLanguage)
        put("cacheControl", cacheControl)
        if let generation { m["generation"] = .int(generation) }
        if let metageneration { m["metageneration"] = .int(metageneration) }
        if let timeCreated { m["timeCreated"] = .timestamp(timeCreated) }
        if let updated { m["updated"] = .timestamp(updated) }
        return .map(m)
    }
}
