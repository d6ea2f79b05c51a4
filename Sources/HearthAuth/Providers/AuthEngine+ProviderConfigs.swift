public import HearthCore

extension AuthEngine {
    /// Identity Toolkit v2 `create`: ALREADY_EXISTS when the provider id is taken.
    public func createProviderConfig(_ config: ProviderConfig) async throws -> ProviderConfig {
        try await commit {
            guard try await self.store.providerConfig(id: config.providerID) == nil else {
                throw HearthError(.alreadyExists, "DUPLICATE_IDP_CONFIG : Provider \(config.providerID) already exists.")
            }
            let changes = AuthChangeSet(
                expectations: [.providerConfig(id: config.providerID, equals: nil)], mutations: [.saveProviderConfig(config)])
            return (changes, config)
        }
    }

    /// The config of `kind` with this id; CONFIGURATION_NOT_FOUND otherwise.
    public func providerConfig(_ kind: ProviderConfig.Kind, id: String) async throws -> ProviderConfig {
        try ProviderConfig.checkID(id, kind: kind)
        guard let c = try await store.providerConfig(id: id), c.kind == kind else {
            throw AuthErrorCode.configurationNotFound.error()
        }
        return c
    }

    /// Configs of `kind` ordered by id, strictly after `after`, at most `limit` (the transport
    /// bounds the page size: Google's 1…100, asking for one more to see whether a page follows).
    public func providerConfigs(_ kind: ProviderConfig.Kind, after: String?, limit: Int) async throws -> [ProviderConfig] {
        guard limit >= 1 else { throw HearthError.invalidArgument("pageSize must be positive.") }
        let all = try await store.providerConfigs()
        return Array(all.filter { $0.kind == kind && (after == nil || $0.providerID > after!) }.prefix(limit))
    }

    /// Applies `patch` to the fields in `mask` (PATCH with `updateMask`).
    public func updateProviderConfig(_ kind: ProviderConfig.Kind, id: String, patch: JSON, mask: [String]) async throws -> ProviderConfig {
        try ProviderConfig.checkID(id, kind: kind)
        return try await commit {
            guard let current = try await self.store.providerConfig(id: id), current.kind == kind else {
                throw AuthErrorCode.configurationNotFound.error()
            }
            let updated = try current.updated(with: patch, mask: mask)
            return (AuthChangeSet(expectations: [.providerConfig(id: id, equals: current)], mutations: [.saveProviderConfig(updated)]), updated)
        }
    }

    public func deleteProviderConfig(_ kind: ProviderConfig.Kind, id: String) async throws {
        try ProviderConfig.checkID(id, kind: kind)
        try await commit {
            guard let current = try await self.store.providerConfig(id: id), current.kind == kind else {
                throw AuthErrorCode.configurationNotFound.error()
            }
            return (AuthChangeSet(expectations: [.providerConfig(id: id, equals: current)], mutations: [.deleteProviderConfig(id: id)]), ())
        }
    }

    /// The OIDC config `signInWithIdp` uses for `providerID`, if one was created through the Admin API.
    public func oidcProviderConfig(id: String) async throws -> ProviderConfig? {
        try await store.providerConfig(id: id)
    }
}
