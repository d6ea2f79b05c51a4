public import HearthCore

/// A stored document: its path within a database, its fields and its times.
public struct Document: Sendable, Equatable {
    public var path: ResourcePath
    public var fields: [String: Value]
    public var createTime: Timestamp
    public var updateTime: Timestamp

    public init(path: ResourcePath, fields: [String: Value], createTime: Timestamp, updateTime: Timestamp) {
        self.path = path
        self.fields = fields
        self.createTime = createTime
        self.updateTime = updateTime
    }

    /// The value at a field path; `__name__` yields the document's reference.
    public func value(at field: FieldPath, database: DatabaseName) -> Value? {
        if field.isDocumentName { return .reference(database.name(of: path)) }
        return Value.map(fields).value(at: field)
    }

    /// The document reduced to the given field paths (a mask / projection).
    public func masked(_ paths: [FieldPath]?) -> Document {
        guard let paths else { return self }
        var copy = self
        copy.fields = FieldMask.project(fields, paths)
        return copy
    }
}

/// Field-mask operations on maps of fields.
public enum FieldMask {
    /// Keeps only the fields named by `paths` (and their sub-fields).
    public static func project(_ fields: [String: Value], _ paths: [FieldPath]) -> [String: Value] {
        var out: [String: Value] = [:]
        for p in paths where !p.isDocumentName {
            if let v = Value.map(fields).value(at: p) { set(&out, p.segments[...], v) }
        }
        return out
    }

    /// Sets a nested field, creating intermediate maps (and replacing non-map values on the way).
    public static func set(_ m: inout [String: Value], _ path: ArraySlice<String>, _ value: Value) {
        guard let head = path.first else { return }
        if path.count == 1 {
            m[head] = value
            return
        }
        var child = m[head]?.mapValue ?? [:]
        set(&child, path.dropFirst(), value)
        m[head] = .map(child)
    }

    /// Removes a nested field if present.
    public static func remove(_ m: inout [String: Value], _ path: ArraySlice<String>) {
        guard let head = path.first else { return }
        if path.count == 1 {
            m[head] = nil
            return
        }
        guard var child = m[head]?.mapValue else { return }
        remove(&child, path.dropFirst())
        m[head] = .map(child)
    }

    /// Every leaf field path of a map (maps with content are descended into; empty maps are leaves).
    public static func leafPaths(_ m: [String: Value], prefix: [String] = []) -> [FieldPath] {
        var out: [FieldPath] = []
        for (k, v) in m {
            if case .map(let sub) = v, !sub.isEmpty, !v.isVector {
                out += leafPaths(sub, prefix: prefix + [k])
            } else {
                out.append(FieldPath(prefix + [k]))
            }
        }
        return out
    }
}
