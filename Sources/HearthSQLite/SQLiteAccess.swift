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

    /// The name keys of every document below `path` (a collection, a document or the root), at
    /// any depth: ``IndexKey/appendPath(_:descending:to:)`` writes each segment after an entry
    /// mark (0x02) and ends with an end mark (0x01), so they all start with the path's key minus
    /// its end mark, then an entry mark.
    static func keysBelow(_ path: ResourcePath) -> KeyRange {
        var prefix = IndexKey.encodePath(path)
        prefix.removeLast()  // the end mark
        prefix.append(0x02)  // another segment follows
        return KeyRange(lower: prefix, upper: IndexKey.successor(ofPrefix: prefix))
    }

    func document(_ database: String, _ path: ResourcePath) throws -> Document? {
        let stmt = try db.cachedStatement(
            sql: "SELECT data, create_us, update_us FROM documents WHERE db = ? AND collection_id = ? AND name_key = ?")
        guard let row = try Row.fetchOne(stmt, arguments: [database, path.collectionId, Self.data(IndexKey.encodePath(path))])
        else { return nil }
        return try decodeDocument(path: path, data: row[0], create: row[1], update: row[2])
    }

    /// A document's update time (nil: missing), without decoding it.
    func updateTime(_ database: String, _ path: ResourcePath) throws -> Timestamp? {
        let stmt = try db.cachedStatement(sql: "SELECT update_us FROM documents WHERE db = ? AND collection_id = ? AND name_key = ?")
        return try Int64.fetchOne(stmt, arguments: [database, path.collectionId, Self.data(IndexKey.encodePath(path))])
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

    /// The documents of a scope. The primary key is (db, collection_id, name_key): a collection
    /// group is one run of it in name order, a collection the part of its group's run below the
    /// collection's path (less documents of same-named collections deeper down, filtered by
    /// `parent`), and the descendants of a path that part of every collection id's run.
    func scanDocuments(
        _ database: String, _ scope: IndexScope, _ range: KeyRange, reverse: Bool, _ visit: (Document) throws -> Bool
    ) throws {
        switch scope {
        case .collection(let p):
            try scanCollectionID(database, p.lastSegment, range.intersection(Self.keysBelow(p)), parent: p.text, reverse: reverse, visit)
        case .group(let id):
            try scanCollectionID(database, id, range, parent: nil, reverse: reverse, visit)
        case .descendants(let parent):
            if parent.isRoot {
                let stmt = try db.cachedStatement(sql: "SELECT path, data, create_us, update_us FROM documents WHERE db = ?")
                let rows = try Row.fetchCursor(stmt, arguments: [database])
                while let row = try rows.next() {
                    let doc = try decodeDocument(path: ResourcePath(parsing: row[0]), data: row[1], create: row[2], update: row[3])
                    if try !visit(doc) { return }
                }
                return
            }
            // Unordered: each collection id's run below `parent` in turn.
            let below = Self.keysBelow(parent)
            var stopped = false
            for id in try collectionIDsInUse(database) where !stopped {
                try scanCollectionID(database, id, below, parent: nil, reverse: false) { doc in
                    stopped = try !visit(doc)
                    return !stopped
                }
            }
        }
    }

    /// The documents with one collection id whose name keys lie in `range` (and, if given, whose
    /// parent collection is `parent`), in name order.
    func scanCollectionID(
        _ database: String, _ id: String, _ range: KeyRange, parent: String?, reverse: Bool, _ visit: (Document) throws -> Bool
    ) throws {
        if range.isEmpty { return }
        let sql = "SELECT path, data, create_us, update_us FROM documents WHERE db = ? AND collection_id = ?"
            + Self.rangeSQL(range, column: "name_key") + (parent == nil ? "" : " AND parent = ?")
            + " ORDER BY name_key" + (reverse ? " DESC" : "")
        let stmt = try db.cachedStatement(sql: sql)
        var args: [any DatabaseValueConvertible] = [database, id] + Self.rangeArguments(range)
        if let parent { args.append(parent) }
        let rows = try Row.fetchCursor(stmt, arguments: StatementArguments(args))
        while let row = try rows.next() {
            let doc = try decodeDocument(path: ResourcePath(parsing: row[0]), data: row[1], create: row[2], update: row[3])
            if try !visit(doc) { return }
        }
    }

    /// Every collection id that holds a document of `database`, in byte order (a skip-scan of
    /// the primary key: one lookup per id).
    func collectionIDsInUse(_ database: String) throws -> [String] {
        let first = try db.cachedStatement(sql: "SELECT collection_id FROM documents WHERE db = ? ORDER BY collection_id LIMIT 1")
        let after = try db.cachedStatement(
            sql: "SELECT collection_id FROM documents WHERE db = ? AND collection_id > ? ORDER BY collection_id LIMIT 1")
        var ids: [String] = []
        var next = try String.fetchOne(first, arguments: [database])
        while let id = next {
            ids.append(id)
            next = try String.fetchOne(after, arguments: [database, id])
        }
        return ids
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

    /// Skip-scan, in each collection id's run, over the name keys below `parent`: each step finds
    /// the next document below it, whose path names one collection directly under `parent`, then
    /// jumps past every key below that collection (its key minus the end mark, then 0x03).
    func collectionIds(_ database: String, parent: ResourcePath) throws -> [String] {
        let below = Self.keysBelow(parent)
        guard let lower = below.lower, let upper = below.upper else { return [] }
        let depth = parent.segments.count
        let stmt = try db.cachedStatement(
            sql: "SELECT path FROM documents WHERE db = ? AND collection_id = ? AND name_key >= ? AND name_key < ? ORDER BY name_key LIMIT 1")
        var ids: [String] = []
        var seen = Set<String>()
        for collectionID in try collectionIDsInUse(database) {
            var from = lower
            while let path = try String.fetchOne(stmt, arguments: [database, collectionID, Self.data(from), Self.data(upper)]) {
                let segments = ResourcePath(parsing: path).segments
                guard segments.count > depth else { break }
                let id = segments[depth]
                if seen.insert(id).inserted { ids.append(id) }
                from = IndexKey.encodePath(parent.appending(id))
                from[from.count - 1] = 0x03  // past the end mark and every entry mark after the collection's key
            }
        }
        return ids.sorted { ValueOrdering.compareUTF8($0, $1) < 0 }
    }

    /// The document paths one level below `collection` that have documents deeper down.
    func descendantParents(_ database: String, collection: ResourcePath) throws -> [ResourcePath] {
        let below = Self.keysBelow(collection)
        guard let lower = below.lower, let upper = below.upper else { return [] }
        let stmt = try db.cachedStatement(
            sql: "SELECT path FROM documents WHERE db = ? AND collection_id = ? AND name_key >= ? AND name_key < ? AND parent != ?")
        var out = Set<ResourcePath>()
        let depth = collection.segments.count + 1
        for collectionID in try collectionIDsInUse(database) {
            let rows = try String.fetchCursor(stmt, arguments: [database, collectionID, Self.data(lower), Self.data(upper), collection.text])
            while let p = try rows.next() {
                out.insert(ResourcePath(Array(ResourcePath(parsing: p).segments.prefix(depth))))
            }
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
        if oldEntries.isEmpty {
            try insertEntries(database, entries)
        } else {
            let old = Set(oldEntries)
            let new = Set(entries)
            try deleteEntries(database, old.subtracting(new))
            try insertEntries(database, new.subtracting(old))
        }
        let stmt = try db.cachedStatement(
            sql: """
                INSERT INTO documents(db, collection_id, name_key, parent, path, data, create_us, update_us)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(db, collection_id, name_key) DO UPDATE SET data = excluded.data, update_us = excluded.update_us
                """)
        try stmt.execute(arguments: [
            database, document.path.collectionId, Self.data(IndexKey.encodePath(document.path)), document.path.parent.text,
            document.path.text, Self.data(ValueCodec.encode(document.fields)),
            document.createTime.microseconds, document.updateTime.microseconds,
        ])
    }

    func delete(_ database: String, _ path: ResourcePath, oldEntries: [IndexEntry]) throws {
        try deleteEntries(database, Set(oldEntries))
        try db.cachedStatement(sql: "DELETE FROM documents WHERE db = ? AND collection_id = ? AND name_key = ?")
            .execute(arguments: [database, path.collectionId, Self.data(IndexKey.encodePath(path))])
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

extension KeyRange {
    /// The keys in both ranges.
    func intersection(_ other: KeyRange) -> KeyRange {
        let lower: [UInt8]? =
            switch (self.lower, other.lower) {
            case (let a?, let b?): a.lexicographicallyPrecedes(b) ? b : a
            case (let a, let b): a ?? b
            }
        let upper: [UInt8]? =
            switch (self.upper, other.upper) {
            case (let a?, let b?): a.lexicographicallyPrecedes(b) ? a : b
            case (let a, let b): a ?? b
            }
        return KeyRange(lower: lower, upper: upper)
    }
}
