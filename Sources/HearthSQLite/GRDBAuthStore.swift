public import GRDB
public import HearthAuth
import HearthCore
import Foundation

/// The `AuthStore` (owned by HearthAuth) over a GRDB `DatabaseWriter`: its own `auth_*` tables
/// and migration identifiers, so it can share the data dir's SQLite file or use a separate
/// `auth.sqlite`. It lives here so that GRDB stays in the SQLite backend module.
/// All SQL binds its parameters.
public final class GRDBAuthStore: AuthStore {
    public let writer: any DatabaseWriter

    public init(writer: any DatabaseWriter) throws {
        self.writer = writer
        try Self.migrator.migrate(writer)
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("hearth-auth-v1") { db in
            try db.execute(sql: """
                CREATE TABLE auth_accounts(
                    uid TEXT PRIMARY KEY NOT NULL,
                    email TEXT UNIQUE,
                    email_verified INTEGER NOT NULL,
                    password_hash TEXT,
                    password_updated_at INTEGER,
                    display_name TEXT,
                    photo_url TEXT,
                    disabled INTEGER NOT NULL,
                    custom_claims TEXT,
                    providers TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_login_at INTEGER,
                    last_refresh_at INTEGER,
                    valid_since INTEGER NOT NULL);
                CREATE TABLE auth_refresh_tokens(
                    token_hash TEXT PRIMARY KEY NOT NULL,
                    uid TEXT NOT NULL,
                    sign_in_provider TEXT NOT NULL,
                    auth_time INTEGER NOT NULL,
                    extra_claims TEXT,
                    created_at INTEGER NOT NULL);
                CREATE INDEX auth_refresh_tokens_uid ON auth_refresh_tokens(uid);
                CREATE TABLE auth_oob_codes(
                    code TEXT PRIMARY KEY NOT NULL,
                    request_type TEXT NOT NULL,
                    email TEXT NOT NULL,
                    uid TEXT,
                    continue_url TEXT,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL);
                CREATE INDEX auth_oob_codes_uid ON auth_oob_codes(uid);
                """)
        }
        m.registerMigration("hearth-auth-v2-service-accounts") { db in
            try db.execute(sql: """
                CREATE TABLE auth_service_accounts(
                    client_email TEXT PRIMARY KEY NOT NULL,
                    client_id TEXT NOT NULL,
                    key_id TEXT NOT NULL,
                    public_key_pem TEXT NOT NULL,
                    created_at INTEGER NOT NULL);
                """)
        }
        m.registerMigration("hearth-auth-v3-phone-and-provider-configs") { db in
            try db.execute(sql: """
                ALTER TABLE auth_accounts ADD COLUMN phone_number TEXT;
                CREATE UNIQUE INDEX auth_accounts_phone_number ON auth_accounts(phone_number);
                CREATE TABLE auth_phone_codes(
                    session_info TEXT PRIMARY KEY NOT NULL,
                    phone_number TEXT NOT NULL,
                    code TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL);
                CREATE TABLE auth_provider_configs(
                    provider_id TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL,
                    resource TEXT NOT NULL);
                """)
        }
        m.registerMigration("hearth-auth-v4-project-settings") { db in
            try db.execute(sql: """
                CREATE TABLE auth_project_settings(
                    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
                    email_enumeration_protection INTEGER);
                """)
        }
        // Linked provider users get a table of their own: an indexed lookup for `signInWithIdp`,
        // and the store's uniqueness of (provider, raw id) without scanning every account's JSON.
        // Accounts stored before it could share a provider user (the engine checked, the schema
        // did not): the first (by uid) keeps the link row.
        m.registerMigration("hearth-auth-v5-provider-links") { db in
            try db.execute(sql: """
                CREATE TABLE auth_provider_links(
                    provider_id TEXT NOT NULL,
                    raw_id TEXT NOT NULL,
                    uid TEXT NOT NULL,
                    PRIMARY KEY (provider_id, raw_id));
                CREATE INDEX auth_provider_links_uid ON auth_provider_links(uid);
                INSERT OR IGNORE INTO auth_provider_links(provider_id, raw_id, uid)
                    SELECT json_extract(value, '$.providerId'), json_extract(value, '$.rawId'), auth_accounts.uid
                    FROM auth_accounts, json_each(auth_accounts.providers)
                    WHERE json_extract(value, '$.providerId') IS NOT NULL AND json_extract(value, '$.rawId') IS NOT NULL
                    ORDER BY auth_accounts.uid;
                """)
        }
        return m
    }

    // MARK: Reads (each its own read transaction: a pool's readers run beside the writer)

    func read<T: Sendable>(_ body: @escaping @Sendable (Access) throws -> T) async throws -> T {
        try await writer.read { db in try body(Access(db: db)) }
    }

    public func account(uid: String) async throws -> Account? { try await read { try $0.account(uid: uid) } }
    public func account(email: String) async throws -> Account? { try await read { try $0.account(email: email) } }
    public func account(phoneNumber: String) async throws -> Account? { try await read { try $0.account(phoneNumber: phoneNumber) } }
    public func account(provider: String, rawID: String) async throws -> Account? {
        try await read { try $0.account(provider: provider, rawID: rawID) }
    }
    public func accounts(after uid: String?, limit: Int) async throws -> [Account] { try await read { try $0.accounts(after: uid, limit: limit) } }
    public func refreshToken(hash: String) async throws -> RefreshTokenRecord? { try await read { try $0.refreshToken(hash: hash) } }
    public func oobCode(_ code: String) async throws -> OOBCode? { try await read { try $0.oobCode(code) } }
    public func oobCodes() async throws -> [OOBCode] { try await read { try $0.oobCodes() } }
    public func phoneCode(sessionInfo: String) async throws -> PhoneVerificationCode? {
        try await read { try $0.phoneCode(sessionInfo: sessionInfo) }
    }
    public func phoneCodes() async throws -> [PhoneVerificationCode] { try await read { try $0.phoneCodes() } }
    public func serviceAccount(clientEmail: String) async throws -> ServiceAccountRecord? {
        try await read { try $0.serviceAccount(clientEmail: clientEmail) }
    }
    public func serviceAccounts() async throws -> [ServiceAccountRecord] { try await read { try $0.serviceAccounts() } }
    public func providerConfig(id: String) async throws -> ProviderConfig? { try await read { try $0.providerConfig(id: id) } }
    public func providerConfigs() async throws -> [ProviderConfig] { try await read { try $0.providerConfigs() } }
    public func projectSettings() async throws -> AuthProjectSettings { try await read { try $0.projectSettings() } }

    // MARK: Apply

    /// One write transaction: every expectation is checked, then the mutations run in order;
    /// a conflict (or any error) rolls the transaction back.
    public func apply(_ changes: AuthChangeSet) async throws {
        try await writer.write { db in
            let access = Access(db: db)
            for expectation in changes.expectations {
                guard try access.holds(expectation) else { throw AuthStoreConflict.changed(expectation) }
            }
            for mutation in changes.mutations { try access.apply(mutation) }
        }
    }

    struct Access {
        let db: Database

        func holds(_ expectation: AuthExpectation) throws -> Bool {
            switch expectation {
            case .account(let uid, let expected): try account(uid: uid) == expected
            case .providerLink(let provider, let rawID, let uid):
                try String.fetchOne(
                    db, sql: "SELECT uid FROM auth_provider_links WHERE provider_id = ? AND raw_id = ?", arguments: [provider, rawID]) == uid
            case .refreshToken(let hash):
                try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM auth_refresh_tokens WHERE token_hash = ?)", arguments: [hash]) ?? false
            case .oobCode(let code):
                try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM auth_oob_codes WHERE code = ?)", arguments: [code]) ?? false
            case .phoneCode(let sessionInfo):
                try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM auth_phone_codes WHERE session_info = ?)", arguments: [sessionInfo])
                    ?? false
            case .serviceAccount(let email, let exists): try (serviceAccount(clientEmail: email) != nil) == exists
            case .providerConfig(let id, let expected): try providerConfig(id: id) == expected
            case .projectSettings(let expected): try projectSettings() == expected
            case .noAccounts: try accounts(after: nil, limit: 1).isEmpty
            }
        }

        func apply(_ mutation: AuthMutation) throws {
            switch mutation {
            case .saveAccount(let a): try save(a)
            case .deleteAccount(let uid): try deleteAccount(uid: uid)
            case .deleteAllAccounts: try deleteAllAccounts()
            case .insertRefreshToken(let record): try insertRefreshToken(record)
            case .deleteRefreshTokens(let uid): try deleteRefreshTokens(uid: uid)
            case .insertOOBCode(let code): try insertOOBCode(code)
            case .deleteOOBCode(let code): try deleteOOBCode(code)
            case .deleteOOBCodes(let millis): try deleteOOBCodes(expiringBefore: millis)
            case .saveServiceAccount(let record): try saveServiceAccount(record)
            case .insertPhoneCode(let code): try insertPhoneCode(code)
            case .deletePhoneCode(let sessionInfo): try deletePhoneCode(sessionInfo: sessionInfo)
            case .deletePhoneCodes(let millis): try deletePhoneCodes(expiringBefore: millis)
            case .saveProviderConfig(let config): try saveProviderConfig(config)
            case .deleteProviderConfig(let id): try deleteProviderConfig(id: id)
            case .saveProjectSettings(let settings): try saveProjectSettings(settings)
            }
        }

        /// The uniqueness the store guarantees, as typed conflicts: email and phone number (also
        /// UNIQUE columns), and each (provider, raw id) the account links that its stored
        /// version did not (`auth_provider_links`).
        func checkUnique(_ a: Account) throws {
            if let e = a.email,
                try String.fetchOne(db, sql: "SELECT uid FROM auth_accounts WHERE email = ? AND uid <> ?", arguments: [e, a.uid]) != nil
            {
                throw AuthStoreConflict.emailTaken(e)
            }
            if let p = a.phoneNumber,
                try String.fetchOne(db, sql: "SELECT uid FROM auth_accounts WHERE phone_number = ? AND uid <> ?", arguments: [p, a.uid]) != nil
            {
                throw AuthStoreConflict.phoneNumberTaken(p)
            }
            guard !a.providers.isEmpty else { return }
            let before = try account(uid: a.uid)?.providers ?? []
            for link in a.providers where !before.contains(where: { $0.providerID == link.providerID && $0.rawID == link.rawID }) {
                let holder = try String.fetchOne(
                    db, sql: "SELECT uid FROM auth_provider_links WHERE provider_id = ? AND raw_id = ?", arguments: [link.providerID, link.rawID])
                if let holder, holder != a.uid { throw AuthStoreConflict.providerTaken(providerID: link.providerID, rawID: link.rawID) }
            }
        }

        /// Replaces the account's link rows by its providers (a link another account kept from
        /// before the links table stays that account's).
        func saveLinks(_ a: Account) throws {
            try db.execute(sql: "DELETE FROM auth_provider_links WHERE uid = ?", arguments: [a.uid])
            for link in a.providers {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO auth_provider_links(provider_id, raw_id, uid) VALUES (?,?,?)",
                    arguments: [link.providerID, link.rawID, a.uid])
            }
        }

        static let accountColumns = """
            uid, email, email_verified, password_hash, password_updated_at, display_name, photo_url, disabled, \
            custom_claims, providers, created_at, last_login_at, last_refresh_at, valid_since, phone_number
            """

        func decodeAccount(_ row: Row) throws -> Account {
            Account(
                uid: row["uid"], email: row["email"], emailVerified: row["email_verified"],
                passwordHash: try StoredAccountFields.decodePasswordHash(row["password_hash"]),
                passwordUpdatedAt: row["password_updated_at"], displayName: row["display_name"], photoURL: row["photo_url"],
                disabled: row["disabled"], customClaims: row["custom_claims"], providers: try StoredAccountFields.decodeProviders(row["providers"]),
                createdAt: row["created_at"], lastLoginAt: row["last_login_at"], lastRefreshAt: row["last_refresh_at"],
                validSince: row["valid_since"], phoneNumber: row["phone_number"])
        }

        func account(uid: String) throws -> Account? {
            try Row.fetchOne(db, sql: "SELECT \(Self.accountColumns) FROM auth_accounts WHERE uid = ?", arguments: [uid]).map(decodeAccount)
        }

        func account(email: String) throws -> Account? {
            try Row.fetchOne(db, sql: "SELECT \(Self.accountColumns) FROM auth_accounts WHERE email = ?", arguments: [email]).map(decodeAccount)
        }

        func accounts(after uid: String?, limit: Int) throws -> [Account] {
            try Row.fetchAll(
                db, sql: "SELECT \(Self.accountColumns) FROM auth_accounts WHERE uid > ? ORDER BY uid LIMIT ?",
                arguments: [uid ?? "", limit]
            ).map(decodeAccount)
        }

        func refreshToken(hash: String) throws -> RefreshTokenRecord? {
            try Row.fetchOne(
                db, sql: "SELECT uid, sign_in_provider, auth_time, extra_claims, created_at FROM auth_refresh_tokens WHERE token_hash = ?",
                arguments: [hash]
            ).map { r in
                RefreshTokenRecord(tokenHash: hash, uid: r[0], signInProvider: r[1], authTime: r[2], extraClaims: r[3], createdAt: r[4])
            }
        }

        func decodeOOB(_ r: Row) throws -> OOBCode {
            guard let type = OOBRequestType(rawValue: r["request_type"]) else { throw HearthError(.dataLoss, "Unknown OOB code type.") }
            return OOBCode(
                code: r["code"], requestType: type, email: r["email"], uid: r["uid"], continueURL: r["continue_url"],
                createdAt: r["created_at"], expiresAt: r["expires_at"])
        }

        func oobCode(_ code: String) throws -> OOBCode? {
            try Row.fetchOne(db, sql: "SELECT * FROM auth_oob_codes WHERE code = ?", arguments: [code]).map(decodeOOB)
        }

        func oobCodes() throws -> [OOBCode] {
            try Row.fetchAll(db, sql: "SELECT * FROM auth_oob_codes ORDER BY created_at, code").map(decodeOOB)
        }

        func account(provider: String, rawID: String) throws -> Account? {
            try Row.fetchOne(
                db,
                sql: """
                    SELECT \(Self.accountColumns) FROM auth_accounts
                    WHERE uid = (SELECT uid FROM auth_provider_links WHERE provider_id = ? AND raw_id = ?)
                    """,
                arguments: [provider, rawID]
            ).map(decodeAccount)
        }

        func decodeServiceAccount(_ r: Row) -> ServiceAccountRecord {
            ServiceAccountRecord(
                clientEmail: r["client_email"], clientID: r["client_id"], keyID: r["key_id"], publicKeyPEM: r["public_key_pem"],
                createdAt: r["created_at"])
        }

        func serviceAccount(clientEmail: String) throws -> ServiceAccountRecord? {
            try Row.fetchOne(db, sql: "SELECT * FROM auth_service_accounts WHERE client_email = ?", arguments: [clientEmail])
                .map(decodeServiceAccount)
        }

        func serviceAccounts() throws -> [ServiceAccountRecord] {
            try Row.fetchAll(db, sql: "SELECT * FROM auth_service_accounts ORDER BY client_email").map(decodeServiceAccount)
        }

        func saveServiceAccount(_ s: ServiceAccountRecord) throws {
            try db.execute(
                sql: "INSERT OR REPLACE INTO auth_service_accounts(client_email, client_id, key_id, public_key_pem, created_at) VALUES (?,?,?,?,?)",
                arguments: [s.clientEmail, s.clientID, s.keyID, s.publicKeyPEM, s.createdAt])
        }

        /// `ON CONFLICT(uid) DO UPDATE` rather than `INSERT OR REPLACE`: a clash on another unique
        /// column (email, phone number) fails the write instead of silently deleting the other account.
        static let upsertAccount: String = {
            let columns = accountColumns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let updates = columns.filter { $0 != "uid" }.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
            let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ",")
            return "INSERT INTO auth_accounts(\(accountColumns)) VALUES (\(placeholders)) ON CONFLICT(uid) DO UPDATE SET \(updates)"
        }()

        func save(_ a: Account) throws {
            try checkUnique(a)
            try db.execute(
                sql: Self.upsertAccount,
                arguments: [
                    a.uid, a.email, a.emailVerified, a.passwordHash?.encoded, a.passwordUpdatedAt, a.displayName, a.photoURL,
                    a.disabled, a.customClaims, StoredAccountFields.encodeProviders(a.providers), a.createdAt, a.lastLoginAt, a.lastRefreshAt,
                    a.validSince, a.phoneNumber,
                ])
            try saveLinks(a)
        }

        func deleteAccount(uid: String) throws {
            try db.execute(sql: "DELETE FROM auth_accounts WHERE uid = ?", arguments: [uid])
            try db.execute(sql: "DELETE FROM auth_provider_links WHERE uid = ?", arguments: [uid])
            try deleteRefreshTokens(uid: uid)
            try db.execute(sql: "DELETE FROM auth_oob_codes WHERE uid = ?", arguments: [uid])
        }

        func deleteAllAccounts() throws {
            try db.execute(
                sql: """
                    DELETE FROM auth_accounts; DELETE FROM auth_provider_links; DELETE FROM auth_refresh_tokens; \
                    DELETE FROM auth_oob_codes; DELETE FROM auth_phone_codes;
                    """)
        }

        func account(phoneNumber: String) throws -> Account? {
            try Row.fetchOne(db, sql: "SELECT \(Self.accountColumns) FROM auth_accounts WHERE phone_number = ?", arguments: [phoneNumber])
                .map(decodeAccount)
        }

        func decodePhoneCode(_ r: Row) -> PhoneVerificationCode {
            PhoneVerificationCode(
                sessionInfo: r["session_info"], phoneNumber: r["phone_number"], code: r["code"], createdAt: r["created_at"],
                expiresAt: r["expires_at"])
        }

        func phoneCode(sessionInfo: String) throws -> PhoneVerificationCode? {
            try Row.fetchOne(db, sql: "SELECT * FROM auth_phone_codes WHERE session_info = ?", arguments: [sessionInfo]).map(decodePhoneCode)
        }

        func phoneCodes() throws -> [PhoneVerificationCode] {
            try Row.fetchAll(db, sql: "SELECT * FROM auth_phone_codes ORDER BY created_at, session_info").map(decodePhoneCode)
        }

        func insertPhoneCode(_ c: PhoneVerificationCode) throws {
            try db.execute(
                sql: "INSERT INTO auth_phone_codes(session_info, phone_number, code, created_at, expires_at) VALUES (?,?,?,?,?)",
                arguments: [c.sessionInfo, c.phoneNumber, c.code, c.createdAt, c.expiresAt])
        }

        func deletePhoneCode(sessionInfo: String) throws {
            try db.execute(sql: "DELETE FROM auth_phone_codes WHERE session_info = ?", arguments: [sessionInfo])
        }

        func deletePhoneCodes(expiringBefore millis: Int64) throws {
            try db.execute(sql: "DELETE FROM auth_phone_codes WHERE expires_at < ?", arguments: [millis])
        }

        func decodeProviderConfig(_ r: Row) throws -> ProviderConfig {
            let kindName: String = r["kind"], text: String = r["resource"], id: String = r["provider_id"]
            guard let kind = ProviderConfig.Kind(rawValue: kindName) else { throw HearthError(.dataLoss, "Unknown provider config kind.") }
            do {
                return try ProviderConfig(kind: kind, providerID: id, resource: JSON.parse(text))
            } catch {
                throw HearthError(.dataLoss, "Unreadable provider config \(id).", cause: error)
            }
        }

        func providerConfig(id: String) throws -> ProviderConfig? {
            try Row.fetchOne(db, sql: "SELECT * FROM auth_provider_configs WHERE provider_id = ?", arguments: [id]).map(decodeProviderConfig)
        }

        func providerConfigs() throws -> [ProviderConfig] {
            try Row.fetchAll(db, sql: "SELECT * FROM auth_provider_configs ORDER BY provider_id").map(decodeProviderConfig)
        }

        func saveProviderConfig(_ c: ProviderConfig) throws {
            try db.execute(
                sql: "INSERT OR REPLACE INTO auth_provider_configs(provider_id, kind, resource) VALUES (?,?,?)",
                arguments: [c.providerID, c.kind.rawValue, c.resource.serialized()])
        }

        func deleteProviderConfig(id: String) throws {
            try db.execute(sql: "DELETE FROM auth_provider_configs WHERE provider_id = ?", arguments: [id])
        }

        func projectSettings() throws -> AuthProjectSettings {
            guard let row = try Row.fetchOne(db, sql: "SELECT email_enumeration_protection FROM auth_project_settings WHERE id = 1") else {
                return AuthProjectSettings()
            }
            let protection: Int64? = row["email_enumeration_protection"]
            return AuthProjectSettings(emailEnumerationProtection: protection.map { $0 != 0 })
        }

        func saveProjectSettings(_ settings: AuthProjectSettings) throws {
            try db.execute(
                sql: "INSERT OR REPLACE INTO auth_project_settings(id, email_enumeration_protection) VALUES (1, ?)",
                arguments: [settings.emailEnumerationProtection.map { $0 ? 1 : 0 }])
        }

        func insertRefreshToken(_ r: RefreshTokenRecord) throws {
            try db.execute(
                sql: "INSERT INTO auth_refresh_tokens(token_hash, uid, sign_in_provider, auth_time, extra_claims, created_at) VALUES (?,?,?,?,?,?)",
                arguments: [r.tokenHash, r.uid, r.signInProvider, r.authTime, r.extraClaims, r.createdAt])
        }

        func deleteRefreshTokens(uid: String) throws {
            try db.execute(sql: "DELETE FROM auth_refresh_tokens WHERE uid = ?", arguments: [uid])
        }

        func insertOOBCode(_ c: OOBCode) throws {
            try db.execute(
                sql: "INSERT INTO auth_oob_codes(code, request_type, email, uid, continue_url, created_at, expires_at) VALUES (?,?,?,?,?,?,?)",
                arguments: [c.code, c.requestType.rawValue, c.email, c.uid, c.continueURL, c.createdAt, c.expiresAt])
        }

        func deleteOOBCode(_ code: String) throws {
            try db.execute(sql: "DELETE FROM auth_oob_codes WHERE code = ?", arguments: [code])
        }

        func deleteOOBCodes(expiringBefore millis: Int64) throws {
            try db.execute(sql: "DELETE FROM auth_oob_codes WHERE expires_at < ?", arguments: [millis])
        }
    }
}
