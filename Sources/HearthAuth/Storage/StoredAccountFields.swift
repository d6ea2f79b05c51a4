package import HearthCore

/// The text an account row keeps for its linked providers — one encoding for every ``AuthStore``
/// backend (SQLite and PostgreSQL), so a row reads the same from either store. (The password
/// hash has its own: ``PasswordHash/encoded``.)
package enum StoredAccountFields {
    /// `[{"providerId":…,"rawId":…,"email":…,"displayName":…,"photoUrl":…,"phoneNumber":…}]`, absent fields left out.
    package static func encodeProviders(_ providers: [ProviderUserInfo]) -> String {
        JSON.array(providers.map { p in
            var m: [(String, JSON)] = [("providerId", .string(p.providerID)), ("rawId", .string(p.rawID))]
            if let e = p.email { m.append(("email", .string(e))) }
            if let d = p.displayName { m.append(("displayName", .string(d))) }
            if let u = p.photoURL { m.append(("photoUrl", .string(u))) }
            if let n = p.phoneNumber { m.append(("phoneNumber", .string(n))) }
            return .object(m)
        }).serialized()
    }

    package static func decodeProviders(_ text: String) throws -> [ProviderUserInfo] {
        try (JSON.parse(text).arrayValue ?? []).map { j in
            ProviderUserInfo(
                providerID: j["providerId"]?.stringValue ?? "", rawID: j["rawId"]?.stringValue ?? "",
                email: j["email"]?.stringValue, displayName: j["displayName"]?.stringValue, photoURL: j["photoUrl"]?.stringValue,
                phoneNumber: j["phoneNumber"]?.stringValue)
        }
    }

    /// The password hash column: nil stays nil; text that is no hash is DATA_LOSS.
    package static func decodePasswordHash(_ text: String?) throws(HearthError) -> PasswordHash? {
        guard let text else { return nil }
        guard let hash = PasswordHash(encoded: text) else { throw HearthError(.dataLoss, "Unreadable password hash.") }
        return hash
    }
}
