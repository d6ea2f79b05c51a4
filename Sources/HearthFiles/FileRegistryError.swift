/// Why the file registry refused a request: a typed reason (the HTTP transport maps each to
/// its status in one table) and a message safe to show to the caller.
public struct FileRegistryError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// No `files/{fileId}` record (or the id is not a ULID).
        case fileNotFound
        /// The record belongs to another user.
        case notOwner
        /// `complete`: the object was not uploaded (yet); the file stays `pending`.
        case objectMissing
        /// `presign-download` of a file that is not `ready`.
        case notReady
        /// `presign-download`: the object was overwritten or removed after `complete` checked it;
        /// the file is now `failed`.
        case objectChanged
        /// `complete` of a file that already `failed`.
        case alreadyFailed
        /// The declared content type is not configured.
        case contentTypeNotAllowed
        /// The extension has characters other than letters and digits, or does not fit the type.
        case invalidExtension
        /// A declared or uploaded size outside the configured limit.
        case sizeNotAllowed
        /// `complete`: the uploaded object's type or bytes do not match the declared type.
        case contentMismatch
        /// A malformed `pageToken` or `pageSize`.
        case invalidPage
        /// The caller's uid has characters an object key must not get from it.
        case invalidUser
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason): \(message)" }
}
