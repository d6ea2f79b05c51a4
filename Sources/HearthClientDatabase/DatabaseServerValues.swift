/// `ServerValue` placeholders resolved on the client for the optimistic view (Firebase's
/// `FServerValues`): `timestamp` becomes the estimated server time (the local clock plus
/// `.info/serverTimeOffset`), `increment` the existing number plus the delta (the delta when
/// there is no number). The server resolves them again when it writes; its values replace
/// these when the write is acknowledged.
package enum DatabaseServerValues {
    /// `json` with every placeholder resolved; `existing` is the local value at the same place.
    package static func resolve(_ json: DatabaseJSON, existing: DatabaseNode, now: Double) -> DatabaseJSON {
        switch json {
        case .object(let members):
            if let placeholder = members.first(where: { $0.0 == ".sv" })?.1 {
                return resolvePlaceholder(placeholder, existing: existing, now: now) ?? json
            }
            return .object(members.map { key, member in
                (key, key.hasPrefix(".") ? member : resolve(member, existing: existing.child(key), now: now))
            })
        case .array(let items):
            return .array(items.enumerated().map { index, item in resolve(item, existing: existing.child(String(index)), now: now) })
        default:
            return json
        }
    }

    static func resolvePlaceholder(_ placeholder: DatabaseJSON, existing: DatabaseNode, now: Double) -> DatabaseJSON? {
        if placeholder.stringValue == "timestamp" { return .number(now.rounded(.down)) }
        if let delta = placeholder["increment"]?.numberValue {
            if case .number(let current)? = existing.leaf { return .number(current + delta) }
            return .number(delta)
        }
        return nil
    }
}
