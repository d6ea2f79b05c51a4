public import HearthCore
public import HearthDocuments
import PostgresNIO

extension PostgresDocumentStore {
    // MARK: Snapshots

    public func snapshot(_ request: DocumentSnapshotRead) async throws -> DocumentSnapshot {
        if request.time != nil, request.scans.contains(where: { if case .index = $0.source { true } else { false } }) {
            throw DocumentStoreMisuse.indexScanAtPastTime
        }
        return try await backend.snapshot { session in
            let database = request.database
            var documents: [Document?] = []
            var scans: [[Document]] = []
            if let time = request.time {
                documents = try await Self.documents(session, database, request.paths, at: time)
                for scan in request.scans { scans.append(try await Self.scan(session, database, scan, at: time)) }
            } else {
                documents = try await Self.currentDocuments(session, database, request.paths)
                for scan in request.scans { scans.append(try await Self.scan(session, database, scan)) }
            }
            var parents: [ResourcePath] = []
            if let collection = request.parentsBelow { parents = try await Self.descendantParents(session, database, collection: collection) }
            return DocumentSnapshot(
                documents: documents, scans: scans, parents: parents,
                lastCommitTime: request.readsLastCommitTime ? try await Self.lastCommitTime(session) : nil)
        }
    }

    public func documents(_ database: String, _ paths: [ResourcePath], at time: Timestamp?) async throws -> [Document?] {
        guard !paths.isEmpty else { return [] }
        if let time {
            return try await backend.snapshot { session in try await Self.documents(session, database, paths, at: time) }
        }
        // One statement: one snapshot.
        return try await backend.read { session in try await Self.currentDocuments(session, database, paths) }
    }

    /// The documents at `paths` as they were at `time`: the state the first history row after
    /// `time` replaced, or the current one when nothing changed since.
    static func documents(_ session: PostgresSession, _ database: String, _ paths: [ResourcePath], at time: Timestamp) async throws -> [Document?] {
        guard !paths.isEmpty else { return [] }
        let rows = try await session.rows(
            """
            SELECT DISTINCT ON (h.path) h.path, h.data, h.create_us, h.update_us
            FROM unnest(\(paths.map(\.text))::text[]) AS w(path)
            JOIN firestore_history AS h ON h.db = \(database) AND h.path_hash = sha256(convert_to(w.path, 'UTF8')) AND h.path = w.path
                AND h.until_us > \(time.microseconds)
            ORDER BY h.path, h.until_us
            """)
        let then = try historyStates(rows)
        let unchanged = paths.filter { then[$0.text] == nil }
        var now: [String: Document] = [:]
        for case let doc? in try await currentDocuments(session, database, unchanged) { now[doc.path.text] = doc }
        return paths.map { path in
            if let state = then[path.text] { return state }
            return now[path.text]
        }
    }

    /// Rows of `path, data, create_us, update_us` from the history, by path: the state (nil: missing).
    static func historyStates(_ rows: [PostgresRow]) throws -> [String: Document?] {
        var states: [String: Document?] = [:]
        for row in rows {
            let (path, data, create, update) = try row.decode((String, ByteBuffer?, Int64?, Int64?).self)
            if let data, let create, let update {
                states[path] = try decodeDocument(path: ResourcePath(parsing: path), data: data, create: create, update: update)
            } else {
                states[path] = .some(nil)
            }
        }
        return states
    }

    // MARK: Scans

    /// Rows to ask for in the next page: the documents still wanted when there is no filter (an
    /// index scan may find some missing and ask again), a few more when a filter may drop some,
    /// never more than ``pageSize``.
    static func nextPageSize(_ scan: DocumentScan, kept: Int) -> Int {
        guard let limit = scan.limit else { return pageSize }
        let remaining = max(limit - kept, 1)
        return min(pageSize, scan.filter == nil ? remaining : max(remaining, 32))
    }

    /// One scan now: pages of rows inside the caller's snapshot, each document through the
    /// filter in order, until `limit` documents were kept.
    static func scan(_ session: PostgresSession, _ database: String, _ scan: DocumentScan) async throws -> [Document] {
        if scan.limit == 0 || scan.range.isEmpty { return [] }
        var out: [Document] = []
        /// Keeps `doc` if it passes; false once the limit is reached.
        func keep(_ doc: Document) -> Bool {
            if scan.filter?(doc) ?? true { out.append(doc) }
            return scan.limit.map { out.count < $0 } ?? true
        }
        switch scan.source {
        case .documents(let scope):
            var cursor = DocumentCursor(database: database, scope: scope, range: scan.range, reverse: scan.reverse)
            cursor.pageSize = nextPageSize(scan, kept: 0)
            while let page = try await cursor.nextPage(session) {
                for row in page where !keep(row.document) { return out }
                cursor.pageSize = nextPageSize(scan, kept: out.count)
            }
        case .index(let scope):
            var cursor = EntryCursor(database: database, scope: scope, range: scan.range, reverse: scan.reverse)
            cursor.pageSize = nextPageSize(scan, kept: 0)
            while let entries = try await cursor.nextPage(session) {
                // The page's documents in one statement; an entry whose document is missing is skipped.
                let docs = try await currentDocuments(session, database, entries.map { ResourcePath(parsing: $0) })
                for case let doc? in docs where !keep(doc) { return out }
                cursor.pageSize = nextPageSize(scan, kept: out.count)
            }
        }
        return out
    }

    /// One document scan at a past time: the documents changed since `time` (their states then,
    /// from the history) merged in key order into a paged scan of the others as they are now.
    static func scan(_ session: PostgresSession, _ database: String, _ scan: DocumentScan, at time: Timestamp) async throws -> [Document] {
        guard case .documents(let scope) = scan.source else { throw DocumentStoreMisuse.indexScanAtPastTime }
        if scan.limit == 0 || scan.range.isEmpty { return [] }
        let rows: [PostgresRow]
        let below: ResourcePath? =
            switch scope {
            case .collection(let parent): parent
            case .descendants(let parent): parent.isRoot ? nil : parent
            case .group: nil
            }
        switch below {
        case let parent?:
            // Paths below the collection (or document): "p/…", which sort before "p0"; each bound
            // on `path` with the one it implies on `ipath` (its first 256 characters), which is indexed.
            let lower = parent.text + "/", upper = parent.text + "0"
            rows = try await session.rows(
                """
                SELECT DISTINCT ON (path) path, data, create_us, update_us FROM firestore_history
                WHERE db = \(database) AND until_us > \(time.microseconds)
                    AND ipath >= left(\(lower), 256) AND ipath <= left(\(upper), 256) AND path >= \(lower) AND path < \(upper)
                ORDER BY path, until_us
                """)
        default:
            rows = try await session.rows(
                """
                SELECT DISTINCT ON (path) path, data, create_us, update_us FROM firestore_history
                WHERE db = \(database) AND until_us > \(time.microseconds) ORDER BY path, until_us
                """)
        }
        var changed = Set<String>()
        var then: [(key: [UInt8], document: Document)] = []
        for (text, state) in try historyStates(rows) {
            let path = ResourcePath(parsing: text)
            guard scope.contains(path) else { continue }
            changed.insert(text)
            let key = IndexKey.encodePath(path)
            if let state, scan.range.contains(key) { then.append((key, state)) }
        }
        let reverse = scan.reverse
        func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool { reverse ? b.lexicographicallyPrecedes(a) : a.lexicographicallyPrecedes(b) }
        then.sort { precedes($0.key, $1.key) }

        var out: [Document] = []
        func keep(_ doc: Document) -> Bool {
            if scan.filter?(doc) ?? true { out.append(doc) }
            return scan.limit.map { out.count < $0 } ?? true
        }
        var next = 0
        var cursor = DocumentCursor(database: database, scope: scope, range: scan.range, reverse: reverse)
        while let page = try await cursor.nextPage(session) {
            for row in page where !changed.contains(row.document.path.text) {
                while next < then.count, precedes(then[next].key, row.key) {
                    if !keep(then[next].document) { return out }
                    next += 1
                }
                if !keep(row.document) { return out }
            }
        }
        while next < then.count {
            if !keep(then[next].document) { return out }
            next += 1
        }
        return out
    }

    // MARK: Counts, collection ids, parents

    public func countDocuments(_ database: String, upTo limit: Int) async throws -> Int {
        guard limit > 0 else { return 0 }
        return try await backend.read { session in
            Int(
                try await session.value(
                    "SELECT count(*) FROM (SELECT 1 FROM firestore_documents WHERE db = \(database) LIMIT \(Int64(limit))) AS t", as: Int64.self)
                    ?? 0)
        }
    }

    /// Skip-scan over parent collections, as the SQLite store does: each step finds the next
    /// parent collection path below `parent`; the id is its first segment. A collection's own
    /// path and the paths below it ("id/…") are not contiguous ("id-x" sorts between), so each
    /// step either moves just past an exact match or jumps over the whole "id/" range.
    public func collectionIds(_ database: String, parent: ResourcePath) async throws -> [String] {
        try await backend.snapshot { session in
            let prefix = parent.isRoot ? "" : parent.text + "/"
            let end: String? = parent.isRoot ? nil : parent.text + "0"  // '0' follows '/'
            let indexed = Self.indexedParentLength
            /// The first parent after `from` (or at it): the lowest `iparent` of the index
            /// `(db, iparent, iname)`, one probe. An `iparent` shorter than 256 characters is its
            /// rows' whole parent; one of 256 is a prefix, and the lowest parent of its rows is a
            /// second statement (which reads the rows sharing that prefix).
            func first(after from: String, inclusive: Bool) async throws -> String? {
                // Constant fragments; values bound.
                func bounded(_ select: String, iparent: String?) -> BoundSQL {
                    var sql = BoundSQL()
                    sql.text = select + " FROM firestore_documents WHERE db = " + sql.bind(database)
                    if let iparent { sql.text += " AND iparent = " + sql.bind(iparent) }
                    let fromParameter = sql.bind(from)
                    if !inclusive, from.unicodeScalars.count < indexed {
                        // Shorter than the prefix: parent > from exactly when iparent > from.
                        sql.text += " AND iparent > " + fromParameter
                    } else {
                        sql.text += " AND iparent >= left(" + fromParameter + ", 256)"
                        sql.text += (inclusive ? " AND parent >= " : " AND parent > ") + fromParameter
                    }
                    if let end {
                        let endParameter = sql.bind(end)
                        sql.text += " AND iparent <= left(" + endParameter + ", 256) AND parent < " + endParameter
                    }
                    return sql
                }
                var sql = bounded("SELECT iparent, parent", iparent: nil)
                sql.text += " ORDER BY iparent LIMIT 1"
                guard let row = try await session.rows(sql.query).first else { return nil }
                let (iparent, parent) = try row.decode((String, String).self)
                guard iparent.unicodeScalars.count >= indexed else { return parent }
                return try await session.value(bounded("SELECT min(parent)", iparent: iparent).query, as: String?.self) ?? parent
            }
            var ids: [String] = []
            var seen = Set<[UInt8]>()
            var next = try await first(after: prefix, inclusive: true)
            while let found = next, found.hasPrefix(prefix) {
                let rest = found.dropFirst(prefix.count)
                let id = String(rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)])
                if seen.insert(Array(id.utf8)).inserted { ids.append(id) }
                if found.utf8.elementsEqual((prefix + id).utf8) {
                    next = try await first(after: found, inclusive: false)
                } else {
                    next = try await first(after: prefix + id + "0", inclusive: true)
                }
            }
            return ids.sorted { ValueOrdering.compareUTF8($0, $1) < 0 }
        }
    }

    /// The document paths one level below `collection` that have documents under them.
    static func descendantParents(_ session: PostgresSession, _ database: String, collection: ResourcePath) async throws -> [ResourcePath] {
        let rows = try await session.rows(
            """
            SELECT DISTINCT parent FROM firestore_documents
            WHERE db = \(database) AND iparent >= left(\(collection.text + "/"), 256) AND iparent <= left(\(collection.text + "0"), 256)
                AND parent >= \(collection.text + "/") AND parent < \(collection.text + "0")
            """)
        var out = Set<ResourcePath>()
        let depth = collection.segments.count + 1
        for row in rows {
            out.insert(ResourcePath(Array(ResourcePath(parsing: try row.decode(String.self)).segments.prefix(depth))))
        }
        return Array(out)
    }
}

/// A statement assembled from constant fragments and `$n` placeholders, every value bound.
struct BoundSQL {
    var text = ""
    var binds = PostgresBindings()

    /// Binds `value` and returns its placeholder.
    mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: binds) }
}

/// The documents of a scope in pages, by keyset pagination inside the caller's transaction:
/// each page starts after the last key of the one before, so it costs the rows it returns.
/// `.collection` and `.group` scopes are in name key order (or reversed); `.descendants` in
/// (parent, name key) order, which is as good as any for an unordered scan.
struct DocumentCursor {
    let database: String
    let scope: IndexScope
    let range: KeyRange
    let reverse: Bool
    var pageSize = PostgresDocumentStore.pageSize
    /// The last row of the previous page: its parent, name key and their indexed prefixes.
    var last: (iparent: String, iname: ByteBuffer, parent: String, nameKey: ByteBuffer)?
    var done = false

    init(database: String, scope: IndexScope, range: KeyRange, reverse: Bool) {
        self.database = database
        self.scope = scope
        self.range = range
        self.reverse = reverse
    }

    /// The next page of documents with their name keys (nil: no more).
    mutating func nextPage(_ session: PostgresSession) async throws -> [(key: [UInt8], document: Document)]? {
        guard !done else { return nil }
        // Every fragment below is a constant of this type; values are bound.
        var sql = BoundSQL()
        // Each condition on a full value (parent, collection id, name key) comes with the one it
        // implies on the indexed column (its hash, or its prefix: see migration 6).
        sql.text = "SELECT path, data, create_us, update_us, iparent, iname, parent, name_key FROM firestore_documents WHERE db = " + sql.bind(database)
        let descending = reverse ? " DESC" : ""
        /// The range and the last key, on `name_key` and `iname`; then the order.
        func byName() {
            if let lower = range.lower {
                sql.text += " AND iname >= " + sql.bind(PostgresDocumentStore.indexedKey(lower)) + " AND name_key >= " + sql.bind(ByteBuffer(bytes: lower))
            }
            if let upper = range.upper {
                sql.text += " AND iname <= " + sql.bind(PostgresDocumentStore.indexedKey(upper)) + " AND name_key < " + sql.bind(ByteBuffer(bytes: upper))
            }
            if let last {
                sql.text += (reverse ? " AND iname <= " : " AND iname >= ") + sql.bind(last.iname)
                sql.text += (reverse ? " AND name_key < " : " AND name_key > ") + sql.bind(last.nameKey)
            }
            sql.text += " ORDER BY iname" + descending + ", name_key" + descending
        }
        switch scope {
        case .collection(let parent):
            let parentParameter = sql.bind(parent.text)
            sql.text += " AND parent_hash = decode(md5(" + parentParameter + "), 'hex') AND parent = " + parentParameter
            byName()
        case .group(let id):
            let idParameter = sql.bind(id)
            sql.text += " AND group_hash = decode(md5(" + idParameter + "), 'hex') AND collection_id = " + idParameter
            byName()
        case .descendants(let parent):
            // Documents below `parent` are those whose parent collection lies below it ("p/…" sorts before "p0").
            if !parent.isRoot {
                let lower = sql.bind(parent.text + "/"), upper = sql.bind(parent.text + "0")
                sql.text += " AND iparent >= left(" + lower + ", 256) AND iparent <= left(" + upper + ", 256)"
                sql.text += " AND parent >= " + lower + " AND parent < " + upper
            }
            if let last {
                let iparent = sql.bind(last.iparent), iname = sql.bind(last.iname)
                sql.text += " AND (iparent, iname) >= (" + iparent + ", " + iname + ")"
                sql.text += " AND (iparent, iname, parent, name_key) > (" + iparent + ", " + iname + ", " + sql.bind(last.parent) + ", " + sql.bind(last.nameKey) + ")"
            }
            sql.text += " ORDER BY iparent, iname, parent, name_key"
        }
        sql.text += " LIMIT " + sql.bind(Int64(pageSize))
        let rows = try await session.rows(sql.query)
        if rows.count < pageSize { done = true }
        guard !rows.isEmpty else { return nil }
        var page: [(key: [UInt8], document: Document)] = []
        page.reserveCapacity(rows.count)
        for row in rows {
            let (path, data, create, update, iparent, iname, parent, nameKey) = try row.decode(
                (String, ByteBuffer, Int64, Int64, String, ByteBuffer, String, ByteBuffer).self)
            page.append(
                (
                    Array(nameKey.readableBytesView),
                    try PostgresDocumentStore.decodeDocument(path: ResourcePath(parsing: path), data: data, create: create, update: update)
                ))
            last = (iparent, iname, parent, nameKey)
        }
        return page
    }
}

/// The entries of an index scope in pages (key order or reversed), by keyset pagination:
/// each page is the paths of the entries' documents.
struct EntryCursor {
    let database: String
    let scope: String
    let range: KeyRange
    let reverse: Bool
    var pageSize = PostgresDocumentStore.pageSize
    var last: ByteBuffer?
    var done = false

    init(database: String, scope: String, range: KeyRange, reverse: Bool) {
        self.database = database
        self.scope = scope
        self.range = range
        self.reverse = reverse
    }

    mutating func nextPage(_ session: PostgresSession) async throws -> [String]? {
        guard !done else { return nil }
        // Every fragment below is a constant of this type; values are bound.
        var sql = BoundSQL()
        // Each condition on `key` comes with the one it implies on `ikey`, which the index holds.
        let scopeParameter = sql.bind(scope)
        sql.text = "SELECT key, doc FROM firestore_index_entries WHERE db = " + sql.bind(database)
        sql.text += " AND scope_hash = decode(md5(" + scopeParameter + "), 'hex') AND scope = " + scopeParameter
        if let lower = range.lower {
            sql.text += " AND ikey >= " + sql.bind(PostgresDocumentStore.indexedKey(lower)) + " AND key >= " + sql.bind(ByteBuffer(bytes: lower))
        }
        if let upper = range.upper {
            sql.text += " AND ikey <= " + sql.bind(PostgresDocumentStore.indexedKey(upper)) + " AND key < " + sql.bind(ByteBuffer(bytes: upper))
        }
        if let last {
            let lastBytes = Array(last.readableBytesView)
            sql.text += (reverse ? " AND ikey <= " : " AND ikey >= ") + sql.bind(PostgresDocumentStore.indexedKey(lastBytes))
            sql.text += (reverse ? " AND key < " : " AND key > ") + sql.bind(last)
        }
        let descending = reverse ? " DESC" : ""
        sql.text += " ORDER BY ikey" + descending + ", key" + descending + " LIMIT " + sql.bind(Int64(pageSize))
        let rows = try await session.rows(sql.query)
        if rows.count < pageSize { done = true }
        guard !rows.isEmpty else { return nil }
        var paths: [String] = []
        paths.reserveCapacity(rows.count)
        for row in rows {
            let (key, doc) = try row.decode((ByteBuffer, String).self)
            paths.append(doc)
            last = key
        }
        return paths
    }
}
