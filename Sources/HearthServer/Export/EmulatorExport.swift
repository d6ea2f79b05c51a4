import Foundation
package import HearthAuth
package import HearthCore
package import HearthDatabase

/// Export and import in the Firebase Emulator Suite's on-disk format (`firebase emulators:export`,
/// `--import`): `firebase-export-metadata.json` naming one folder per service. This covers
/// `auth_export/` (`accounts.json`, `config.json`) and `database_export/<namespace>.json`;
/// see docs/import-export.md for the layout, the choices and what is not covered yet.
package enum EmulatorExport {
    package static let metadataFile = "firebase-export-metadata.json"
    /// The firebase-tools version Hearth writes into the metadata (the format it follows).
    package static let writtenVersion = "13.0.0"
    /// firebase-tools major versions whose exports Hearth reads (import/export came with 8.x).
    package static let readableMajors = 8...15

    package enum Service: String, CaseIterable, Sendable {
        case auth, database, firestore, storage
    }

    /// What a failed export or import reports; the folder or data directory is left as it was.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package let description: String
        package init(_ description: String) { self.description = description }
    }

    // MARK: Metadata

    /// The parsed `firebase-export-metadata.json`: each service's folder, relative to the export.
    package struct Metadata: Sendable, Equatable {
        package var version: String
        package var paths: [Service: String]
        /// `firestore.metadata_file`, relative to the export.
        package var firestoreMetadataFile: String? = nil

        package init(version: String, paths: [Service: String]) {
            self.version = version
            self.paths = paths
        }

        package static func parse(_ bytes: [UInt8]) throws(Failure) -> Metadata {
            let json: JSON
            do { json = try JSON.parse(bytes) } catch { throw Failure("\(metadataFile) is not JSON: \(error.message)") }
            guard json.objectValue != nil else { throw Failure("\(metadataFile) is not a JSON object") }
            guard let version = json["version"]?.stringValue else { throw Failure("\(metadataFile) has no \"version\"") }
            guard let major = version.split(separator: ".").first.flatMap({ Int($0) }), readableMajors.contains(major) else {
                throw Failure(
                    "\(metadataFile) is from firebase-tools \(version); Hearth reads exports of versions \(readableMajors.lowerBound).x to \(readableMajors.upperBound).x")
            }
            var paths: [Service: String] = [:]
            for service in Service.allCases {
                guard let entry = json[service.rawValue], !entry.isNull else { continue }
                guard let path = entry["path"]?.stringValue, !path.isEmpty, !path.hasPrefix("/"),
                    !path.split(separator: "/").contains("..")
                else { throw Failure("\(metadataFile): \"\(service.rawValue)\" has no valid relative \"path\"") }
                paths[service] = path
            }
            var m = Metadata(version: version, paths: paths)
            if let file = json["firestore"]?["metadata_file"]?.stringValue {
                guard !file.hasPrefix("/"), !file.split(separator: "/").contains("..") else {
                    throw Failure("\(metadataFile): firestore.metadata_file is not a relative path inside the export")
                }
                m.firestoreMetadataFile = file
            }
            return m
        }

        package var json: JSON {
            var m: [(String, JSON)] = [("version", .string(version))]
            for service in Service.allCases {
                guard let path = paths[service] else { continue }
                var entry: [(String, JSON)] = [("version", .string(version)), ("path", .string(path))]
                if service == .firestore { entry.append(("metadata_file", .string("\(path)/firestore_export.overall_export_metadata"))) }
                m.append((service.rawValue, .object(entry)))
            }
            return .object(m)
        }
    }

    // MARK: Auth accounts

    /// An account as the Auth emulator's `accounts.json` holds it (`accounts:batchGet`'s
    /// `UserInfo`). Hearth's own password hashes are written as `hearth:<encoded hash>`; the
    /// emulator's `fakeHash:salt=…:password=…` is turned into a real hash on import.
    package static func accountJSON(_ a: Account) -> JSON {
        var m: [(String, JSON)] = [("localId", .string(a.uid))]
        if let e = a.email { m.append(("email", .string(e))) }
        m.append(("emailVerified", .bool(a.emailVerified)))
        if let p = a.phoneNumber { m.append(("phoneNumber", .string(p))) }
        if let d = a.displayName { m.append(("displayName", .string(d))) }
        if let p = a.photoURL { m.append(("photoUrl", .string(p))) }
        if let h = a.passwordHash {
            m.append(("passwordHash", .string("hearth:" + h.encoded)))
            m.append(("salt", .string(Base64.encode(h.salt))))
        }
        if let t = a.passwordUpdatedAt { m.append(("passwordUpdatedAt", .number(String(t)))) }
        m.append(("providerUserInfo", .array(a.providers.map(AuthJSON.providerInfo))))
        m.append(("validSince", .string(String(a.validSince))))
        if a.disabled { m.append(("disabled", .bool(true))) }
        if let t = a.lastLoginAt { m.append(("lastLoginAt", .string(String(t)))) }
        m.append(("createdAt", .string(String(a.createdAt))))
        if let t = a.lastRefreshAt { m.append(("lastRefreshAt", .string(AuthJSON.rfc3339(t)))) }
        if let c = a.customClaims { m.append(("customAttributes", .string(c))) }
        return .object(m)
    }

    /// How an imported account's password is stored: a hash Hearth already has, or a password
    /// (the emulator keeps them in clear) to hash before the import writes anything.
    package enum ImportedPassword: Sendable, Equatable {
        case hash(PasswordHash)
        case clear(String)
    }

    /// One `users[]` entry of an `accounts.json`, checked field by field.
    package static func account(_ json: JSON, index: Int) throws(Failure) -> (Account, ImportedPassword?) {
        let at = "accounts.json users[\(index)]"
        guard json.objectValue != nil else { throw Failure("\(at) is not an object") }
        func string(_ key: String) throws(Failure) -> String? {
            guard let v = json[key], !v.isNull else { return nil }
            guard let s = v.stringValue else { throw Failure("\(at).\(key) is not a string") }
            return s
        }
        func millis(_ key: String) throws(Failure) -> Int64? {
            guard let v = json[key], !v.isNull else { return nil }
            switch v {
            case .string(let s), .number(let s):
                guard let n = Int64(s) else { throw Failure("\(at).\(key) is not a whole number: \(s)") }
                return n
            default: throw Failure("\(at).\(key) is not a number")
            }
        }
        func bool(_ key: String) throws(Failure) -> Bool {
            guard let v = json[key], !v.isNull else { return false }
            guard let b = v.boolValue else { throw Failure("\(at).\(key) is not a boolean") }
            return b
        }
        guard let uid = try string("localId"), !uid.isEmpty, uid.utf8.count <= 128 else { throw Failure("\(at) has no valid localId") }
        // What Hearth's accounts cannot hold is refused, never dropped (docs/import-export.md).
        if let enrolments = json["mfaInfo"], !enrolments.isNull {
            guard let list = enrolments.arrayValue else { throw Failure("\(at).mfaInfo is not an array") }
            if !list.isEmpty {
                throw Failure(
                    "\(at) (\(uid)) has \(list.count) multi-factor enrolment(s) (mfaInfo); Hearth has no multi-factor authentication, and importing the account without its second factor would weaken its sign-in")
            }
        }
        if let tenant = try string("tenantId"), !tenant.isEmpty {
            throw Failure("\(at) (\(uid)) belongs to tenant \(tenant); Hearth has no tenants (Identity Platform multi-tenancy)")
        }
        var password: ImportedPassword? = nil
        if let hash = try string("passwordHash") {
            if hash.hasPrefix("hearth:") {
                guard let h = PasswordHash(encoded: String(hash.dropFirst("hearth:".count))) else {
                    throw Failure("\(at).passwordHash is not a hash Hearth wrote")
                }
                password = .hash(h)
            } else if hash.hasPrefix("fakeHash:"), let range = hash.range(of: ":password=") {
                password = .clear(String(hash[range.upperBound...]))
            } else {
                throw Failure("\(at).passwordHash is neither the Auth emulator's fakeHash nor Hearth's")
            }
        }
        var providers: [ProviderUserInfo] = []
        if let list = json["providerUserInfo"], !list.isNull {
            guard let items = list.arrayValue else { throw Failure("\(at).providerUserInfo is not an array") }
            for (j, p) in items.enumerated() {
                guard let pid = p["providerId"]?.stringValue, let raw = p["rawId"]?.stringValue ?? p["federatedId"]?.stringValue else {
                    throw Failure("\(at).providerUserInfo[\(j)] needs providerId and rawId")
                }
                // The password and phone providers follow from the account's own fields.
                if pid == "password" || pid == "phone" { continue }
                providers.append(ProviderUserInfo(
                    providerID: pid, rawID: raw, email: p["email"]?.stringValue, displayName: p["displayName"]?.stringValue,
                    photoURL: p["photoUrl"]?.stringValue, phoneNumber: p["phoneNumber"]?.stringValue))
            }
        }
        var lastRefresh: Int64? = nil
        if let text = try string("lastRefreshAt") {
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let plain = ISO8601DateFormatter()
            guard let date = f.date(from: text) ?? plain.date(from: text) else { throw Failure("\(at).lastRefreshAt is not an RFC 3339 time") }
            lastRefresh = Int64((date.timeIntervalSince1970 * 1000).rounded())
        }
        if let claims = try string("customAttributes"), !claims.isEmpty {
            guard (try? JSON.parse(claims))?.objectValue != nil else { throw Failure("\(at).customAttributes is not a JSON object") }
        }
        let account = Account(
            uid: uid, email: try string("email"), emailVerified: try bool("emailVerified"),
            passwordHash: nil, passwordUpdatedAt: try millis("passwordUpdatedAt"), displayName: try string("displayName"),
            photoURL: try string("photoUrl"), disabled: try bool("disabled"),
            customClaims: try string("customAttributes").flatMap { $0.isEmpty ? nil : $0 }, providers: providers,
            createdAt: try millis("createdAt") ?? 0, lastLoginAt: try millis("lastLoginAt"), lastRefreshAt: lastRefresh,
            validSince: try millis("validSince") ?? 0, phoneNumber: try string("phoneNumber"))
        return (account, password)
    }

    /// Every account of an `accounts.json` (`{"kind": …, "users": [...]}`), checked; duplicate
    /// uids, emails and phone numbers are refused as the Auth emulator refuses them.
    package static func accounts(_ bytes: [UInt8]) throws(Failure) -> [(Account, ImportedPassword?)] {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw Failure("accounts.json is not JSON: \(error.message)") }
        guard json.objectValue != nil else { throw Failure("accounts.json is not a JSON object") }
        guard let users = json["users"], !users.isNull else { return [] }
        guard let list = users.arrayValue else { throw Failure("accounts.json \"users\" is not an array") }
        var out: [(Account, ImportedPassword?)] = []
        var uids = Set<String>(), emails = Set<String>(), phones = Set<String>()
        for (i, u) in list.enumerated() {
            let (a, p) = try account(u, index: i)
            guard uids.insert(a.uid).inserted else { throw Failure("accounts.json has localId \(a.uid) twice") }
            if let e = a.email?.lowercased(), !emails.insert(e).inserted { throw Failure("accounts.json has email \(e) twice") }
            if let n = a.phoneNumber, !phones.insert(n).inserted { throw Failure("accounts.json has phone number \(n) twice") }
            out.append((a, p))
        }
        return out
    }

    // MARK: Auth project config

    /// `auth_export/config.json` as the Auth emulator writes it (its `GET /emulator/v1/projects/{p}/config`):
    /// one account per email (Hearth's only way), and email enumeration protection as the project set it.
    package static func authConfigJSON(_ settings: AuthProjectSettings) -> JSON {
        .object([
            ("signIn", .object([("allowDuplicateEmails", .bool(false))])),
            ("emailPrivacyConfig", .object([("enableImprovedEmailPrivacy", .bool(settings.emailEnumerationProtection ?? false))])),
        ])
    }

    /// An `auth_export/config.json`, checked against what Hearth keeps: `emailPrivacyConfig.enableImprovedEmailPrivacy`
    /// is imported; `signIn.allowDuplicateEmails: true` and `usageMode: PASSTHROUGH` (settings Hearth
    /// does not have) are refused; `usageMode: DEFAULT` (older firebase-tools) and unknown keys pass.
    package static func authConfig(_ bytes: [UInt8]) throws(Failure) -> AuthProjectSettings {
        let file = "auth_export/config.json"
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw Failure("\(file) is not JSON: \(error.message)") }
        guard json.objectValue != nil else { throw Failure("\(file) is not a JSON object") }
        func flag(_ section: String, _ key: String) throws(Failure) -> Bool? {
            guard let object = json[section], !object.isNull else { return nil }
            guard object.objectValue != nil else { throw Failure("\(file): \(section) is not an object") }
            guard let value = object[key], !value.isNull else { return nil }
            guard let b = value.boolValue else { throw Failure("\(file): \(section).\(key) is not a boolean") }
            return b
        }
        if try flag("signIn", "allowDuplicateEmails") == true {
            throw Failure("\(file): signIn.allowDuplicateEmails is true; Hearth keeps one account per email")
        }
        var settings = AuthProjectSettings()
        settings.emailEnumerationProtection = try flag("emailPrivacyConfig", "enableImprovedEmailPrivacy")
        if let mode = json["usageMode"], !mode.isNull {
            switch mode.stringValue {
            case "DEFAULT"?, "USAGE_MODE_UNSPECIFIED"?: break
            case "PASSTHROUGH"?: throw Failure("\(file): usageMode is PASSTHROUGH (the emulator kept no accounts); Hearth always keeps them")
            default: throw Failure("\(file): usageMode \(mode.serialized()) is not DEFAULT or PASSTHROUGH")
            }
        }
        return settings
    }

    /// The tenant of a per-tenant accounts file the Auth emulator writes (`accounts-<tenantId>.json`), else nil.
    package static func tenant(ofAccountsFile name: String) -> String? {
        guard name.hasPrefix("accounts-"), name.hasSuffix(".json"), name.count > "accounts-.json".count else { return nil }
        return String(name.dropFirst("accounts-".count).dropLast(".json".count))
    }

    // MARK: Realtime Database

    /// A namespace's export file (`GET /.json?format=export`: priorities as `.priority`, a
    /// prioritised leaf as `{".value", ".priority"}`), checked against the database's key rules.
    package static func databaseTree(_ bytes: [UInt8], file: String) throws(Failure) -> DatabaseNode {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw Failure("\(file) is not JSON: \(error.message)") }
        do {
            return try DatabaseNode.written(json, at: 0, existing: DatabaseNode(), context: ServerValueContext(now: 0))
        } catch {
            throw Failure("\(file): \(error.message)")
        }
    }

    /// The namespace a `database_export` file is for (`<namespace>.json`).
    package static func namespace(ofFile name: String) throws(Failure) -> String {
        guard name.hasSuffix(".json") else { throw Failure("database_export/\(name) is not a <namespace>.json file") }
        let ns = String(name.dropLast(5))
        guard !ns.isEmpty, ns.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw Failure("database_export/\(name): \(ns.debugDescription) is not a database namespace")
        }
        return ns
    }
}
