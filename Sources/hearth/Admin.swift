import ArgumentParser
import Foundation
import HearthCore
import HearthAuth
import HearthApp
import HearthServer
import HearthSQLite
import HearthStorage
import Logging

/// `hearth admin …`: credentials kept in the data directory, managed while the server runs
/// or not (SQLite in WAL mode takes both).
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage credentials kept in the data directory.",
        subcommands: [S3Keys.self, ServiceAccountCommand.self, AppCheckCommand.self, ConsoleUserCommand.self, TLSCommand.self])
}

struct DataDirOption: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "The server's data directory (env HEARTH_DATA_DIR). (default: ./hearth-data)")
    var dataDir: String?

    var url: URL {
        URL(fileURLWithPath: dataDir ?? ProcessInfo.processInfo.environment["HEARTH_DATA_DIR"] ?? "./hearth-data")
    }

    /// `body` over the stores the server of this data directory uses: PostgreSQL when
    /// `HEARTH_DATABASE_URL` (or firebase.json's `hearth.databaseUrl`) names a database, or the
    /// data directory's `postgres-database` file says its server keeps its data there; else the
    /// SQLite files.
    func withStores<Result: Sendable>(_ body: (Stores) async throws -> Result) async throws -> Result {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let backend: StorageBackend
        if let database = configuredDatabaseURL()?.url ?? PostgresMarker.url(url) {
            try DatabaseURL.validate(database)
            backend = .postgres(url: database, dataDirectory: url, blobS3: nil)
        } else {
            backend = .sqlite(dataDirectory: url, blobS3: nil)
        }
        return try await CompositionRoot.withStores(backend, logger: quietLogger(), body)
    }
}

/// The database URL set in the environment (`HEARTH_DATABASE_URL`) or the project folder's
/// firebase.json (`hearth.databaseUrl`), and where it came from.
func configuredDatabaseURL() -> (url: String, source: String)? {
    if let url = ProcessInfo.processInfo.environment["HEARTH_DATABASE_URL"], !url.isEmpty { return (url, "env HEARTH_DATABASE_URL") }
    if let url = FirebaseJSON.load(directory: FileManager.default.currentDirectoryPath).databaseURL { return (url, "firebase.json hearth.databaseUrl") }
    return nil
}

/// Offline commands log warnings and errors only (a migration applied is not news to them).
func quietLogger() -> Logger {
    var logger = Logger(label: "hearth")
    logger.logLevel = .warning
    return logger
}

/// `--data-dir` and `--project` resolved as `hearth serve` resolves them (flag, environment,
/// `.firebaserc`), for the admin commands that open the auth engine.
struct ProjectDataOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "Data directory. (default: HEARTH_DATA_DIR, else ./hearth-data)")
    var dataDir: String?

    @Option(help: "Project id. (default: HEARTH_PROJECT, else .firebaserc, else demo-hearth)")
    var project: String?

    /// `body` with the configuration, the project folder's firebase.json, and the auth engine over
    /// the stores the data directory's server uses (``DataDirOption/withStores(_:)``).
    func withAuth<Result: Sendable>(_ body: (ServerConfiguration, FirebaseJSON, AuthEngine) async throws -> Result) async throws -> Result {
        let env = ProcessInfo.processInfo.environment
        let firebase = FirebaseJSON.load(directory: FileManager.default.currentDirectoryPath)
        var config = ServerConfiguration()
        config.dataDirectory = dataDir ?? env["HEARTH_DATA_DIR"] ?? config.dataDirectory
        config.project = project ?? env["HEARTH_PROJECT"] ?? firebase.project ?? config.project
        let configuration = config
        var data = DataDirOption()
        data.dataDir = configuration.dataDirectory
        return try await data.withStores { stores in
            try await body(configuration, firebase, try await CompositionRoot.openAuth(configuration, stores: stores))
        }
    }
}

/// Refuses a command that works on the SQLite files of `dataDirectory` when the data lives in
/// PostgreSQL: `HEARTH_DATABASE_URL` or firebase.json's `hearth.databaseUrl` is set, or the data
/// directory belongs to a server started with `--database-url` (its `postgres-database` file).
/// Never a silent run over SQLite files the server does not use (docs/postgres.md).
func refuseOverPostgres(_ dataDirectory: URL) throws {
    let command = "hearth " + CommandLine.arguments.dropFirst().prefix { !$0.hasPrefix("-") }.prefix(3).joined(separator: " ")
    if let message = PostgresMarker.refusal(dataDirectory: dataDirectory, command: command, configured: configuredDatabaseURL()?.source) {
        throw CommandFailure(message)
    }
}

struct S3Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "s3-keys",
        abstract: "Create, list and revoke access keys for the S3-compatible API.",
        discussion: """
            A key signs S3 requests (SigV4), presigned URLs and presigned POST forms. Its secret is \
            printed once, at creation. A key created with --bucket may use only those buckets.
            """,
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an access key and print its secret (once).")
        @OptionGroup var data: DataDirOption
        @Option(name: .customLong("bucket"), help: "Limit the key to this bucket (repeatable). (default: every bucket)")
        var buckets: [String] = []
        @Option(help: "A note to remember what the key is for.") var note: String?
        @Flag(help: "Print JSON: {\"accessKeyId\",\"secretAccessKey\",\"buckets\"}.") var json = false

        func run() async throws {
            let key = try await data.withStores { try await CompositionRoot.objects($0).createAccessKey(buckets: buckets, note: note) }
            if json {
                let out = JSON.object([
                    ("accessKeyId", .string(key.id)), ("secretAccessKey", .string(key.secret)),
                    ("buckets", .array(key.buckets.map { .string($0) })),
                ])
                print(out.serialized())
            } else {
                print("access key id:     \(key.id)")
                print("secret access key: \(key.secret)")
                print("buckets:           \(key.buckets.isEmpty ? "all" : key.buckets.joined(separator: ", "))")
                print("The secret is shown only now; store it safely.")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List access keys (never their secrets).")
        @OptionGroup var data: DataDirOption
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let keys = try await data.withStores { try await CompositionRoot.objects($0).accessKeys() }
            if json {
                let out = JSON.array(keys.map { k in
                    JSON.object([
                        ("accessKeyId", .string(k.id)), ("buckets", .array(k.buckets.map { .string($0) })),
                        ("created", .string(k.created.rfc3339)), ("revoked", .bool(k.revoked)), ("note", k.note.map { .string($0) } ?? .null),
                    ])
                })
                print(out.serialized())
                return
            }
            if keys.isEmpty { print("no access keys") }
            for k in keys {
                let scope = k.buckets.isEmpty ? "all buckets" : k.buckets.joined(separator: ",")
                print("\(k.id)  \(k.revoked ? "revoked" : "active ")  \(k.created.rfc3339)  \(scope)\(k.note.map { "  # \($0)" } ?? "")")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an access key; requests signed with it fail from now on.")
        @OptionGroup var data: DataDirOption
        @Argument(help: "The access key id.") var id: String

        func run() async throws {
            try await data.withStores { try await CompositionRoot.objects($0).revokeAccessKey(id) }
            print("revoked \(id)")
        }
    }
}
