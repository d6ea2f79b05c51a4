import HearthCore
import HearthDatabase
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import HTTPTypes
import Logging
import NIOCore
import NIOWebSocket
import Foundation
import ServiceLifecycle
import CoreMetrics

/// The Realtime Database's WebSocket protocol (what the Firebase SDKs speak) on the database
/// port: `GET /.ws?v=5&ns=…` is upgraded; every other request goes to the REST responder.
struct DatabaseWebSocketEndpoint: Sendable {
    let engine: DatabaseEngine
    let authenticator: Authenticator
    let defaultNamespace: String
    let logger: Logger
    let pushes = DatabasePushCache()

    /// The database port's transport: HTTP/1.1 as elsewhere (behind TLS when it is on), and the
    /// upgrade of `/.ws`.
    var transport: HearthServer.Transport {
        .http1WebSocket(.init(maxFrameSize: 1 << 20, autoPing: .disabled)) { request, _, _ in
            guard let namespace = self.namespace(request) else { return .dontUpgrade }
            let host = request.authority ?? "localhost"
            return .upgrade([:]) { inbound, outbound, _ in
                await self.run(namespace: namespace, host: host, inbound: inbound, outbound: outbound)
            }
        }
    }

    /// The namespace of an upgrade request for `/.ws` (`?ns=`, else the host's first label
    /// under `localhost`, else the default); nil when the request is not one.
    func namespace(_ request: HTTPRequest) -> String? {
        guard request.method == .get, let target = request.path else { return nil }
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.first == "/.ws" else { return nil }
        let query = parts.count > 1 ? String(parts[1]) : nil
        guard let parameters = try? HTTPSupport.queryParameters(query) else { return nil }
        let ns = parameters.first { $0.0 == "ns" }?.1
        return try? DatabaseRESTRequest.namespace(ns, host: request.authority, defaultNamespace: defaultNamespace)
    }

    static func sessionID() -> String {
        SecureRandom.bytes(16).map { String(format: "%02x", $0) }.joined()
    }

    /// One connection: the hello, then one loop over the client's frames, the feed's changes
    /// and auth expiry; when the socket closes, its onDisconnect operations run.
    func run(namespace: String, host: String, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        let (events, continuation) = AsyncStream.makeStream(of: DatabaseSocketEvent.self)
        let queue = DatabaseSocketFeedQueue(continuation)
        let feed = engine.feed
        let token = feed.subscribe(namespace: namespace, queue)
        let session = DatabaseWebSocketSession(
            engine: engine, authenticator: authenticator, namespace: namespace, logger: logger, outbound: outbound, queue: queue, pushes: pushes)
        defer { feed.unsubscribe(token) }
        // Open WebSockets next to the HTTP streams `ObservedResponder` counts (docs/production.md).
        let open = Meter(label: "hearth_open_streams", dimensions: [("service", "database"), ("kind", "websocket")])
        open.increment()
        defer { open.decrement() }
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        // Text only (the SDKs send nothing else); WebSocket fragments arrive joined.
                        for try await message in inbound.messages(maxSize: DatabaseWebSocketFrames.maxMessageBytes) {
                            guard case .text(let text) = message else { continue }
                            continuation.yield(.frame(text))
                        }
                    } catch {}
                    continuation.yield(.closed)
                }
                do {
                    let now = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
                    try await session.send(DatabaseWebSocketOutbound.hello(timestamp: now, host: host, session: Self.sessionID()))
                    // One pending timer for the earliest expiry asked for: re-sent `auth`s (token
                    // refreshes) do not pile up sleeping tasks; a timer that fires for a token
                    // since replaced re-arms for the current one.
                    var timer: Date?
                    func arm(_ expiry: Date?) {
                        guard let expiry, timer.map({ expiry < $0 }) ?? true else { return }
                        timer = expiry
                        group.addTask {
                            let wait = max(0, expiry.timeIntervalSinceNow)
                            do { try await Task.sleep(for: .milliseconds(Int64(wait * 1000) + 1)) } catch { return }
                            continuation.yield(.authTimer)
                        }
                    }
                    loop: for await event in events {
                        switch event {
                        case .frame(let text):
                            arm(try await session.receive(text))
                        case .wake:
                            try await session.drain()
                        case .authTimer:
                            timer = nil
                            arm(try await session.authTimer())
                        case .closed:
                            break loop
                        }
                    }
                } catch let close as DatabaseWebSocketSession.Close {
                    try? await session.send(DatabaseWebSocketOutbound.control("e", .string(close.reason)))
                    try? await outbound.close(close.code, reason: close.reason)
                } catch {
                    // The socket failed: the connection is over.
                }
                continuation.finish()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            continuation.finish()
        }
        await session.runOnDisconnect()
    }
}
