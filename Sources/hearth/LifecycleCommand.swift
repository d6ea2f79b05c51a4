import ArgumentParser
import Foundation
import HearthCore
import HearthDocuments
import HearthFiles
import HearthApp
import HearthServer
import HearthStorage
import Logging

/// `hearth lifecycle plan`: what the lifecycle rules would delete now, without deleting.
struct LifecycleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lifecycle", abstract: "Inspect the lifecycle worker's rules (docs/app-backend.md).", subcommands: [Plan.self])

    struct Plan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List what one pass of the lifecycle rules would delete now (a dry run; nothing is deleted).")
        @OptionGroup var data: DataDirOption
        @Option(name: .customLong("config"), help: "The lifecycle rules file (as `hearth serve --lifecycle`).") var config: String
        @Option(help: "Project id. (default: demo-hearth)") var project: String = "demo-hearth"

        func run() async throws {
            let rules: LifecycleRules
            do { rules = try LifecycleRules.load(config) } catch { throw ValidationError(error.message) }
            var configuration = ServerConfiguration()
            configuration.project = project
            let counts = try await data.withStores { stores in
                let engine = try await DocumentEngine(store: stores.documents, logger: Logger(label: "hearth.lifecycle"))
                let auth = try await CompositionRoot.openAuth(configuration, stores: stores)
                let worker = LifecycleWorker(
                    rules: rules, documents: engine, database: DatabaseName(project: project, database: "(default)"),
                    objects: CompositionRoot.objects(stores), bucket: "\(project).appspot.com",
                    existingAccounts: { uids in Set(try await auth.lookup(uids: uids).map(\.uid)) },
                    realtime: CompositionRoot.lifecycleDatabase(configuration, stores: stores), logger: Logger(label: "hearth.lifecycle"))
                return try await worker.pass(dryRun: true) { item in print(item.description) }
            }
            print(
                "would delete \(counts.documents) documents, \(counts.objects) objects and \(counts.databasePaths) database paths (one pass, at most \(rules.batchSize) matches per rule)"
            )
        }
    }
}
