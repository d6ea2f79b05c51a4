public import HearthCore

/// What a Listen target watches.
public enum ListenTargetSpec: Sendable, Equatable {
    /// Named documents (existing or not).
    case documents([ResourcePath])
    /// A query's results.
    case query(Query)
}

/// A client's request to add a target to its stream.
public struct ListenTarget: Sendable {
    /// The client's id for the target; 0 asks the server to choose one.
    public var id: Int32
    public var spec: ListenTargetSpec
    /// Send only what changed after this time (from a resume token or `read_time`).
    public var resumeAfter: Timestamp?
    /// Remove the target once it is current.
    public var once: Bool
    /// The number of documents the client holds for the target (asks for a bloom filter
    /// in the existence filter when the server cannot send an exact delta).
    public var expectedCount: Int32?

    public init(id: Int32, spec: ListenTargetSpec, resumeAfter: Timestamp? = nil, once: Bool = false, expectedCount: Int32? = nil) {
        self.id = id
        self.spec = spec
        self.resumeAfter = resumeAfter
        self.once = once
        self.expectedCount = expectedCount
    }
}

/// One message from the client of a Listen stream.
public enum ListenCommand: Sendable {
    case add(ListenTarget)
    case remove(Int32)
}

/// One message to the client of a Listen stream (Firestore's `ListenResponse`).
public enum ListenOutput: Sendable, Equatable {
    public enum TargetChangeKind: Int, Sendable {
        case noChange = 0, add = 1, remove = 2, current = 3, reset = 4
    }

    /// `targetIDs` empty with `readTime` set: every current target is consistent at `readTime`.
    case targetChange(TargetChangeKind, targetIDs: [Int32], cause: ListenCause? = nil, resumeToken: Timestamp? = nil, readTime: Timestamp? = nil)
    /// The document (now) matches `targetIDs` and no longer matches `removedTargetIDs`.
    case document(Document, targetIDs: [Int32], removedTargetIDs: [Int32])
    /// The document was deleted.
    case documentDelete(ResourcePath, removedTargetIDs: [Int32], readTime: Timestamp)
    /// The document left the targets for another reason (a limit, a resync).
    case documentRemove(ResourcePath, removedTargetIDs: [Int32], readTime: Timestamp)
    /// How many documents match the target now; `names` (for a bloom filter) when the client
    /// sent an expected count.
    case existenceFilter(targetID: Int32, count: Int32, names: [ResourcePath]?)
}

/// Why a target was removed: a status code and message.
public struct ListenCause: Sendable, Equatable {
    public var code: ErrorCode
    public var message: String

    public init(_ error: HearthError) {
        code = error.code
        message = error.message
    }
}

/// Resume tokens: opaque to clients, a commit time to Hearth, so they survive restarts.
public enum ListenResumeToken {
    static let version: UInt8 = 1

    public static func encode(_ time: Timestamp) -> [UInt8] {
        var out: [UInt8] = [version]
        let us = UInt64(bitPattern: time.microseconds)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: us >> UInt64(shift))) }
        return out
    }

    public static func decode(_ bytes: [UInt8]) throws(HearthError) -> Timestamp {
        guard bytes.count == 9, bytes[0] == version else {
            throw .invalidArgument("Invalid resume token.")
        }
        var us: UInt64 = 0
        for b in bytes[1...] { us = us << 8 | UInt64(b) }
        let time = Timestamp(microseconds: Int64(bitPattern: us))
        guard time.isValid else { throw .invalidArgument("Invalid resume token.") }
        return time
    }
}

/// The result of reading a target's documents at one exact snapshot.
struct ListenLoadResult: Sendable {
    var targetID: Int32
    var generation: Int
    /// Every document of the target at `snapshot` (a query's results in query order).
    var documents: [Document]
    /// The snapshot: every commit up to this time, and none after it, is reflected.
    var snapshot: Timestamp
    /// For a resume: the target's documents at the resume time, if that is still readable.
    var previous: [Document]?
}
