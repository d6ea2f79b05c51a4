public import Foundation
public import HearthCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearth restore`: a backup made by ``DataDirectoryBackup`` becomes a data directory again.
///
/// All or nothing: the manifest is read and every file's size and SHA-256 checked before anything
/// is written; the files are then copied (object blobs hard-linked where the file system allows)
/// into a hidden sibling of the target, flushed, and renamed into place. The target must be new
/// or empty: a restore never mixes with, or overwrites, live data.
public struct DataDirectoryRestore: Sendable {
    public enum Progress: Sendable {
        case verifying(doneBytes: Int64, totalBytes: Int64)
        case copying(doneFiles: Int, totalFiles: Int)
    }

    public let backup: URL
    public let target: URL

    public init(backup: URL, target: URL) {
        self.backup = backup.standardizedFileURL
        self.target = target.standardizedFileURL
    }

    public func run(progress: (Progress) -> Void = { _ in }) throws(HearthError) -> BackupManifest {
        let manifest = try BackupManifest.load(from: backup)
        guard BackupFiles.isEmptyOrAbsent(target) else {
            throw HearthError(
                .alreadyExists,
                "\(target.path) is not empty. Restore into a new or empty directory (stop the server and move the old data aside first); nothing was restored.")
        }
        try manifest.verify(folder: backup) { progress(.verifying(doneBytes: $0, totalBytes: $1)) }
        let parent = target.deletingLastPathComponent()
        try BackupFiles.makeDirectory(parent)
        let staging = parent.appendingPathComponent(".\(target.lastPathComponent).restoring-\(UUID().uuidString.prefix(8).lowercased())")
        do throws(HearthError) {
            try BackupFiles.makeDirectory(staging)
            for (i, entry) in manifest.files.enumerated() {
                let from = backup.appendingPathComponent(entry.path)
                let to = staging.appendingPathComponent(entry.path)
                try BackupFiles.makeDirectory(to.deletingLastPathComponent())
                if entry.path.hasPrefix(DataDirectoryBackup.blobsDirectory + "/") {
                    try BackupFiles.linkOrCopy(from, to)
                } else {
                    try BackupFiles.copy(from, to)
                }
                progress(.copying(doneFiles: i + 1, totalFiles: manifest.files.count))
            }
            BackupFiles.flushToDisk()
            if FileManager.default.fileExists(atPath: target.path) {
                try? FileManager.default.removeItem(at: target)  // empty, checked above
            }
            guard rename(staging.path, target.path) == 0 else {
                throw HearthError(.internal, "Cannot rename \(staging.path) to \(target.path) (errno \(errno)).")
            }
            BackupFiles.flushToDisk()
            return manifest
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }
}
