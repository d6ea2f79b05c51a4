import ArgumentParser
import Foundation
import HearthCore
import HearthServer
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the Hearth server.",
        discussion: """
            Settings come from flags, then environment variables (HEARTH_DATA_DIR, HEARTH_PROJECT, \
            HEARTH_HOST, HEARTH_ADMIN_TOKEN, HEARTH_LOG_LEVEL), then a firebase.json (and .firebaserc) \
            in the working directory: `emulators.firestore.port`, `emulators.auth.port`, `firestore.indexes`. \
            Stop with SIGTERM or SIGINT (Ctrl-C): listeners close and in-flight requests finish.

            Production mode (the default) refuses Firestore requests that do not carry the admin \
            credential, `Authorization: Bearer <admin token>`, with 403 PERMISSION_DENIED until security \
            rules are configured. --emulator accepts what the Firebase Local Emulator Suite accepts.
            """
    )

    @Option(name: .customLong("data-dir"), help: "Directory that holds everything the server keeps. (default: ./hearth-data)")
    var dataDir: String?

    @Option(help: "Project id. (default: from .firebaserc, else demo-hearth)")
    var project: String?

    @Option(help: "Address to listen on. (default: 127.0.0.1)")
    var host: String?

    @Option(name: .customLong("firestore-port"), help: "Firestore port (gRPC and REST); 0 picks a free port. (default: 8080)")
    var firestorePort: Int?

    @Option(name: .customLong("auth-port"), help: "Firebase Auth port (Identity Toolkit, Secure Token, public keys); 0 picks a free port. (default: 9099)")
    var authPort: Int?

    @Option(name: .customLong("auth-config"), help: "JSON file with the OpenID Connect providers accounts:signInWithIdp trusts: {\"identityProviders\":[{\"providerId\",\"issuer\",\"clientIds\",\"jwks\"|\"jwksFile\"}]} (see docs/auth.md).")
    var authConfig: String?

    @Option(name: .customLong("ready-file"), help: "Once every listener is up, atomically write {\"auth\": PORT, \"firestore\": PORT} here.")
    var readyFile: String?

    @Flag(help: "Accept the Firebase Local Emulator Suite's conventions: `Authorization: Bearer owner` is admin, clients are allowed while no rules are loaded, and DELETE /emulator/v1/projects/{p}/databases/{db}/documents clears a database.")
    var emulator = false

    @Option(name: .customLong("admin-token"), help: "Bearer token that grants admin access in production mode (env HEARTH_ADMIN_TOKEN).")
    var adminToken: String?

    @Flag(name: .customLong("strict-indexes"), help: "Fail queries that need an undeclared composite index with FAILED_PRECONDITION, as Firestore does, instead of creating it.")
    var strictIndexes = false

    @Option(name: .customLong("indexes"), help: "firestore.indexes.json to load (default: firebase.json's firestore.indexes).")
    var indexes: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical. (default: info)")
    var logLevel: String?

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        let firebase = FirebaseJSON.load(directory: FileManager.default.currentDirectoryPath)
        var config = ServerConfiguration()
        config.dataDirectory = dataDir ?? env["HEARTH_DATA_DIR"] ?? config.dataDirectory
        config.project = project ?? env["HEARTH_PROJECT"] ?? firebase.project ?? config.project
        config.host = host ?? env["HEARTH_HOST"] ?? firebase.host ?? config.host
        config.ports["firestore"] = firestorePort ?? firebase.ports["firestore"] ?? ServerConfiguration.defaultPorts["firestore"]!
        config.ports["auth"] = authPort ?? firebase.ports["auth"] ?? ServerConfiguration.defaultPorts["auth"]!
        if let file = authConfig ?? env["HEARTH_AUTH_CONFIG"] {
            config.identityProviders = try AuthConfigFile.load(file)
        }
        config.readyFile = readyFile
        config.emulator = emulator
        config.adminToken = adminToken ?? env["HEARTH_ADMIN_TOKEN"]
        config.strictIndexes = strictIndexes
        config.indexesFile = indexes ?? firebase.indexesFile
        for (name, port) in config.ports where port < 0 || port > 65535 {
            throw ValidationError("--\(name)-port must be between 0 and 65535.")
        }
        let level = Logger.Level(rawValue: logLevel ?? env["HEARTH_LOG_LEVEL"] ?? "info") ?? .info
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "hearth")
        if !config.emulator && (config.adminToken ?? "").isEmpty {
            logger.warning("production mode without --admin-token: every Firestore request will be refused until rules exist")
        }
        let server = try await HearthServer.open(config, logger: logger)
        logger.notice("starting", metadata: ["project": "\(config.project)", "mode": "\(config.emulator ? "emulator" : "production")"])
        try await server.run()
    }
}

/// The parts of a Firebase project folder Hearth honours: `firebase.json` and `.firebaserc`.
struct FirebaseJSON {
    var project: String?
    var host: String?
    var ports: [String: Int] = [:]
    var indexesFile: String?

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
                    if name == "firestore" || (name == "auth" && out.host == nil), let h = settings["host"]?.stringValue { out.host = h }
                }
            }
            if let idx = json["firestore"]?["indexes"]?.stringValue {
                out.indexesFile = dir.appendingPathComponent(idx).path
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
