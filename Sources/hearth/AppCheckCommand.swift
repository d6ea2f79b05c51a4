import ArgumentParser
import Foundation
import HearthAppCheck
import HearthCore
import HearthApp

/// `hearth admin app-check …`: the apps App Check issues tokens for, and their debug tokens.
struct AppCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app-check",
        abstract: "Register apps for App Check and manage their debug tokens.",
        discussion: """
            The api port exchanges a registered debug token (the secret an SDK's debug provider logs) or \
            a service-account-signed custom token for an App Check token of a registered app. App ids \
            look like 1:<project number>:<ios|android|web>:<hex>. Removing an app revokes its tokens. \
            See docs/app-backend.md.
            """,
        subcommands: [Apps.self, DebugTokens.self])

    /// `body` over the App Check store of the data directory's server (SQLite or PostgreSQL).
    static func withStore<Result: Sendable>(_ data: DataDirOption, _ body: (any AppCheckStore) async throws -> Result) async throws -> Result {
        try await data.withStores { try await body($0.appCheck) }
    }

    static var now: Timestamp { Timestamp(microseconds: Int64(Date().timeIntervalSince1970 * 1_000_000)) }

    struct Apps: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add, list or remove apps.", subcommands: [Add.self, List.self, Remove.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Register an app id.")
            @OptionGroup var data: DataDirOption
            @Argument(help: "The Firebase app id, e.g. 1:123456789012:ios:0a1b2c3d.") var appID: String

            func run() async throws {
                do { try AppCheckEngine.validateAppID(appID) } catch { throw ValidationError(error.message) }
                try await AppCheckCommand.withStore(data) { try await $0.addApp(appID, at: AppCheckCommand.now) }
                print("registered \(appID)")
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List registered apps.")
            @OptionGroup var data: DataDirOption

            func run() async throws {
                let apps = try await AppCheckCommand.withStore(data) { try await $0.apps() }
                if apps.isEmpty { print("no apps") }
                for app in apps { print("\(app.appID)  \(app.created.rfc3339)") }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove an app (its debug tokens and issued tokens stop working).")
            @OptionGroup var data: DataDirOption
            @Argument(help: "The app id.") var appID: String

            func run() async throws {
                guard try await AppCheckCommand.withStore(data, { try await $0.removeApp(appID) }) else { throw ValidationError("No app \(appID).") }
                print("removed \(appID)")
            }
        }
    }

    struct DebugTokens: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "debug-tokens", abstract: "Add, list or remove an app's debug tokens.", subcommands: [Add.self, List.self, Remove.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Register a debug token (printed if generated; kept only as a digest).")
            @OptionGroup var data: DataDirOption
            @Option(name: .customLong("app"), help: "The app id.") var appID: String
            @Option(help: "A name to remember the token by.") var name: String = "debug"
            @Argument(help: "The token the SDK's debug provider logged (default: a new random one).") var token: String?

            func run() async throws {
                let secret = token ?? UUID().uuidString
                guard (8...256).contains(secret.utf8.count) else { throw ValidationError("A debug token must have 8 to 256 characters.") }
                try await AppCheckCommand.withStore(data) { store in
                    guard try await store.isRegistered(appID) else { throw ValidationError("App \(appID) is not registered (hearth admin app-check apps add).") }
                    try await store.addDebugToken(appID: appID, digest: AppCheckEngine.digest(secret), name: name, at: AppCheckCommand.now)
                }
                print(token == nil ? secret : "registered debug token \(name) for \(appID)")
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List an app's debug tokens (names and digest prefixes, never the secrets).")
            @OptionGroup var data: DataDirOption
            @Option(name: .customLong("app"), help: "The app id.") var appID: String

            func run() async throws {
                let tokens = try await AppCheckCommand.withStore(data) { try await $0.debugTokens(appID: appID) }
                if tokens.isEmpty { print("no debug tokens") }
                for token in tokens { print("\(token.name)  sha256:\(token.digestPrefix)…  \(token.created.rfc3339)") }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove an app's debug tokens with a name.")
            @OptionGroup var data: DataDirOption
            @Option(name: .customLong("app"), help: "The app id.") var appID: String
            @Argument(help: "The token's name.") var name: String

            func run() async throws {
                let removed = try await AppCheckCommand.withStore(data) { try await $0.removeDebugTokens(appID: appID, name: name) }
                guard removed > 0 else { throw ValidationError("No debug token \(name) for \(appID).") }
                print("removed \(removed) debug token(s)")
            }
        }
    }
}
