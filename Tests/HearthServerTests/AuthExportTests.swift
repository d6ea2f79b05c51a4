import HearthAuth
import HearthCore
import Testing

@testable import HearthServer

/// The auth part of the Emulator Suite export: `auth_export/config.json`, and what Hearth's
/// accounts cannot hold (multi-factor enrolments, tenants), refused rather than dropped.
@Suite struct AuthExportTests {
    func config(_ text: String) throws -> AuthProjectSettings { try EmulatorExport.authConfig(Array(text.utf8)) }

    @Test(arguments: [nil, false, true] as [Bool?])
    func configRoundTrips(_ protection: Bool?) throws {
        let written = EmulatorExport.authConfigJSON(AuthProjectSettings(emailEnumerationProtection: protection))
        #expect(written["signIn"]?["allowDuplicateEmails"]?.boolValue == false)
        #expect(written["emailPrivacyConfig"]?["enableImprovedEmailPrivacy"]?.boolValue == (protection ?? false))
        #expect(try EmulatorExport.authConfig(written.serializedBytes()).emailEnumerationProtection == (protection ?? false))
    }

    @Test func whatEachFirebaseToolsVersionWritesParses() throws {
        // firebase-tools 13+: getEmulatorProjectConfig's signIn and emailPrivacyConfig.
        #expect(try config(#"{"signIn":{"allowDuplicateEmails":false},"emailPrivacyConfig":{"enableImprovedEmailPrivacy":true}}"#)
            == AuthProjectSettings(emailEnumerationProtection: true))
        // Older versions: signIn and usageMode.
        #expect(try config(#"{"signIn":{"allowDuplicateEmails":false},"usageMode":"DEFAULT"}"#) == AuthProjectSettings())
        // The first ones: signIn alone.
        #expect(try config(#"{"signIn":{"allowDuplicateEmails":false}}"#) == AuthProjectSettings())
    }

    @Test(arguments: [
        #"not json"#, #"[]"#, #"{"signIn":{"allowDuplicateEmails":true}}"#, #"{"signIn":true}"#,
        #"{"signIn":{"allowDuplicateEmails":"no"}}"#, #"{"emailPrivacyConfig":{"enableImprovedEmailPrivacy":1}}"#,
        #"{"usageMode":"PASSTHROUGH"}"#, #"{"usageMode":"SOMETHING"}"#,
    ])
    func configsHearthCannotHonourAreRefused(_ text: String) {
        #expect(throws: EmulatorExport.Failure.self) { try config(text) }
    }

    @Test func multiFactorEnrolmentsAreRefusedNotDropped() throws {
        let enrolled = #"""
            {"users":[{"localId":"u1","email":"a@example.com","mfaInfo":[{"mfaEnrollmentId":"e1","displayName":"phone",
             "phoneInfo":"+15555550100","enrolledAt":"2023-11-14T22:13:20.000Z","unobfuscatedPhoneInfo":"+15555550100"}]}]}
            """#
        let error = #expect(throws: EmulatorExport.Failure.self) { try EmulatorExport.accounts(Array(enrolled.utf8)) }
        #expect(error?.description.contains("multi-factor") == true)
        #expect(error?.description.contains("(u1)") == true)
        // An empty list is no enrolment.
        let none = #"{"users":[{"localId":"u1","mfaInfo":[]}]}"#
        #expect(try EmulatorExport.accounts(Array(none.utf8)).count == 1)
    }

    @Test func tenantAccountsAreRefused() throws {
        let text = #"{"users":[{"localId":"u1","tenantId":"tenant-a"}]}"#
        #expect(throws: EmulatorExport.Failure.self) { try EmulatorExport.accounts(Array(text.utf8)) }
        #expect(EmulatorExport.tenant(ofAccountsFile: "accounts-tenant-a.json") == "tenant-a")
        #expect(EmulatorExport.tenant(ofAccountsFile: "accounts.json") == nil)
        #expect(EmulatorExport.tenant(ofAccountsFile: "accounts-.json") == nil)
        #expect(EmulatorExport.tenant(ofAccountsFile: "config.json") == nil)
    }
}
