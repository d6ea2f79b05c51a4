import HearthCore
import HearthDocuments
import Foundation

/// Reads `firestore.indexes.json` as the Firebase CLI writes it.
enum IndexesFile {
    static func load(_ path: String, database: String) throws -> [IndexDefinition] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HearthError(.failedPrecondition, "Cannot read indexes file \(path).")
        }
        let json = try JSON.parse(Array(data))
        var out: [IndexDefinition] = []
        for (i, index) in (json["indexes"]?.arrayValue ?? []).enumerated() {
            guard let group = index["collectionGroup"]?.stringValue else {
                throw HearthError.invalidArgument("\(path): indexes[\(i)] has no collectionGroup.")
            }
            let scope = index["queryScope"]?.stringValue ?? "COLLECTION"
            var fields: [IndexDefinition.Field] = []
            for f in index["fields"]?.arrayValue ?? [] {
                guard let p = f["fieldPath"]?.stringValue else { throw HearthError.invalidArgument("\(path): indexes[\(i)] field without fieldPath.") }
                let path = try FieldPath(parsing: p)
                if path.isDocumentName { continue }
                if f["arrayConfig"]?.stringValue == "CONTAINS" {
                    fields.append(.init(path, .contains))
                } else {
                    fields.append(.init(path, f["order"]?.stringValue == "DESCENDING" ? .descending : .ascending))
                }
            }
            guard !fields.isEmpty else { continue }
            out.append(IndexDefinition(id: 0, database: database, collectionGroup: group, groupScope: scope == "COLLECTION_GROUP", fields: fields, automatic: false))
        }
        // Collection-group scope single-field indexes are declared as field overrides.
        for (i, override) in (json["fieldOverrides"]?.arrayValue ?? []).enumerated() {
            guard let group = override["collectionGroup"]?.stringValue, let p = override["fieldPath"]?.stringValue else {
                throw HearthError.invalidArgument("\(path): fieldOverrides[\(i)] needs collectionGroup and fieldPath.")
            }
            let field = try FieldPath(parsing: p)
            for index in override["indexes"]?.arrayValue ?? [] where index["queryScope"]?.stringValue == "COLLECTION_GROUP" {
                let mode: IndexDefinition.Mode =
                    index["arrayConfig"]?.stringValue == "CONTAINS" ? .contains : index["order"]?.stringValue == "DESCENDING" ? .descending : .ascending
                out.append(IndexDefinition(id: 0, database: database, collectionGroup: group, groupScope: true, fields: [.init(field, mode)], automatic: false))
            }
        }
        return out
    }
}
