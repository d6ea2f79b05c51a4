public import HearthCore

/// An identity provider configured through the Admin API (Identity Toolkit v2
/// `projects/{p}/oauthIdpConfigs` and `inboundSamlConfigs`), kept in the auth store as Google's
/// resource JSON (without `name`). The same JSON is what the API answers, so there is one
/// mapping for storage and the wire; `init` checks it as Google does.
public struct ProviderConfig: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case oidc = "oauthIdpConfigs"
        case saml = "inboundSamlConfigs"

        /// The provider id prefix Firebase requires (`oidc.` / `saml.`).
        public var idPrefix: String { self == .oidc ? "oidc." : "saml." }
    }

    public let kind: Kind
    public let providerID: String
    /// Google's resource fields: OIDC `clientId`, `issuer`, `displayName`, `enabled`,
    /// `clientSecret`, `responseType{idToken,code}`; SAML `idpConfig{idpEntityId,ssoUrl,
    /// idpCertificates[{x509Certificate}],signRequest}`, `spConfig{spEntityId,callbackUri}`,
    /// `displayName`, `enabled`.
    public let resource: JSON

    static let oidcFields: Set<String> = ["clientId", "issuer", "displayName", "enabled", "clientSecret", "responseType"]
    static let samlFields: Set<String> = ["idpConfig", "spConfig", "displayName", "enabled"]

    public init(kind: Kind, providerID: String, resource: JSON) throws(HearthError) {
        try Self.checkID(providerID, kind: kind)
        guard let members = resource.objectValue else { throw Self.invalid("The config must be an object.") }
        let allowed = kind == .oidc ? Self.oidcFields : Self.samlFields
        var kept: [(String, JSON)] = []
        for (key, value) in members where !value.isNull {
            guard allowed.contains(key) else { throw Self.invalid("Unknown field \(key).") }
            kept.removeAll { $0.0 == key }
            kept.append((key, value))
        }
        let json = JSON.object(kept)
        if let d = json["displayName"], d.stringValue == nil { throw Self.invalid("displayName must be a string.") }
        if let e = json["enabled"], e.boolValue == nil { throw Self.invalid("enabled must be a boolean.") }
        switch kind {
        case .oidc:
            guard let client = json["clientId"]?.stringValue, !client.isEmpty else {
                throw AuthErrorCode.invalidOAuthClientID.error("clientId is required.")
            }
            try Self.checkURL(json["issuer"], "issuer")
            if let s = json["clientSecret"], s.stringValue == nil { throw Self.invalid("clientSecret must be a string.") }
            if let r = json["responseType"] {
                guard let rm = r.objectValue else { throw Self.invalid("responseType must be an object.") }
                for (key, value) in rm {
                    guard ["idToken", "code", "token"].contains(key), value.boolValue != nil || value.isNull else {
                        throw Self.invalid("responseType.\(key) is not a boolean response type.")
                    }
                }
                if r["code"]?.boolValue == true && json["clientSecret"]?.stringValue?.isEmpty != false {
                    throw Self.invalid("The code response type needs a clientSecret.")
                }
            }
        case .saml:
            guard let idp = json["idpConfig"]?.objectValue.map(JSON.object) else { throw Self.invalid("idpConfig is required.") }
            guard let entity = idp["idpEntityId"]?.stringValue, !entity.isEmpty else { throw Self.invalid("idpConfig.idpEntityId is required.") }
            try Self.checkURL(idp["ssoUrl"], "idpConfig.ssoUrl")
            guard let certs = idp["idpCertificates"]?.arrayValue, !certs.isEmpty,
                certs.allSatisfy({ $0["x509Certificate"]?.stringValue?.isEmpty == false })
            else { throw Self.invalid("idpConfig.idpCertificates needs at least one x509Certificate.") }
            guard let sp = json["spConfig"]?.objectValue.map(JSON.object) else { throw Self.invalid("spConfig is required.") }
            guard let spEntity = sp["spEntityId"]?.stringValue, !spEntity.isEmpty else { throw Self.invalid("spConfig.spEntityId is required.") }
            try Self.checkURL(sp["callbackUri"], "spConfig.callbackUri")
        }
        self.kind = kind
        self.providerID = providerID
        self.resource = json
    }

    static func invalid(_ detail: String) -> HearthError { AuthErrorCode.invalidConfig.error(detail) }

    /// `oidc.` or `saml.` followed by letters, digits, `-`, `_` or `.` (at most 128 bytes).
    public static func checkID(_ id: String, kind: Kind) throws(HearthError) {
        let rest = id.utf8.dropFirst(kind.idPrefix.utf8.count)
        let ok = id.hasPrefix(kind.idPrefix) && !rest.isEmpty && id.utf8.count <= 128
            && rest.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F || c == 0x2E
            }
        guard ok else { throw AuthErrorCode.invalidProviderID.error("The provider id must start with \"\(kind.idPrefix)\".") }
    }

    static func checkURL(_ value: JSON?, _ name: String) throws(HearthError) {
        guard let s = value?.stringValue, s.hasPrefix("https://") || s.hasPrefix("http://"), s.utf8.count > 8, !s.contains(" ") else {
            throw invalid("\(name) must be an http(s) URL.")
        }
    }

    public var enabled: Bool { resource["enabled"]?.boolValue ?? false }

    /// For OIDC configs: the issuer and client id `signInWithIdp` checks tokens against.
    public var oidc: (issuer: String, clientID: String)? {
        guard kind == .oidc, let iss = resource["issuer"]?.stringValue, let client = resource["clientId"]?.stringValue else { return nil }
        return (iss, client)
    }

    /// This config with the fields named in `updateMask` (dotted paths, e.g. `responseType.code`)
    /// taken from `patch`; a path the patch leaves out or sets to null is cleared.
    public func updated(with patch: JSON, mask: [String]) throws(HearthError) -> ProviderConfig {
        var json = resource
        let allowed = kind == .oidc ? Self.oidcFields : Self.samlFields
        for path in mask {
            let parts = path.split(separator: ".").map(String.init)
            guard let head = parts.first, allowed.contains(head), parts.count <= 2 else {
                throw Self.invalid("Unknown field \(path) in updateMask.")
            }
            json = Self.setting(json, parts, to: Self.value(patch, parts))
        }
        return try ProviderConfig(kind: kind, providerID: providerID, resource: json)
    }

    static func value(_ json: JSON, _ path: [String]) -> JSON? {
        var v: JSON? = json
        for p in path { v = v?[p] }
        return v.flatMap { $0.isNull ? nil : $0 }
    }

    static func setting(_ json: JSON, _ path: [String], to value: JSON?) -> JSON {
        var members = json.objectValue ?? []
        let key = path[0]
        let existing = members.first { $0.0 == key }?.1
        members.removeAll { $0.0 == key }
        let new: JSON? = path.count == 1 ? value : setting(existing ?? .object([]), Array(path.dropFirst()), to: value)
        if let new { members.append((key, new)) }
        return .object(members)
    }
}
