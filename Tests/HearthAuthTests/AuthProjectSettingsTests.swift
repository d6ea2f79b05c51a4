import Testing
@testable import HearthAuth

/// Project settings kept with the accounts (email enumeration protection): they outlive the
/// engine, survive deleting every account, and a new engine over the store applies them.
@Suite struct AuthProjectSettingsTests {
    @Test(arguments: Backend.allCases)
    func emailEnumerationProtectionIsKeptInTheStore(_ backend: Backend) async throws {
        let store = try backend.makeStore()
        let tokens = TokenService(projectID: "demo-proj", keyRing: sharedRing)
        let first = AuthEngine(store: store, tokens: tokens, configuration: .init(passwordHashing: .testing))
        #expect(try await store.projectSettings() == AuthProjectSettings())
        try await first.applyStoredSettings()
        #expect(first.emailEnumerationProtection == false)  // nothing stored: the configuration decides

        try await first.saveEmailEnumerationProtection(true)
        #expect(first.emailEnumerationProtection)
        try await store.apply(AuthChangeSet(mutations: [.deleteAllAccounts]))
        #expect(try await store.projectSettings().emailEnumerationProtection == true)

        let second = AuthEngine(store: store, tokens: tokens, configuration: .init(passwordHashing: .testing))
        #expect(second.emailEnumerationProtection == false)
        try await second.applyStoredSettings()
        #expect(second.emailEnumerationProtection)

        try await second.saveEmailEnumerationProtection(false)
        let third = AuthEngine(store: store, tokens: tokens, configuration: .init(passwordHashing: .testing, emailEnumerationProtection: true))
        try await third.applyStoredSettings()
        #expect(third.emailEnumerationProtection == false)  // what the project set beats the configuration's default
    }
}
