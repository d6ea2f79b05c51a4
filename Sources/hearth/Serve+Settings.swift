import ArgumentParser
import Foundation
import HearthAuth
import HearthCore
import HearthFiles
import HearthServer
import HearthApp
import Logging

/// What ``Serve`` resolves before it starts anything: the server's configuration and the logging settings.
struct ResolvedServe {
    var configuration: ServerConfiguration
    var logLevel: Logger.Level
    var logFormat: String
}

extension Serve {
    /// Every setting, from flags, then the environment, then `firebase.json`/`.firebaserc`, then the
    /// defaults, each recorded in `ledger` with its source as it is decided. Reads the files the
    /// settings name (rules are read later, at open) to check them; writes nothing.
    func resolve(_ ledger: inout SettingsLedger, firebase: FirebaseJSON) throws -> ResolvedServe {
        var config = ServerConfiguration()
        let json = "firebase.json"
        config.dataDirectory = ledger.string("data-dir", flag: dataDir, env: "HEARTH_DATA_DIR", default: config.dataDirectory)!
        config.project = ledger.string(
            "project", flag: project, env: "HEARTH_PROJECT", file: (.file(".firebaserc", key: "projects.default"), firebase.project),
            default: config.project)!
        config.host = ledger.string(
            "host", flag: host, env: "HEARTH_HOST", file: (.file(json, key: firebase.hostKey ?? "emulators.firestore.host"), firebase.host),
            default: config.host)!
        ledger.record("mode", .string(emulator ? "emulator" : "production"), emulator ? .flag("--emulator") : .byDefault)
        config.emulator = emulator

        // Ports: the flag, HEARTH_<SERVICE>_PORT, firebase.json's emulators.<emulator>.port, the default.
        let ports: [(service: String, flag: Int?, emulatorName: String)] = [
            ("firestore", firestorePort, "firestore"), ("auth", authPort, "auth"), ("storage", storagePort, "storage"),
            ("database", databasePort, "database"), ("s3", s3Port, "s3"), ("api", apiPort, "api"), ("console", consolePort, "ui"),
        ]
        for (service, flag, emulatorName) in ports {
            if service == "console" && (noConsole || !firebase.consoleEnabled) {
                ledger.record(
                    "console-port", .string("(no console)"),
                    noConsole ? .flag("--no-console") : .file(json, key: "emulators.ui.enabled"))
                continue
            }
            config.ports[service] = try ledger.integer(
                "\(service)-port", flag: flag, env: "HEARTH_\(service.uppercased())_PORT",
                file: (.file(json, key: "emulators.\(emulatorName).port"), firebase.ports[emulatorName]),
                default: ServerConfiguration.defaultPorts[service]!, range: 0...65535)!
        }
        config.ports["metrics"] = try ledger.integer("metrics-port", flag: metricsPort, env: "HEARTH_METRICS_PORT", range: 0...65535)
        config.readyFile = ledger.string("ready-file", flag: readyFile, env: "HEARTH_READY_FILE")

        // The admin credential: given, else (production) the data directory's first-run file.
        if let token = ledger.string("admin-token", flag: adminToken, env: "HEARTH_ADMIN_TOKEN", secret: true), !token.isEmpty {
            config.adminToken = token
        } else {
            _ = ledger.popLast()
            if emulator {
                ledger.record("admin-token", .string("Bearer owner (emulator mode)"), .derived("--emulator"))
            } else {
                let file = FirstRunCredential(dataDirectory: URL(fileURLWithPath: config.dataDirectory)).tokenFile.path
                let exists = FileManager.default.fileExists(atPath: file)
                ledger.record("admin-token", .string(exists ? "(set, redacted)" : "(made on the first start)"), .firstRunFile(file), secret: exists)
            }
        }

        // Firestore.
        config.strictIndexes = strictIndexes
        ledger.record("strict-indexes", .bool(strictIndexes), strictIndexes ? .flag("--strict-indexes") : .byDefault)
        config.indexesFile = ledger.string(
            "indexes", flag: indexes, env: "HEARTH_INDEXES", file: (.file(json, key: "firestore.indexes"), firebase.indexesFile))
        config.firestoreRulesFile = ledger.string(
            "firestore-rules", flag: firestoreRules, env: "HEARTH_FIRESTORE_RULES", file: (.file(json, key: "firestore.rules"), firebase.firestoreRulesFile))
        config.storageRulesFile = ledger.string(
            "storage-rules", flag: storageRules, env: "HEARTH_STORAGE_RULES", file: (.file(json, key: "storage.rules"), firebase.storageRulesFile))
        config.databaseRulesFile = ledger.string(
            "database-rules", flag: databaseRules, env: "HEARTH_DATABASE_RULES", file: (.file(json, key: "database.rules"), firebase.databaseRulesFile))

        // Auth.
        if let file = ledger.string("auth-config", flag: authConfig, env: "HEARTH_AUTH_CONFIG") {
            let loaded = try AuthConfigFile.load(file)
            config.identityProviders = loaded.identityProviders
            config.authLinkDomains = loaded.linkDomains
        }
        config.auth.addressAttemptLimit = try ledger.integer(
            "auth-attempts-per-ip", flag: authAttemptsPerIP, env: "HEARTH_AUTH_ATTEMPTS_PER_IP", default: config.auth.addressAttemptLimit,
            range: 1...Int(Int32.max))!
        config.auth.accountFailureLimit = try ledger.integer(
            "auth-failures-per-account", flag: authFailuresPerAccount, env: "HEARTH_AUTH_FAILURES_PER_ACCOUNT",
            default: config.auth.accountFailureLimit, range: 1...Int(Int32.max))!
        let smtp = ledger.string("smtp-url", flag: smtpURL, env: "HEARTH_SMTP_URL", shown: Self.redactingPassword)
        let from = ledger.string("mail-from", flag: mailFrom, env: "HEARTH_MAIL_FROM")
        if from == nil {
            _ = ledger.popLast()
            ledger.record("mail-from", .string("noreply@\(config.project).firebaseapp.com"), .derived("project"))
        }
        if let smtp {
            do {
                config.smtp = try SMTPMailer(url: smtp, from: from ?? "noreply@\(config.project).firebaseapp.com")
            } catch {
                throw ValidationError("--smtp-url: \(error.message)")
            }
        }

        // Where the data lives (docs/postgres.md): PostgreSQL by URL, else the data directory's SQLite files.
        config.databaseURL = ledger.string(
            "database-url", flag: databaseURL, env: "HEARTH_DATABASE_URL", file: (.file(json, key: "hearth.databaseUrl"), firebase.databaseURL),
            shown: DatabaseURL.redacted)
        if let url = config.databaseURL {
            do { try DatabaseURL.validate(url) } catch let error as HearthError { throw ValidationError("--database-url (\(ledger.lastSource)): \(error.message)") }
            if importDirectory != nil {
                throw ValidationError("--import reads into the data directory's SQLite files; it does not work with --database-url yet (docs/postgres.md).")
            }
        }

        config.replicaAddressSetting = ledger.string("replica-address", flag: replicaAddress, env: "HEARTH_REPLICA_ADDRESS")
        if config.replicaAddressSetting == nil, config.databaseURL != nil {
            _ = ledger.popLast()
            ledger.record("replica-address", .string(config.replicaAddress), .derived("host"))
        }

        // Objects: one resolution path for --blob-store and its older spelling --blob-s3.
        let store = ledger.string(
            "blob-store", flag: blobStore, env: "HEARTH_BLOB_STORE", file: (.file(json, key: "hearth.blobStore"), firebase.blobStore),
            default: "file")!
        let storeSource = ledger.lastSource
        let legacy = ledger.string("blob-s3", flag: blobS3, env: "HEARTH_BLOB_S3")
        if legacy != nil && store != "file" {
            throw ValidationError("--blob-store (\(storeSource)) and --blob-s3 (\(ledger.lastSource)) both name the blob store; give one.")
        }
        let location: BlobStoreLocation
        do {
            location = try BlobStoreLocation(legacy ?? store)
        } catch let error as HearthError {
            throw ValidationError("\(legacy != nil ? "--blob-s3" : "--blob-store") (\(legacy != nil ? ledger.lastSource : storeSource)): \(error.message)")
        }
        if case .s3(_, _, _, let named) = location {
            let region = ledger.string("blob-s3-region", flag: named == nil ? blobS3Region : nil, env: named == nil ? "AWS_REGION" : nil, default: named ?? "us-east-1")!
            if named != nil {
                _ = ledger.popLast()
                ledger.record("blob-s3-region", .string(region), .derived(legacy != nil ? "--blob-s3" : "blob-store"))
            }
            let id = ledger.string("blob-s3-access-key-id", flag: nil, env: "AWS_ACCESS_KEY_ID")
            let secret = ledger.string("blob-s3-secret-access-key", flag: nil, env: "AWS_SECRET_ACCESS_KEY", secret: true)
            guard let id, let secret else {
                throw ValidationError("The S3 blob store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment.")
            }
            config.blobS3 = location.configuration(defaultRegion: region, accessKeyID: id, secretAccessKey: secret)
        }

        // The api port (docs/app-backend.md) and the lifecycle worker.
        if let file = ledger.string("api-config", flag: apiConfig, env: "HEARTH_API_CONFIG") {
            do { config.api = try APIConfiguration.load(file) } catch let error as HearthError { throw ValidationError("--api-config: \(error.message)") }
        }
        config.api.s3AccessKeyID = ledger.string("api-s3-access-key-id", flag: nil, env: "HEARTH_API_S3_ACCESS_KEY_ID")
        config.api.s3SecretAccessKey = ledger.string("api-s3-secret-access-key", flag: nil, env: "HEARTH_API_S3_SECRET_ACCESS_KEY", secret: true)
        if let file = ledger.string("lifecycle", flag: lifecycle, env: "HEARTH_LIFECYCLE", file: (.file(json, key: "hearth.lifecycle"), firebase.lifecycleFile)) {
            do { config.lifecycle = try LifecycleRules.load(file) } catch { throw ValidationError("--lifecycle: \(error.message)") }
        }

        // TLS and proxies.
        let certificate = ledger.string("tls-cert", flag: tlsCert, env: "HEARTH_TLS_CERT", file: (.file(json, key: "hearth.tls.cert"), firebase.tlsCertificate))
        let key = ledger.string("tls-key", flag: tlsKey, env: "HEARTH_TLS_KEY", file: (.file(json, key: "hearth.tls.key"), firebase.tlsKey))
        switch (certificate, key) {
        case (let c?, let k?):
            config.tls = TLSFiles(certificate: c, key: k)
            // Refused pairs stop the start with the reason, before anything is opened.
            do { _ = try TLSIdentity.load(config.tls!) } catch {
                FileHandle.standardError.write(Data("hearth: TLS: \(error)\n".utf8))
                throw ExitCode(Self.tlsExitCode)
            }
        case (nil, nil): break
        default: throw ValidationError("--tls-cert and --tls-key go together (one of them is missing).")
        }
        let proxies = ledger.list(
            "trusted-proxies", flag: trustedProxies, flagName: "trusted-proxy", env: "HEARTH_TRUSTED_PROXIES",
            file: (.file(json, key: "hearth.trustedProxies"), firebase.trustedProxies))
        config.trustedProxies = try proxies.filter { !$0.isEmpty }.map { text in
            guard let cidr = CIDR(text) else { throw ValidationError("--trusted-proxy \(text) is not an IP address or CIDR network (10.0.0.0/8, ::1).") }
            return cidr
        }
        let publicURLs = ledger.list(
            "public-urls", flag: publicURLs, flagName: "public-url", env: "HEARTH_PUBLIC_URLS",
            file: (.file(json, key: "hearth.publicUrls"), firebase.publicURLs))
        do {
            config.publicURLs = try ServerConfiguration.parsePublicURLs(publicURLs.filter { !$0.isEmpty })
        } catch {
            throw ValidationError("--public-url (\(ledger.lastSource)): \(error.message)")
        }

        // Limits (docs/production.md).
        config.limits.requestBytes = try ledger.integer(
            "max-request-bytes", flag: maxRequestBytes, env: "HEARTH_MAX_REQUEST_BYTES",
            file: (.file(json, key: "hearth.maxRequestBytes"), firebase.maxRequestBytes), range: RequestLimits.requestBytesRange)
        let requestSource = config.limits.requestBytes == nil ? SettingSource.byDefault : ledger.lastSource
        _ = ledger.popLast()
        for service in RequestLimits.Service.allCases {
            ledger.record("max-request-bytes.\(service.rawValue)", .number(config.limits.requestBytes(service)), requestSource)
        }
        let objectBytes = try ledger.integer(
            "max-object-bytes", flag: maxObjectBytes, env: "HEARTH_MAX_OBJECT_BYTES",
            file: (.file(json, key: "hearth.maxObjectBytes"), firebase.maxObjectBytes), default: Int(RequestLimits.defaultObjectBytes),
            range: Int(RequestLimits.objectBytesRange.lowerBound)...Int(RequestLimits.objectBytesRange.upperBound))!
        config.limits.objectBytes = Int64(objectBytes)

        // Shutdown, logs, import/export.
        let seconds = try ledger.decimal("shutdown-timeout", flag: shutdownTimeout, env: "HEARTH_SHUTDOWN_TIMEOUT", default: 10, range: 0...86400)
        config.shutdownTimeout = .milliseconds(Int64((seconds * 1000).rounded()))
        let levelName = ledger.string("log-level", flag: logLevel, env: "HEARTH_LOG_LEVEL", default: "info")!
        guard let level = Logger.Level(rawValue: levelName) else {
            throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical.")
        }
        let format = ledger.string("log-format", flag: logFormat, env: "HEARTH_LOG_FORMAT", default: "text")!
        guard ["text", "json"].contains(format) else { throw ValidationError("--log-format must be text or json.") }
        _ = ledger.string("import", flag: importDirectory)
        ledger.record("export-on-exit", .bool(exportOnExit), exportOnExit ? .flag("--export-on-exit") : .byDefault)
        if exportOnExit && importDirectory == nil { throw ValidationError("--export-on-exit needs --import DIR (the folder it exports into).") }
        return ResolvedServe(configuration: config, logLevel: level, logFormat: format)
    }

    /// An SMTP URL as `--print-config` shows it: the password replaced.
    static func redactingPassword(_ text: String) -> String {
        guard var parts = URLComponents(string: text), parts.password != nil else { return text }
        parts.password = "REDACTED"
        return parts.string ?? "(set, redacted)"
    }
}
