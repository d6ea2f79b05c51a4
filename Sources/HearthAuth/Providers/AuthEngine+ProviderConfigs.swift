public import HearthCore

extension AuthEngine {
    /// Identity Toolkit v2 `create`: ALREADY_EXISTS when the provider id is taken.
    public func createProviderConfig(_ config: ProviderConfig) async throws -> ProviderConfig {
        try await store.write { w in
            guard try w.providerConfig(id: config.providerID) == nil else {
                throw HearthError(.alreadyExists, "DUPLICATE_IDP_CONFIG : Provider \(config.providerID) already exists.")
            }
            try w.saveProviderConfig(config)
            return config
        }
    }

    /// The config of `kind` with this id; CONFIGURATION_NOT_FOUND otherwise.
    public func providerConfig(_ kind: ProviderConfig.Kind, id: String) async throws -> ProviderConfig {
        try ProviderConfig.checkID(id, kind: kind)
        guard let c = try await store.read({ r in try r.providerConfig(id: id) }), c.kind == kind else {
            throw AuthErrorCode.configurationNotFound.error()
        }
        return c
    }

    /// Configs of `kind` ordered by id, strictly after `after`, at most `limit` (the transport
    /// bounds the page size: Google's 1…100, asking for one more to see whether a page follows).
    public func providerConfigs(_ kind: ProviderConfig.Kind, after: String?, limit: Int) async throws -> [ProviderConfig] {
        guard limit >= 1 else { throw HearthError.invalidArgument("pageSize must be positive.") }
        let all = try await store.read { r in try r.providerConfigs() }
        return Array(all.filter { $0.kind == kind && (after == nil || $0.providerID > after!) }.prefix(limit))
    }

    /// Applies `patch` to the fields in `mask` (PATCH with `updateMask`).
    public func updateProviderConfig(_ kind: ProviderConfig.Kind, id: String, patch: JSON, mask: [String]) async throws -> ProviderConfig {
        try ProviderConfig.checkID(id, kind: kind)
        return try await store.write { w in
            guard let current = try w.providerConfig(id: id), current.kind == kind else { throw AuthErrorCode.configurationNotFound.error() }
            let updated = try current.updated(with: patch, mask: mask)
            try w.saveProviderConfig(updated)
            return updated
        }
    }

    public func deleteProviderConfig(_ kind: ProviderConfig.Kind, id: String) async throws {
        try ProviderConfig.checkID(id, kind: kind)
        try await store.write { w in
            guard let current = try w.providerConfig(id: id), current.kind == kind else { throw AuthErrorCode.configurationNotFound.error() }
            try w.deleteProviderConfig(id: id)
        }
    }

    /// The OIDC config `signInWithIdp` uses for `providerID`, if one was created through the Admin API.
    public func oidcProviderConfig(id: String) async throws -> ProviderConfig? {
        let c = try await store.read { r in try r.providerConfig(id: id) }
        return c
    }
}
