import Foundation
import GRDB
import HearthCore
import HearthDocuments
import HearthSQLite
import Testing

/// A document store written by a build before `documents-v2-one-btree` (documents keyed by
/// (db, parent, name_key) beside a `documents_by_group` index) opens in this one: its documents
/// move to the (db, collection_id, name_key) key and every read finds them where it did.
@Suite struct SQLiteDocumentMigrationTests {
    /// The v1 schema exactly as the `documents-v1` migration created it.
    static let version1 = """
        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
        INSERT INTO grdb_migrations VALUES ('documents-v1');
        CREATE TABLE documents(
          db TEXT NOT NULL, parent TEXT NOT NULL, name_key BLOB NOT NULL, path TEXT NOT NULL,
          collection_id TEXT NOT NULL, data BLOB NOT NULL, create_us INTEGER NOT NULL, update_us INTEGER NOT NULL,
          PRIMARY KEY(db, parent, name_key)) WITHOUT ROWID;
        CREATE INDEX documents_by_group ON documents(db, collection_id, name_key);
        CREATE TABLE index_entries(
          db TEXT NOT NULL, scope TEXT NOT NULL, key BLOB NOT NULL, doc TEXT NOT NULL,
          PRIMARY KEY(db, scope, key)) WITHOUT ROWID;
        CREATE TABLE history(
          until_us INTEGER NOT NULL, db TEXT NOT NULL, path TEXT NOT NULL, data BLOB,
          create_us INTEGER, update_us INTEGER,
          PRIMARY KEY(until_us, db, path)) WITHOUT ROWID;
        CREATE TABLE index_definitions(id INTEGER PRIMARY KEY, definition TEXT NOT NULL);
        CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
        """

    /// Same-named collections at two depths (`users`, `users/alice/users`), a group across
    /// parents (`posts`), a collection with only deeper documents (`rooms`), a numeric id, and a
    /// second database.
    static let paths: [(String, String)] = [
        ("(default)", "users/alice"), ("(default)", "users/bob"), ("(default)", "users/alice/users/carol"),
        ("(default)", "users/alice/posts/p1"), ("(default)", "groups/g1/posts/p2"), ("(default)", "rooms/r1/messages/m1"),
        ("(default)", "users/__id7__"), ("other", "users/zed"),
    ]

    @Test func aVersion1StoreOpensWithItsDocumentsWhereTheyWere() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("hearth.sqlite").path
        do {
            let old = try DatabaseQueue(path: file)
            try await old.write { db in
                try db.execute(sql: Self.version1)
                for (i, (database, text)) in Self.paths.enumerated() {
                    let p = ResourcePath(parsing: text)
                    try db.execute(
                        sql: "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        arguments: [
                            database, p.parent.text, Data(IndexKey.encodePath(p)), p.text, p.collectionId,
                            Data(ValueCodec.encode(["i": .integer(Int64(i))])), 1_000 + i, 2_000 + i,
                        ])
                }
            }
            try old.close()
        }

        let store = try SQLiteDocumentStore(path: file)
        let indexes = try await store.writer.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'documents'")
        }
        #expect(!indexes.contains("documents_by_group"))

        let all = Self.paths.filter { $0.0 == "(default)" }.map { ResourcePath(parsing: $0.1) }
        let read = try await store.documents("(default)", all, at: nil)
        for (i, (p, doc)) in zip(all, read).enumerated() {
            #expect(doc?.path == p)
            #expect(doc?.fields == ["i": .integer(Int64(i))])
            #expect(doc?.createTime == Timestamp(microseconds: Int64(1_000 + i)))
            #expect(doc?.updateTime == Timestamp(microseconds: Int64(2_000 + i)))
        }
        #expect(try await store.documents("other", [ResourcePath(parsing: "users/zed")], at: nil).first??.fields == ["i": .integer(7)])

        func scan(_ scope: IndexScope, reverse: Bool = false) async throws -> [String] {
            let snapshot = try await store.snapshot(DocumentSnapshotRead(database: "(default)", scans: [DocumentScan(.documents(scope), reverse: reverse)]))
            return snapshot.scans[0].map(\.path.text)
        }
        // Name order: a numeric id before string ids.
        #expect(try await scan(.collection(ResourcePath(parsing: "users"))) == ["users/__id7__", "users/alice", "users/bob"])
        #expect(try await scan(.collection(ResourcePath(parsing: "users")), reverse: true) == ["users/bob", "users/alice", "users/__id7__"])
        #expect(try await scan(.collection(ResourcePath(parsing: "users/alice/users"))) == ["users/alice/users/carol"])
        #expect(try await scan(.group("users")) == ["users/__id7__", "users/alice", "users/alice/users/carol", "users/bob"])
        #expect(try await scan(.group("posts")) == ["groups/g1/posts/p2", "users/alice/posts/p1"])
        #expect(Set(try await scan(.descendants(ResourcePath(parsing: "users/alice")))) == ["users/alice/users/carol", "users/alice/posts/p1"])
        #expect(try await scan(.descendants(.root)).count == 7)

        #expect(try await store.collectionIds("(default)", parent: .root) == ["groups", "rooms", "users"])
        #expect(try await store.collectionIds("(default)", parent: ResourcePath(parsing: "users/alice")) == ["posts", "users"])
        #expect(try await store.collectionIds("(default)", parent: ResourcePath(parsing: "rooms/r1")) == ["messages"])
        #expect(try await store.collectionIds("(default)", parent: ResourcePath(parsing: "users/bob")) == [])
        #expect(try await store.databaseIDs() == ["(default)", "other"])
        let parents = try await store.snapshot(DocumentSnapshotRead(database: "(default)", parentsBelow: ResourcePath(parsing: "users")))
        #expect(Set(parents.parents) == [ResourcePath(parsing: "users/alice")])
        #expect(try await store.countDocuments("(default)", upTo: 100) == 7)
    }
}
