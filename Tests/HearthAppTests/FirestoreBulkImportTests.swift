import Foundation
import GRDB
import HearthCore
import HearthDocuments
import HearthSQLite
import Testing

import HearthApp
@testable import HearthServer

/// `hearth import`'s bulk path (``SQLiteDocumentBulkLoad``) against the engine path (commits of
/// 500 through ``DocumentEngine``): the same export imported both ways must give the same
/// documents, index entries, history and query results.
@Suite struct FirestoreBulkImportTests {
    static let project = "demo-bulk"

    /// Documents of every value type, in two databases, with subcollections and a collection
    /// group, and values that sort differently from their paths.
    static func entities() -> [FirestoreExportFormat.Entity] {
        var out: [FirestoreExportFormat.Entity] = []
        for i in 0..<1_300 {
            let r = (i &* 7_919) % 1_000
            var fields: [String: Value] = [
                "n": .integer(Int64(r)),
                "name": .string("name-\(r % 37)"),
                "score": i % 11 == 0 ? .double(.nan) : .double(Double(r) / 7),
                "at": .timestamp(Timestamp(seconds: 1_700_000_000 + Int64(r), nanos: Int32(i % 1000) * 1000)),
                "tags": .array([.string("t\(r % 5)"), .integer(Int64(r % 3)), .string("t\(r % 5)")]),
                "info": .map(["city": .string("c\(r % 9)"), "deep": .map(["x": .boolean(i % 2 == 0), "list": .array([])])]),
            ]
            if i % 3 == 0 { fields["maybe"] = .null }
            if i % 5 == 0 { fields["bytes"] = .bytes([0, UInt8(i % 256), 0xff]) }
            if i % 7 == 0 { fields["geo"] = .geoPoint(latitude: Double(r % 90), longitude: -Double(r % 180)) }
            if i % 13 == 0 { fields["ref"] = .reference("projects/\(project)/databases/(default)/documents/items/d\(r)") }
            if i % 17 == 0 { fields["empty"] = .map([:]) }
            let database = i % 4 == 3 ? "other" : "(default)"
            let path: [String] = switch i % 3 {
            case 0: ["items", "d\(i)"]
            case 1: ["items", "d\(i - 1)", "sub", "s\(i)"]
            default: ["groups", "g\(i % 10)", "items", "x\(i)"]
            }
            out.append(.init(database: database, path: path, fields: fields))
        }
        return out
    }

    /// An export folder holding `entities` (as `hearth export` writes one).
    static func writeExport(_ root: URL, _ entities: [FirestoreExportFormat.Entity]) throws {
        var file = try FirestoreExportFile(directory: root.appendingPathComponent("firestore_export"), name: "firestore_export")
        for e in entities { try file.append(e, project: project) }
        _ = try file.finish()
        let metadata = EmulatorExport.Metadata(version: EmulatorExport.writtenVersion, paths: [.firestore: "firestore_export"])
        try Data(metadata.json.serializedBytes()).write(to: root.appendingPathComponent(EmulatorExport.metadataFile))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-bulk-\(UInt32.random(in: .min ... .max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A data directory whose (empty) document store already declares a composite index.
    static func dataDirectoryWithIndex(_ dir: URL) async throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: dir.appendingPathComponent("hearth.sqlite").path)
        let store = try SQLiteDocumentStore(writer: queue)
        let engine = try await DocumentEngine(store: store)
        for database in ["(default)", "other"] {
            try await engine.createIndex(IndexDefinition(
                id: 0, database: database, collectionGroup: "items", groupScope: true,
                fields: [.init(FieldPath(["name"]), .ascending), .init(FieldPath(["n"]), .descending)],
                automatic: false))
        }
        try queue.close()
    }

    struct Stored: Equatable {
        var documents: [String]
        var fields: [String: [String: Value]]
        var entries: [[String]]
        var history: [[String]]
        var definitions: [IndexDefinition]
        var createEqualsUpdate: Bool
        var lastCommitCoversDocuments: Bool

        static func == (a: Stored, b: Stored) -> Bool {
            a.documents == b.documents && a.entries == b.entries && a.history == b.history && a.definitions == b.definitions
                && a.createEqualsUpdate == b.createEqualsUpdate && a.lastCommitCoversDocuments == b.lastCommitCoversDocuments
                && a.fields.keys == b.fields.keys && a.fields.allSatisfy { k, v in Value.identical(v, b.fields[k] ?? [:]) }
        }
    }

    /// Everything the document store holds but times: documents, index entries, history rows.
    static func stored(_ dir: URL) throws -> Stored {
        let queue = try DatabaseQueue(path: dir.appendingPathComponent("hearth.sqlite").path)
        defer { try? queue.close() }
        return try queue.read { db in
            var fields: [String: [String: Value]] = [:]
            var documents: [String] = []
            var createEqualsUpdate = true
            var maxUpdate: Int64 = 0
            for row in try Row.fetchAll(db, sql: "SELECT db, path, data, create_us, update_us FROM documents ORDER BY db, parent, name_key") {
                let key = "\(row[0] as String)|\(row[1] as String)"
                documents.append(key)
                fields[key] = try ValueCodec.decode(Array(row[2] as Data))
                if (row[3] as Int64) != (row[4] as Int64) { createEqualsUpdate = false }
                maxUpdate = max(maxUpdate, row[4])
            }
            let entries = try Row.fetchAll(db, sql: "SELECT db, scope, hex(key), doc FROM index_entries ORDER BY db, scope, key").map {
                [$0[0] as String, $0[1] as String, $0[2] as String, $0[3] as String]
            }
            let history = try Row.fetchAll(db, sql: "SELECT db, path, data IS NULL FROM history ORDER BY db, path").map {
                [$0[0] as String, $0[1] as String, String($0[2] as Bool)]
            }
            let definitions = try String.fetchAll(db, sql: "SELECT definition FROM index_definitions ORDER BY id").map {
                try JSONDecoder().decode(IndexDefinition.self, from: Data($0.utf8))
            }
            let last = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'last_commit_us'") ?? 0
            return Stored(
                documents: documents, fields: fields, entries: entries, history: history, definitions: definitions,
                createEqualsUpdate: createEqualsUpdate, lastCommitCoversDocuments: last >= maxUpdate)
        }
    }

    static func importing(_ export: URL, into dir: URL, _ path: EmulatorExportRunner.FirestoreImport) async throws -> EmulatorExportRunner.Summary {
        var runner = EmulatorExportRunner(dataDirectory: dir, project: project)
        runner.firestoreImport = path
        return try await runner.importing(from: export, only: [.firestore]) { _ in }
    }

    @Test func theBulkPathStoresWhatTheEnginePathStores() async throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let export = root.appendingPathComponent("export")
        let entities = Self.entities()
        try Self.writeExport(export, entities)
        let engineDir = root.appendingPathComponent("engine"), bulkDir = root.appendingPathComponent("bulk")
        try await Self.dataDirectoryWithIndex(engineDir)
        try await Self.dataDirectoryWithIndex(bulkDir)

        let viaEngine = try await Self.importing(export, into: engineDir, .engine)
        let viaBulk = try await Self.importing(export, into: bulkDir, .bulk)
        #expect(viaEngine.documents == entities.count && viaBulk.documents == entities.count)
        #expect(viaBulk.databases == ["(default)", "other"])

        let a = try Self.stored(engineDir), b = try Self.stored(bulkDir)
        #expect(a.documents.count == entities.count)
        #expect(a.entries.count > entities.count * 10)
        #expect(a.entries.contains { $0[1] == "g/items" })  // the composite index's entries
        #expect(a.documents == b.documents)
        #expect(a.entries == b.entries)
        #expect(a.history == b.history)
        #expect(a.definitions == b.definitions)
        #expect(b.createEqualsUpdate && b.lastCommitCoversDocuments)
        #expect(a.fields.keys == b.fields.keys)
        #expect(a.fields.allSatisfy { k, v in Value.identical(v, b.fields[k] ?? [:]) })

        // The same query results through the engine, from the index entries.
        func run(_ dir: URL, _ database: String, _ query: Query) async throws -> [String] {
            let queue = try DatabaseQueue(path: dir.appendingPathComponent("hearth.sqlite").path)
            defer { try? queue.close() }
            let engine = try await DocumentEngine(store: try SQLiteDocumentStore(writer: queue))
            return try await engine.runQuery(DatabaseName(project: Self.project, database: database), query).documents.map(\.path.text)
        }
        let queries: [Query] = [
            Query(collectionId: "items", filter: .field(FieldPath(["n"]), .greaterThan, .integer(500)), orderBy: [.init(FieldPath(["n"]))]),
            Query(collectionId: "items", allDescendants: true, filter: .field(FieldPath(["tags"]), .arrayContains, .string("t3"))),
            Query(collectionId: "items", allDescendants: true, filter: .field(FieldPath(["name"]), .equal, .string("name-4")),
                  orderBy: [.init(FieldPath(["n"]), descending: true)], limit: 20),
            Query(collectionId: "items", orderBy: [.init(FieldPath(["info", "city"])), .init(FieldPath(["at"]), descending: true)], limit: 50),
            Query(collectionId: "sub", allDescendants: true, filter: .field(FieldPath(["score"]), .lessThan, .double(50))),
        ]
        for database in ["(default)", "other"] {
            for q in queries {
                let viaEngine = try await run(engineDir, database, q)
                #expect(!viaEngine.isEmpty)
                #expect(try await run(bulkDir, database, q) == viaEngine)
            }
        }
    }

    @Test func aBadDocumentImportsNothing() async throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        var entities = Array(Self.entities().prefix(50))
        entities.append(entities[10])  // the same document twice
        let duplicate = root.appendingPathComponent("duplicate")
        try Self.writeExport(duplicate, entities)
        let oversized = root.appendingPathComponent("oversized")
        try Self.writeExport(oversized, [.init(path: ["a", "b"], fields: ["x": .string(String(repeating: "x", count: 1_100_000))])])

        let dir = root.appendingPathComponent("data")
        try await Self.dataDirectoryWithIndex(dir)
        let before = try Self.stored(dir)
        await #expect { try await Self.importing(duplicate, into: dir, .bulk) } throws: { "\($0)".contains("appears twice") }
        await #expect { try await Self.importing(oversized, into: dir, .bulk) } throws: { "\($0)".contains("exceeds the maximum allowed size") }
        #expect(try Self.stored(dir) == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".bulk-") }
        #expect(leftovers.isEmpty)

        // A good import still works, and a second one is refused: the store holds documents.
        let good = root.appendingPathComponent("good")
        try Self.writeExport(good, Array(Self.entities().prefix(50)))
        #expect(try await Self.importing(good, into: dir, .bulk).documents == 50)
        await #expect { try await Self.importing(good, into: dir, .bulk) } throws: { "\($0)".contains("already holds Firestore documents") }
        #expect(try Self.stored(dir).documents.count == 50)
    }

    @Test func anExportReadsBackInPiecesAcrossBlocks() throws {
        // Records larger than a block and many small ones, read a megabyte at a time.
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        var entities = Self.entities()
        entities.insert(.init(path: ["big", "one"], fields: ["blob": .bytes([UInt8](repeating: 7, count: 200_000))]), at: 100)
        try Self.writeExport(root, entities)
        let runner = EmulatorExportRunner(dataDirectory: root.appendingPathComponent("unused"), project: Self.project)
        let outputs = try runner.firestoreOutputFiles(root.appendingPathComponent("firestore_export"), named: nil)
        var read: [FirestoreExportFormat.Entity] = []
        try runner.forEachFirestoreEntity(outputs) { read.append($0) }
        #expect(read.count == entities.count)
        #expect(zip(read, entities).allSatisfy { $0.database == $1.database && $0.path == $1.path && Value.identical($0.fields, $1.fields) })
    }

    @Test func aNamedDatabaseKeepsItsIdInKeysAndReferences() throws {
        let entity = FirestoreExportFormat.Entity(
            database: "other", path: ["c", "d1"],
            fields: ["ref": .reference("projects/p/databases/other/documents/c/d2"), "who": .string("other")])
        let record = FirestoreExportFormat.record(entity, project: "p")
        let back = try FirestoreExportFormat.entity(record)
        #expect(back == entity)
        // The emulator's own bytes for this document (its export endpoint, database "other").
        let emulator: [UInt8] = [
            0x6a, 0x1f, 0x6a, 0x0a, 0x64, 0x65, 0x76, 0x7e, 0x64, 0x65, 0x6d, 0x6f, 0x2d, 0x78, 0x72, 0x09, 0x0b, 0x12, 0x01, 0x63,
            0x22, 0x02, 0x64, 0x31, 0x0c, 0xba, 0x01, 0x05, 0x6f, 0x74, 0x68, 0x65, 0x72, 0x7a, 0x10, 0x1a, 0x03, 0x77, 0x68, 0x6f,
            0x20, 0x00, 0x2a, 0x07, 0x1a, 0x05, 0x6f, 0x74, 0x68, 0x65, 0x72, 0x7a, 0x29, 0x1a, 0x03, 0x72, 0x65, 0x66, 0x20, 0x00,
            0x2a, 0x20, 0x63, 0x6a, 0x0a, 0x64, 0x65, 0x76, 0x7e, 0x64, 0x65, 0x6d, 0x6f, 0x2d, 0x78, 0x73, 0x7a, 0x01, 0x63, 0x8a,
            0x01, 0x02, 0x64, 0x32, 0x74, 0xba, 0x01, 0x05, 0x6f, 0x74, 0x68, 0x65, 0x72, 0x64, 0x82, 0x01, 0x09, 0x0b, 0x12, 0x01,
            0x63, 0x22, 0x02, 0x64, 0x31, 0x0c,
        ]
        let fromEmulator = try FirestoreExportFormat.entity(emulator)
        #expect(fromEmulator.database == "other")
        #expect(fromEmulator.path == ["c", "d1"])
        #expect(fromEmulator.fields["ref"] == .reference("projects/demo-x/databases/other/documents/c/d2"))
        // Hearth writes the same key and the same reference (its properties in name order).
        let written = FirestoreExportFormat.record(fromEmulator, project: "demo-x")
        #expect(written.prefix(33) == emulator.prefix(33))
        let reference = Array(emulator[51..<94])
        #expect(written.indices.contains { written[$0...].starts(with: reference) })
    }
}
