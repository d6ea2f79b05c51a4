import Foundation
import HearthClientCore

/// The Identity Toolkit v1 and Secure Token calls the Auth client makes (`accounts:signUp`, …),
/// with errors mapped to ``AuthErrorCode`` as the Apple SDK maps them.
struct IdentityToolkit: Sendable {
    let base: String
    let apiKey: String
    let timeout: Duration

    init(options: HearthOptions) {
        base = options.baseURL(port: options.authPort)
        apiKey = options.apiKey
        timeout = options.requestTimeout
    }

    var keyQuery: String {
        "key=" + (apiKey.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+"))) ?? "")
    }

    /// `POST /identitytoolkit.googleapis.com/v1/accounts:<method>?key=…`.
    func accounts(_ method: String, _ body: [String: Any], idToken: String? = nil) async throws -> [String: Any] {
        try await post("\(base)/identitytoolkit.googleapis.com/v1/accounts:\(method)?\(keyQuery)", json: body)
    }

    /// `POST /securetoken.googleapis.com/v1/token` with a refresh token.
    func refresh(_ refreshToken: String) async throws -> [String: Any] {
        try await post("\(base)/securetoken.googleapis.com/v1/token?\(keyQuery)",
                       form: ["grant_type": "refresh_token", "refresh_token": refreshToken])
    }

    private func post(_ url: String, json: [String: Any]? = nil, form: [String: String]? = nil) async throws -> [String: Any] {
        let response: ClientHTTP.Response
        do {
            response = try await ClientHTTP.shared.send("POST", url, json: json, form: form, timeout: timeout)
        } catch {
            throw AuthErrorCode.networkError.error(underlying: error)
        }
        let object = response.json() ?? [:]
        guard (200..<300).contains(response.status) else {
            let message = ((object["error"] as? [String: Any])?["message"] as? String)
                ?? (object["error"] as? String) ?? "HTTP \(response.status)"
            throw AuthErrorCode.fromServer(message).error(serverMessage: message)
        }
        return object
    }
}
