package import Foundation
import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// A JSON call to a Hearth (or Firebase) REST endpoint, shared by the client's services.
package struct ClientHTTP: Sendable {
    package struct Response: Sendable {
        package var status: Int
        package var headers: [(String, String)]
        package var body: Data

        package func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        package func json() -> [String: Any]? {
            (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        }
    }

    /// Transport failures (no answer from the server), as opposed to error answers.
    package struct TransportError: Error, CustomStringConvertible {
        package var description: String
        /// The answer was longer than the caller's `maxResponse`.
        package var responseTooLarge = false
    }

    package static let shared = ClientHTTP()

    package init() {}

    package func send(
        _ method: String, _ url: String, json: [String: Any]? = nil, form: [String: String]? = nil,
        body raw: Data? = nil, headers: [String: String] = [:], timeout: Duration = .seconds(60), maxResponse: Int = 64 << 20
    ) async throws(TransportError) -> Response {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        if let json {
            let data: Data
            do { data = try JSONSerialization.data(withJSONObject: json) } catch {
                throw TransportError(description: "Cannot encode the request: \(error)")
            }
            request.headers.replaceOrAdd(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: data))
        } else if let form {
            var components = URLComponents()
            components.queryItems = form.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
            request.headers.replaceOrAdd(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: components.percentEncodedQuery ?? ""))
        } else if let raw {
            request.body = .bytes(ByteBuffer(bytes: raw))
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(Int64(timeout.components.seconds)))
            let body = try await response.body.collect(upTo: maxResponse)
            return Response(
                status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
                body: Data(body.readableBytesView))
        } catch is NIOTooManyBytesError {
            throw TransportError(description: "the answer is longer than \(maxResponse) bytes", responseTooLarge: true)
        } catch {
            throw TransportError(description: "\(error)")
        }
    }
}
