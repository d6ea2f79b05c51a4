public import HearthAuth
import HearthCore
import PostgresNIO

/// HearthAuth's ``AuthStore`` over PostgreSQL (migration 4 of ``PostgresSchema``), with the
/// tables of `GRDBAuthStore` (and its encodings: ``StoredAccountFields``, ``PasswordHash/encoded``,
/// provider configs as their resource's JSON text).
///
/// Rules:
/// 1. **A change set is one SERIALIZABLE transaction** (``PostgresBackend/write(_:)``, run again
///    after a serialization failure): every expectation is checked inside it, then the
///    mutations run in order. Two servers over one database therefore behave like one: of
///    concurrent consumers of one out-of-band code, phone session or refresh token, exactly one
///    commits; an update planned on an account another server changed meanwhile is refused.
/// 2. **Uniqueness is the schema's**: unique indexes on `email` and `phone_number` (partial: NULL
///    is no value) and the primary key of `auth_provider_links(provider_id, raw_id)`. The store
///    looks first, to name the conflict (``AuthStoreConflict/emailTaken(_:)``,
///    ``AuthStoreConflict/phoneNumberTaken(_:)``, ``AuthStoreConflict/providerTaken(providerID:rawID:)``),
///    and a unique violation the look could not see (another server's concurrent insert) is
///    reported as the same conflict.
/// 3. **A refusal is judged on serializable reads**: the mutations run after a savepoint; a
///    refused change set rolls back to it and still commits its (then read-only) transaction,
///    so a refusal resting on a read that a concurrent commit invalidated is retried, not
///    reported. Any other error rolls everything back: nothing is applied.
/// 4. Reads are single statements, each seeing committed data.
/// 5. PostgreSQL's text cannot hold U+0000 (SQLite's can): a lookup by a key with one finds
///    nothing, a change set that would store one is INVALID_ARGUMENT (nothing applied) — never
///    an INTERNAL error.
public final class PostgresAuthStore: AuthStore {
    let backend: PostgresBackend

    /// A store over `backend`, whose schema is migrated (``PostgresSchema/migrate(_:logger:)``).
    public init(backend: PostgresBackend) {
        self.backend = backend
    }

    // MARK: Reads

    public func account(uid: String) async throws -> Account? {
        try await lookup(absent: nil) { session in try await Access(session: session).account(uid: uid) }
    }

    public func account(email: String) async throws -> Account? {
        try await lookup(absent: nil) { session in
            try await Access.account(session, "SELECT \(unescaped: Access.accountColumns) FROM auth_accounts WHERE email = \(email)")
        }
    }

    public func account(phoneNumber: String) async throws -> Account? {
        try await lookup(absent: nil) { session in
            try await Access.account(
                session, "SELECT \(unescaped: Access.accountColumns) FROM auth_accounts WHERE phone_number = \(phoneNumber)")
        }
    }

    public func account(provider: String, rawID: String) async throws -> Account? {
        try await lookup(absent: nil) { session in
            try await Access.account(
                session,
                """
                SELECT \(unescaped: Access.accountColumns) FROM auth_accounts
                WHERE uid = (SELECT uid FROM auth_provider_links WHERE provider_id = \(provider) AND raw_id = \(rawID))
                """)
        }
    }

    public func accounts(after uid: String?, limit: Int) async throws -> [Account] {
        let limit = Int64(max(0, limit))
        return try await lookup(absent: []) { session in
            let rows: [PostgresRow]
            if let uid {
                rows = try await session.rows(
                    "SELECT \(unescaped: Access.accountColumns) FROM auth_accounts WHERE uid > \(uid) ORDER BY uid LIMIT \(limit)")
            } else {
                rows = try await session.rows("SELECT \(unescaped: Access.accountColumns) FROM auth_accounts ORDER BY uid LIMIT \(limit)")
            }
            return try rows.map(Access.decodeAccount)
        }
    }

    public func refreshToken(hash: String) async throws -> RefreshTokenRecord? {
        try await lookup(absent: nil) { session in
            try await session.rows(
                "SELECT uid, sign_in_provider, auth_time, extra_claims, created_at FROM auth_refresh_tokens WHERE token_hash = \(hash)"
            ).first.map { row in
                let (uid, provider, authTime, extraClaims, createdAt) = try row.decode((String, String, Int64, String?, Int64).self)
                return RefreshTokenRecord(
                    tokenHash: hash, uid: uid, signInProvider: provider, authTime: authTime, extraClaims: extraClaims, createdAt: createdAt)
            }
        }
    }

    public func oobCode(_ code: String) async throws -> OOBCode? {
        try await lookup(absent: nil) { session in
            try await session.rows("SELECT \(unescaped: Access.oobColumns) FROM auth_oob_codes WHERE code = \(code)").first.map(Access.decodeOOB)
        }
    }

    public func oobCodes() async throws -> [OOBCode] {
        try await backend.read { session in
            try await session.rows("SELECT \(unescaped: Access.oobColumns) FROM auth_oob_codes ORDER BY created_at, code").map(Access.decodeOOB)
        }
    }

    public func phoneCode(sessionInfo: String) async throws -> PhoneVerificationCode? {
        try await lookup(absent: nil) { session in
            try await session.rows("SELECT \(unescaped: Access.phoneColumns) FROM auth_phone_codes WHERE session_info = \(sessionInfo)")
                .first.map(Access.decodePhoneCode)
        }
    }

    public func phoneCodes() async throws -> [PhoneVerificationCode] {
        try await backend.read { session in
            try await session.rows("SELECT \(unescaped: Access.phoneColumns) FROM auth_phone_codes ORDER BY created_at, session_info")
                .map(Access.decodePhoneCode)
        }
    }

    public func serviceAccount(clientEmail: String) async throws -> ServiceAccountRecord? {
        try await lookup(absent: nil) { session in try await Access(session: session).serviceAccount(clientEmail: clientEmail) }
    }

    public func serviceAccounts() async throws -> [ServiceAccountRecord] {
        try await backend.read { session in
            try await session.rows("SELECT \(unescaped: Access.serviceAccountColumns) FROM auth_service_accounts ORDER BY client_email")
                .map(Access.decodeServiceAccount)
        }
    }

    public func providerConfig(id: String) async throws -> ProviderConfig? {
        try await lookup(absent: nil) { session in try await Access(session: session).providerConfig(id: id) }
    }

    public func providerConfigs() async throws -> [ProviderConfig] {
        try await backend.read { session in
            try await session.rows("SELECT provider_id, kind, resource FROM auth_provider_configs ORDER BY provider_id")
                .map(Access.decodeProviderConfig)
        }
    }

    public func projectSettings() async throws -> AuthProjectSettings {
        try await backend.read { session in try await Access(session: session).projectSettings() }
    }

    /// PostgreSQL's text holds no NUL character (U+0000; SQLSTATE 22021), which SQLite stores.
    static func isNULCharacter(_ error: any Error) -> Bool {
        guard let error = error as? HearthError, let cause = error.cause as? PostgresBackendError else { return false }
        return cause.reason == .server(sqlState: "22021")
    }

    /// A read by a key: a key with a NUL character is in no row, so it finds nothing (`absent`)
    /// rather than failing the request.
    func lookup<T: Sendable>(absent: T, _ body: @escaping @Sendable (PostgresSession) async throws -> T) async throws -> T {
        do {
            return try await backend.read(body)
        } catch where Self.isNULCharacter(error) {
            return absent
        }
    }

    // MARK: Apply

    /// What one run of a change set's transaction decided.
    enum Outcome: Sendable {
        case applied
        /// Nothing written (the mutations were rolled back to the savepoint); the transaction
        /// commits to confirm the reads the refusal rests on.
        case refused(AuthStoreConflict)
    }

    public func apply(_ changes: AuthChangeSet) async throws {
        guard !changes.isEmpty else { return }
        let outcome: Outcome
        do {
            outcome = try await transaction(changes)
        } catch where Self.isNULCharacter(error) {
            // Nothing was applied (the transaction rolled back); the request is at fault, not the database.
            throw HearthError(.invalidArgument, "Account fields cannot contain the NUL character (U+0000).", cause: error)
        }
        if case .refused(let conflict) = outcome { throw conflict }
    }

    /// `changes` in one SERIALIZABLE transaction (run again by the backend after a serialization failure).
    func transaction(_ changes: AuthChangeSet) async throws -> Outcome {
        try await backend.write { session -> Outcome in
            let access = Access(session: session)
            for expectation in changes.expectations {
                // Nothing is written yet: a failed expectation commits a read-only transaction.
                guard try await access.holds(expectation) else { return .refused(.changed(expectation)) }
            }
            guard !changes.mutations.isEmpty else { return .applied }
            try await session.execute("SAVEPOINT auth_mutations")
            do {
                for mutation in changes.mutations { try await access.apply(mutation) }
                return .applied
            } catch let conflict as AuthStoreConflict {
                try await session.execute("ROLLBACK TO SAVEPOINT auth_mutations")
                return .refused(conflict)
            }
        }
    }

    /// The statements of one transaction (a change set's, or a read's).
    struct Access: Sendable {
        let session: PostgresSession

        // MARK: Expectations and mutations

        func holds(_ expectation: AuthExpectation) async throws -> Bool {
            switch expectation {
            case .account(let uid, let expected): try await account(uid: uid) == expected
            case .providerLink(let provider, let rawID, let uid):
                try await session.value(
                    "SELECT uid FROM auth_provider_links WHERE provider_id = \(provider) AND raw_id = \(rawID)", as: String.self) == uid
            case .refreshToken(let hash): try await session.exists("SELECT 1 FROM auth_refresh_tokens WHERE token_hash = \(hash)")
            case .oobCode(let code): try await session.exists("SELECT 1 FROM auth_oob_codes WHERE code = \(code)")
            case .phoneCode(let sessionInfo): try await session.exists("SELECT 1 FROM auth_phone_codes WHERE session_info = \(sessionInfo)")
            case .serviceAccount(let email, let exists): try await (serviceAccount(clientEmail: email) != nil) == exists
            case .providerConfig(let id, let expected): try await providerConfig(id: id) == expected
            case .projectSettings(let expected): try await projectSettings() == expected
            case .noAccounts: try await !session.exists("SELECT 1 FROM auth_accounts LIMIT 1")
            }
        }

        /// Runs `mutation`; a uniqueness conflict is thrown as ``AuthStoreConflict``.
        func apply(_ mutation: AuthMutation) async throws {
            switch mutation {
            case .saveAccount(let a): try await save(a)
            case .deleteAccount(let uid):
                try await session.execute("DELETE FROM auth_accounts WHERE uid = \(uid)")
                try await session.execute("DELETE FROM auth_provider_links WHERE uid = \(uid)")
                try await session.execute("DELETE FROM auth_refresh_tokens WHERE uid = \(uid)")
                try await session.execute("DELETE FROM auth_oob_codes WHERE uid = \(uid)")
            case .deleteAllAccounts:
                for table in ["auth_accounts", "auth_provider_links", "auth_refresh_tokens", "auth_oob_codes", "auth_phone_codes"] {
                    try await session.execute("DELETE FROM \(unescaped: table)")
                }
            case .insertRefreshToken(let r):
                try await session.execute(
                    """
                    INSERT INTO auth_refresh_tokens (token_hash, uid, sign_in_provider, auth_time, extra_claims, created_at)
                    VALUES (\(r.tokenHash), \(r.uid), \(r.signInProvider), \(r.authTime), \(r.extraClaims), \(r.createdAt))
                    """)
            case .deleteRefreshTokens(let uid): try await session.execute("DELETE FROM auth_refresh_tokens WHERE uid = \(uid)")
            case .insertOOBCode(let c):
                try await session.execute(
                    """
                    INSERT INTO auth_oob_codes (code, request_type, email, uid, continue_url, created_at, expires_at)
                    VALUES (\(c.code), \(c.requestType.rawValue), \(c.email), \(c.uid), \(c.continueURL), \(c.createdAt), \(c.expiresAt))
                    """)
            case .deleteOOBCode(let code): try await session.execute("DELETE FROM auth_oob_codes WHERE code = \(code)")
            case .deleteOOBCodes(let millis): try await session.execute("DELETE FROM auth_oob_codes WHERE expires_at < \(millis)")
            case .saveServiceAccount(let s):
                try await session.execute(
                    """
                    INSERT INTO auth_service_accounts (client_email, client_id, key_id, public_key_pem, created_at)
                    VALUES (\(s.clientEmail), \(s.clientID), \(s.keyID), \(s.publicKeyPEM), \(s.createdAt))
                    ON CONFLICT (client_email) DO UPDATE SET
                        client_id = excluded.client_id, key_id = excluded.key_id, public_key_pem = excluded.public_key_pem,
                        created_at = excluded.created_at
                    """)
            case .insertPhoneCode(let c):
                try await session.execute(
                    """
                    INSERT INTO auth_phone_codes (session_info, phone_number, code, created_at, expires_at)
                    VALUES (\(c.sessionInfo), \(c.phoneNumber), \(c.code), \(c.createdAt), \(c.expiresAt))
                    """)
            case .deletePhoneCode(let sessionInfo): try await session.execute("DELETE FROM auth_phone_codes WHERE session_info = \(sessionInfo)")
            case .deletePhoneCodes(let millis): try await session.execute("DELETE FROM auth_phone_codes WHERE expires_at < \(millis)")
            case .saveProviderConfig(let c):
                try await session.execute(
                    """
                    INSERT INTO auth_provider_configs (provider_id, kind, resource) VALUES (\(c.providerID), \(c.kind.rawValue), \(c.resource.serialized()))
                    ON CONFLICT (provider_id) DO UPDATE SET kind = excluded.kind, resource = excluded.resource
                    """)
            case .deleteProviderConfig(let id): try await session.execute("DELETE FROM auth_provider_configs WHERE provider_id = \(id)")
            case .saveProjectSettings(let settings):
                try await session.execute(
                    """
                    INSERT INTO auth_project_settings (id, email_enumeration_protection) VALUES (1, \(settings.emailEnumerationProtection))
                    ON CONFLICT (id) DO UPDATE SET email_enumeration_protection = excluded.email_enumeration_protection
                    """)
            }
        }

        /// Saves `a` (insert or replace by uid) with its link rows, after the uniqueness checks
        /// `GRDBAuthStore` makes: the email and phone number on no other account, each newly
        /// linked (provider, raw id) linked to no other account.
        func save(_ a: Account) async throws {
            if let email = a.email,
                try await session.exists("SELECT 1 FROM auth_accounts WHERE email = \(email) AND uid <> \(a.uid)")
            {
                throw AuthStoreConflict.emailTaken(email)
            }
            if let phone = a.phoneNumber,
                try await session.exists("SELECT 1 FROM auth_accounts WHERE phone_number = \(phone) AND uid <> \(a.uid)")
            {
                throw AuthStoreConflict.phoneNumberTaken(phone)
            }
            var links: [(providerID: String, rawID: String)] = []
            for p in a.providers where !links.contains(where: { $0.providerID == p.providerID && $0.rawID == p.rawID }) {
                links.append((providerID: p.providerID, rawID: p.rawID))
            }
            for link in links {
                let holder = try await session.value(
                    "SELECT uid FROM auth_provider_links WHERE provider_id = \(link.providerID) AND raw_id = \(link.rawID)", as: String.self)
                if let holder, holder != a.uid { throw AuthStoreConflict.providerTaken(providerID: link.providerID, rawID: link.rawID) }
            }
            do {
                try await session.execute(
                    """
                    INSERT INTO auth_accounts (\(unescaped: Self.accountColumns))
                    VALUES (\(a.uid), \(a.email), \(a.emailVerified), \(a.passwordHash?.encoded), \(a.passwordUpdatedAt), \(a.displayName),
                        \(a.photoURL), \(a.disabled), \(a.customClaims), \(StoredAccountFields.encodeProviders(a.providers)), \(a.createdAt),
                        \(a.lastLoginAt), \(a.lastRefreshAt), \(a.validSince), \(a.phoneNumber))
                    ON CONFLICT (uid) DO UPDATE SET
                        email = excluded.email, email_verified = excluded.email_verified, password_hash = excluded.password_hash,
                        password_updated_at = excluded.password_updated_at, display_name = excluded.display_name,
                        photo_url = excluded.photo_url, disabled = excluded.disabled, custom_claims = excluded.custom_claims,
                        providers = excluded.providers, created_at = excluded.created_at, last_login_at = excluded.last_login_at,
                        last_refresh_at = excluded.last_refresh_at, valid_since = excluded.valid_since, phone_number = excluded.phone_number
                    """)
                try await session.execute("DELETE FROM auth_provider_links WHERE uid = \(a.uid)")
                for link in links {
                    try await session.execute(
                        "INSERT INTO auth_provider_links (provider_id, raw_id, uid) VALUES (\(link.providerID), \(link.rawID), \(a.uid))")
                }
            } catch let error as PSQLError {
                // Another server's insert this transaction's look could not see.
                guard let conflict = Self.uniquenessConflict(error, saving: a) else { throw error }
                throw conflict
            }
        }

        /// The conflict a unique violation (SQLSTATE 23505) of saving `a` stands for.
        static func uniquenessConflict(_ error: PSQLError, saving a: Account) -> AuthStoreConflict? {
            guard error.code == .server, error.serverInfo?[.sqlState] == "23505" else { return nil }
            switch error.serverInfo?[.constraintName] {
            case "auth_accounts_email": return a.email.map { AuthStoreConflict.emailTaken($0) }
            case "auth_accounts_phone_number": return a.phoneNumber.map { AuthStoreConflict.phoneNumberTaken($0) }
            case "auth_provider_links_pkey":
                // The message names the key, but a link the account did not hold a moment ago is the one.
                guard let link = a.providers.first else { return nil }
                let detail = error.serverInfo?[.detail] ?? ""
                let named = a.providers.first { detail.contains("(\($0.providerID), \($0.rawID))") }
                let p = named ?? link
                return .providerTaken(providerID: p.providerID, rawID: p.rawID)
            default: return nil
            }
        }

        // MARK: Rows

        static let accountColumns = """
            uid, email, email_verified, password_hash, password_updated_at, display_name, photo_url, disabled, \
            custom_claims, providers, created_at, last_login_at, last_refresh_at, valid_since, phone_number
            """

        static func account(_ session: PostgresSession, _ query: PostgresQuery) async throws -> Account? {
            try await session.rows(query).first.map(decodeAccount)
        }

        /// A row of ``accountColumns``.
        static func decodeAccount(_ row: PostgresRow) throws -> Account {
            let c = try row.decode(
                (String, String?, Bool, String?, Int64?, String?, String?, Bool, String?, String, Int64, Int64?, Int64?, Int64, String?).self)
            return Account(
                uid: c.0, email: c.1, emailVerified: c.2, passwordHash: try StoredAccountFields.decodePasswordHash(c.3), passwordUpdatedAt: c.4,
                displayName: c.5, photoURL: c.6, disabled: c.7, customClaims: c.8, providers: try StoredAccountFields.decodeProviders(c.9),
                createdAt: c.10, lastLoginAt: c.11, lastRefreshAt: c.12, validSince: c.13, phoneNumber: c.14)
        }

        func account(uid: String) async throws -> Account? {
            try await Self.account(session, "SELECT \(unescaped: Self.accountColumns) FROM auth_accounts WHERE uid = \(uid)")
        }

        static let oobColumns = "code, request_type, email, uid, continue_url, created_at, expires_at"

        static func decodeOOB(_ row: PostgresRow) throws -> OOBCode {
            let (code, typeName, email, uid, continueURL, createdAt, expiresAt) = try row.decode(
                (String, String, String, String?, String?, Int64, Int64).self)
            guard let type = OOBRequestType(rawValue: typeName) else { throw HearthError(.dataLoss, "Unknown OOB code type.") }
            return OOBCode(code: code, requestType: type, email: email, uid: uid, continueURL: continueURL, createdAt: createdAt, expiresAt: expiresAt)
        }

        static let phoneColumns = "session_info, phone_number, code, created_at, expires_at"

        static func decodePhoneCode(_ row: PostgresRow) throws -> PhoneVerificationCode {
            let (sessionInfo, phoneNumber, code, createdAt, expiresAt) = try row.decode((String, String, String, Int64, Int64).self)
            return PhoneVerificationCode(sessionInfo: sessionInfo, phoneNumber: phoneNumber, code: code, createdAt: createdAt, expiresAt: expiresAt)
        }

        static let serviceAccountColumns = "client_email, client_id, key_id, public_key_pem, created_at"

        static func decodeServiceAccount(_ row: PostgresRow) throws -> ServiceAccountRecord {
            let (email, clientID, keyID, pem, createdAt) = try row.decode((String, String, String, String, Int64).self)
            return ServiceAccountRecord(clientEmail: email, clientID: clientID, keyID: keyID, publicKeyPEM: pem, createdAt: createdAt)
        }

        func serviceAccount(clientEmail: String) async throws -> ServiceAccountRecord? {
            try await session.rows(
                "SELECT \(unescaped: Self.serviceAccountColumns) FROM auth_service_accounts WHERE client_email = \(clientEmail)"
            ).first.map(Self.decodeServiceAccount)
        }

        static func decodeProviderConfig(_ row: PostgresRow) throws -> ProviderConfig {
            let (id, kindName, text) = try row.decode((String, String, String).self)
            guard let kind = ProviderConfig.Kind(rawValue: kindName) else { throw HearthError(.dataLoss, "Unknown provider config kind.") }
            do {
                return try ProviderConfig(kind: kind, providerID: id, resource: JSON.parse(text))
            } catch {
                throw HearthError(.dataLoss, "Unreadable provider config \(id).", cause: error)
            }
        }

        func providerConfig(id: String) async throws -> ProviderConfig? {
            try await session.rows("SELECT provider_id, kind, resource FROM auth_provider_configs WHERE provider_id = \(id)")
                .first.map(Self.decodeProviderConfig)
        }

        func projectSettings() async throws -> AuthProjectSettings {
            guard let row = try await session.rows("SELECT email_enumeration_protection FROM auth_project_settings WHERE id = 1").first else {
                return AuthProjectSettings()
            }
            return AuthProjectSettings(emailEnumerationProtection: try row.decode(Bool?.self))
        }
    }
}
