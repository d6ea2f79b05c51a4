import Foundation
import HearthAuth
import HearthCore
import HearthDatabase
import HearthStorage
import Testing

@testable import HearthServer

@Suite struct EmulatorExportTests {
    @Test func metadataRoundTripsAndNamesEachServiceFolder() throws {
        let m = EmulatorExport.Metadata(version: "13.0.0", paths: [.auth: "auth_export", .database: "database_export"])
        let parsed = try EmulatorExport.Metadata.parse(m.json.serializedBytes())
        #expect(parsed == m)
    }

    @Test func metadataFromTheEmulatorSuiteParses() throws {
        let text = #"""
            {"version": "13.29.1",
             "firestore": {"version": "1.19.9", "path": "firestore_export", "metadata_file": "firestore_export/firestore_export.overall_export_metadata"},
             "auth": {"version": "13.29.1", "path": "auth_export"},
             "database": {"version": "4.11.2", "path": "database_export"}}
            """#
        let m = try EmulatorExport.Metadata.parse(Array(text.utf8))
        #expect(m.paths == [.firestore: "firestore_export", .auth: "auth_export", .database: "database_export"])
    }

    @Test(arguments: [
        #"not json"#, #"[]"#, #"{}"#, #"{"version": "99.0.0"}"#, #"{"version": "7.1.0"}"#, #"{"version": "x"}"#,
        #"{"version": "13.0.0", "auth": {"path": "../etc"}}"#, #"{"version": "13.0.0", "auth": {"path": "/tmp"}}"#,
        #"{"version": "13.0.0", "database": {}}"#,
    ])
    func badMetadataIsRefused(_ text: String) {
        #expect(throws: EmulatorExport.Failure.self) { try EmulatorExport.Metadata.parse(Array(text.utf8)) }
    }

    @Test func anAccountRoundTripsWithItsHash() throws {
        let hash = PasswordHash.scrypt(logN: 4, r: 1, p: 1, salt: [1, 2, 3], hash: [4, 5, 6])
        let a = Account(
            uid: "u1", email: "a@example.com", emailVerified: true, passwordHash: hash, passwordUpdatedAt: 1_700_000_000_000,
            displayName: "Ann", photoURL: "https://x/p.png", disabled: true, customClaims: #"{"admin":true}"#,
            providers: [ProviderUserInfo(providerID: "google.com", rawID: "g-1", email: "a@example.com")],
            createdAt: 1_600_000_000_000, lastLoginAt: 1_650_000_000_000, lastRefreshAt: 1_650_000_000_123, validSince: 1_600_000_000,
            phoneNumber: "+15555550100")
        let (back, password) = try EmulatorExport.account(EmulatorExport.accountJSON(a), index: 0)
        #expect(password == .hash(hash))
        var expected = a
        expected.passwordHash = nil
        #expect(back == expected)
    }

    @Test func theAuthEmulatorsFakeHashGivesThePassword() throws {
        let json = try JSON.parse(#"""
            {"kind": "identitytoolkit#DownloadAccountResponse", "users": [
              {"localId": "abc", "email": "b@example.com", "passwordHash": "fakeHash:salt=fakeSaltX:password=s3cret:pw",
               "salt": "fakeSaltX", "passwordUpdatedAt": 1700000000000, "createdAt": "1700000000000", "validSince": "1700000000",
               "providerUserInfo": [{"providerId": "password", "rawId": "b@example.com", "federatedId": "b@example.com", "email": "b@example.com"}],
               "lastRefreshAt": "2023-11-14T22:13:20.000Z"}]}
            """#)
        let accounts = try EmulatorExport.accounts(json.serializedBytes())
        #expect(accounts.count == 1)
        #expect(accounts[0].1 == .clear("s3cret:pw"))
        #expect(accounts[0].0.providers.isEmpty && accounts[0].0.lastRefreshAt == 1_700_000_000_000)
    }

    @Test(arguments: [
        #"{"users": {}}"#, #"{"users": [{"email": "x@y"}]}"#, #"{"users": [{"localId": "a", "passwordHash": "bcrypt-ish"}]}"#,
        #"{"users": [{"localId": "a"}, {"localId": "a"}]}"#, #"{"users": [{"localId": "a", "createdAt": "soon"}]}"#,
        #"{"users": [{"localId": "a", "customAttributes": "[1]"}]}"#,
    ])
    func badAccountsAreRefused(_ text: String) {
        #expect(throws: EmulatorExport.Failure.self) { try EmulatorExport.accounts(Array(text.utf8)) }
    }

    @Test func aDatabaseTreeKeepsPriorities() throws {
        let text = #"{"a": {".priority": 2, "b": 1}, "c": {".value": "x", ".priority": "p"}}"#
        let node = try EmulatorExport.databaseTree(Array(text.utf8), file: "ns.json")
        #expect(try EmulatorExport.databaseTree(node.exportJSON().serializedBytes(), file: "again.json") == node)
        #expect(node.exportJSON()["c"]?[".value"] == .string("x"))
        #expect(throws: EmulatorExport.Failure.self) { try EmulatorExport.databaseTree(Array(#"{"a.b": 1}"#.utf8), file: "ns.json") }
        #expect(try EmulatorExport.namespace(ofFile: "demo-hearth-default-rtdb.json") == "demo-hearth-default-rtdb")
        #expect(throws: EmulatorExport.Failure.self) { try EmulatorExport.namespace(ofFile: "../x.json") }
    }
}

@Suite struct EmulatorStorageExportTests {
    @Test func objectPathsAreTheStorageEmulators() {
        #expect(EmulatorExport.storagePath(bucket: "b", name: "photos/2024/cat picture.png") == "b/photos/2024/cat%20picture.png")
        #expect(EmulatorExport.storagePath(bucket: "b", name: "top.txt") == "b/top.txt")
        #expect(EmulatorExport.storagePath(bucket: "b", name: "a/folder/") == "b/a/folder%2F")
        #expect(EmulatorExport.encodeURIComponent("ü-(x)!*'~_.?&=") == "%C3%BC-(x)!*'~_.%3F%26%3D")
    }

    @Test func theStorageEmulatorsMetadataParses() throws {
        let text = #"""
            {"name": "docs/a b.txt", "bucket": "b", "contentType": "text/plain", "metageneration": 1, "generation": 17,
             "customMetadata": {"k": "v", "gone": null}, "downloadTokens": ["t1", "t2"], "size": 12, "md5Hash": "abc=",
             "cacheControl": "no-cache"}
            """#
        let o = try EmulatorExport.storageObject(Array(text.utf8), file: "m.json")
        #expect(o.bucket == "b" && o.name == "docs/a b.txt" && o.size == 12 && o.md5Base64 == "abc=")
        #expect(o.attributes == ObjectAttributes(contentType: "text/plain", cacheControl: "no-cache", custom: ["k": "v"], downloadTokens: ["t1", "t2"]))
        let legacy = try EmulatorExport.storageObject(Array(#"{"name": "n", "bucket": "b", "downloadTokens": "t1,t2"}"#.utf8), file: "m.json")
        #expect(legacy.attributes.downloadTokens == ["t1", "t2"])
        for bad in [#"{"name": "n"}"#, #"[]"#, #"{"name": "n", "bucket": "b", "size": -1}"#, #"{"name": "n", "bucket": "b", "downloadTokens": [1]}"#] {
            #expect(throws: EmulatorExport.Failure.self) { try EmulatorExport.storageObject(Array(bad.utf8), file: "m.json") }
        }
    }
}
