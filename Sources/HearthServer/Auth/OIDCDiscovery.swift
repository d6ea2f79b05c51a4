import AsyncHTTPClient
import HearthCore
import HearthAuth
import NIOCore
import Synchronization

/// The signing keys of OpenID Connect issuers that were configured through the Admin API
/// (`oauthIdpConfigs`) and have no keys in `--auth-config`: read from the issuer's discovery
/// document (`{issuer}/.well-known/openid-configuration` → `jwks_uri`), as Firebase does, and
/// kept for an hour (fetched again sooner, at most once a minute, when a token names an unknown
/// `kid` — the issuer rotated). Only `https` URLs, or `http` on a loopback host.
final class OIDCDiscovery: Sendable {
    struct Entry: Sendable {
        var keys: IdentityProvider
        var fetchedAt: ContinuousClock.Instant
    }

    let httpClient: HTTPClient
    let cache = Mutex<[String: Entry]>([:])
    static let lifetime: Duration = .seconds(3600)
    static let refetchAfter: Duration = .seconds(60)
    static let maxBytes = 1 << 20

    init(httpClient: HTTPClient = .shared) { self.httpClient = httpClient }

    /// A provider for `providerID` that accepts `clientID` tokens of `issuer`, with its fetched keys.
    func provider(providerID: String, issuer: String, clientID: String, keyID: String?) async throws(HearthError) -> IdentityProvider {
        let now = ContinuousClock.now
        let cached = cache.withLock { $0[issuer] }
        var entry: Entry
        if let cached, now - cached.fetchedAt < Self.lifetime,
            keyID.map({ cached.keys.keys[$0] != nil }) ?? true || now - cached.fetchedAt < Self.refetchAfter
        {
            entry = cached
        } else {
            entry = Entry(keys: try await fetch(issuer: issuer), fetchedAt: now)
            cache.withLock { $0[issuer] = entry }
        }
        entry.keys.providerID = providerID
        entry.keys.audiences = [clientID]
        return entry.keys
    }

    func fetch(issuer: String) async throws(HearthError) -> IdentityProvider {
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let discovery = try await json(base + "/.well-known/openid-configuration", issuer: issuer)
        guard let jwksURI = discovery["jwks_uri"]?.stringValue else {
            throw AuthErrorCode.invalidIDPResponse.error("The discovery document of \(issuer) has no jwks_uri.")
        }
        let keys = IdentityProvider.rsaKeys(jwks: try await json(jwksURI, issuer: issuer))
        guard !keys.isEmpty else { throw AuthErrorCode.invalidIDPResponse.error("The keys of \(issuer) hold no RSA key.") }
        return IdentityProvider(providerID: "", issuer: issuer, audiences: [], keys: keys)
    }

    /// Whether Hearth may fetch from `url`: https, or http to a loopback host.
    static func isAllowed(_ url: String) -> Bool {
        if url.hasPrefix("https://") { return true }
        for host in ["http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:", "http://localhost/", "http://[::1]:", "http://[::1]/"]
        where url.hasPrefix(host) {
            return true
        }
        return false
    }

    func json(_ url: String, issuer: String) async throws(HearthError) -> JSON {
        guard Self.isAllowed(url) else {
            throw AuthErrorCode.invalidIDPResponse.error("Keys of \(issuer) are fetched only over https (\(url)).")
        }
        do {
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await httpClient.execute(request, timeout: .seconds(10))
            guard response.status == .ok else {
                throw AuthErrorCode.invalidIDPResponse.error("\(url) answered \(response.status.code).")
            }
            let body = try await response.body.collect(upTo: Self.maxBytes)
            let json = try JSON.parse(body.readableBytesView)
            guard json.objectValue != nil else { throw AuthErrorCode.invalidIDPResponse.error("\(url) is not a JSON object.") }
            return json
        } catch let error as HearthError where error.authErrorCode == .invalidIDPResponse {
            throw error
        } catch {
            throw AuthErrorCode.invalidIDPResponse.error("Cannot fetch the keys of \(issuer) from \(url).")
        }
    }
}
