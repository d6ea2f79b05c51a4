import HearthCore
import Synchronization

/// An `AuthStore` in process memory (tests, `--emulator` without a data dir). Writes are atomic:
/// a transaction works on a copy that replaces the state only if the body returns.
public final class InMemoryAuthStore: AuthStore {
    struct State: Sendable {
        var accounts: [String: Account] = [:]
        var refreshTokens: [String: RefreshTokenRecord] = [:]
        var oobCodes: [String: OOBCode] = [:]
        var serviceAccounts: [String: ServiceAccountRecord] = [:]
        var phoneCodes: [String: PhoneVerificationCode] = [:]
        var providerConfigs: [String: ProviderConfig] = [:]
        var projectSettings = AuthProjectSettings()
    }

    final class Transaction: AuthStoreWriter {
        var state: State
        init(_ state: State) { self.state = state }

        func account(uid: String) throws -> Account? { state.accounts[uid] }
        func account(email: String) throws -> Account? { state.accounts.values.first { $0.email == email } }
        func accounts(after uid: String?, limit: Int) throws -> [Account] {
            Array(state.accounts.values.filter { uid == nil || $0.uid > uid! }.sorted { $0.uid < $1.uid }.prefix(limit))
        }
        func refreshToken(hash: String) throws -> RefreshTokenRecord? { state.refreshTokens[hash] }
        func oobCode(_ code: String) throws -> OOBCode? { state.oobCodes[code] }
        func oobCodes() throws -> [OOBCode] { state.oobCodes.values.sorted { ($0.createdAt, $0.code) < ($1.createdAt, $1.code) } }

        func account(provider: String, rawID: String) throws -> Account? {
            state.accounts.values.first { a in a.providers.contains { $0.providerID == provider && $0.rawID == rawID } }
        }
        func serviceAccount(clientEmail: String) throws -> ServiceAccountRecord? { state.serviceAccounts[clientEmail] }
        func serviceAccounts() throws -> [ServiceAccountRecord] { state.serviceAccounts.values.sorted { $0.clientEmail < $1.clientEmail } }
        func saveServiceAccount(_ record: ServiceAccountRecord) throws { state.serviceAccounts[record.clientEmail] = record }

        func account(phoneNumber: String) throws -> Account? { state.accounts.values.first { $0.phoneNumber == phoneNumber } }
        func phoneCode(sessionInfo: String) throws -> PhoneVerificationCode? { state.phoneCodes[sessionInfo] }
        func phoneCodes() throws -> [PhoneVerificationCode] {
            state.phoneCodes.values.sorted { ($0.createdAt, $0.sessionInfo) < ($1.createdAt, $1.sessionInfo) }
        }
        func providerConfig(id: String) throws -> ProviderConfig? { state.providerConfigs[id] }
        func providerConfigs() throws -> [ProviderConfig] { state.providerConfigs.values.sorted { $0.providerID < $1.providerID } }
        func insertPhoneCode(_ code: PhoneVerificationCode) throws { state.phoneCodes[code.sessionInfo] = code }
        func deletePhoneCode(sessionInfo: String) throws { state.phoneCodes[sessionInfo] = nil }
        func deletePhoneCodes(expiringBefore millis: Int64) throws { state.phoneCodes = state.phoneCodes.filter { $0.value.expiresAt >= millis } }
        func saveProviderConfig(_ config: ProviderConfig) throws { state.providerConfigs[config.providerID] = config }
        func deleteProviderConfig(id: String) throws { state.providerConfigs[id] = nil }
        func projectSettings() throws -> AuthProjectSettings { state.projectSettings }
        func saveProjectSettings(_ settings: AuthProjectSettings) throws { state.projectSettings = settings }

        func save(_ account: Account) throws { state.accounts[account.uid] = account }
        func deleteAccount(uid: String) throws {
            state.accounts[uid] = nil
            state.refreshTokens = state.refreshTokens.filter { $0.value.uid != uid }
            state.oobCodes = state.oobCodes.filter { $0.value.uid != uid }
        }
        func deleteAllAccounts() throws {
            let kept = state.serviceAccounts, configs = state.providerConfigs, settings = state.projectSettings
            state = State()
            state.serviceAccounts = kept
            state.providerConfigs = configs
            state.projectSettings = settings
        }
        func insertRefreshToken(_ record: RefreshTokenRecord) throws { state.refreshTokens[record.tokenHash] = record }
        func deleteRefreshTokens(uid: String) throws { state.refreshTokens = state.refreshTokens.filter { $0.value.uid != uid } }
        func insertOOBCode(_ code: OOBCode) throws { state.oobCodes[code.code] = code }
        func deleteOOBCode(_ code: String) throws { state.oobCodes[code] = nil }
        func deleteOOBCodes(expiringBefore millis: Int64) throws { state.oobCodes = state.oobCodes.filter { $0.value.expiresAt >= millis } }
    }

    let state = Mutex(State())

    public init() {}

    public func read<T: Sendable>(_ body: @escaping @Sendable (any AuthStoreReader) throws -> T) async throws -> T {
        let snapshot = state.withLock { $0 }
        return try body(Transaction(snapshot))
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any AuthStoreWriter) throws -> T) async throws -> T {
        try state.withLock { s in
            let txn = Transaction(s)
            let result = try body(txn)
            s = txn.state
            return result
        }
    }
}
