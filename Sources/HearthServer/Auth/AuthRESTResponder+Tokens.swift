import HearthCore
import HearthAuth
import HearthJWT
import Hummingbird
import NIOCore
import Foundation
import Synchronization

/// Secure Token (refresh), the OAuth2 token endpoint for service accounts, and public keys.
extension AuthRESTResponder {
    /// Reads a form-encoded or JSON body into string fields (snake_case and camelCase alike).
    static func formOrJSON(_ request: inout Request, limit: Int) async throws -> [String: String] {
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(limit: limit) } catch {
            throw HearthError(.invalidArgument, error.googleMessage)
        }
        let bytes = Array(buffer.readableBytesView)
        var out: [String: String] = [:]
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0a && $0 != 0x0d && $0 != 0x09 })
        if contentType.contains("json") || first == UInt8(ascii: "{") {
            let json: JSON
            json = try JSON.parse(bytes)  // its errors already read "Invalid JSON payload received. …"
            guard let members = json.objectValue else { throw HearthError.invalidArgument("Invalid JSON payload received. Expected an object.") }
            for (k, v) in members {
                switch v {
                case .string(let s): out[k] = s
                case .number(let n): out[k] = n
                case .null: continue
                default: throw AuthRequestBody.wrongType(k, "TYPE_STRING", v)
                }
            }
        } else {
            guard let text = String(validating: bytes, as: UTF8.self) else { throw HearthError.invalidArgument("The body is not UTF-8.") }
            for (k, v) in try HTTPSupport.queryParameters(text) { out[k] = v }
        }
        // The query string may carry the parameters too (`?grant_type=…`), body wins.
        for (k, v) in try HTTPSupport.queryParameters(request.uri.query) where out[k] == nil && k != "key" { out[k] = v }
        return out
    }

    /// `securetoken.googleapis.com/v1/token`: `grant_type=refresh_token` → a fresh ID token, in snake_case.
    func secureToken(_ request: inout Request) async throws -> Response {
        let p = try await Self.formOrJSON(&request, limit: maxBody)
        guard let grant = p["grant_type"] ?? p["grantType"] else { throw AuthErrorCode.missingGrantType.error() }
        guard grant == "refresh_token" else { throw AuthErrorCode.invalidGrantType.error() }
        guard let token = p["refresh_token"] ?? p["refreshToken"], !token.isEmpty else { throw AuthErrorCode.missingRefreshToken.error() }
        let s = try await engine.refresh(token)
        return HTTPSupport.json(.object([
            ("access_token", .string(s.idToken)), ("expires_in", .string(String(s.expiresIn))), ("token_type", .string("Bearer")),
            ("refresh_token", .string(s.refreshToken)), ("id_token", .string(s.idToken)), ("user_id", .string(s.account.uid)),
            ("project_id", .string(projectID)),
        ]))
    }

    /// `POST /token`: the OAuth2 JWT-bearer grant for Hearth service accounts (what google-auth's
    /// `service_account.Credentials.refresh` sends). Errors in OAuth2's shape (`error`, `error_description`).
    func oauthToken(_ request: inout Request) async throws -> Response {
        func oauthError(_ code: String, _ description: String, _ status: HTTPResponse.Status = .badRequest) -> Response {
            HTTPSupport.json(.object([("error", .string(code)), ("error_description", .string(description))]), status: status)
        }
        let p: [String: String]
        do { p = try await Self.formOrJSON(&request, limit: maxBody) } catch let e as HearthError {
            return oauthError("invalid_request", e.message)
        }
        guard let grant = p["grant_type"] else { return oauthError("invalid_request", "Missing required parameter: grant_type") }
        guard grant == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return oauthError("unsupported_grant_type", "Invalid grant_type: \(grant)")
        }
        guard let assertion = p["assertion"], !assertion.isEmpty else { return oauthError("invalid_request", "Missing required parameter: assertion") }
        do {
            let g = try await engine.exchangeJWTBearer(assertion: assertion)
            return HTTPSupport.json(.object([
                ("access_token", .string(g.accessToken)), ("expires_in", .number(String(g.expiresIn))), ("token_type", .string("Bearer")),
            ]))
        } catch let e as HearthError where e.code == .unauthenticated {
            return oauthError("invalid_grant", e.message)
        }
    }

    func cacheHeaders(_ response: inout Response) {
        response.headers[.cacheControl] = "public, max-age=\(engine.tokens.keyRing.cacheMaxAge), must-revalidate, no-transform"
    }

    /// The x509 JSON document (`{"<kid>": "<PEM certificate>"}`) that firebase-admin fetches.
    func x509Keys() throws -> Response {
        var response = HTTPSupport.json(try certificates.document(engine.tokens.keyRing))
        cacheHeaders(&response)
        return response
    }

    /// The JWKS form of the same keys.
    func jwks() -> Response {
        var response = HTTPSupport.json(engine.tokens.keyRing.jwks())
        cacheHeaders(&response)
        return response
    }
}

/// Certificates per key id: generating one costs an RSA signature, and keys change rarely.
final class CertificateCache: Sendable {
    let pems = Mutex<[String: String]>([:])

    func document(_ ring: KeyRing) throws -> JSON {
        var members: [(String, JSON)] = []
        for key in ring.publishedKeys {
            if let pem = pems.withLock({ $0[key.kid] }) {
                members.append((key.kid, .string(pem)))
                continue
            }
            let pem = RSAKeySet.pem(certificateDER: try ring.certificate(for: key))
            pems.withLock { $0[key.kid] = pem }
            members.append((key.kid, .string(pem)))
        }
        return .object(members)
    }
}
