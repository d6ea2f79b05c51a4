public import HearthCore

/// A composite index: Firestore's `indexes` entry of `firestore.indexes.json`.
public struct IndexDefinition: Sendable, Hashable, Codable {
    public enum Mode: String, Sendable, Hashable, Codable {
        case ascending = "ASCENDING", descending = "DESCENDING", contains = "CONTAINS"
    }

    public struct Field: Sendable, Hashable, Codable {
        public var path: FieldPath
        public var mode: Mode
        public init(_ path: FieldPath, _ mode: Mode) {
            self.path = path
            self.mode = mode
        }

        enum CodingKeys: String, CodingKey { case fieldPath, mode }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            path = try FieldPath(parsing: try c.decode(String.self, forKey: .fieldPath))
            mode = try c.decode(Mode.self, forKey: .mode)
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(path.canonical, forKey: .fieldPath)
            try c.encode(mode, forKey: .mode)
        }
    }

    /// Index ids 1–4 are the built-in single-field indexes; composite ids start at 16.
    public var id: UInt32
    public var database: String
    public var collectionGroup: String
    public var groupScope: Bool
    public var fields: [Field]
    /// `true` when Hearth created it on first use rather than it being declared.
    public var automatic: Bool

    public init(id: UInt32, database: String, collectionGroup: String, groupScope: Bool, fields: [Field], automatic: Bool) {
        self.id = id
        self.database = database
        self.collectionGroup = collectionGroup
        self.groupScope = groupScope
        self.fields = fields
        self.automatic = automatic
    }

    /// The Firebase CLI's rendering, used in logs and in the "requires an index" message.
    public var summary: String {
        "\(collectionGroup) (\(groupScope ? "COLLECTION_GROUP" : "COLLECTION")): "
            + fields.map { "\($0.path.canonical) \($0.mode.rawValue)" }.joined(separator: ", ")
    }

    public static let singleFieldAscending: UInt32 = 1
    public static let singleFieldContains: UInt32 = 2
}

/// Computes the index entries of a document.
public enum IndexEntries {
    static func prefix(_ id: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: id >> 24), UInt8(truncatingIfNeeded: id >> 16), UInt8(truncatingIfNeeded: id >> 8), UInt8(truncatingIfNeeded: id)]
    }

    /// Key prefix of the single-field index on one field: index id, then the field path.
    public static func singleFieldPrefix(_ id: UInt32, _ field: FieldPath) -> [UInt8] {
        var k = prefix(id)
        IndexKey.append(.string(field.canonical), to: &k)
        return k
    }

    /// Entries for the built-in single-field indexes (collection scope; collection-group scope
    /// single-field indexes are index definitions, as Firestore's index exemptions are).
    public static func singleField(_ doc: Document) -> [IndexEntry] {
        var out: [IndexEntry] = []
        let scopes = [IndexScope.collection(doc.path.parent).key]
        var name: [UInt8] = []
        IndexKey.appendPath(doc.path, to: &name)
        let text = doc.path.text
        func visit(_ path: [String], _ value: Value) {
            var key = singleFieldPrefix(IndexDefinition.singleFieldAscending, FieldPath(path))
            IndexKey.append(value, to: &key)
            key += name
            for s in scopes { out.append(IndexEntry(scope: s, key: key, document: text)) }
            if case .array(let elements) = value {
                var seen = Set<[UInt8]>()
                for e in elements {
                    var k = singleFieldPrefix(IndexDefinition.singleFieldContains, FieldPath(path))
                    IndexKey.append(e, to: &k)
                    guard seen.insert(k).inserted else { continue }
                    k += name
                    for s in scopes { out.append(IndexEntry(scope: s, key: k, document: text)) }
                }
            }
            if case .map(let m) = value, !value.isVector {
                for (k, v) in m { visit(path + [k], v) }
            }
        }
        for (k, v) in doc.fields { visit([k], v) }
        return out
    }

    /// Entries for one composite index (none if the document lacks one of its fields).
    public static func composite(_ doc: Document, _ def: IndexDefinition) -> [IndexEntry] {
        guard doc.path.collectionId == def.collectionGroup else { return [] }
        var keys: [[UInt8]] = [prefix(def.id)]
        let fieldsValue = Value.map(doc.fields)
        for f in def.fields {
            guard let v = fieldsValue.value(at: f.path) else { return [] }
            switch f.mode {
            case .ascending, .descending:
                for i in keys.indices { IndexKey.append(v, descending: f.mode == .descending, to: &keys[i]) }
            case .contains:
                guard case .array(let elements) = v else { return [] }
                var unique: [[UInt8]] = []
                var seen = Set<[UInt8]>()
                for e in elements {
                    let enc = IndexKey.encode(e)
                    if seen.insert(enc).inserted { unique.append(enc) }
                }
                keys = keys.flatMap { k in unique.map { k + $0 } }
            }
        }
        let lastDescending = def.fields.last?.mode == .descending
        let scope = def.groupScope ? IndexScope.group(doc.path.collectionId).key : IndexScope.collection(doc.path.parent).key
        let text = doc.path.text
        return keys.map { k in
            var key = k
            IndexKey.appendPath(doc.path, descending: lastDescending, to: &key)
            return IndexEntry(scope: scope, key: key, document: text)
        }
    }

    public static func all(_ doc: Document, _ composites: [IndexDefinition]) -> [IndexEntry] {
        var out = singleField(doc)
        for def in composites { out += composite(doc, def) }
        return out
    }
}
