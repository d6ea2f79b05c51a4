import HearthCore
import Synchronization

/// An `AuthStore` in process memory (tests, `--emulator` without a data dir). A change set is
/// checked and applied on a copy of the state under one lock; the copy replaces the state only
/// if every expectation held and every mutation succeeded.
public final class InMemoryAuthStore: AuthStore {
    struct State: Sendable {
        var accounts: [String: Account] = [:]
        var refreshTokens: [String: RefreshTokenRecord] = [:]
        var oobCodes: [String: OOBCode] = [:]
        var serviceAccounts: [String: ServiceAccountRecord] = [:]
        var phoneCodes: [String: PhoneVerificationCode] = [:]
        var providerConfigs: [String: ProviderConfig] = [:]
        var projectSettings = AuthProjectSettings()

        func account(email: String) -> Account? { accounts.values.first { $0.email == email } }
        func account(phoneNumber: String) -> Account? { accounts.values.first { $0.phoneNumber == phoneNumber } }
        func account(provider: String, rawID: String) -> Account? {
            accounts.values.first { a in a.providers.contains { $0.providerID == provider && $0.rawID == rawID } }
        }

        func holds(_ expectation: AuthExpectation) -> Bool {
            switch expectation {
            case .account(let uid, let expected): accounts[uid] == expected
            case .providerLink(let provider, let rawID, let uid): account(provider: provider, rawID: rawID)?.uid == uid
            case .refreshToken(let hash): refreshTokens[hash] != nil
            case .oobCode(let code): oobCodes[code] != nil
            case .phoneCode(let sessionInfo): phoneCodes[sessionInfo] != nil
            case .serviceAccount(let email, let exists): (serviceAccounts[email] != nil) == exists
            case .providerConfig(let id, let expected): providerConfigs[id] == expected
            case .projectSettings(let expected): projectSettings == expected
            case .noAccounts: accounts.isEmpty
            }
        }

        mutating func apply(_ mutation: AuthMutation) throws(AuthStoreConflict) {
            switch mutation {
            case .saveAccount(let a):
                if let e = a.email, let other = account(email: e), other.uid != a.uid { throw .emailTaken(e) }
                if let p = a.phoneNumber, let other = account(phoneNumber: p), other.uid != a.uid { throw .phoneNumberTaken(p) }
                // Each (provider, raw id) newly linked must be linked to no other account.
                let before = accounts[a.uid]?.providers ?? []
                for link in a.providers where !before.contains(where: { $0.providerID == link.providerID && $0.rawID == link.rawID }) {
                    let taken = accounts.values.contains { other in
                        other.uid != a.uid && other.providers.contains { $0.providerID == link.providerID && $0.rawID == link.rawID }
                    }
                    if taken { throw .providerTaken(providerID: link.providerID, rawID: link.rawID) }
                }
                accounts[a.uid] = a
            case .deleteAccount(let uid):
                accounts[uid] = nil
                refreshTokens = refreshTokens.filter { $0.value.uid != uid }
                oobCodes = oobCodes.filter { $0.value.uid != uid }
            case .deleteAllAccounts:
                accounts = [:]
                refreshTokens = [:]
                oobCodes = [:]
                phoneCodes = [:]
            case .insertRefreshToken(let record): refreshTokens[record.tokenHash] = record
            case .deleteRefreshTokens(let uid): refreshTokens = refreshTokens.filter { $0.value.uid != uid }
            case .insertOOBCode(let code): oobCodes[code.code] = code
            case .deleteOOBCode(let code): oobCodes[code] = nil
            case .deleteOOBCodes(let millis): oobCodes = oobCodes.filter { $0.value.expiresAt >= millis }
            case .saveServiceAccount(let record): serviceAccounts[record.clientEmail] = record
            case .insertPhoneCode(let code): phoneCodes[code.sessionInfo] = code
            case .deletePhoneCode(let sessionInfo): phoneCodes[sessionInfo] = nil
            case .deletePhoneCodes(let millis): phoneCodes = phoneCodes.filter { $0.value.expiresAt >= millis }
            case .saveProviderConfig(let config): providerConfigs[config.providerID] = config
            case .deleteProviderConfig(let id): providerConfigs[id] = nil
            case .saveProjectSettings(let settings): projectSettings = settings
            }
        }
    }

    let state = Mutex(State())

    public init() {}

    func snapshot<T: Sendable>(_ body: (State) -> T) -> T { state.withLock { body($0) } }

    public func account(uid: String) async throws -> Account? { snapshot { $0.accounts[uid] } }
    public func account(email: String) async throws -> Account? { snapshot { $0.account(email: email) } }
    public func account(phoneNumber: String) async throws -> Account? { snapshot { $0.account(phoneNumber: phoneNumber) } }
    public func account(provider: String, rawID: String) async throws -> Account? {
        snapshot { $0.account(provider: provider, rawID: rawID) }
    }
    public func accounts(after uid: String?, limit: Int) async throws -> [Account] {
        snapshot { s in Array(s.accounts.values.filter { uid == nil || $0.uid > uid! }.sorted { $0.uid < $1.uid }.prefix(limit)) }
    }
    public func refreshToken(hash: String) async throws -> RefreshTokenRecord? { snapshot { $0.refreshTokens[hash] } }
    public func oobCode(_ code: String) async throws -> OOBCode? { snapshot { $0.oobCodes[code] } }
    public func oobCodes() async throws -> [OOBCode] {
        snapshot { $0.oobCodes.values.sorted { ($0.createdAt, $0.code) < ($1.createdAt, $1.code) } }
    }
    public func phoneCode(sessionInfo: String) async throws -> PhoneVerificationCode? { snapshot { $0.phoneCodes[sessionInfo] } }
    public func phoneCodes() async throws -> [PhoneVerificationCode] {
        snapshot { $0.phoneCodes.values.sorted { ($0.createdAt, $0.sessionInfo) < ($1.createdAt, $1.sessionInfo) } }
    }
    public func serviceAccount(clientEmail: String) async throws -> ServiceAccountRecord? { snapshot { $0.serviceAccounts[clientEmail] } }
    public func serviceAccounts() async throws -> [ServiceAccountRecord] {
        snapshot { $0.serviceAccounts.values.sorted { $0.clientEmail < $1.clientEmail } }
    }
    public func providerConfig(id: String) async throws -> ProviderConfig? { snapshot { $0.providerConfigs[id] } }
    public func providerConfigs() async throws -> [ProviderConfig] {
        snapshot { $0.providerConfigs.values.sorted { $0.providerID < $1.providerID } }
    }
    public func projectSettings() async throws -> AuthProjectSettings { snapshot { $0.projectSettings } }

    public func apply(_ changes: AuthChangeSet) async throws {
        try state.withLock { current throws(AuthStoreConflict) in
            for expectation in changes.expectations where !current.holds(expectation) { throw .changed(expectation) }
            var next = current
            for mutation in changes.mutations { try next.apply(mutation) }
            current = next
        }
    }
}
