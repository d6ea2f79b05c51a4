public import HearthCore
public import HearthDocuments
public import HearthStorage
public import Logging
import Foundation
import Synchronization

/// Runs ``LifecycleRules``: finds what they select and deletes it — storage objects first, then
/// subcollections, the matched document last, so a sweep cut short by a restart leaves the
/// document to be found and finished by the next one (every step is idempotent). Documents are
/// deleted through `DocumentEngine.commit` (the single write path) in commits of at most
/// `batchSize` writes; each rule handles at most `batchSize` matches per pass.
public struct LifecycleWorker: Sendable {
    public let rules: LifecycleRules
    public let documents: DocumentEngine
    public let database: DatabaseName
    public let objects: ObjectStore
    public let bucket: String
    let now: @Sendable () -> Timestamp
    /// Of the given uids, those that have an account (for `onAccountDeletion`); nil = such
    /// rules are skipped.
    let existingAccounts: (@Sendable ([String]) async throws -> Set<String>)?
    /// The Realtime Database, for rules that name database paths (nil = such paths are skipped).
    public let realtime: (any LifecycleDatabase)?
    /// Totals of what this worker deleted (not dry runs).
    public let metrics = LifecycleMetrics()
    let logger: Logger

    public init(
        rules: LifecycleRules, documents: DocumentEngine, database: DatabaseName, objects: ObjectStore, bucket: String,
        now: @escaping @Sendable () -> Timestamp = FileRegistry.systemNow,
        existingAccounts: (@Sendable ([String]) async throws -> Set<String>)? = nil, realtime: (any LifecycleDatabase)? = nil, logger: Logger
    ) {
        self.rules = rules
        self.documents = documents
        self.database = database
        self.objects = objects
        self.bucket = rules.bucket ?? bucket
        self.now = now
        self.existingAccounts = existingAccounts
        self.realtime = realtime
        self.logger = logger
    }

    /// What a pass would delete, or did.
    public struct Item: Sendable, Equatable, CustomStringConvertible {
        public enum Kind: String, Sendable { case document, object, database }
        public var kind: Kind
        public var name: String
        public var description: String { "\(kind.rawValue) \(name)" }
    }

    public struct Counts: Sendable, Equatable {
        public var documents = 0
        public var objects = 0
        /// Realtime Database paths.
        public var databasePaths = 0
        public var total: Int { documents + objects + databasePaths }
        public init() {}
    }

    /// One pass over every rule. With `dryRun` nothing is deleted and every item that would be is
    /// reported (bounded by the batch size per rule, like a real pass).
    public func pass(dryRun: Bool, report: (Item) -> Void = { _ in }) async throws -> Counts {
        var counts = Counts()
        let time = now()
        for rule in rules.rules {
            switch rule {
            case .cascade(let pattern, let conditions, let prefixes, let databasePatterns):
                var seen = Set<ResourcePath>()
                var matched: [(path: ResourcePath, bound: [String: String])] = []
                for condition in conditions {
                    let filter = Query.Filter.field(condition.field, Self.op(condition.op), condition.value ?? .timestamp(time))
                    for document in try await matches(pattern, filter) where seen.insert(document.path).inserted {
                        if let bound = pattern.match(document.path) { matched.append((document.path, bound)) }
                    }
                }
                // 1. Objects, several prefixes at a time.
                let prefixList = matched.flatMap { match in prefixes.compactMap { LifecycleRules.expand($0, match.bound) } }
                counts.objects += try await deletePrefixes(prefixList, dryRun: dryRun, report: report)
                // 2. Database paths.
                let databasePaths = matched.flatMap { match in databasePatterns.compactMap { $0.expand(match.bound) } }
                counts.databasePaths += try await deleteDatabasePaths(databasePaths, dryRun: dryRun, report: report)
                // 3. Documents: every tree in post-order (children before their parent), deleted in
                //    commits of `batchSize`, so a matched document goes after everything under it.
                var paths: [ResourcePath] = []
                for match in matched { try await collectTree(match.path, into: &paths) }
                for path in paths { report(Item(kind: .document, name: path.text)) }
                if !dryRun { try await deleteDocuments(paths) }
                counts.documents += paths.count
            case .databaseCascade(let pattern, let conditions, let prefixes, let documentTemplates, let databasePatterns):
                guard let realtime, case .variable(let variable)? = pattern.segments.last else { continue }
                let parent = pattern.segments.dropLast().compactMap { if case .literal(let key) = $0 { key } else { nil } }
                var keys: [String] = []
                var seen = Set<String>()
                for condition in conditions {
                    let value = condition.value.map(Self.json) ?? .number(String(time.microseconds / 1000))
                    for key in try await realtime.children(of: parent, where: condition.field.segments, condition.op, value, limit: rules.batchSize)
                    where keys.count < rules.batchSize && seen.insert(key).inserted {
                        keys.append(key)
                    }
                }
                let bindings = keys.map { [variable: $0] }
                // Objects, then the listed paths, then the matched nodes themselves (last, so an
                // interrupted sweep finds them again).
                let prefixList = bindings.flatMap { bound in prefixes.compactMap { LifecycleRules.expand($0, bound) } }
                counts.objects += try await deletePrefixes(prefixList, dryRun: dryRun, report: report)
                var paths: [ResourcePath] = []
                for bound in bindings {
                    for template in documentTemplates {
                        guard let text = LifecycleRules.expand(template, bound) else { continue }
                        let path = ResourcePath(parsing: text)
                        guard path.isDocument else { continue }
                        try await collectTree(path, into: &paths, onlyIfPresent: true)
                    }
                }
                for path in paths { report(Item(kind: .document, name: path.text)) }
                if !dryRun { try await deleteDocuments(paths) }
                counts.documents += paths.count
                let listed = bindings.flatMap { bound in databasePatterns.compactMap { $0.expand(bound) } }
                counts.databasePaths += try await deleteDatabasePaths(listed, dryRun: dryRun, report: report)
                let nodes = bindings.compactMap { pattern.expand($0) }
                for node in nodes where !listed.contains(node) { report(Item(kind: .database, name: "/" + node.joined(separator: "/"))) }
                if !dryRun { try await realtime.delete(nodes) }
                counts.databasePaths += nodes.filter { !listed.contains($0) }.count
            case .ttl(let pattern, let field):
                let filter = Query.Filter.field(field, .lessThan, .timestamp(time))
                let expired = try await matches(pattern, filter).map(\.path)
                for path in expired { report(Item(kind: .document, name: path.text)) }
                if !dryRun { try await deleteDocuments(expired) }
                counts.documents += expired.count
            case .onAccountDeletion(let pattern, let documentTemplates, let storageTemplates, let databasePatterns):
                guard let existingAccounts, case .variable(let uidVariable)? = pattern.segments.last else { continue }
                // Scan the pattern's documents in pages; act on at most a batch of deleted accounts.
                var after: Query.Cursor?
                var handled = 0
                scan: while handled < rules.batchSize {
                    let topLevel = pattern.segments.count == 2
                    let page = try await documents.runQuery(
                        database,
                        Query(
                            collectionId: pattern.collectionID, allDescendants: !topLevel, orderBy: [Query.Order(.documentName)], startAt: after,
                            limit: rules.batchSize, select: []))
                        .documents
                    let bound = page.compactMap { pattern.match($0.path) }
                    let existing = try await existingAccounts(bound.compactMap { $0[uidVariable] })
                    for binding in bound where binding[uidVariable].map({ !existing.contains($0) }) ?? false {
                        try await deleteAccountPaths(
                            binding, documentTemplates, storageTemplates, databasePatterns, dryRun: dryRun, counts: &counts, report: report)
                        handled += 1
                        if handled >= rules.batchSize { break scan }
                    }
                    guard page.count == rules.batchSize, let last = page.last else { break }
                    after = Query.Cursor(values: [.reference(database.name(of: last.path))], before: false)
                }
            case .storageAge(let prefix, let maxAge):
                let cutoff = time.microseconds - maxAge * 1_000_000
                var after: String?
                var old: [String] = []
                scan: while old.count < rules.batchSize {
                    let page = try await objects.list(bucket, .init(prefix: prefix, after: after, maxResults: 1000))
                    for object in page.objects where object.created.microseconds < cutoff {
                        report(Item(kind: .object, name: object.name))
                        old.append(object.name)
                        if old.count >= rules.batchSize { break scan }
                    }
                    guard let next = page.next else { break }
                    after = next
                }
                if !dryRun { try await deleteObjects(old) }
                counts.objects += old.count
            }
        }
        if !dryRun && counts.total > 0 {
            metrics.add(counts)
            logger.notice(
                "lifecycle deleted", metadata: ["documents": "\(counts.documents)", "objects": "\(counts.objects)", "database": "\(counts.databasePaths)"])
        }
        return counts
    }

    /// The hook: runs the `onAccountDeletion` rules for accounts the auth engine just deleted
    /// (``AccountDeletionFeed``), without waiting for a reconciliation pass. Each rule's
    /// listed paths are expanded with the uid as its pattern's last variable; a path that
    /// needs another of the pattern's variables is left to reconciliation (which binds them
    /// from the documents it finds). A uid that has an account again is skipped.
    @discardableResult
    public func accountsDeleted(_ uids: [String]) async throws -> Counts {
        var counts = Counts()
        guard !uids.isEmpty else { return counts }
        // A uid that could not be a document id (`/`, `.`, `..`) could make a listed path
        // name something else: never expanded (no document can match it anyway).
        let gone = uids.filter { !$0.isEmpty && !$0.contains("/") && $0 != "." && $0 != ".." }
        let existing = try await existingAccounts?(gone) ?? []
        for rule in rules.rules {
            guard case .onAccountDeletion(let pattern, let documentTemplates, let storageTemplates, let databasePatterns) = rule,
                case .variable(let uidVariable)? = pattern.segments.last
            else { continue }
            for uid in gone where !existing.contains(uid) {
                try await deleteAccountPaths(
                    [uidVariable: uid], documentTemplates, storageTemplates, databasePatterns, dryRun: false, counts: &counts, report: { _ in })
            }
        }
        if counts.total > 0 {
            metrics.add(counts)
            logger.notice(
                "lifecycle deleted",
                metadata: [
                    "documents": "\(counts.documents)", "objects": "\(counts.objects)", "database": "\(counts.databasePaths)", "trigger": "account deletion",
                ])
        }
        return counts
    }

    /// Deletes one deleted account's listed storage objects, database paths and documents (with
    /// their subtrees).
    func deleteAccountPaths(
        _ binding: [String: String], _ documentTemplates: [String], _ storageTemplates: [String], _ databasePatterns: [LifecycleRules.DatabasePattern],
        dryRun: Bool, counts: inout Counts, report: (Item) -> Void
    ) async throws {
        let prefixes = storageTemplates.compactMap { LifecycleRules.expand($0, binding) }
        counts.objects += try await deletePrefixes(prefixes, dryRun: dryRun, report: report)
        counts.databasePaths += try await deleteDatabasePaths(databasePatterns.compactMap { $0.expand(binding) }, dryRun: dryRun, report: report)
        var paths: [ResourcePath] = []
        for template in documentTemplates {
            guard let text = LifecycleRules.expand(template, binding) else { continue }
            let path = ResourcePath(parsing: text)
            guard path.isDocument else { continue }
            try await collectTree(path, into: &paths, onlyIfPresent: true)
        }
        for path in paths { report(Item(kind: .document, name: path.text)) }
        if !dryRun { try await deleteDocuments(paths) }
        counts.documents += paths.count
    }

    /// Deletes the Realtime Database paths that hold data, in writes of at most `batchSize`
    /// paths (one atomic multi-path update each); returns how many held data.
    func deleteDatabasePaths(_ paths: [[String]], dryRun: Bool, report: (Item) -> Void) async throws -> Int {
        guard let realtime, !paths.isEmpty else { return 0 }
        var unique: [[String]] = []
        var seen = Set<[String]>()
        for path in paths where seen.insert(path).inserted { unique.append(path) }
        let present = try await realtime.existing(unique)
        for path in present { report(Item(kind: .database, name: "/" + path.joined(separator: "/"))) }
        if !dryRun {
            var start = 0
            while start < present.count {
                let chunk = Array(present[start..<min(present.count, start + rules.batchSize)])
                try await realtime.delete(chunk)
                start += chunk.count
            }
        }
        return present.count
    }

    /// A condition's value as JSON (for database conditions).
    static func json(_ value: Value) -> JSON {
        switch value {
        case .string(let text): .string(text)
        case .boolean(let flag): .bool(flag)
        case .integer(let number): .number(String(number))
        case .double(let number): .number(String(number))
        default: .null
        }
    }

    static func op(_ op: LifecycleRules.Condition.Operator) -> Query.Operator {
        switch op {
        case .lessThan: .lessThan
        case .lessThanOrEqual: .lessThanOrEqual
        case .equal: .equal
        }
    }

    /// Documents matching the pattern and the filter, at most a batch.
    func matches(_ pattern: LifecycleRules.Pattern, _ filter: Query.Filter) async throws -> [Document] {
        let topLevel = pattern.segments.count == 2
        let query = Query(
            collectionId: pattern.collectionID, allDescendants: !topLevel, filter: filter, limit: topLevel ? rules.batchSize : rules.batchSize * 4)
        let found = try await documents.runQuery(database, query).documents
        return Array(found.filter { pattern.match($0.path) != nil }.prefix(rules.batchSize))
    }

    /// Deletes every object under the prefixes (a name not ending in `/` is one object), in
    /// batches of at most `batchSize` names per transaction (``ObjectStore/deleteMany(_:_:)``:
    /// one commit per batch, the bytes freed after it); returns how many.
    func deletePrefixes(_ prefixes: [String], dryRun: Bool, report: (Item) -> Void) async throws -> Int {
        var names: [String] = []
        for prefix in prefixes {
            if !prefix.hasSuffix("/") {
                // An object name, not a prefix.
                if try await objects.object(bucket, prefix) != nil { names.append(prefix) }
                continue
            }
            var after: String?
            while true {
                let page = try await objects.list(bucket, .init(prefix: prefix, after: after, maxResults: 1000))
                names += page.objects.map(\.name)
                guard let next = page.next else { break }
                after = next
            }
        }
        for name in names { report(Item(kind: .object, name: name)) }
        if !dryRun { try await deleteObjects(names) }
        return names.count
    }

    /// Deletes objects in transactions of at most `batchSize` names; names already gone are
    /// skipped (idempotent), and a missing bucket means there is nothing to delete.
    func deleteObjects(_ names: [String]) async throws {
        var start = 0
        while start < names.count {
            let chunk = names[start..<min(names.count, start + rules.batchSize)]
            start += chunk.count
            do {
                try await objects.deleteMany(bucket, chunk)
            } catch let error as HearthError where error.code == .notFound {
                return
            }
        }
    }

    /// Appends a document's subtree in post-order: every subcollection's documents (depth
    /// first), then the document itself.
    func collectTree(_ path: ResourcePath, into paths: inout [ResourcePath], onlyIfPresent: Bool = false) async throws {
        let collections = try await documents.listCollectionIds(database, parent: path)
        if onlyIfPresent, collections.isEmpty, try await documents.get(database, path).0 == nil { return }
        for collection in collections {
            var after: Query.Cursor?
            while true {
                let page = try await documents.runQuery(
                    database,
                    Query(parent: path, collectionId: collection, orderBy: [Query.Order(.documentName)], startAt: after, limit: rules.batchSize, select: []))
                    .documents
                for child in page { try await collectTree(child.path, into: &paths) }
                guard page.count == rules.batchSize, let last = page.last else { break }
                after = Query.Cursor(values: [.reference(database.name(of: last.path))], before: false)
            }
        }
        paths.append(path)
    }

    func deleteDocuments(_ paths: [ResourcePath]) async throws {
        var start = 0
        while start < paths.count {
            let chunk = paths[start..<min(paths.count, start + rules.batchSize)]
            _ = try await documents.commit(database, chunk.map { Write.delete($0) })
            start += chunk.count
        }
    }
}
