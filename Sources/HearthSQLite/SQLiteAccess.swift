import GRDB
import HearthCore
import HearthDocuments
import Foundation

/// Reader and writer over one GRDB connection, inside a read or write transaction.
/// All SQL uses bound parameters; statements are cached per connection.
struct SQLiteAccess {
    let db: Database

    static func data(_ bytes: [UInt8]) -> Data { Data(bytes) }

    func decodeDocument(path: ResourcePath, data: Data, create: Int64, update: Int64) throws -> Document {
        Document(
            path: path, fields: try ValueCodec.decode(Array(data)),
            createTime: Timestamp(microseconds: create), updateTime: Timestamp(microseconds: update))
    }

    func document(_ database: String, _ path: ResourcePath) throws -> Document? {
        let stmt = try db.cachedStatement(
            sql: "SELECT data, create_us, update_us FROM documents WHERE db = ? AND parent = ? AND name_key = ?")
        guard let row = try Row.fetchOne(stmt, arguments: [database, path.parent.text, Self.data(IndexKey.encodePath(path))])
        else { return nil }
        return try decodeDocument(path: path, data: row[0], create: row[1], update: row[2])
    }

    /// A document's update time (nil: missing), without decoding it.
    func updateTime(_ database: String, _ path: ResourcePath) throws -> Timestamp? {
        let stmt = try db.cachedStatement(sql: "SELECT update_us FROM documents WHERE db = ? AND parent = ? AND name_key = ?")
        return try Int64.fetchOne(stmt, arguments: [database, path.parent.text, Self.data(IndexKey.encodePath(path))])
            .map { Timestamp(microseconds: $0) }
    }

    /// The highest composite index id (15 when there is none; composite ids start at 16).
    func highestIndexID() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT MAX(id) FROM index_definitions")) ?? 15
    }

    func document(_ database: String, _ path: ResourcePath, at time: Timestamp) throws -> Document? {
        let stmt = try db.cachedStatement(
            sql: "SELECT data, create_us, update_us FROM history WHERE until_us > ? AND db = ? AND path = ? ORDER BY until_us LIMIT 1")
        if let row = try Row.fetchOne(stmt, arguments: [time.microseconds, database, path.text]) {
            guard let data: Data = row[0] else { return nil }
            return try decodeDocument(path: path, data: data, create: row[1], update: row[2])
        }
        return try document(database, path)
    }

    func pathsChanged(_ database: String, since: Timestamp) throws -> [ResourcePath] {
        let stmt = try db.cachedStatement(sql: "SELECT DISTINCT path FROM history WHERE until_us > ? AND db = ?")
        return try String.fetchAll(stmt, arguments: [since.microseconds, database]).map(ResourcePath.init(parsing:))
    }

    static func rangeSQL(_ range: KeyRange, column: String) -> String {
        var sql = ""
        if range.lower != nil { sql += " AND \(column) >= ?" }
        if range.upper != nil { sql += " AND \(column) < ?" }
        return sql
    }

    static func rangeArguments(_ range: KeyRange) -> [any DatabaseValueConvertible] {
        var args: [any DatabaseValueConvertible] = []
        if let l = range.lower { args.append(data(l)) }
        if let u = range.upper { args.append(data(u)) }
        return args
    }

    // MARK: Snapshot reads

    /// Every part of a ``DocumentSnapshotRead``, inside the caller's read transaction.
    func snapshot(_ request: DocumentSnapshotRead) throws -> DocumentSnapshot {
        let database = request.database
        let documents: [Document?]
        let scans: [[Document]]
        if let time = request.time {
            documents = try request.paths.map { try document(database, $0, at: time) }
            scans = try request.scans.map { try scan(database, $0, at: time) }
        } else {
            documents = try request.paths.map { try document(database, $0) }
            scans = try request.scans.map { try scan(database, $0) }
        }
        return DocumentSnapshot(
            documents: documents, scans: scans,
            parents: try request.parentsBelow.map { try descendantParents(database, collection: $0) } ?? [],
            lastCommitTime: request.readsLastCommitTime ? try lastCommitTime() : nil)
    }

    /// One scan now: rows one by one, each document through the filter, until the limit.
    func scan(_ database: String, _ scan: DocumentScan) throws -> [Document] {
        if scan.limit == 0 || scan.range.isEmpty { return [] }
        var out: [Document] = []
        let filter = scan.filter, limit = scan.limit
        let visit: (Document) throws -> Bool = { doc in
            if filter?(doc) ?? true { out.append(doc) }
            return limit.map { out.count < $0 } ?? true
        }
        switch scan.source {
        case .documents(let scope):
            try scanDocuments(database, scope, scan.range, reverse: scan.reverse, visit)
        case .index(let scope):
            try scanIndex(database, scope: scope, scan.range, reverse: scan.reverse) { entry in
                guard let doc = try document(database, ResourcePath(parsing: entry.document)) else { return true }
                return try visit(doc)
            }
        }
        return out
    }

    /// One document scan at a past time: the scope's documents now and those changed since
    /// (from the history), each resolved to its state at `time`, then in key order.
    func scan(_ database: String, _ scan: DocumentScan, at time: Timestamp) throws -> [Document] {
        guard case .documents(let scope) = scan.source else { throw DocumentStoreMisuse.indexScanAtPastTime }
        if scan.limit == 0 || scan.range.isEmpty { return [] }
        var paths = Set<ResourcePath>()
        try scanDocuments(database, scope, .all, reverse: false) { doc in
            paths.insert(doc.path)
            return true
        }
        paths.formUnion(try pathsChanged(database, since: time).filter(scope.contains))
        var found: [(key: [UInt8], document: Document)] = []
        for p in paths {
            let key = IndexKey.encodePath(p)
            guard scan.range.contains(key), let d = try document(database, p, at: time) else { continue }
            found.append((key, d))
        }
        found.sort { scan.reverse ? $1.key.lexicographicallyPrecedes($0.key) : $0.key.lexicographicallyPrecedes($1.key) }
        var out: [Document] = []
        for (_, d) in found where scan.filter?(d) ?? true {
            out.append(d)
            if let limit = scan.limit, out.count >= limit { break }
        }
        return out
    }

    /// How many documents a database holds, up to `limit`.
    func countDocuments(_ database: String, upTo limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        let stmt = try db.cachedStatement(sql: "SELECT COUNT(*) FROM (SELECT 1 FROM documents WHERE db = ? LIMIT ?)")
        return try Int.fetchOne(stmt, arguments: [database, limit]) ?? 0
    }

    func scanDocuments(
        _ database: String, _ scope: IndexScope, _ range: KeyRange, reverse: Bool, _ visit: (Document) throws -> Bool
    ) throws {
        let (column, value): (String, String)
        switch scope {
        case .collection(let p): (column, value) = ("parent", p.text)
        case .group(let id): (column, value) = ("collection_id", id)
        case .descendants(let parent):
            // Documents below `parent` are those whose parent collection lies below it.
            let rows: RowCursor
            if parent.isRoot {
                let stmt = try db.cachedStatement(sql: "SELECT path, data, create_us, update_us FROM documents WHERE db = ?")
                rows = try Row.fetchCursor(stmt, arguments: [database])
            } else {
                let stmt = try db.cachedStatement(
                    sql: "SELECT path, data, create_us, update_us FROM documents WHERE db = ? AND parent >= ? AND parent < ?")
                rows = try Row.fetchCursor(stmt, arguments: [database, parent.text + "/", parent.text + "0"])
            }
            while let row = try rows.next() {
                let doc = try decodeDocument(path: ResourcePath(parsing: row[0]), data: row[1], create: row[2], update: row[3])
                if try !visit(doc) { return }
            }
            return
        }
        // `column` is one of two constants above, never user input.
        let sql = "SELECT path, data, create_us, update_us FROM documents WHERE db = ? AND \(column) = ?"
            + Self.rangeSQL(range, column: "name_key") + " ORDER BY name_key" + (reverse ? " DESC" : "")
        let stmt = try db.cachedStatement(sql: sql)
        let args: [any DatabaseValueConvertible] = [database, value] + Self.rangeArguments(range)
        let rows = try Row.fetchCursor(stmt, arguments: StatementArguments(args))
        while let row = try rows.next() {
            let doc = try decodeDocument(path: ResourcePath(parsing: row[0]), data: row[1], create: row[2], update: row[3])
            if try !visit(doc) { return }
        }
    }

    func scanIndex(_ database: String, scope: String, _ range: KeyRange, reverse: Bool, _ visit: (IndexEntry) throws -> Bool) throws {
        let sql = "SELECT key, doc FROM index_entries WHERE db = ? AND scope = ?" + Self.rangeSQL(range, column: "key")
            + " ORDER BY key" + (reverse ? " DESC" : "")
        let stmt = try db.cachedStatement(sql: sql)
        let args: [any DatabaseValueConvertible] = [database, scope] + Self.rangeArguments(range)
        let rows = try Row.fetchCursor(stmt, arguments: StatementArguments(args))
        while let row = try rows.next() {
            let key: Data = row[0]
            if try !visit(IndexEntry(scope: scope, key: Array(key), document: row[1])) { return }
        }
    }

    /// Skip-scan over parent collections: each step finds the next parent collection path
    /// below `parent`; the id is its first segment. A collection's own path and the paths
    /// below it ("id/…") are not contiguous ("id-x" sorts between), so each step either moves
    /// just past an exact match or jumps over the whole "id/" range; the cursor only grows.
    func collectionIds(_ database: String, parent: ResourcePath) throws -> [String] {
        let prefix = parent.isRoot ? "" : parent.text + "/"
        let end: String? = parent.isRoot ? nil : parent.text + "0"  // '0' follows '/'
        let upper = end == nil ? "" : " AND parent < ?"
        let atLeast = try db.cachedStatement(sql: "SELECT parent FROM documents WHERE db = ? AND parent >= ?\(upper) ORDER BY parent LIMIT 1")
        let after = try db.cachedStatement(sql: "SELECT parent FROM documents WHERE db = ? AND parent > ?\(upper) ORDER BY parent LIMIT 1")
        func fetch(_ stmt: Statement, _ from: String) throws -> String? {
            try String.fetchOne(stmt, arguments: StatementArguments([database, from] + (end.map { [$0] } ?? [])))
        }
        var ids: [String] = []
        var seen = Set<[UInt8]>()
        var next = try fetch(atLeast, prefix)
        while let found = next, found.hasPrefix(prefix) {
            let rest = found.dropFirst(prefix.count)
            let id = String(rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)])
            if seen.insert(Array(id.utf8)).inserted { ids.append(id) }
            if found.utf8.elementsEqual((prefix + id).utf8) {
                next = try fetch(after, found)
            } else {
                next = try fetch(atLeast, prefix + id + "0")
            }
        }
        return ids.sorted { ValueOrdering.compareUTF8($0, $1) < 0 }
    }

    func hasDescendants(_ database: String, _ path: ResourcePath) throws -> Bool {
        let stmt = try db.cachedStatement(sql: "SELECT 1 FROM documents WHERE db = ? AND parent >= ? AND parent < ? LIMIT 1")
        return try Bool.fetchOne(stmt, arguments: [database, path.text + "/", path.text + "0"]) != nil
    }

    func descendantParents(_ database: String, collection: ResourcePath) throws -> [ResourcePath] {
        let stmt = try db.cachedStatement(sql: "SELECT DISTINCT parent FROM documents WHERE db = ? AND parent >= ? AND parent < ?")
        var out = Set<ResourcePath>()
        let depth = collection.segments.count + 1
        for p in try String.fetchAll(stmt, arguments: [database, collection.text + "/", collection.text + "0"]) {
            out.insert(ResourcePath(Array(ResourcePath(parsing: p).segments.prefix(depth))))
        }
        return Array(out)
    }

    func indexDefinitions() throws -> [IndexDefinition] {
        let decoder = JSONDecoder()
        return try String.fetchAll(db, sql: "SELECT definition FROM index_definitions ORDER BY id").map {
            try decoder.decode(IndexDefinition.self, from: Data($0.utf8))
        }
    }

    func lastCommitTime() throws -> Timestamp? {
        try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'last_commit_us'").map { Timestamp(microseconds: $0) }
    }

    // MARK: Writer

    /// Stores one mutation of a commit at `time`: the document (or its removal), its index
    /// entries and the history row of the state it replaces.
    func apply(_ mutation: DocumentMutation, _ database: String, time: Timestamp) throws {
        if let document = mutation.document {
            try put(database, document, entries: mutation.entries, oldEntries: mutation.oldEntries)
        } else {
            try delete(database, mutation.path, oldEntries: mutation.oldEntries)
        }
        try recordHistory(database, mutation.path, previous: mutation.previous, until: time)
    }

    func put(_ database: String, _ document: Document, entries: [IndexEntry], oldEntries: [IndexEntry]) throws {
        let old = Set(oldEntries)
        let new = Set(entries)
        try deleteEntries(database, old.subtracting(new))
        try insertEntries(database, new.subtracting(old))
        let stmt = try db.cachedStatement(
            sql: """
                INSERT INTO documents(db, parent, name_key, path, collection_id, data, create_us, update_us)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(db, parent, name_key) DO UPDATE SET data = excluded.data, update_us = excluded.update_us
                """)
        try stmt.execute(arguments: [
            database, document.path.parent.text, Self.data(IndexKey.encodePath(document.path)), document.path.text,
            document.path.collectionId, Self.data(ValueCodec.encode(document.fields)),
            document.createTime.microseconds, document.updateTime.microseconds,
        ])
    }

    func delete(_ database: String, _ path: ResourcePath, oldEntries: [IndexEntry]) throws {
        try deleteEntries(database, Set(oldEntries))
        try db.cachedStatement(sql: "DELETE FROM documents WHERE db = ? AND parent = ? AND name_key = ?")
            .execute(arguments: [database, path.parent.text, Self.data(IndexKey.encodePath(path))])
    }

    func deleteEntries(_ database: String, _ entries: Set<IndexEntry>) throws {
        guard !entries.isEmpty else { return }
        let stmt = try db.cachedStatement(sql: "DELETE FROM index_entries WHERE db = ? AND scope = ? AND key = ?")
        for e in entries { try stmt.execute(arguments: [database, e.scope, Self.data(e.key)]) }
    }

    func insertEntries<S: Sequence>(_ database: String, _ entries: S) throws where S.Element == IndexEntry {
        let stmt = try db.cachedStatement(sql: "INSERT OR REPLACE INTO index_entries(db, scope, key, doc) VALUES (?, ?, ?, ?)")
        for e in entries { try stmt.execute(arguments: [database, e.scope, Self.data(e.key), e.document]) }
    }

    func recordHistory(_ database: String, _ path: ResourcePath, previous: Document?, until: Timestamp) throws {
        let stmt = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO history(until_us, db, path, data, create_us, update_us) VALUES (?, ?, ?, ?, ?, ?)")
        try stmt.execute(arguments: [
            until.microseconds, database, path.text, previous.map { Self.data(ValueCodec.encode($0.fields)) },
            previous?.createTime.microseconds, previous?.updateTime.microseconds,
        ])
    }

    func saveIndexDefinition(_ definition: IndexDefinition) throws {
        let json = String(decoding: try JSONEncoder().encode(definition), as: UTF8.self)
        try db.execute(sql: "INSERT INTO index_definitions(id, definition) VALUES (?, ?)", arguments: [Int64(definition.id), json])
    }

    /// Commits may reach the store slightly out of time order (they take their times before
    /// planning), so the stored last commit time only ever grows.
    func raiseLastCommitTime(_ time: Timestamp) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO meta(key, value) VALUES ('last_commit_us', ?)
                ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)
                """
        ).execute(arguments: [time.microseconds])
    }

    func clearDatabase(_ database: String) throws {
        for table in ["documents", "index_entries", "history"] {
            // Table names are constants.
            try db.execute(sql: "DELETE FROM \(table) WHERE db = ?", arguments: [database])
        }
    }
}
