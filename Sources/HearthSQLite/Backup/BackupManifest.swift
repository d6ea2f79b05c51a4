public import Foundation
public import HearthCore
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearth-backup.json`, written last into a backup folder: what the backup holds, with the size
/// and SHA-256 of every file, so that a restore can prove the folder whole before it copies
/// anything.
public struct BackupManifest: Codable, Sendable, Equatable {
    public static let fileName = "hearth-backup.json"
    public static let formatName = "hearth-backup"
    public static let currentVersion = 1

    public struct Entry: Codable, Sendable, Equatable {
        /// Relative to the backup folder (and to the data directory it restores into), `/`-separated.
        public var path: String
        public var bytes: Int64
        public var sha256: String
    }

    public var format: String
    public var version: Int
    /// When the snapshot began (RFC 3339, UTC): every write acknowledged before it is in the backup.
    public var startedAt: String
    public var finishedAt: String
    /// The data directory it was taken from (for the record; restores go anywhere).
    public var source: String
    /// The SQLite stores, in the order they were snapshotted.
    public var databases: [String]
    /// How many objects' and upload parts' bytes are in `objects/blobs/`.
    public var blobs: Int
    /// `included`, or `external` when the bytes were left in an external S3 bucket (`--metadata-only`).
    public var objectBytes: String
    public var files: [Entry]

    public static func load(from folder: URL) throws(HearthError) -> BackupManifest {
        let url = folder.appendingPathComponent(fileName)
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw HearthError(.notFound, "\(folder.path) is not a Hearth backup: it has no \(fileName) (an unfinished backup has none).")
        }
        let manifest: BackupManifest
        do { manifest = try JSONDecoder().decode(BackupManifest.self, from: data) } catch {
            throw HearthError(.dataLoss, "\(url.path) is not a readable backup manifest: \(error)")
        }
        guard manifest.format == formatName else {
            throw HearthError(.invalidArgument, "\(url.path) is not a Hearth backup manifest (format \"\(manifest.format)\").")
        }
        guard manifest.version <= currentVersion, manifest.version >= 1 else {
            throw HearthError(.failedPrecondition, "The backup in \(folder.path) has format version \(manifest.version); this hearth reads versions up to \(currentVersion). Restore it with a newer hearth.")
        }
        for entry in manifest.files {
            guard BackupFiles.isSafeRelativePath(entry.path) else {
                throw HearthError(.invalidArgument, "The backup manifest names an unsafe path: \(entry.path)")
            }
        }
        return manifest
    }

    func write(to folder: URL) throws(HearthError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            try encoder.encode(self).write(to: folder.appendingPathComponent(Self.fileName))
        } catch {
            throw HearthError(.internal, "Cannot write the backup manifest into \(folder.path): \(error.localizedDescription)")
        }
    }

    /// Checks that every listed file is in `folder` with its size and checksum. `progress` gets
    /// (bytes checked, bytes in all).
    public func verify(folder: URL, progress: (Int64, Int64) -> Void = { _, _ in }) throws(HearthError) {
        let total = files.reduce(Int64(0)) { $0 + $1.bytes }
        var done: Int64 = 0
        for entry in files {
            let url = folder.appendingPathComponent(entry.path)
            let digest = try BackupFiles.sha256(of: url)
            guard digest.bytes == entry.bytes, digest.hex == entry.sha256 else {
                throw HearthError(
                    .dataLoss,
                    "The backup in \(folder.path) is damaged: \(entry.path) has \(digest.bytes) bytes with SHA-256 \(digest.hex.prefix(16))…, the manifest says \(entry.bytes) bytes with \(entry.sha256.prefix(16))…. Nothing was restored.")
            }
            done += entry.bytes
            progress(done, total)
        }
    }
}

/// File helpers shared by backup and restore.
enum BackupFiles {
    /// A relative path with no `..`, no empty or `.` components, no NUL and not absolute.
    static func isSafeRelativePath(_ path: String) -> Bool {
        guard !path.isEmpty, !path.hasPrefix("/"), !path.utf8.contains(0) else { return false }
        return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { $0 != "" && $0 != "." && $0 != ".." }
    }

    static func sha256(of url: URL) throws(HearthError) -> (bytes: Int64, hex: String) {
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw HearthError(.dataLoss, "\(url.path) is missing or unreadable.")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var bytes: Int64 = 0
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch {
                throw HearthError(.dataLoss, "Cannot read \(url.path): \(error.localizedDescription)")
            }
            guard let chunk, !chunk.isEmpty else { break }
            hasher.update(data: chunk)
            bytes += Int64(chunk.count)
        }
        return (bytes, hasher.finalize().map { String(format: "%02x", $0) }.joined())
    }

    /// Hard-links `source` to `destination` (same file system), else copies it. Either way the
    /// destination keeps the source's permission bits. Blobs are never changed in place, so a
    /// shared inode is as good as a copy.
    static func linkOrCopy(_ source: URL, _ destination: URL) throws(HearthError) {
        if link(source.path, destination.path) == 0 { return }
        let err = errno
        guard err == EXDEV || err == EPERM || err == EMLINK else {
            if err == ENOENT { throw HearthError(.notFound, "\(source.path) disappeared.") }
            throw HearthError(.internal, "Cannot link \(source.path) to \(destination.path) (errno \(err)).")
        }
        try copy(source, destination)
    }

    static func copy(_ source: URL, _ destination: URL) throws(HearthError) {
        do {
            try FileManager.default.copyItem(at: source, to: destination)
            let mode = try FileManager.default.attributesOfItem(atPath: source.path)[.posixPermissions]
            if let mode { try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: destination.path) }
        } catch {
            throw HearthError(.internal, "Cannot copy \(source.path) to \(destination.path): \(error.localizedDescription)")
        }
    }

    static func makeDirectory(_ url: URL) throws(HearthError) {
        do { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) } catch {
            throw HearthError(.internal, "Cannot create \(url.path): \(error.localizedDescription)")
        }
    }

    /// Regular files under `root`, as sorted relative paths, skipping what `skip` names.
    static func regularFiles(under root: URL, skip: (String) -> Bool = { _ in false }) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return [] }
        var out: [String] = []
        while let relative = walker.nextObject() as? String {
            if skip(relative) {
                if (walker.fileAttributes?[.type] as? FileAttributeType) == .typeDirectory { walker.skipDescendants() }
                continue
            }
            if (walker.fileAttributes?[.type] as? FileAttributeType) == .typeRegular { out.append(relative) }
        }
        return out.sorted()
    }

    /// Empty, or absent: safe to create.
    static func isEmptyOrAbsent(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return true }
        guard isDirectory.boolValue else { return false }
        return ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? ["?"]).isEmpty
    }

    /// Flushes everything written so far to disk (the backup's files and their directories).
    static func flushToDisk() { sync() }

    static func timestamp(_ date: Date = Date()) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: date)
    }
}
