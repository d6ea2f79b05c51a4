public import HearthCore

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
/// `afterWrites`) the state the commit's writes would leave.
public protocol DocumentPeek {
    func document(database: String, path: ResourcePath, afterWrites: Bool) throws -> Document?
}

/// Decides, inside the commit, whether its changes may happen — the security-rules step of
/// the single write path. It runs after every write of the commit has been planned (so it
/// sees the transforms' results and the request time) and before anything is stored;
/// throwing rejects the whole commit (or, in a batch write, that one write).
public protocol WriteAuthorizer: Sendable {
    func authorize(_ changes: [DocumentChange], database: DatabaseName, time: Timestamp, documents: any DocumentPeek) throws(HearthError)
}

/// A `DocumentPeek` over the commit's writer and the states its writes produce.
struct CommitPeek: DocumentPeek {
    let writer: any DocumentReader
    let database: String
    /// Documents the commit writes: state before the commit and after all of its writes.
    let before: [ResourcePath: Document?]
    let after: [ResourcePath: Document?]

    func document(database: String, path: ResourcePath, afterWrites: Bool) throws -> Document? {
        guard database == self.database else { return try writer.document(database, path) }
        if afterWrites, let a = after[path] { return a }
        if let b = before[path] { return b }
        return try writer.document(database, path)
    }
}
