import ArgumentParser
import Foundation
import HearthCore
import HearthAuth
import HearthApp
import HearthServer
import HearthSQLite
import HearthStorage

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

    func openObjects() throws -> ObjectStore {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return try ObjectStore.open(directory: url)
    }
}

/// `--data-dir` and `--project` resolved as `hearth serve` resolves them (flag, environment,
/// `.firebaserc`), for the admin commands that open the auth engine.
struct ProjectDataOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "Data directory. (default: HEARTH_DATA_DIR, else ./hearth-data)")
    var dataDir: String?

    @Option(help: "Project id. (default: HEARTH_PROJECT, else .firebaserc, else demo-hearth)")
    var project: String?

    /// The configuration, the project folder's firebase.json, and the auth engine over the data directory.
    func openAuth() async throws -> (ServerConfiguration, FirebaseJSON, AuthEngine) {
        let env = ProcessInfo.processInfo.environment
        let firebase = FirebaseJSON.load(directory: FileManager.default.currentDirectoryPath)
        var config = ServerConfiguration()
        config.dataDirectory = dataDir ?? env["HEARTH_DATA_DIR"] ?? config.dataDirectory
        config.project = project ?? env["HEARTH_PROJECT"] ?? firebase.project ?? config.project
        let dir = URL(fileURLWithPath: config.dataDirectory)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return (config, firebase, try await CompositionRoot.openAuth(config, directory: dir.path))
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
            let key = try await data.openObjects().createAccessKey(buckets: buckets, note: note)
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
            let keys = try await data.openObjects().accessKeys()
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
            try await data.openObjects().revokeAccessKey(id)
            print("revoked \(id)")
        }
    }
}
