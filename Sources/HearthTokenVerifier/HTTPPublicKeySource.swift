public import AsyncHTTPClient
public import Foundation
public import NIOCore

/// Fetches a JWKS or x509 JSON document over HTTP(S) with AsyncHTTPClient and reads its
/// `Cache-Control: max-age`.
public struct HTTPPublicKeySource: PublicKeySource {
    /// Google's x509 document for Firebase ID tokens.
    public static let firebaseX509URL =
        URL(string: "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com")!
    /// Google's JWKS for Firebase ID tokens.
    public static let firebaseJWKSURL =
        URL(string: "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com")!

    public let url: URL
    public let httpClient: HTTPClient
    public let timeout: TimeAmount
    /// The largest document accepted.
    public let maxBytes: Int

    public init(url: URL, httpClient: HTTPClient = .shared, timeout: TimeAmount = .seconds(10), maxBytes: Int = 1 << 20) {
        self.url = url
        self.httpClient = httpClient
        self.timeout = timeout
        self.maxBytes = maxBytes
    }

    public func fetchKeys() async throws(TokenVerificationError) -> PublicKeySet {
        let body: ByteBuffer
        let cacheControl: String?
        do {
            var request = HTTPClientRequest(url: url.absoluteString)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await httpClient.execute(request, timeout: timeout)
            guard response.status == .ok else {
                throw TokenVerificationError.keySetUnavailable("\(url.absoluteString) answered \(response.status.code).")
            }
            cacheControl = response.headers.first(name: "Cache-Control")
            body = try await response.body.collect(upTo: maxBytes)
        } catch let error as TokenVerificationError {
            throw error
        } catch {
            throw .keySetUnavailable("\(url.absoluteString): \(error)")
        }
        return try PublicKeySet.parse(Array(buffer: body), maxAge: PublicKeySet.maxAge(cacheControl: cacheControl))
    }
}
