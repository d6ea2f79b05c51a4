import CoreMetrics
import Foundation
import HearthCore
import HearthRules
import HTTPTypes
package import Hummingbird
import NIOCore
package import Prometheus

/// The process's metrics registry: swift-metrics bootstrapped once with swift-prometheus over
/// it. Every `Counter`/`Timer`/`Gauge` the engines and transports create lands here, and the
/// `/metrics` endpoints (the api port, `--metrics-port`) render it in Prometheus' text format.
package enum HearthMetrics {
    package static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Latencies from 1 ms to 30 s (and streams' lifetimes beyond, in +Inf).
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
        ]
        MetricsSystem.bootstrap(factory)
        return registry
    }()

    /// Bootstraps the registry (idempotent); call before the stores open so their handles land in it.
    package static func start() { _ = registry }

    /// The `/metrics` response.
    package static func response() -> Response {
        var buffer = ByteBufferAllocator().buffer(capacity: 4096)
        buffer.writeBytes(registry.emitToBuffer())
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"], body: ResponseBody(byteBuffer: buffer))
    }
}

/// The request id of the request a task serves (``ObservedResponder``), for log metadata.
package enum RequestID {
    @TaskLocal package static var current: String?

    /// An incoming `X-Request-Id` if it is sane (1–128 visible ASCII characters, no spaces or
    /// quotes), else a new random one.
    package static func accept(_ incoming: String?) -> String {
        if let incoming, (1...128).contains(incoming.utf8.count),
            incoming.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        {
            return incoming
        }
        // One draw of 16 bytes (`UInt8.random` per byte made 16 `getrandom` calls a request, 30%
        // of a REST create's system calls besides SQLite's), hex-encoded in place.
        return String(unsafeUninitializedCapacity: 32) { out in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { bytes in
                SecureRandom.fill(UnsafeMutableRawBufferPointer(bytes))
                for (i, byte) in bytes.enumerated() {
                    out[2 * i] = hexDigits[Int(byte >> 4)]
                    out[2 * i + 1] = hexDigits[Int(byte & 0x0F)]
                }
            }
            return 32
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

extension HTTPField.Name {
    static let requestID = Self("X-Request-Id")!
}

/// Wraps every listener's responder (``HearthServer/listener(_:_:_:server:)``): one request id
/// per request (echoed in `X-Request-Id`, set as ``RequestID/current`` for logs), and the
/// transport metrics — requests and latency by service, method and route class, errors by
/// status, storage bytes in and out, open streams, auth sign-ins.
package struct ObservedResponder<Inner: HTTPResponder>: HTTPResponder {
    package typealias Context = Inner.Context
    let service: String
    let inner: Inner

    package init(service: String, inner: Inner) {
        self.service = service
        self.inner = inner
    }

    package func respond(to request: Request, context: Context) async throws -> Response {
        let id = RequestID.accept(request.headers[.requestID])
        let start = ContinuousClock.now
        let route = Self.routeClass(service: service, path: request.uri.path)
        let method = request.method.rawValue
        let service = self.service
        if service == "storage" || service == "s3", let length = request.headers[.contentLength].flatMap(Int.init), length > 0 {
            Counter(label: "hearth_storage_bytes_total", dimensions: [("service", service), ("direction", "in")]).increment(by: length)
        }
        var response: Response
        do {
            response = try await RequestID.$current.withValue(id) { try await inner.respond(to: request, context: context) }
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            Self.finish(service: service, method: method, route: route, status: status, start: start)
            throw error
        }
        response.headers[.requestID] = id
        let status = response.status.code
        if service == "auth", route.hasPrefix("signIn") || route == "signUp" {
            Counter(
                label: "hearth_auth_sign_ins_total",
                dimensions: [("method", route), ("outcome", status < 400 ? "success" : "failure")]
            ).increment()
        }
        if service == "storage" || service == "s3", let length = response.body.contentLength, length > 0 {
            Counter(label: "hearth_storage_bytes_total", dimensions: [("service", service), ("direction", "out")]).increment(by: length)
        }
        // A streamed answer (no length) on a listen or event-stream route is an open stream until written.
        let stream: String? =
            response.body.contentLength != nil
            ? nil
            : (route == "listen" || route == "Listen")
                ? "listen" : response.headers[.contentType]?.hasPrefix("text/event-stream") == true ? "sse" : nil
        let body = response.body
        let gauge = stream.map { Meter(label: "hearth_open_streams", dimensions: [("service", service), ("kind", $0)]) }
        gauge?.increment()
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            defer {
                gauge?.decrement()
                Self.finish(service: service, method: method, route: route, status: status, start: start)
            }
            try await body.write(writer)
        }
        return response
    }

    static func finish(service: String, method: String, route: String, status: Int, start: ContinuousClock.Instant) {
        let labels = [("service", service), ("method", method), ("route", route)]
        Counter(label: "hearth_http_requests_total", dimensions: labels + [("status", String(status))]).increment()
        CoreMetrics.Timer(label: "hearth_http_request_duration_seconds", dimensions: labels).recordInterval(since: start)
        if status >= 400 {
            Counter(label: "hearth_http_errors_total", dimensions: [("service", service), ("status", String(status))]).increment()
        }
    }

    /// A bounded name for a request's route: the custom method of its last segment
    /// (`accounts:signInWithPassword` → `signInWithPassword`, `documents:commit` → `commit`), the
    /// S3 level (`service`, `bucket`, `object`), a fixed first segment the ports serve, else `other`.
    static func routeClass(service: String, path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        if service == "s3" { return ["service", "bucket"][safe: segments.count] ?? "object" }
        if let last = segments.last, let colon = last.lastIndex(of: ":") {
            let verb = last[last.index(after: colon)...]
            if (1...40).contains(verb.count), verb.allSatisfy({ $0.isASCII && $0.isLetter }) { return String(verb) }
            return "other"
        }
        guard let first = segments.first else { return "root" }
        // gRPC: /google.firestore.v1.Firestore/Commit → Commit.
        if first.hasPrefix("google."), segments.count == 2, (1...40).contains(segments[1].count),
            segments[1].allSatisfy({ $0.isASCII && $0.isLetter })
        {
            return String(segments[1])
        }
        if service == "firestore", segments.contains("documents") { return "documents" }
        return RouteClasses.knownFirstSegments.contains(first) ? String(first) : "other"
    }
}

/// The first path segments ``ObservedResponder/routeClass(service:path:)`` names, built once (a
/// generic type has no stored statics: the set literal was built on every request).
private enum RouteClasses {
    static let knownFirstSegments: Set<Substring> = [
        "v0", "v1", "v1beta", "v1beta1", "upload", "download", "storage", "emulator", "healthz", "readyz", "metrics",
        "openapi.json", "api", "assets", ".ws", ".lp", "identitytoolkit.googleapis.com", "securetoken.googleapis.com",
        "www.googleapis.com",
    ]
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

extension CoreMetrics.Timer {
    /// Records the time elapsed since `start`.
    func recordInterval(since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// The `--metrics-port` listener: `/metrics` (and `/healthz`) only.
package struct MetricsResponder: HTTPResponder {
    package typealias Context = BasicRequestContext
    package init() {}

    package func respond(to request: Request, context: Context) async throws -> Response {
        guard request.method == .get || request.method == .head else { return Response(status: .methodNotAllowed) }
        switch request.uri.path {
        case "/metrics": return HearthMetrics.response()
        case "/healthz":
            var buffer = ByteBufferAllocator().buffer(capacity: 20)
            buffer.writeString(#"{"status":"ok"}"#)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: buffer))
        default: return Response(status: .notFound)
        }
    }
}

/// `hearth_rules_evaluations_total{service}` and `hearth_rules_denials_total{service}`.
enum RulesMetrics {
    static func count(_ service: String, _ decision: RulesDecision) {
        Counter(label: "hearth_rules_evaluations_total", dimensions: [("service", service)]).increment()
        if !decision.isAllowed { Counter(label: "hearth_rules_denials_total", dimensions: [("service", service)]).increment() }
    }
}
