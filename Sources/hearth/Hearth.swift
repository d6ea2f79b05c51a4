import ArgumentParser

@main
struct Hearth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "A self-hosted backend that speaks Firebase's wire protocols.",
        discussion: """
            Hearth serves Cloud Firestore's v1 REST API, Firebase Authentication, Firebase Storage (v0 \
            REST and the Cloud Storage JSON API) and an S3-compatible API from one binary, with its data \
            in SQLite and files under a data directory. Point the Firebase Admin SDKs and Google Cloud client libraries \
            at it as you would at the Firebase Local Emulator Suite.

            Start with `hearth serve`; see `hearth serve --help` for every option.
            """,
        subcommands: [Serve.self, Admin.self, RulesCommand.self, LifecycleCommand.self, BackupCommand.self, RestoreCommand.self, ExportCommand.self, ImportCommand.self, BenchCommand.self],
        defaultSubcommand: nil
    )
}
