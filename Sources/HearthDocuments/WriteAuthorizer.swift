public import HearthCore
import Synchronization

/// One document change of a commit, as security rules see it: the document before the
/// commit's writes to it and after (nil = does not exist / deleted).
public struct DocumentChange: Sendable {
    public var path: ResourcePath
    public var before: Document?
    public var after: Document?
    /// The write's index in the request.
    public var index: Int

    public init(path: ResourcePath, before: Document?, after: Document?, index: Int) {
        self.path = path
        self.before = before
        self.after = after
        self.index = index
    }
}

/// Reads documents while a commit is being decided: the stored state, or (with
/// `afterWrites`) the state the commit's writes would leave. Every stored document it reads
/// becomes an expectation of the commit: the store applies the commit only if it is unchanged.
public protocol DocumentPeek: Sendable {
    func document(database: String, path: ResourcePath, afterWrites: Bool) async throws -> Document?
}

/// Decides whether a commit's changes may happen — the security-rules step of the single
/// write path. It runs after every write of the commit has been planned (so it sees the
/// transforms' results and the commit time) and before the commit reaches the store, holding
/// no database lock: documents it reads through `documents` are checked again by the store
/// when the commit is applied. Throwing rejects the whole commit (or, in a batch write, that
/// one write).
public protocol WriteAuthorizer: Sendable {
    func authorize(_ changes: [DocumentChange], database: DatabaseName, time: Timestamp, documents: any DocumentPeek) async throws(HearthError)
}

/// A `DocumentPeek` over the latest stored documents and the states the commit's writes
/// produce, recording what it read from storage as the commit's expectations.
final class CommitPeek: DocumentPeek {
    let engine: DocumentEngine
    let database: String
    /// Documents the commit writes: state before the commit and after all of its writes.
    let before: [ResourcePath: Document?]
    let after: [ResourcePath: Document?]
    private let reads = Mutex<[DocumentExpectation]>([])

    init(engine: DocumentEngine, database: String, before: [ResourcePath: Document?], after: [ResourcePath: Document?]) {
        self.engine = engine
        self.database = database
        self.before = before
        self.after = after
    }

    /// The stored documents read so far, with the update times seen.
    var expectations: [DocumentExpectation] { reads.withLock { $0 } }

    func document(database: String, path: ResourcePath, afterWrites: Bool) async throws -> Document? {
        if database == self.database {
            if afterWrites, let a = after[path] { return a }
            if let b = before[path] { return b }
        }
        let doc = try await engine.latestDocuments(database, [path])[0]
        reads.withLock { $0.append(DocumentExpectation(database: database, path: path, updateTime: doc?.updateTime)) }
        return doc
    }
}
