import HTTPTypes
import Hummingbird
import NIOCore

/// A request over its service's limit (``RequestLimits``): a body declared so by its
/// `Content-Length` (refused before any of it is read) or counted so as it arrived, or an upload
/// whose object would pass `--max-object-bytes`. Each protocol's responder renders it in its own
/// error shape (docs/production.md, "Request-size limits").
struct RequestTooLarge: Error, Sendable {
    /// What went over: a request body (`--max-request-bytes`) or an uploaded object (`--max-object-bytes`).
    enum Subject: Sendable { case body, object }

    /// The limit in force, in bytes.
    let limit: Int64
    /// What `Content-Length` (or a resumable upload's announced size) declared, when the refusal came from it.
    let declared: Int64?
    var subject: Subject = .body

    /// Google's wording for a request over the limit (Firestore, Identity Toolkit, the api port).
    var googleMessage: String { "Request payload size exceeds the limit: \(limit) bytes." }

    /// Refuses an upload whose object would pass `limit` bytes: `size` written so far plus the
    /// `count` bytes arriving.
    static func checkObject(size: Int64, adding count: Int = 0, limit: Int64) throws(RequestTooLarge) {
        guard size + Int64(count) <= limit else { throw RequestTooLarge(limit: limit, declared: nil, subject: .object) }
    }

    /// Refuses an upload declared (before its bytes) to be larger than `limit`.
    static func checkDeclaredObject(_ declared: Int64?, limit: Int64) throws(RequestTooLarge) {
        if let declared, declared > limit { throw RequestTooLarge(limit: limit, declared: declared, subject: .object) }
    }
}

extension Request {
    /// The declared `Content-Length`, when there is one and it is a number.
    var declaredContentLength: Int? {
        headers[.contentLength].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The whole body, at most `limit` bytes. A `Content-Length` over the limit is refused before
    /// anything is read; a body without one (chunked) is counted as it arrives and refused once it
    /// passes the limit. The body is kept on the request (as `collectBody(upTo:)` does).
    mutating func collectBody(limit: Int) async throws(RequestTooLarge) -> ByteBuffer {
        if let declared = declaredContentLength, declared > limit { throw RequestTooLarge(limit: Int64(limit), declared: Int64(declared)) }
        do {
            return try await collectBody(upTo: limit)
        } catch {
            // Hummingbird's collect(upTo:) fails with NIOTooManyBytesError past the limit; a body
            // that breaks off (the client went away) ends here too, and nobody reads that answer.
            throw RequestTooLarge(limit: Int64(limit), declared: nil)
        }
    }
}
