import ArgumentParser
import Foundation
import HearthAuth
import HearthCore
import HearthServer

struct ConsoleUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console-user", abstract: "Manage who may sign in to the web console (production mode).",
        subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an Auth account with the admin custom claim, or grant it to an existing one.",
            discussion: """
                Console users are ordinary Firebase Auth accounts of the project whose custom claims hold \
                "admin": true. They sign in on the console's page with their email and password. The claim \
                also appears in their ID tokens, so your security rules can test request.auth.token.admin. \
                Revoke access by removing the claim or disabling the account (console → Authentication). \
                The password is read from --password, else HEARTH_CONSOLE_PASSWORD, else standard input.
                """)

        @OptionGroup var data: ProjectDataOptions

        @Option(help: "The console user's email address.")
        var email: String

        @Option(help: "Password (at least 6 characters; prefer HEARTH_CONSOLE_PASSWORD or standard input).")
        var password: String?

        func run() async throws {
            try await data.withAuth { _, _, auth in
                if let existing = try await auth.account(email: email) {
                    var claims: [(String, JSON)] = (try? existing.customClaims.map { try JSON.parse($0).objectValue ?? [] } ?? []) ?? []
                    claims.removeAll { $0.0 == "admin" }
                    claims.append(("admin", .bool(true)))
                    var update = AccountUpdate()
                    update.customClaims = JSON.object(claims).serialized()
                    if let password = try readPassword(required: false) { update.password = password }
                    _ = try await auth.updateAccount(uid: existing.uid, update)
                    FileHandle.standardError.write(Data("\(email) (uid \(existing.uid)) may now sign in to the console\n".utf8))
                    return
                }
                guard let password = try readPassword(required: true) else { return }
                let account = try await auth.createAccount(
                    NewAccount(email: email, emailVerified: true, password: password, customClaims: #"{"admin":true}"#))
                FileHandle.standardError.write(Data("created console user \(email) (uid \(account.uid))\n".utf8))
            }
        }

        func readPassword(required: Bool) throws -> String? {
            if let password { return password }
            if let p = ProcessInfo.processInfo.environment["HEARTH_CONSOLE_PASSWORD"], !p.isEmpty { return p }
            guard required else { return nil }
            FileHandle.standardError.write(Data("password for \(email): ".utf8))
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw ValidationError("No password given (--password, HEARTH_CONSOLE_PASSWORD or standard input).")
            }
            return line
        }
    }
}
