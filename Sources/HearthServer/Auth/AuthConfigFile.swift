import HearthCore
public import HearthAuth
import Foundation

/// `--auth-config FILE`: `{"identityProviders":[{"providerId","issuer","clientIds":[…],"jwks":{…}|"jwksFile":"…"}]}`.
public enum AuthConfigFile {
    public static func load(_ path: String) throws -> [IdentityProvider] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HearthError(.failedPrecondition, "Cannot read auth config \(path).")
        }
        let json = try JSON.parse(Array(data))
        guard json.objectValue != nil else { throw HearthError.invalidArgument("\(path): expected a JSON object.") }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var out: [IdentityProvider] = []
        for p in json["identityProviders"]?.arrayValue ?? [] {
            let provider = try IdentityProvider(json: p, baseDirectory: base)
            guard !out.contains(where: { $0.providerID == provider.providerID }) else {
                throw HearthError.invalidArgument("\(path): provider \(provider.providerID) is listed twice.")
            }
            out.append(provider)
        }
        return out
    }
}
