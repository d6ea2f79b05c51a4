public import Logging
import HearthCore
import PostgresNIO

/// Hearth's tables in PostgreSQL, as numbered migrations applied at start-up.
///
/// Rules:
/// 1. **A migration is never edited once released**; a change is a new migration with the next
///    number. `hearth_schema_migrations` records each applied version.
/// 2. **Applying is idempotent and serialized across processes**: ``migrate(_:logger:)`` holds
///    `pg_advisory_lock(lockKey)` on its own connection while it reads the applied versions and
///    applies the missing ones (each in its own transaction with its row in the table), so
///    replicas starting at once apply each migration exactly once and the rest wait, then find
///    nothing to do.
/// 3. **A database ahead of the binary is refused**: a recorded version above the last one known
///    here fails start-up with FAILED_PRECONDITION (``PostgresBackendError/Reason/schemaTooNew(found:supported:)``),
///    rather than running old code over a newer schema.
/// 4. Names compare as bytes where the engines promise byte order (`COLLATE "C"` on text keys that
///    are listed in order; `bytea` keys, whose order is `memcmp`).
public enum PostgresSchema {
    public struct Migration: Sendable {
        public var version: Int
        public var name: String
        /// One statement each (the extended query protocol takes one at a time).
        public var statements: [String]
    }

    /// The advisory lock held while migrating (the bytes of "Hearth" and 1).
    public static let lockKey: Int64 = 0x4865_6172_7468_0001

    public static let migrations: [Migration] = [
        Migration(
            version: 1, name: "realtime-database-tree",
            statements: [
                """
                CREATE TABLE rtdb_namespaces (
                    ns text PRIMARY KEY, revision bigint NOT NULL, rules text)
                """,
                """
                CREATE TABLE rtdb_leaves (
                    ns text NOT NULL, key bytea NOT NULL, value text NOT NULL, PRIMARY KEY (ns, key))
                """,
                """
                CREATE TABLE rtdb_indexes (
                    ns text NOT NULL, idx text NOT NULL, PRIMARY KEY (ns, idx))
                """,
                """
                CREATE TABLE rtdb_index_entries (
                    ns text NOT NULL, idx text NOT NULL, loc bytea NOT NULL, sort bytea NOT NULL, child bytea NOT NULL,
                    name text NOT NULL, PRIMARY KEY (ns, idx, loc, sort, child))
                """,
                "CREATE UNIQUE INDEX rtdb_index_entries_by_child ON rtdb_index_entries (ns, idx, loc, name)",
            ]),
        Migration(
            version: 2, name: "storage-object-metadata",
            statements: [
                """
                CREATE TABLE storage_buckets (
                    name text COLLATE "C" PRIMARY KEY, created_us bigint NOT NULL)
                """,
                """
                CREATE TABLE storage_objects (
                    bucket text COLLATE "C" NOT NULL, name text COLLATE "C" NOT NULL,
                    generation bigint NOT NULL, metageneration bigint NOT NULL, size bigint NOT NULL,
                    content_type text NOT NULL, md5 bytea NOT NULL, crc32c bigint NOT NULL, etag text NOT NULL,
                    created_us bigint NOT NULL, updated_us bigint NOT NULL, cache_control text, content_disposition text,
                    content_encoding text, content_language text, custom text NOT NULL, download_tokens text NOT NULL,
                    blob_id text NOT NULL, PRIMARY KEY (bucket, name))
                """,
                "CREATE INDEX storage_objects_blob ON storage_objects (blob_id)",
                """
                CREATE TABLE storage_s3_keys (
                    id text PRIMARY KEY, secret text NOT NULL, buckets text NOT NULL, created_us bigint NOT NULL,
                    revoked boolean NOT NULL, note text)
                """,
                """
                CREATE TABLE storage_multipart (
                    upload_id text PRIMARY KEY, bucket text NOT NULL, name text NOT NULL, attributes text NOT NULL,
                    created_us bigint NOT NULL)
                """,
                """
                CREATE TABLE storage_parts (
                    upload_id text NOT NULL, part_number bigint NOT NULL, size bigint NOT NULL, md5 bytea NOT NULL,
                    blob_id text NOT NULL, modified_us bigint NOT NULL, PRIMARY KEY (upload_id, part_number))
                """,
                "CREATE INDEX storage_parts_blob ON storage_parts (blob_id)",
            ]),
        Migration(
            version: 3, name: "app-check",
            statements: [
                """
                CREATE TABLE app_check_apps (
                    app_id text COLLATE "C" PRIMARY KEY, created_us bigint NOT NULL)
                """,
                """
                CREATE TABLE app_check_debug_tokens (
                    app_id text NOT NULL REFERENCES app_check_apps (app_id) ON DELETE CASCADE, digest bytea NOT NULL,
                    name text NOT NULL, created_us bigint NOT NULL, PRIMARY KEY (app_id, digest))
                """,
                "CREATE TABLE app_check_consumed (token_id text PRIMARY KEY, expires bigint NOT NULL)",
                "CREATE INDEX app_check_consumed_expiry ON app_check_consumed (expires)",
            ]),
        Migration(
            version: 4, name: "firestore-documents",
            statements: [
                // The tables of SQLiteDocumentStore: documents keyed by (database, parent collection, the
                // name's order-preserving key), so a collection in name order is one range of the key.
                """
                CREATE TABLE firestore_documents (
                    db text COLLATE "C" NOT NULL, parent text COLLATE "C" NOT NULL, name_key bytea NOT NULL,
                    path text COLLATE "C" NOT NULL, collection_id text COLLATE "C" NOT NULL, data bytea NOT NULL,
                    create_us bigint NOT NULL, update_us bigint NOT NULL, PRIMARY KEY (db, parent, name_key))
                """,
                "CREATE INDEX firestore_documents_by_group ON firestore_documents (db, collection_id, name_key)",
                // Entries' keys and scopes can be far longer than a B-tree row allows (about 2.7 KB:
                // a 1 MiB document's strings, 6 KiB document names), so the primary key holds the
                // scope's MD5, the key's first 1024 bytes (`ikey`, which orders like the key: the
                // scans order by `ikey, key`) and the key's SHA-256 (with `ikey`: one row per key).
                """
                CREATE TABLE firestore_index_entries (
                    db text COLLATE "C" NOT NULL, scope text COLLATE "C" NOT NULL, key bytea NOT NULL, doc text COLLATE "C" NOT NULL,
                    scope_hash bytea GENERATED ALWAYS AS (decode(md5(scope), 'hex')) STORED,
                    ikey bytea GENERATED ALWAYS AS (substring(key FROM 1 FOR 1024)) STORED,
                    key_hash bytea GENERATED ALWAYS AS (sha256(key)) STORED,
                    PRIMARY KEY (db, scope_hash, ikey, key_hash))
                """,
                // The state each write replaced, until the commit time (NULL data: the document was missing).
                """
                CREATE TABLE firestore_history (
                    until_us bigint NOT NULL, db text COLLATE "C" NOT NULL, path text COLLATE "C" NOT NULL, data bytea,
                    create_us bigint, update_us bigint, PRIMARY KEY (db, path, until_us))
                """,
                "CREATE INDEX firestore_history_by_time ON firestore_history (until_us, db)",
                "CREATE TABLE firestore_index_definitions (id integer PRIMARY KEY, definition text NOT NULL)",
                // One row per commit time (the last commit time is the highest); pruned below the highest.
                "CREATE TABLE firestore_commit_times (time_us bigint PRIMARY KEY)",
            ]),
        // Accounts (PostgresAuthStore): the tables of GRDBAuthStore after its migration hearth-auth-v5-provider-links.
        // Uniqueness of emails, phone numbers and linked provider users is the schema's, so it holds across every
        // server on the database. Keys that are listed in order are `COLLATE "C"` (byte order, as in SQLite).
        Migration(
            version: 5, name: "auth-accounts",
            statements: [
                """
                CREATE TABLE auth_accounts (
                    uid text COLLATE "C" PRIMARY KEY, email text COLLATE "C", email_verified boolean NOT NULL, password_hash text,
                    password_updated_at bigint, display_name text, photo_url text, disabled boolean NOT NULL, custom_claims text,
                    providers text NOT NULL, created_at bigint NOT NULL, last_login_at bigint, last_refresh_at bigint,
                    valid_since bigint NOT NULL, phone_number text COLLATE "C")
                """,
                "CREATE UNIQUE INDEX auth_accounts_email ON auth_accounts (email) WHERE email IS NOT NULL",
                "CREATE UNIQUE INDEX auth_accounts_phone_number ON auth_accounts (phone_number) WHERE phone_number IS NOT NULL",
                """
                CREATE TABLE auth_provider_links (
                    provider_id text COLLATE "C" NOT NULL, raw_id text COLLATE "C" NOT NULL, uid text COLLATE "C" NOT NULL,
                    PRIMARY KEY (provider_id, raw_id))
                """,
                "CREATE INDEX auth_provider_links_uid ON auth_provider_links (uid)",
                """
                CREATE TABLE auth_refresh_tokens (
                    token_hash text PRIMARY KEY, uid text COLLATE "C" NOT NULL, sign_in_provider text NOT NULL, auth_time bigint NOT NULL,
                    extra_claims text, created_at bigint NOT NULL)
                """,
                "CREATE INDEX auth_refresh_tokens_uid ON auth_refresh_tokens (uid)",
                """
                CREATE TABLE auth_oob_codes (
                    code text COLLATE "C" PRIMARY KEY, request_type text NOT NULL, email text NOT NULL, uid text COLLATE "C",
                    continue_url text, created_at bigint NOT NULL, expires_at bigint NOT NULL)
                """,
                "CREATE INDEX auth_oob_codes_uid ON auth_oob_codes (uid)",
                "CREATE INDEX auth_oob_codes_expiry ON auth_oob_codes (expires_at)",
                "CREATE INDEX auth_oob_codes_age ON auth_oob_codes (created_at, code)",
                """
                CREATE TABLE auth_phone_codes (
                    session_info text COLLATE "C" PRIMARY KEY, phone_number text NOT NULL, code text NOT NULL, created_at bigint NOT NULL,
                    expires_at bigint NOT NULL)
                """,
                "CREATE INDEX auth_phone_codes_expiry ON auth_phone_codes (expires_at)",
                "CREATE INDEX auth_phone_codes_age ON auth_phone_codes (created_at, session_info)",
                """
                CREATE TABLE auth_service_accounts (
                    client_email text COLLATE "C" PRIMARY KEY, client_id text NOT NULL, key_id text NOT NULL, public_key_pem text NOT NULL,
                    created_at bigint NOT NULL)
                """,
                """
                CREATE TABLE auth_provider_configs (
                    provider_id text COLLATE "C" PRIMARY KEY, kind text NOT NULL, resource text NOT NULL)
                """,
                """
                CREATE TABLE auth_project_settings (
                    id integer PRIMARY KEY CHECK (id = 1), email_enumeration_protection boolean)
                """,
                // The key rings every server signs and verifies with (PostgresSigningKeyStore).
                """
                CREATE TABLE auth_signing_keys (
                    ring text COLLATE "C" NOT NULL, kid text NOT NULL, activates_at bigint NOT NULL, private_key_pem text NOT NULL,
                    PRIMARY KEY (ring, kid), UNIQUE (ring, activates_at))
                """,
            ]),
        // Document paths up to Firestore's 6 KiB names (under parents of kilobytes) pass a B-tree row
        // (about 2.7 KB, SQLSTATE 54000), so no index holds a full path or name key any more: the
        // keys hold stored generated columns instead (as firestore_index_entries since migration 4),
        // each condition on a full value paired in the queries with the one it implies on its
        // column. `parent_hash`, `group_hash`: MD5 (locality only: `name_hash`, SHA-256 of the
        // name key, which encodes the whole path, makes a row unique); `iname`: the name key's first
        // 1024 bytes (orders like it); `iparent`, `ipath`: the first 256 characters (at most 1 KiB,
        // ordering like the text in byte order). The history's path hash is SHA-256 of the path's
        // UTF-8, which the statements that insert rows compute (convert_to is not immutable, so it
        // cannot be a generated column).
        Migration(
            version: 6, name: "firestore-long-names",
            statements: [
                """
                ALTER TABLE firestore_documents
                    ADD COLUMN parent_hash bytea GENERATED ALWAYS AS (decode(md5(parent), 'hex')) STORED,
                    ADD COLUMN iparent text COLLATE "C" GENERATED ALWAYS AS (left(parent, 256)) STORED,
                    ADD COLUMN group_hash bytea GENERATED ALWAYS AS (decode(md5(collection_id), 'hex')) STORED,
                    ADD COLUMN iname bytea GENERATED ALWAYS AS (substring(name_key FROM 1 FOR 1024)) STORED,
                    ADD COLUMN name_hash bytea GENERATED ALWAYS AS (sha256(name_key)) STORED
                """,
                "ALTER TABLE firestore_documents DROP CONSTRAINT firestore_documents_pkey",
                "ALTER TABLE firestore_documents ADD PRIMARY KEY (db, parent_hash, iname, name_hash)",
                "DROP INDEX firestore_documents_by_group",
                "CREATE INDEX firestore_documents_by_group ON firestore_documents (db, group_hash, iname)",
                "CREATE INDEX firestore_documents_by_parent ON firestore_documents (db, iparent, iname)",
                """
                ALTER TABLE firestore_history
                    ADD COLUMN path_hash bytea,
                    ADD COLUMN ipath text COLLATE "C" GENERATED ALWAYS AS (left(path, 256)) STORED
                """,
                "UPDATE firestore_history SET path_hash = sha256(convert_to(path, 'UTF8'))",
                "ALTER TABLE firestore_history ALTER COLUMN path_hash SET NOT NULL",
                "ALTER TABLE firestore_history DROP CONSTRAINT firestore_history_pkey",
                "ALTER TABLE firestore_history ADD PRIMARY KEY (db, path_hash, until_us)",
                "CREATE INDEX firestore_history_by_path ON firestore_history (db, ipath, until_us)",
            ]),
        // One commit clock for every server on the database (docs/postgres.md, "Several replicas"):
        // each commit takes its time from this row after its locks, so times are unique, strictly
        // increasing and in the order commits become visible.
        Migration(
            version: 7, name: "firestore-shared-clock",
            statements: [
                "CREATE TABLE firestore_clock (id integer PRIMARY KEY CHECK (id = 0), last_us bigint NOT NULL)",
                "INSERT INTO firestore_clock (id, last_us) SELECT 0, coalesce(max(time_us), 0) FROM firestore_commit_times",
            ]),
        // The commit log every server's change feed reads (docs/postgres.md, "Several replicas"):
        // one row per commit on the shared clock, written in the commit's transaction — the
        // documents it changed, or that it emptied a database, or that it added an index.
        Migration(
            version: 8, name: "firestore-commit-log",
            statements: [
                """
                CREATE TABLE firestore_commit_log (
                    time_us bigint PRIMARY KEY, db text NOT NULL, paths text[] NOT NULL,
                    cleared boolean NOT NULL DEFAULT false, indexes boolean NOT NULL DEFAULT false)
                """,
                // Log rows (and history rows) below it may have been pruned: a feed behind it re-syncs.
                "ALTER TABLE firestore_clock ADD COLUMN pruned_us bigint NOT NULL DEFAULT 0",
            ]),
        // The Realtime Database's commit log (several replicas, docs/postgres.md): every commit and
        // every rules change of a namespace takes the next `log_seq` (under the namespace row's
        // lock, so in commit order and without gaps) and logs one row; `rules_version` counts the
        // namespace's rules changes. Rows older than the retention are pruned by the feeds.
        Migration(
            version: 9, name: "rtdb-commit-log",
            statements: [
                "ALTER TABLE rtdb_namespaces ADD COLUMN log_seq bigint NOT NULL DEFAULT 0",
                "ALTER TABLE rtdb_namespaces ADD COLUMN rules_version bigint NOT NULL DEFAULT 0",
                """
                CREATE TABLE rtdb_commit_log (
                    ns text NOT NULL, seq bigint NOT NULL, revision bigint NOT NULL, kind text NOT NULL, base bytea,
                    paths bytea[] NOT NULL, keys bytea[] NOT NULL, vals text[] NOT NULL,
                    logged_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (ns, seq))
                """,
                "CREATE INDEX rtdb_commit_log_by_time ON rtdb_commit_log (logged_at)",
            ]),
        // Sign-in attempts counted for every server on the database (docs/postgres.md, "Sign-in
        // attempt limits"): one row per attempt, forgotten once outside the window.
        Migration(
            version: 10, name: "auth-sign-in-attempts",
            statements: [
                "CREATE TABLE auth_sign_in_attempts (id bigserial PRIMARY KEY, key bytea NOT NULL, at_ms bigint NOT NULL)",
                "CREATE INDEX auth_sign_in_attempts_by_key ON auth_sign_in_attempts (key, at_ms)",
                "CREATE INDEX auth_sign_in_attempts_by_time ON auth_sign_in_attempts (at_ms)",
            ]),
        // The console's sign-in sessions, for every server on the database (docs/postgres.md,
        // "Console sessions"): keyed by the SHA-256 of the session id, never the id itself.
        Migration(
            version: 11, name: "console-sessions",
            statements: [
                """
                CREATE TABLE console_sessions (
                    key text PRIMARY KEY, name text NOT NULL, method text NOT NULL, csrf_token text NOT NULL,
                    created_ms bigint NOT NULL, last_seen_ms bigint NOT NULL)
                """,
                "CREATE INDEX console_sessions_by_last_seen ON console_sessions (last_seen_ms)",
            ]),
        // Security rules loaded at run time (emulator mode) for every server on the database
        // (docs/postgres.md, "Rules loaded at run time"): one row per service and scope, and one
        // version every server reads before the requests its rules judge.
        Migration(
            version: 12, name: "runtime-rules",
            statements: [
                """
                CREATE TABLE runtime_rules (
                    service text NOT NULL, scope text NOT NULL, file_name text NOT NULL, source text, version bigint NOT NULL,
                    PRIMARY KEY (service, scope))
                """,
                "CREATE TABLE runtime_rules_version (id integer PRIMARY KEY CHECK (id = 0), version bigint NOT NULL)",
                "INSERT INTO runtime_rules_version (id, version) VALUES (0, 0)",
            ]),
        // Where the replicas reach each other (docs/postgres.md, "Transactions across replicas"):
        // each server's address and ports with a heartbeat, and which one holds each role.
        Migration(
            version: 13, name: "replicas",
            statements: [
                """
                CREATE TABLE replicas (
                    id text PRIMARY KEY, address text NOT NULL, ports text NOT NULL, tls boolean NOT NULL,
                    heartbeat_at timestamptz NOT NULL)
                """,
                "CREATE TABLE replica_roles (role text PRIMARY KEY, replica_id text NOT NULL, since timestamptz NOT NULL)",
            ]),
        // Resumable uploads any server can continue (docs/postgres.md, "Resumable uploads"):
        // one row per session; its chunks are rows of storage_parts.
        Migration(
            version: 14, name: "storage-upload-sessions",
            statements: [
                """
                CREATE TABLE storage_upload_sessions (
                    upload_id text PRIMARY KEY, bucket text COLLATE "C" NOT NULL, name text COLLATE "C" NOT NULL, descriptor text NOT NULL,
                    received bigint NOT NULL, part_count bigint NOT NULL, state text NOT NULL, result text, last_used_us bigint NOT NULL)
                """,
                "CREATE INDEX storage_upload_sessions_by_last_used ON storage_upload_sessions (last_used_us)",
            ]),
    ]

    /// The newest version this binary knows.
    public static var currentVersion: Int { migrations.last?.version ?? 0 }

    /// Connects to `settings`' database on a connection of its own, takes the advisory lock and
    /// applies the migrations it lacks. Returns the versions it applied (empty when the schema was
    /// current). UNAVAILABLE naming the endpoint and the cause when the database cannot be reached;
    /// FAILED_PRECONDITION when the schema is newer than this binary.
    @discardableResult
    public static func migrate(_ settings: PostgresSettings, logger: Logger = Logger(label: "hearth.postgres")) async throws -> [Int] {
        try await migrate(settings, migrations: migrations, logger: logger)
    }

    /// ``migrate(_:logger:)`` with a given list (tests try a binary that knows fewer versions).
    static func migrate(_ settings: PostgresSettings, migrations: [Migration], logger: Logger) async throws -> [Int] {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                on: PostgresConnection.defaultEventLoopGroup.next(), configuration: try settings.connectionConfiguration(), id: 0, logger: logger
            ).get()
        } catch {
            throw Self.unreachable(error, settings)
        }
        do {
            let applied = try await migrate(connection, migrations: migrations, endpoint: settings.endpoint, logger: logger)
            try? await connection.close()
            return applied
        } catch {
            try? await connection.close()
            throw PostgresBackendError.hearthError(error, endpoint: settings.endpoint)
        }
    }

    static func migrate(_ connection: PostgresConnection, migrations: [Migration], endpoint: String, logger: Logger) async throws -> [Int] {
        let session = PostgresSession(connection: connection, logger: logger)
        // Held until unlocked below or the connection closes (a crashed migrator frees it).
        try await session.execute("SELECT pg_advisory_lock(\(lockKey))")
        do {
            try await session.execute(
                """
                CREATE TABLE IF NOT EXISTS hearth_schema_migrations (
                    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """)
            let found = try await session.value("SELECT coalesce(max(version), 0) FROM hearth_schema_migrations", as: Int.self) ?? 0
            let supported = migrations.last?.version ?? 0
            if found > supported {
                throw PostgresBackendError(
                    .schemaTooNew(found: found, supported: supported), endpoint: endpoint,
                    detail: "schema version \(found), this binary knows up to \(supported)")
            }
            var applied: [Int] = []
            for migration in migrations where migration.version > found {
                try await session.execute("BEGIN")
                do {
                    for statement in migration.statements { try await session.execute(PostgresQuery(unsafeSQL: statement)) }
                    try await session.execute(
                        "INSERT INTO hearth_schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))")
                    try await session.execute("COMMIT")
                } catch {
                    try? await session.execute("ROLLBACK")
                    throw error
                }
                logger.info("applied schema migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                applied.append(migration.version)
            }
            try await session.execute("SELECT pg_advisory_unlock(\(lockKey))")
            return applied
        } catch {
            try? await session.execute("SELECT pg_advisory_unlock(\(lockKey))")
            throw error
        }
    }

    /// The schema version recorded in the database (0 before the first migration).
    public static func version(_ backend: PostgresBackend) async throws -> Int {
        try await backend.read { session in
            guard try await session.exists("SELECT 1 FROM pg_tables WHERE tablename = 'hearth_schema_migrations'") else { return 0 }
            return try await session.value("SELECT coalesce(max(version), 0) FROM hearth_schema_migrations", as: Int.self) ?? 0
        }
    }

    static func unreachable(_ error: any Error, _ settings: PostgresSettings) -> HearthError {
        let detail: String
        switch error {
        case let error as PSQLError: detail = PostgresBackendError.underlyingText(error)
        default: detail = "\(error)"
        }
        return HearthError(
            .unavailable, "Cannot connect to PostgreSQL at \(settings.endpoint) (database \(settings.database ?? settings.username)): \(detail)",
            cause: PostgresBackendError(.unavailable, endpoint: settings.endpoint, detail: detail))
    }
}
