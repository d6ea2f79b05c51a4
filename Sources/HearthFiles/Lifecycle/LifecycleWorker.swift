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
    let logger: Logger

    public init(
        rules: LifecycleRules, documents: DocumentEngine, database: DatabaseName, objects: ObjectStore, bucket: String,
        now: @escaping @Sendable () -> Timestamp = FileRegistry.systemNow,
        existingAccounts: (@Sendable ([String]) async throws -> Set<String>)? = nil, logger: Logger
    ) {
        self.rules = rules
        self.documents = documents
        self.database = database
        self.objects = objects
        self.bucket = rules.bucket ?? bucket
        self.now = now
        self.existingAccounts = existingAccounts
        self.logger = logger
    }

    /// What a pass would delete, or did.
    public struct Item: Sendable, Equatable, CustomStringConvertible {
        public enum Kind: String, Sendable { case document, object }
        public var kind: Kind
        public var name: String
        public var description: String { "\(kind.rawValue) \(name)" }
    }

    public struct Counts: Sendable, Equatable {
        public var documents = 0
        public var objects = 0
        public var total: Int { documents + objects }
        public init() {}
    }

    /// One pass over every rule. With `dryRun` nothing is deleted and every item that would be is
    /// reported (bounded by the batch size per rule, like a real pass).
    public func pass(dryRun: Bool, report: (Item) -> Void = { _ in }) async throws -> Counts {
        var counts = Counts()
        let time = now()
        for rule in rules.rules {
            switch rule {
            case .cascade(let pattern, let conditions, let prefixes):
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
                // 2. Documents: every tree in post-order (children before their parent), deleted in
                //    commits of `batchSize`, so a matched document goes after everything under it.
                var paths: [ResourcePath] = []
                for match in matched { try await collectTree(match.path, into: &paths) }
                for path in paths { report(Item(kind: .document, name: path.text)) }
                if !dryRun { try await deleteDocuments(paths) }
                counts.documents += paths.count
            case .ttl(let pattern, let field):
                let filter = Query.Filter.field(field, .lessThan, .timestamp(time))
                let expired = try await matches(pattern, filter).map(\.path)
                for path in expired { report(Item(kind: .document, name: path.text)) }
                if !dryRun { try await deleteDocuments(expired) }
                counts.documents += expired.count
            case .onAccountDeletion(let pattern, let documentTemplates, let storageTemplates):
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
                        let prefixes = storageTemplates.compactMap { LifecycleRules.expand($0, binding) }
                        counts.objects += try await deletePrefixes(prefixes, dryRun: dryRun, report: report)
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
                        handled += 1
                        if handled >= rules.batchSize { break scan }
                    }
                    guard page.count == rules.batchSize, let last = page.last else { break }
                    after = Query.Cursor(values: [.reference(database.name(of: last.path))], before: false)
                }
            case .storageAge(let prefix, let maxAge):
                let cutoff = time.microseconds - maxAge * 1_000_000
                var after: String?
                var removed = 0
                scan: while removed < rules.batchSize {
                    let page = try await objects.list(bucket, .init(prefix: prefix, after: after, maxResults: 1000))
                    for object in page.objects where object.created.microseconds < cutoff {
                        report(Item(kind: .object, name: object.name))
                        if !dryRun { try await deleteObject(object.name) }
                        removed += 1
                        if removed >= rules.batchSize { break scan }
                    }
                    guard let next = page.next else { break }
                    after = next
                }
                counts.objects += removed
            }
        }
        if !dryRun && counts.total > 0 {
            logger.notice("lifecycle deleted", metadata: ["documents": "\(counts.documents)", "objects": "\(counts.objects)"])
        }
        return counts
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

    /// Deletes every object under the prefixes (16 deletions in flight); returns how many.
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
        if dryRun { return names.count }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, name) in names.enumerated() {
                if index >= 16 { try await group.next() }
                group.addTask { try await deleteObject(name) }
            }
            try await group.waitForAll()
        }
        return names.count
    }

    func deleteObject(_ name: String) async throws {
        do {
            try await objects.delete(bucket, name)
        } catch let error as HearthError where error.code == .notFound {
            // Deleted meanwhile: the goal is reached.
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
