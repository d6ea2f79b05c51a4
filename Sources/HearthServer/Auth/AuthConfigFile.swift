import HearthCore
public import HearthAuth
import Foundation

/// `--auth-config FILE`:
/// `{"identityProviders":[{"providerId","issuer","clientIds":[…],"jwks":{…}|"jwksFile":"…"}], "linkDomains":["links.example.com"]}`.
public struct AuthConfigFile: Sendable {
    /// The OpenID Connect providers `signInWithIdp` trusts.
    public var identityProviders: [IdentityProvider] = []
    /// Hosts email action links may use as `linkDomain` (Firebase: the project's custom Hosting
    /// domains); any other is refused with INVALID_HOSTING_LINK_DOMAIN.
    public var linkDomains: [String] = []

    public init() {}

    public static func load(_ path: String) throws -> AuthConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HearthError(.failedPrecondition, "Cannot read auth config \(path).")
        }
        let json = try JSON.parse(Array(data))
        guard json.objectValue != nil else { throw HearthError.invalidArgument("\(path): expected a JSON object.") }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var out = AuthConfigFile()
        for p in json["identityProviders"]?.arrayValue ?? [] {
            let provider = try IdentityProvider(json: p, baseDirectory: base)
            guard !out.identityProviders.contains(where: { $0.providerID == provider.providerID }) else {
                throw HearthError.invalidArgument("\(path): provider \(provider.providerID) is listed twice.")
            }
            out.identityProviders.append(provider)
        }
        if let domains = json["linkDomains"] {
            guard let list = domains.arrayValue, list.allSatisfy({ $0.stringValue?.isEmpty == false }) else {
                throw HearthError.invalidArgument("\(path): linkDomains must be a list of host names.")
            }
            out.linkDomains = list.compactMap { $0.stringValue?.lowercased() }
        }
        return out
    }
}
