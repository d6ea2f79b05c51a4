import ArgumentParser

/// `hearth rules …`: tools for security-rules files.
struct RulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Work with Firebase security-rules files without a server.",
        subcommands: [RulesTest.self]
    )
}
