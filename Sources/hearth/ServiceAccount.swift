import ArgumentParser
import Foundation
import HearthCore
import HearthServer

struct ServiceAccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service-account", abstract: "Manage Hearth service accounts (admin credentials for Google's libraries).",
        subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a service account and write its Google-style JSON key file.",
            discussion: """
                The key file works with Google's client libraries (google-auth, firebase-admin): they \
                exchange a signed assertion at its token_uri — Hearth's auth port, POST /token — for an \
                access token that every Hearth service accepts as admin. The same key signs custom tokens. \
                Only the public key is kept in the data directory; the file is the only copy of the private key. \
                Run it before `hearth serve` starts (a running server picks up new accounts for custom \
                tokens at its next start; access tokens work at once).
                """)

        @OptionGroup var data: ProjectDataOptions

        @Option(help: "Where to write the key file; - for standard output.")
        var out: String = "-"

        @Option(name: .customLong("token-uri"), help: "The token_uri written into the file. (default: http://127.0.0.1:<auth port>/token)")
        var tokenURI: String?

        @Option(name: .customLong("auth-port"), help: "Auth port used for the default token_uri. (default: 9099)")
        var authPort: Int?

        @Option(help: "The account's name, the part of client_email before @ (6–30 of a-z, 0-9, -). (default: hearth-admin-<random>)")
        var name: String?

        func run() async throws {
            let created = try await data.withAuth { _, firebase, auth in
                let port = authPort ?? firebase.ports["auth"] ?? 9099
                return try await auth.createServiceAccount(tokenURI: tokenURI ?? "http://127.0.0.1:\(port)/token", name: name)
            }
            let text = created.keyFile.serialized() + "\n"
            if out == "-" {
                print(text, terminator: "")
            } else {
                guard FileManager.default.createFile(atPath: out, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                    throw ValidationError("Cannot write \(out).")
                }
                FileHandle.standardError.write(Data("created \(created.record.clientEmail) → \(out)\n".utf8))
            }
        }
    }
}
