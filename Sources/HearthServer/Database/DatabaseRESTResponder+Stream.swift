import HearthCore
import HearthDatabase
import Hummingbird
import NIOCore
import Foundation
import ServiceLifecycle

/// What an event stream's loop reacts to.
enum DatabaseStreamItem: Sendable {
    case change(DatabaseChange)
    case keepAlive
    case authExpired
}

/// Hands the feed's changes for one stream to its loop, in write order, without waiting. The
/// buffer is bounded (``DatabaseRESTResponder/streamBufferLimit``): a client that reads slower
/// than the database changes has its stream ended once the buffer is full, after the events
/// already buffered — never a gap in the middle of a stream — and reconnects to a fresh `put`.
final class DatabaseStreamSubscriber: DatabaseChangeSubscriber {
    let continuation: AsyncStream<DatabaseStreamItem>.Continuation

    init(_ continuation: AsyncStream<DatabaseStreamItem>.Continuation) { self.continuation = continuation }

    func deliver(_ change: DatabaseChange) {
        if case .dropped = continuation.yield(.change(change)) { continuation.finish() }
    }
}

extension DatabaseRESTResponder {
    /// `GET` with `Accept: text/event-stream`: a `put` of the current value at `/`, then one
    /// event per write touching the location (query listeners get a `put` of the new
    /// result), `keep-alive` when idle, `auth_revoked` when the ID token expires.
    func stream(_ parsed: DatabaseRESTRequest, auth: DatabaseAuthContext, identity: Identity) async throws -> Response {
        // Refuse before the stream starts, so a denial is an ordinary 401.
        try await engine.authorizeRead(namespace: parsed.namespace, path: parsed.path, query: parsed.query, auth: auth)
        if !emulator { try await engine.checkIndexed(namespace: parsed.namespace, path: parsed.path, query: parsed.query) }
        let (items, continuation) = AsyncStream.makeStream(
            of: DatabaseStreamItem.self, bufferingPolicy: .bufferingOldest(Self.streamBufferLimit))
        let subscriber = DatabaseStreamSubscriber(continuation)
        let feed = engine.feed
        let token = feed.subscribe(namespace: parsed.namespace, subscriber)
        let engine = engine
        let events = events
        let keepAlive = keepAliveInterval
        let expiry: Date? = identity.kind == .user ? Self.expiry(identity.claims) : nil
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer {
                    feed.unsubscribe(token)
                    continuation.finish()
                }
                // A server shutting down ends its streams (clients reconnect elsewhere).
                await withGracefulShutdownHandler {
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask {
                            while !Task.isCancelled {
                                do { try await Task.sleep(for: keepAlive) } catch { return }
                                continuation.yield(.keepAlive)
                            }
                        }
                        if let expiry {
                            group.addTask {
                                let wait = max(0, expiry.timeIntervalSinceNow)
                                do { try await Task.sleep(for: .milliseconds(Int64(wait * 1000))) } catch { return }
                                continuation.yield(.authExpired)
                            }
                        }
                        do {
                            let snapshot = try await engine.read(namespace: parsed.namespace, path: parsed.path, query: parsed.query, auth: auth)
                            var shown = snapshot.node
                            try await writer.write(Self.event("put", DatabaseListenEvent(kind: .put, path: .root, data: shown.plainJSON()).json))
                            for await item in items {
                                switch item {
                                case .keepAlive:
                                    try await writer.write(Self.event("keep-alive", .null))
                                case .authExpired:
                                    try await writer.write(Self.event("auth_revoked", .string("credential is no longer valid")))
                                    return group.cancelAll()
                                case .change(let change):
                                    // Rules decide again when they change, and for every write a
                                    // client's stream would see (rules may depend on the data).
                                    let recheck: Bool
                                    if case .rules = change.kind { recheck = true } else {
                                        guard change.revision > snapshot.revision else { continue }
                                        recheck = DatabaseListenEvent.touches(change, parsed.path)
                                    }
                                    if recheck && !auth.isAdmin {
                                        do {
                                            try await engine.authorizeRead(
                                                namespace: parsed.namespace, path: parsed.path, query: parsed.query, auth: auth)
                                        } catch let error as DatabaseError where error.reason == .permissionDenied {
                                            try await writer.write(Self.event("cancel", .null))
                                            return group.cancelAll()
                                        }
                                    }
                                    if case .rules = change.kind { continue }
                                    if parsed.query != nil {
                                        guard DatabaseListenEvent.touches(change, parsed.path) else { continue }
                                        let current: DatabaseEngine.Snapshot
                                        do {
                                            current = try await engine.read(namespace: parsed.namespace, path: parsed.path, query: parsed.query, auth: auth)
                                        } catch let error as DatabaseError where error.reason == .permissionDenied {
                                            try await writer.write(Self.event("cancel", .null))
                                            return group.cancelAll()
                                        }
                                        if current.node != shown {
                                            shown = current.node
                                            try await writer.write(Self.event("put", DatabaseListenEvent(kind: .put, path: .root, data: shown.plainJSON()).json))
                                        }
                                    } else {
                                        let bytes = events.rendering(change, at: parsed.path)
                                        if bytes.readableBytes > 0 { try await writer.write(bytes) }
                                    }
                                }
                            }
                        } catch {
                            // The client went away (a write failed) or the read was refused: end the stream.
                        }
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    continuation.finish()
                }
                try? await writer.finish(nil)
            })
    }

    /// The events a stream without a query at `location` sends for `change`, one after another
    /// in one buffer (empty when the change does not touch it).
    static func events(for change: DatabaseChange, at location: DatabasePath) -> ByteBuffer {
        var buffer = ByteBuffer()
        for event in DatabaseListenEvent.events(for: change, at: location) {
            var bytes = Self.event(event.kind.rawValue, event.json)
            buffer.writeBuffer(&bytes)
        }
        return buffer
    }

    /// Changes a stream may have waiting to be sent before it is ended.
    static let streamBufferLimit = 1024

    /// `event: <name>\ndata: <json>\n\n`.
    static func event(_ name: String, _ data: JSON) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: 128)
        buffer.writeString("event: \(name)\ndata: ")
        buffer.writeBytes(data.serializedBytes())
        buffer.writeString("\n\n")
        return buffer
    }

    static func expiry(_ claims: JSON?) -> Date? {
        guard case .number(let text)? = claims?["exp"], let seconds = Double(text) else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }
}
