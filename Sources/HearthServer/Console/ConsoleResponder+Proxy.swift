import HearthCore
import AsyncHTTPClient
import Hummingbird
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOSSL

/// `/api/proxy/{firestore|auth|storage|database}/<path>` → the same path on that service's port
/// over loopback, with the console's admin credential. Bodies stream both ways (uploads, downloads
/// and server-sent events); only a fixed set of headers crosses, never the browser's cookies.
extension ConsoleResponder {
    static let proxiedServices: Set<String> = ["firestore", "auth", "storage", "database"]
    static let forwardedRequestHeaders: [HTTPField.Name] = [
        .contentType, .accept, .range, .ifMatch, .ifNoneMatch, .contentLength,
        HTTPField.Name("X-Firebase-ETag")!, HTTPField.Name("X-Goog-Upload-Protocol")!, HTTPField.Name("X-Goog-Upload-Command")!,
        HTTPField.Name("X-Goog-Upload-Offset")!, HTTPField.Name("X-Goog-Upload-Header-Content-Type")!,
    ]
    static let forwardedResponseHeaders: Set<String> = [
        "content-type", "content-length", "content-range", "accept-ranges", "etag", "last-modified", "content-disposition",
        "content-encoding", "x-firebase-etag", "x-goog-upload-status", "x-goog-upload-url", "x-goog-hash",
    ]

    var upstreamHost: String {
        configuration.listensOnEveryAddress ? "127.0.0.1" : configuration.host
    }

    func proxy(_ request: Request, principal: ConsolePrincipal) async throws -> Response {
        let rest = request.uri.path.dropFirst("/api/proxy/".count)
        let service = String(rest.prefix { $0 != "/" })
        guard Self.proxiedServices.contains(service) else { throw HearthError(.notFound, "No service \"\(service)\" behind the console.") }
        guard let port = boundPort(service) else { throw HearthError(.unavailable, "The \(service) service is not running on this server.") }
        let path = rest.dropFirst(service.count)
        var url = "\(configuration.scheme)://\(upstreamHost.contains(":") ? "[\(upstreamHost)]" : upstreamHost):\(port)\(path.isEmpty ? "/" : String(path))"
        if let query = request.uri.query, !query.isEmpty { url += "?" + query }
        var upstream = HTTPClientRequest(url: url)
        if configuration.tls != nil {
            // Our own listener over loopback, whose certificate names the public host, not this address.
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .none
            upstream.tlsConfiguration = tls
        }
        upstream.method = HTTPMethod(rawValue: request.method.rawValue)
        for name in Self.forwardedRequestHeaders {
            for value in request.headers[values: name] { upstream.headers.add(name: name.rawName, value: value) }
        }
        upstream.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(proxyCredential)")
        if request.method != .get && request.method != .head {
            let length = request.headers[.contentLength].flatMap { Int64($0) }
            upstream.body = .stream(request.body, length: length.map { .known($0) } ?? .unknown)
        }
        let streaming = request.headers[.accept]?.contains("text/event-stream") == true
        let answer: HTTPClientResponse
        do {
            answer = try await HTTPClient.shared.execute(upstream, timeout: streaming ? .hours(24) : .minutes(10))
        } catch {
            throw HearthError(.unavailable, "The \(service) service did not answer: \(error)")
        }
        if request.method != .get && request.method != .head && answer.status.code < 400 {
            logger.info("console change", metadata: [
                "user": "\(principal.name)", "service": "\(service)", "method": "\(request.method)", "path": "\(path)",
            ])
        }
        var headers = HTTPFields()
        for header in answer.headers where Self.forwardedResponseHeaders.contains(header.name.lowercased()) {
            if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
        }
        return Response(
            status: HTTPResponse.Status(code: Int(answer.status.code)), headers: headers,
            body: ResponseBody(asyncSequence: answer.body))
    }
}
