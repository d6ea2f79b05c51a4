import ArgumentParser
import Foundation
import HearthApp
import HearthServer

/// `hearth export DIR`: the data directory in the Firebase Emulator Suite's export format.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a data directory in the Firebase Emulator Suite's format (firebase emulators:export).",
        discussion: """
            Writes firebase-export-metadata.json, firestore_export/ (every Firestore database, in the \
            Firestore emulator's format; a named database's documents carry its id in their keys), auth_export/ (accounts.json, config.json), \
            database_export/<namespace>.json and storage_export/ (buckets.json, metadata/, blobs/), which `firebase emulators:start --import DIR` and \
            `hearth import DIR` read. The export is written beside DIR and renamed into place when \
            complete; an existing DIR must be empty or an earlier export (it is replaced). Run it while no server writes the data directory. \
            See docs/import-export.md.
            """)

    @Argument(help: "The export folder.") var directory: String
    @OptionGroup var options: ProjectDataOptions
    @Flag(name: .customLong("quiet"), help: "Print only the final line.") var quiet = false

    func run() async throws {
        let (data, runner) = try options.exportRunner()
        let started = Date()
        let summary: EmulatorExportRunner.Summary
        do {
            summary = try await runner.export(to: URL(fileURLWithPath: directory)) { line in
                if !quiet { progressLine(line) }
            }
        } catch {
            throw CommandFailure("hearth export: \(error)")
        }
        print("exported \(data.standardizedFileURL.path) into \(directory): \(summary.documents) documents (\(summary.databases.count) Firestore databases), \(summary.objects) objects, \(summary.accounts) accounts, \(summary.namespaces.count) database namespaces (\(summary.leaves) values) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }
}

/// `hearth import DIR`: an Emulator Suite export into an empty data directory.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a Firebase Emulator Suite export (firebase emulators:export, hearth export) into an empty data directory.",
        discussion: """
            Reads and checks the whole export before writing anything (Firestore's documents stream \
            into a new document store file that replaces the empty one at the end), refuses a data \
            directory that already holds accounts, database data, documents or objects, and removes \
            what it wrote if a write fails: all or nothing. Passwords the Auth emulator kept in clear (its fakeHash) are \
            hashed with Hearth's scrypt. Stop the server first. See docs/import-export.md.
            """)

    @Argument(help: "The export folder (it holds firebase-export-metadata.json).") var directory: String
    @OptionGroup var options: ProjectDataOptions
    @Option(name: .customLong("only"), help: "Comma-separated services to import: auth, database, firestore, storage. (default: every service in the export)")
    var only: String?
    @Flag(name: .customLong("quiet"), help: "Print only the final line.") var quiet = false

    func run() async throws {
        let services = try parseOnly(only)
        let (data, runner) = try options.exportRunner()
        let started = Date()
        let summary: EmulatorExportRunner.Summary
        do {
            summary = try await runner.importing(from: URL(fileURLWithPath: directory), only: services) { line in
                if !quiet { progressLine(line) }
            }
        } catch {
            throw CommandFailure("hearth import: \(error)")
        }
        print("imported \(directory) into \(data.standardizedFileURL.path): \(summary.documents) documents (\(summary.databases.count) Firestore databases), \(summary.objects) objects, \(summary.accounts) accounts, \(summary.namespaces.count) database namespaces (\(summary.leaves) values) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }
}

extension ProjectDataOptions {
    /// The data directory and project as `hearth serve` resolves them, and a runner over them.
    func exportRunner() throws -> (URL, EmulatorExportRunner) {
        let env = ProcessInfo.processInfo.environment
        var config = ServerConfiguration()
        let dir = URL(fileURLWithPath: dataDir ?? env["HEARTH_DATA_DIR"] ?? config.dataDirectory)
        try refuseOverPostgres(dir)
        config.project = project ?? env["HEARTH_PROJECT"] ?? FirebaseJSON.load(directory: FileManager.default.currentDirectoryPath).project ?? config.project
        return (dir, EmulatorExportRunner(dataDirectory: dir, project: config.project))
    }
}

/// `--only auth,database`.
func parseOnly(_ text: String?) throws -> Set<EmulatorExport.Service>? {
    guard let text else { return nil }
    var out: Set<EmulatorExport.Service> = []
    for part in text.split(separator: ",") {
        let name = part.trimmingCharacters(in: .whitespaces)
        guard let service = EmulatorExport.Service(rawValue: name) else {
            throw ValidationError("--only: unknown service \(name.debugDescription); use auth, database, firestore, storage")
        }
        out.insert(service)
    }
    return out
}

private func progressLine(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
