import ArgumentParser
import Foundation
import HearthCore
import HearthSQLite

/// `hearth backup --to DIR`: an online, consistent snapshot of the data directory.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back up a data directory while the server keeps serving it.",
        discussion: """
            Copies every store with SQLite's online backup API (each as of one commit; the server's \
            writes do not wait), hard-links the object bytes (copies them across file systems), copies \
            the signing keys and other files, and writes hearth-backup.json with the size and SHA-256 \
            of every file. The folder appears only when the backup is complete. Every write \
            acknowledged before the backup started is in it.

            Restore with `hearth restore DIR --data-dir NEW_DIR`. See docs/backups.md.
            """)

    @OptionGroup var data: DataDirOption
    @Option(name: .customLong("to"), help: "The folder to create (must not exist, or be empty).") var destination: String
    @Flag(name: .customLong("metadata-only"), help: "Leave object bytes out: for a server that keeps them in an external S3 bucket (--blob-s3); back the bucket up with S3's tools.")
    var metadataOnly = false
    @Flag(name: .customLong("quiet"), help: "Print only the final line.") var quiet = false

    func run() throws {
        try refuseOverPostgres(data.url)
        let backup = DataDirectoryBackup(source: data.url, destination: URL(fileURLWithPath: destination), metadataOnly: metadataOnly)
        let started = Date()
        let manifest: BackupManifest
        do {
            var lastReported: Int64 = 0
            manifest = try backup.run { progress in
                guard !quiet else { return }
                switch progress {
                case .step(let text): report(text)
                case .database(let name, let copied, let total):
                    report("\(name): \(total == 0 ? 100 : copied * 100 / total)% of \(total) pages")
                case .checksums(let done, let total):
                    if done == total || done - lastReported >= 64 << 20 {
                        lastReported = done
                        report("checksums: \(megabytes(done)) of \(megabytes(total))")
                    }
                }
            }
        } catch {
            throw CommandFailure("hearth backup: \(error.message)")
        }
        let bytes = manifest.files.reduce(Int64(0)) { $0 + $1.bytes }
        print("backed up \(data.url.standardizedFileURL.path) into \(backup.destination.path): \(manifest.databases.count) stores, \(manifest.blobs) object blobs, \(manifest.files.count) files, \(megabytes(bytes)) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s (snapshot began \(manifest.startedAt))")
    }
}

/// `hearth restore DIR --data-dir NEW_DIR`.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup made by `hearth backup` into a new data directory.",
        discussion: """
            Checks every file of the backup against its manifest (size and SHA-256) before writing \
            anything, then builds the data directory beside the target and renames it into place: \
            all or nothing. The target must be new or empty; stop the server and move old data aside \
            first. Then start the server with `hearth serve --data-dir NEW_DIR`.
            """)

    @Argument(help: "The backup folder (it holds hearth-backup.json).") var backup: String
    @OptionGroup var data: DataDirOption
    @Flag(name: .customLong("quiet"), help: "Print only the final line.") var quiet = false

    func run() throws {
        try refuseOverPostgres(data.url)
        let restore = DataDirectoryRestore(backup: URL(fileURLWithPath: backup), target: data.url)
        let manifest: BackupManifest
        do {
            var lastFiles = 0
            var lastVerified: Int64 = 0
            manifest = try restore.run { progress in
                guard !quiet else { return }
                switch progress {
                case .verifying(let done, let total):
                    if done == total || done - lastVerified >= 64 << 20 {
                        lastVerified = done
                        report("verifying: \(megabytes(done)) of \(megabytes(total))")
                    }
                case .copying(let done, let total):
                    if done == total || done - lastFiles >= max(1, total / 10) {
                        lastFiles = done
                        report("copying: \(done) of \(total) files")
                    }
                }
            }
        } catch {
            throw CommandFailure("hearth restore: \(error.message)")
        }
        print("restored the backup of \(manifest.startedAt) (\(manifest.files.count) files) into \(restore.target.path); start it with: hearth serve --data-dir \(restore.target.path)")
    }
}

private func report(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

private func megabytes(_ bytes: Int64) -> String {
    String(format: "%.1f MiB", Double(bytes) / 1_048_576)
}

/// A failure with a message of its own and exit status 1, printed without usage text.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}
