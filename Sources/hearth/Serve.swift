import ArgumentParser
import Foundation
import HearthCore
import HearthAuth
import HearthFiles
import HearthApp
import HearthServer
import Logging
import Synchronization

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the Hearth server.",
        discussion: """
            Settings come from flags, then environment variables (HEARTH_DATA_DIR, HEARTH_PROJECT, \
            HEARTH_HOST, HEARTH_<SERVICE>_PORT, HEARTH_ADMIN_TOKEN, HEARTH_TLS_CERT, HEARTH_TLS_KEY, HEARTH_TRUSTED_PROXIES, HEARTH_FIRESTORE_RULES, \
            HEARTH_STORAGE_RULES, HEARTH_INDEXES, HEARTH_AUTH_CONFIG, HEARTH_MAX_REQUEST_BYTES, HEARTH_MAX_OBJECT_BYTES, HEARTH_LOG_LEVEL, …: each \
            option below names its own), then a firebase.json (and .firebaserc) in the working directory: \
            `emulators.{firestore,auth,storage,database,ui,api}.port`, `firestore.indexes`, `firestore.rules`, `storage.rules`, \
            `database.rules`, `hearth.tls.{cert,key}`, `hearth.trustedProxies`, `hearth.publicUrls`, `hearth.lifecycle`, `hearth.maxRequestBytes`, \
            `hearth.maxObjectBytes`, `hearth.databaseUrl`, `hearth.blobStore`; then the defaults. `hearth serve --print-config` shows every setting in force and where it came from. \
            Stop with SIGTERM or SIGINT (Ctrl-C): listeners close and in-flight requests finish.

            Security rules (--firestore-rules or firebase.json's firestore.rules) judge every request \
            that does not carry the admin credential (`Authorization: Bearer <admin token>`: --admin-token, else \
            <data-dir>/admin-token, which the first start writes together with <data-dir>/service-account.json); clients \
            authenticate with Firebase ID tokens (`Authorization: Bearer <ID token>`). Production mode \
            (the default) without rules refuses every client request with 403 PERMISSION_DENIED \
            (except a user's reads of their own files/{fileId} records, the api port's file registry). \
            --emulator accepts what the Firebase Local Emulator Suite accepts: `Bearer owner` is admin, \
            unsigned ID tokens are users, clients may do everything while no rules are loaded, and \
            PUT /emulator/v1/projects/{p}:securityRules loads rules.

            Storage: by default everything lives under the data directory (SQLite files and object \
            bytes). --database-url keeps the data in PostgreSQL, --blob-store the object bytes in an S3 \
            bucket (MinIO, Ceph, AWS); see docs/postgres.md and docs/production.md. Examples (S3 \
            credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY):
              hearth serve --database-url postgres://hearth:pw@db.internal:5432/hearth
              hearth serve --blob-store s3://objects?endpoint=http://minio:9000
              hearth serve --blob-store 's3://objects?region=eu-west-1&prefix=prod/'
            """
    )

    @Option(name: .customLong("data-dir"), help: "Directory that holds everything the server keeps. (default: ./hearth-data)")
    var dataDir: String?

    @Option(help: "Project id. (default: from .firebaserc, else demo-hearth)")
    var project: String?

    @Option(help: "Address to listen on. (default: 127.0.0.1)")
    var host: String?

    @Option(name: .customLong("replica-address"), help: "With --database-url and several servers (replicas) on one database: the host name or address the other replicas reach this server's ports at, to hand it the requests of transactions it began (env HEARTH_REPLICA_ADDRESS; docs/postgres.md). (default: --host, or this machine's host name when --host is 0.0.0.0 or ::)")
    var replicaAddress: String?

    @Option(name: .customLong("firestore-port"), help: "Firestore port (v1 REST); 0 picks a free port. (default: 8080)")
    var firestorePort: Int?

    @Option(name: .customLong("auth-port"), help: "Firebase Auth port (Identity Toolkit, Secure Token, public keys); 0 picks a free port. (default: 9099)")
    var authPort: Int?

    @Option(name: .customLong("auth-attempts-per-ip"), help: "Production mode: password sign-ins, and separately sign-ups, one client address may make in 5 minutes before TOO_MANY_ATTEMPTS_TRY_LATER (env HEARTH_AUTH_ATTEMPTS_PER_IP; the address behind --trusted-proxy). (default: 100)")
    var authAttemptsPerIP: Int?

    @Option(name: .customLong("auth-failures-per-account"), help: "Production mode: failed password sign-ins per account, and sign-ups of an address already registered, in 5 minutes before TOO_MANY_ATTEMPTS_TRY_LATER (env HEARTH_AUTH_FAILURES_PER_ACCOUNT). (default: 10)")
    var authFailuresPerAccount: Int?

    @Option(name: .customLong("auth-config"), help: "JSON file with the OpenID Connect providers accounts:signInWithIdp trusts and the hosts email action links may use: {\"identityProviders\":[{\"providerId\",\"issuer\",\"clientIds\",\"jwks\"|\"jwksFile\"}],\"linkDomains\":[…]} (see docs/auth.md).")
    var authConfig: String?

    @Option(name: .customLong("smtp-url"), help: "Send the auth port's emails (password reset, verification, sign-in links) through this SMTP server: smtp://[user:password@]host[:port][?starttls=auto|require|never&ca=FILE] or smtps://… (env HEARTH_SMTP_URL). (default: none — emails go to <data-dir>/outbox/)")
    var smtpURL: String?

    @Option(name: .customLong("mail-from"), help: "Sender address of those emails (env HEARTH_MAIL_FROM). (default: noreply@<project>.firebaseapp.com)")
    var mailFrom: String?

    @Option(name: .customLong("storage-port"), help: "Firebase Storage port (v0 REST and the Cloud Storage JSON API); 0 picks a free port. (default: 9199)")
    var storagePort: Int?

    @Option(name: .customLong("database-port"), help: "Realtime Database port (REST and event streams); 0 picks a free port. (default: 9000)")
    var databasePort: Int?

    @Option(name: .customLong("s3-port"), help: "S3-compatible API port; 0 picks a free port. (default: 9900)")
    var s3Port: Int?

    @Option(name: .customLong("console-port"), help: "Web console port (admin only; see docs/console.md); 0 picks a free port. (default: 4000, firebase.json emulators.ui.port)")
    var consolePort: Int?

    @Flag(name: .customLong("no-console"), help: "Do not serve the web console (also firebase.json emulators.ui.enabled: false).")
    var noConsole = false

    @Option(name: .customLong("ready-file"), help: "Once every listener is up, atomically write {\"auth\": PORT, \"firestore\": PORT, ...} here.")
    var readyFile: String?

    @Flag(help: "Accept the Firebase Local Emulator Suite's conventions: `Authorization: Bearer owner` is admin, unsigned (alg none) ID tokens are users, clients are allowed while no rules are loaded, PUT /emulator/v1/projects/{p}:securityRules loads rules, DELETE /emulator/v1/projects/{p}/databases/{db}/documents clears a database, and the storage port's PUT /internal/setRules and POST /internal/reset load storage rules and clear objects.")
    var emulator = false

    @Option(name: .customLong("admin-token"), help: "Bearer token that grants admin access in production mode (env HEARTH_ADMIN_TOKEN). (default: <data-dir>/admin-token, made with a service-account key on the first start)")
    var adminToken: String?

    @Flag(name: .customLong("strict-indexes"), help: "Fail queries that need an undeclared composite index with FAILED_PRECONDITION, as Firestore does, instead of creating it.")
    var strictIndexes = false

    @Option(name: .customLong("indexes"), help: "firestore.indexes.json to load (default: firebase.json's firestore.indexes).")
    var indexes: String?

    @Option(name: .customLong("firestore-rules"), help: "Security rules for Firestore (env HEARTH_FIRESTORE_RULES; default: firebase.json's firestore.rules). Reloaded when the file changes; an edit that does not compile is reported and ignored.")
    var firestoreRules: String?

    @Option(name: .customLong("storage-rules"), help: "Security rules for Storage (env HEARTH_STORAGE_RULES; default: firebase.json's storage.rules). Reloaded when the file changes.")
    var storageRules: String?

    @Option(name: .customLong("database-rules"), help: "Realtime Database rules (JSON, {\"rules\": {…}}) for the default namespace <project>-default-rtdb, loaded at start (env HEARTH_DATABASE_RULES; default: firebase.json's database.rules). PUT /.settings/rules.json replaces them while running.")
    var databaseRules: String?

    @Option(name: .customLong("database-url"), help: "Keep documents, accounts, object metadata, the Realtime Database and App Check in PostgreSQL instead of the data directory's SQLite files: postgres://USER:PASSWORD@HOST:PORT/DATABASE[?sslmode=disable|prefer|require] (env HEARTH_DATABASE_URL; firebase.json hearth.databaseUrl), e.g. postgres://hearth:secret@db.internal:5432/hearth?sslmode=require. The schema is migrated at start; see docs/postgres.md. (default: SQLite under the data dir)")
    var databaseURL: String?

    @Option(name: .customLong("blob-store"), help: "Where object bytes live: file (under the data dir) or an external S3 bucket, s3://BUCKET[?endpoint=http(s)://HOST:PORT][&prefix=PREFIX][&region=REGION] (path-style; without endpoint, AWS's regional endpoint), e.g. s3://hearth-objects?endpoint=http://minio:9000&prefix=prod/ (env HEARTH_BLOB_STORE; firebase.json hearth.blobStore). Credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. (default: file)")
    var blobStore: String?

    @Option(name: .customLong("blob-s3"), help: "The older spelling of --blob-store s3://…: http(s)://HOST[:PORT]/BUCKET[/PREFIX] (env HEARTH_BLOB_S3).")
    var blobS3: String?

    @Option(name: .customLong("blob-s3-region"), help: "Region of the S3 blob store when its URL names none (env AWS_REGION). (default: us-east-1)")
    var blobS3Region: String?

    // The api port (docs/app-backend.md).
    @Option(name: .customLong("api-port"), help: "App API port (file registry, App Check, /openapi.json, /healthz); 0 picks a free port. (default: 8000, or firebase.json's emulators.api.port)")
    var apiPort: Int?

    @Option(name: .customLong("shutdown-timeout"), help: "Seconds SIGTERM/SIGINT waits for in-flight requests and open streams to finish before cancelling them (env HEARTH_SHUTDOWN_TIMEOUT). (default: 10)")
    var shutdownTimeout: Double?

    @Option(name: .customLong("metrics-port"), help: "Serve Prometheus /metrics (and /healthz) on a port of its own too; 0 picks a free port (env HEARTH_METRICS_PORT; ready-file key \"metrics\"). (default: only the api port's /metrics)")
    var metricsPort: Int?

    @Option(name: .customLong("api-config"), help: "JSON file with the file registry's settings: bucket, maxUploadBytes, contentTypes, strictUploads, presignExpiresSeconds, pendingTimeoutSeconds, sweepIntervalSeconds, s3PublicURL, externalS3 {endpoint, bucket} (env HEARTH_API_CONFIG; see docs/app-backend.md). The presigning key comes from HEARTH_API_S3_ACCESS_KEY_ID and HEARTH_API_S3_SECRET_ACCESS_KEY (required with externalS3), else the server makes its own.")
    var apiConfig: String?

    @Option(name: .customLong("lifecycle"), help: "Lifecycle rules (cascade deletes, TTL, storage expiry) for the worker inside the server (env HEARTH_LIFECYCLE; default: firebase.json's hearth.lifecycle; see docs/app-backend.md; dry run: hearth lifecycle plan).")
    var lifecycle: String?

    @Option(name: .customLong("tls-cert"), help: "PEM certificate (the server's first, then any intermediates): TLS on every port, with --tls-key (env HEARTH_TLS_CERT; firebase.json hearth.tls.cert). Reloaded when the file changes or on SIGHUP; see docs/production.md.")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "PEM private key of --tls-cert (env HEARTH_TLS_KEY; firebase.json hearth.tls.key).")
    var tlsKey: String?

    @Option(name: .customLong("trusted-proxy"), help: "A reverse proxy's address or network (CIDR, repeatable) whose X-Forwarded-Proto and X-Forwarded-For are believed (env HEARTH_TRUSTED_PROXIES, comma-separated; firebase.json hearth.trustedProxies). (default: none)")
    var trustedProxies: [String] = []

    @Option(name: .customLong("public-url"), help: "SERVICE=URL (repeatable): where clients reach SERVICE when that is not this server's own host and port, e.g. behind a load balancer: firestore=https://firestore.example.com. SERVICE is firestore, auth, storage, s3, database, api, console or metrics. The console shows and links to these (env HEARTH_PUBLIC_URLS, comma-separated; firebase.json hearth.publicUrls, an object). (default: the host the browser used and each port)")
    var publicURLs: [String] = []

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical. (default: info)")
    var logLevel: String?

    @Option(name: .customLong("import"), help: "Import this Firebase Emulator Suite export (firebase emulators:export, hearth export) at start, if the data directory holds no accounts or database data yet; see docs/import-export.md.")
    var importDirectory: String?

    @Flag(name: .customLong("export-on-exit"), help: "On a clean shutdown, export the data directory into the --import folder (as firebase emulators:start --export-on-exit).")
    var exportOnExit = false

    @Option(name: .customLong("log-format"), help: "text or json: one JSON object per line on standard error, with the request's request_id (env HEARTH_LOG_FORMAT). (default: text)")
    var logFormat: String?

    @Flag(name: .customLong("print-config"), help: "Print every setting in force and where it came from (flag, env, firebase.json, default, first-run file), secrets redacted, then exit without serving or writing anything.")
    var printConfig = false

    @Option(name: .customLong("print-config-format"), help: "text or json: how --print-config prints (json: {\"settings\": {name: {value, source, from}}}). Implies --print-config.")
    var printConfigFormat: String?

    @Option(name: .customLong("max-request-bytes"), help: "Largest request body, other than object uploads, any port accepts, and the Firestore port's largest gRPC message (env HEARTH_MAX_REQUEST_BYTES; firebase.json hearth.maxRequestBytes). Larger requests get the protocol's own error (413 or 400, gRPC RESOURCE_EXHAUSTED). (default: per service, after Google's limits: firestore 11 MiB, auth 4 MiB, database 256 MiB, storage 1 MiB, s3 2 MiB, api 64 KiB, console 1 MiB)")
    var maxRequestBytes: Int?

    @Option(name: .customLong("max-object-bytes"), help: "Largest object a Storage or S3 upload may make (env HEARTH_MAX_OBJECT_BYTES; firebase.json hearth.maxObjectBytes); larger uploads get Storage's 413 JSON error or S3's EntityTooLarge. (default: 5 GiB, S3's single-PUT limit)")
    var maxObjectBytes: Int?

    func run() async throws {
        var ledger = SettingsLedger(environment: ProcessInfo.processInfo.environment)
        let resolved = try resolve(&ledger, firebase: FirebaseJSON.load(directory: FileManager.default.currentDirectoryPath))
        var config = resolved.configuration
        if printConfig || printConfigFormat != nil {
            switch printConfigFormat ?? "text" {
            case "text": FileHandle.standardOutput.write(Data((ledger.text() + "\n").utf8))
            case "json": FileHandle.standardOutput.write(Data((ledger.json().serialized() + "\n").utf8))
            default: throw ValidationError("--print-config-format must be text or json.")
            }
            return
        }
        let level = resolved.logLevel
        let format = resolved.logFormat
        let recentErrors = RecentErrors()
        config.recentErrors = recentErrors
        LoggingSystem.bootstrap(
            { label, provider in
                var h: any LogHandler =
                    format == "json"
                    ? JSONLogHandler(label: label, metadataProvider: provider)
                    : DeferredMetadataLogHandler(StreamLogHandler.standardError(label: label, metadataProvider: provider))
                h.logLevel = level
                return MultiplexLogHandler([h, recentErrors.handler(label: label)])
            }, metadataProvider: HearthLogging.metadataProvider)
        let logger = Logger(label: "hearth")
        // Production mode always has an admin credential: the one given, else the data directory's (docs/production.md).
        var made: FirstRunCredential?
        if !config.emulator && (config.adminToken ?? "").isEmpty {
            let credential = FirstRunCredential(dataDirectory: URL(fileURLWithPath: config.dataDirectory))
            let (token, created) = try credential.adminToken()
            config.adminToken = token
            if created {
                made = credential
            } else {
                logger.notice("admin token from the data directory", metadata: ["file": "\(credential.tokenFile.path)"])
            }
        }
        if let importDirectory { try await Self.importAtStart(importDirectory, config: config, logger: logger) }
        let configuration = config
        let firstRun = made
        let account = MadeServiceAccount()
        do {
            try await CompositionRoot.run(
                configuration, logger: logger,
                prepare: { stores in
                    // The first start registers a service account before the engines open, so it signs custom tokens at once.
                    guard firstRun != nil else { return }
                    do {
                        let created = try await FirstRunCredential.createServiceAccount(configuration, stores: stores)
                        account.value.withLock { $0 = created }
                    } catch {
                        logger.error("could not make the first service account", metadata: ["error": "\(error)"])
                    }
                },
                onReady: { bound in
                    guard let firstRun else { return }
                    firstRun.announce(configuration: configuration, ports: bound, account: account.value.withLock { $0 }, logger: logger)
                })
        } catch let error as HearthError {
            // A database that cannot be reached, a schema newer than this binary, a data directory
            // that is not this backend's: the reason, not a stack of types.
            FileHandle.standardError.write(Data("hearth: \(error.message)\n".utf8))
            throw ExitCode(Self.startFailureExitCode)
        }
        try await exportAtExit(configuration, logger: logger)
    }

    /// `--import DIR`: into a data directory that holds no accounts or database data yet;
    /// one that does keeps its data (it is the state the previous run left, or exported).
    static func importAtStart(_ directory: String, config: ServerConfiguration, logger: Logger) async throws {
        let runner = EmulatorExportRunner(
            dataDirectory: URL(fileURLWithPath: config.dataDirectory), project: config.project, passwordHashing: config.auth.passwordHashing)
        guard try await runner.isEmpty() else {
            logger.notice("--import: the data directory already holds data; keeping it", metadata: ["import": "\(directory)"])
            return
        }
        do {
            let summary = try await runner.importing(from: URL(fileURLWithPath: directory)) { line in
                logger.info("import: \(line)")
            }
            logger.notice("imported", metadata: [
                "from": "\(directory)", "accounts": "\(summary.accounts)", "namespaces": "\(summary.namespaces.count)",
            ])
        } catch {
            throw CommandFailure("hearth serve --import \(directory): \(error)")
        }
    }

    /// `--export-on-exit`: after a clean shutdown.
    func exportAtExit(_ config: ServerConfiguration, logger: Logger) async throws {
        guard exportOnExit, let importDirectory else { return }
        let summary = try await EmulatorExportRunner(dataDirectory: URL(fileURLWithPath: config.dataDirectory), project: config.project)
            .export(to: URL(fileURLWithPath: importDirectory)) { line in logger.info("export: \(line)") }
        logger.notice("exported on exit", metadata: ["to": "\(importDirectory)", "accounts": "\(summary.accounts)", "namespaces": "\(summary.namespaces.count)"])
    }

    /// The exit status when the TLS certificate or key is refused at start-up.
    static let tlsExitCode: Int32 = 78
    /// The exit status when the server could not start or stopped on an error (the reason is printed).
    static let startFailureExitCode: Int32 = 1
}

/// The parts of a Firebase project folder Hearth honours: `firebase.json` and `.firebaserc`.
struct FirebaseJSON {
    var project: String?
    var host: String?
    /// Which key `host` came from: `emulators.firestore.host` or `emulators.auth.host`.
    var hostKey: String?
    var ports: [String: Int] = [:]
    var indexesFile: String?
    var firestoreRulesFile: String?
    var storageRulesFile: String?
    /// `emulators.ui.enabled` (the Emulator Suite UI's switch, honoured for the console).
    var consoleEnabled = true
    /// `hearth.lifecycle`: the lifecycle worker's rules (docs/app-backend.md).
    var lifecycleFile: String?
    var databaseRulesFile: String?
    /// `hearth.tls`: `{"cert": FILE, "key": FILE}` (docs/production.md).
    var tlsCertificate: String?
    var tlsKey: String?
    /// `hearth.trustedProxies`: `["10.0.0.0/8", …]`.
    var trustedProxies: [String] = []
    /// `hearth.publicUrls`: `{"firestore": "https://…", …}`, as `SERVICE=URL` entries.
    var publicURLs: [String] = []
    /// `hearth.maxRequestBytes`, `hearth.maxObjectBytes` (docs/production.md).
    var maxRequestBytes: Int?
    var maxObjectBytes: Int?
    /// `hearth.databaseUrl`, `hearth.blobStore` (docs/postgres.md).
    var databaseURL: String?
    var blobStore: String?

    static func load(directory: String) -> FirebaseJSON {
        var out = FirebaseJSON()
        let dir = URL(fileURLWithPath: directory)
        if let data = FileManager.default.contents(atPath: dir.appendingPathComponent("firebase.json").path),
           let json = try? JSON.parse(Array(data))
        {
            if let emulators = json["emulators"]?.objectValue {
                for (name, settings) in emulators {
                    if case .number(let n)? = settings["port"], let port = Int(n) { out.ports[name] = port }
                    if case .string(let s)? = settings["port"], let port = Int(s) { out.ports[name] = port }
                    if name == "firestore" || (name == "auth" && out.host == nil), let h = settings["host"]?.stringValue {
                        out.host = h
                        out.hostKey = "emulators.\(name).host"
                    }
                    if name == "ui", settings["enabled"]?.boolValue == false { out.consoleEnabled = false }
                }
            }
            if let idx = json["firestore"]?["indexes"]?.stringValue {
                out.indexesFile = dir.appendingPathComponent(idx).path
            }
            if let rules = json["firestore"]?["rules"]?.stringValue {
                out.firestoreRulesFile = dir.appendingPathComponent(rules).path
            }
            if let rules = json["storage"]?["rules"]?.stringValue {
                out.storageRulesFile = dir.appendingPathComponent(rules).path
            }
            if let lifecycle = json["hearth"]?["lifecycle"]?.stringValue {
                out.lifecycleFile = dir.appendingPathComponent(lifecycle).path
            }
            if let cert = json["hearth"]?["tls"]?["cert"]?.stringValue { out.tlsCertificate = dir.appendingPathComponent(cert).path }
            if let key = json["hearth"]?["tls"]?["key"]?.stringValue { out.tlsKey = dir.appendingPathComponent(key).path }
            if let proxies = json["hearth"]?["trustedProxies"]?.arrayValue { out.trustedProxies = proxies.compactMap(\.stringValue) }
            if let urls = json["hearth"]?["publicUrls"]?.objectValue {
                out.publicURLs = urls.compactMap { name, value in value.stringValue.map { "\(name)=\($0)" } }.sorted()
            }
            if case .number(let n)? = json["hearth"]?["maxRequestBytes"] { out.maxRequestBytes = Int(n) }
            if case .number(let n)? = json["hearth"]?["maxObjectBytes"] { out.maxObjectBytes = Int(n) }
            out.databaseURL = json["hearth"]?["databaseUrl"]?.stringValue
            out.blobStore = json["hearth"]?["blobStore"]?.stringValue
            if let rules = json["database"]?["rules"]?.stringValue {
                out.databaseRulesFile = dir.appendingPathComponent(rules).path
            }
        }
        if let data = FileManager.default.contents(atPath: dir.appendingPathComponent(".firebaserc").path),
           let json = try? JSON.parse(Array(data))
        {
            out.project = json["projects"]?["default"]?.stringValue
        }
        return out
    }
}
