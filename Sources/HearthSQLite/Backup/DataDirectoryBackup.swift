public import Foundation
public import HearthCore
import GRDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearth backup`: a consistent snapshot of a data directory taken while the server keeps
/// serving it.
///
/// - Each SQLite store is copied with SQLite's online backup API from inside one read
///   transaction, so the copy is that store exactly as of one commit, and the server's writers
///   never wait for it (WAL readers do not block writers). Stores are copied in the order
///   accounts → App Check → documents → Realtime Database → object metadata, so that a record
///   pointing "down" the list (a `files/{id}` document naming an object) is never newer than
///   what it points at.
/// - Object bytes are immutable files named by random ids (`objects/blobs/ab/<id>`): they are
///   hard-linked (copied across file systems). Every blob present when the backup starts is
///   linked first; after the object metadata snapshot, blobs it names that were created since are
///   linked, and links it does not name are dropped. A blob reclaimed between the snapshot and its
///   link (its object was deleted meanwhile) makes the metadata snapshot be taken again.
/// - Every other file (signing keys, App Check keys, the mail outbox, credentials) is copied
///   with its permissions.
/// - The backup is written into `<to>.partial-…`, flushed, given a manifest with each file's
///   size and SHA-256, and renamed to `<to>` only when complete.
public struct DataDirectoryBackup: Sendable {
    public enum Progress: Sendable {
        case step(String)
        case database(name: String, copiedPages: Int, totalPages: Int)
        case checksums(doneBytes: Int64, totalBytes: Int64)
    }

    public let source: URL
    public let destination: URL
    /// Leave object bytes out (they live in an external S3 bucket, `--blob-s3`).
    public let metadataOnly: Bool

    /// The stores, in snapshot order; any other `*.sqlite` in the directory follows, sorted.
    static let storeOrder = ["auth.sqlite", "app-check.sqlite", "hearth.sqlite", "database.sqlite", "storage.sqlite"]
    static let blobsDirectory = "objects/blobs"

    public init(source: URL, destination: URL, metadataOnly: Bool = false) {
        self.source = source.standardizedFileURL
        self.destination = destination.standardizedFileURL
        self.metadataOnly = metadataOnly
    }

    public func run(progress: (Progress) -> Void = { _ in }) throws(HearthError) -> BackupManifest {
        let stores = try checkPreconditions()
        let partial = URL(fileURLWithPath: destination.path + ".partial-\(UUID().uuidString.prefix(8).lowercased())")
        try BackupFiles.makeDirectory(partial)
        do throws(HearthError) {
            let manifest = try write(into: partial, stores: stores, progress: progress)
            BackupFiles.flushToDisk()
            if FileManager.default.fileExists(atPath: destination.path) {
                try? FileManager.default.removeItem(at: destination)  // empty, checked above
            }
            guard rename(partial.path, destination.path) == 0 else {
                throw HearthError(.internal, "Cannot rename \(partial.path) to \(destination.path) (errno \(errno)).")
            }
            BackupFiles.flushToDisk()
            return manifest
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    /// The stores to copy; throws when the source is not a data directory or the destination is unusable.
    func checkPreconditions() throws(HearthError) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HearthError(.notFound, "There is no data directory at \(source.path).")
        }
        let found = BackupFiles.regularFiles(under: source, skip: { $0 == "objects" }).filter { $0.hasSuffix(".sqlite") }
        guard !found.isEmpty else {
            throw HearthError(.notFound, "\(source.path) holds no Hearth stores (*.sqlite): is it the server's --data-dir?")
        }
        guard BackupFiles.isEmptyOrAbsent(destination) else {
            throw HearthError(.alreadyExists, "\(destination.path) already exists and is not empty; back up into a new folder.")
        }
        let sourcePrefix = source.path.hasSuffix("/") ? source.path : source.path + "/"
        guard !destination.path.hasPrefix(sourcePrefix), destination.path != source.path else {
            throw HearthError(.invalidArgument, "The backup folder \(destination.path) is inside the data directory; choose a folder outside it.")
        }
        let known = Self.storeOrder.filter(found.contains)
        return known + found.filter { !Self.storeOrder.contains($0) }
    }

    func write(into partial: URL, stores: [String], progress: (Progress) -> Void) throws(HearthError) -> BackupManifest {
        let startedAt = BackupFiles.timestamp()
        var linked = Set<String>()
        if !metadataOnly {
            let present = BackupFiles.regularFiles(under: source.appendingPathComponent(Self.blobsDirectory))
            progress(.step("linking \(present.count) object blobs"))
            for relative in present where try linkBlob(relative, into: partial, required: false) {
                linked.insert(relative)
            }
        }
        var blobCount = 0
        for store in stores {
            let target = partial.appendingPathComponent(store)
            try BackupFiles.makeDirectory(target.deletingLastPathComponent())
            if store == "storage.sqlite" {
                blobCount = try snapshotObjects(into: partial, linked: linked, progress: progress)
            } else {
                try snapshot(store, to: target, progress: progress)
            }
        }
        progress(.step("copying keys and other files"))
        let others = BackupFiles.regularFiles(under: source) { relative in
            relative == "objects" || relative.hasSuffix(".sqlite") || relative.hasSuffix(".sqlite-wal")
                || relative.hasSuffix(".sqlite-shm") || relative.hasSuffix(".sqlite-journal") || relative.contains(".partial-")
        }
        for relative in others {
            let target = partial.appendingPathComponent(relative)
            try BackupFiles.makeDirectory(target.deletingLastPathComponent())
            guard FileManager.default.fileExists(atPath: source.appendingPathComponent(relative).path) else { continue }
            try BackupFiles.copy(source.appendingPathComponent(relative), target)
        }
        let files = BackupFiles.regularFiles(under: partial)
        var entries: [BackupManifest.Entry] = []
        let total = files.reduce(Int64(0)) { sum, f in
            sum + ((try? FileManager.default.attributesOfItem(atPath: partial.appendingPathComponent(f).path)[.size] as? Int64) ?? 0)
        }
        var done: Int64 = 0
        for relative in files {
            let digest = try BackupFiles.sha256(of: partial.appendingPathComponent(relative))
            entries.append(.init(path: relative, bytes: digest.bytes, sha256: digest.hex))
            done += digest.bytes
            progress(.checksums(doneBytes: done, totalBytes: total))
        }
        let manifest = BackupManifest(
            format: BackupManifest.formatName, version: BackupManifest.currentVersion, startedAt: startedAt,
            finishedAt: BackupFiles.timestamp(), source: source.path, databases: stores, blobs: blobCount,
            objectBytes: metadataOnly ? "external" : "included", files: entries)
        try manifest.write(to: partial)
        return manifest
    }

    /// Copies one store as of one commit, then has SQLite check the copy (indexes against tables).
    func snapshot(_ store: String, to target: URL, progress: (Progress) -> Void) throws(HearthError) {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        do {
            let from = try DatabaseQueue(path: source.appendingPathComponent(store).path, configuration: configuration)
            let to = try DatabaseQueue(path: target.path)
            try to.writeWithoutTransaction { destination in
                try from.inDatabase { db in
                    // One read transaction for every step: the copy is one commit's state, and
                    // other processes' commits meanwhile neither show nor restart the copy.
                    try db.execute(sql: "BEGIN DEFERRED")
                    defer { try? db.execute(sql: "ROLLBACK") }
                    _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
                    var lastTenth = -1
                    try withoutActuallyEscaping(progress) { progress in
                        try db.backup(to: destination, pagesPerStep: 2048) { p in
                            let copied = p.totalPageCount - p.remainingPageCount
                            let tenth = p.totalPageCount == 0 ? 10 : copied * 10 / p.totalPageCount
                            if tenth != lastTenth || p.isCompleted {
                                lastTenth = tenth
                                progress(.database(name: store, copiedPages: copied, totalPages: p.totalPageCount))
                            }
                        }
                    }
                }
            }
            let check = try to.read { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
            try to.close()
            try from.close()
            guard check == ["ok"] else {
                throw HearthError(.dataLoss, "The copy of \(store) fails SQLite's integrity check: \(check.prefix(3).joined(separator: "; "))")
            }
        } catch let error as HearthError {
            throw error
        } catch {
            throw HearthError(.unavailable, "Cannot snapshot \(store): \(error)")
        }
    }

    /// The object metadata snapshot and the blobs it names. Returns how many blobs the backup holds.
    func snapshotObjects(into partial: URL, linked: Set<String>, progress: (Progress) -> Void) throws(HearthError) -> Int {
        let target = partial.appendingPathComponent("storage.sqlite")
        var previouslyMissing: String?
        // Blobs already in the backup: those linked up front, and those an earlier attempt linked
        // before it found one missing (linking one twice would fail with EEXIST).
        var linked = linked
        for attempt in 1...5 {
            try? FileManager.default.removeItem(at: target)
            try snapshot("storage.sqlite", to: target, progress: progress)
            if metadataOnly { return 0 }
            let named = try namedBlobs(in: target)
            var missing: String?
            for (relative, _) in named where !linked.contains(relative) {
                if try !linkBlob(relative, into: partial, required: false) { missing = relative; break }
                linked.insert(relative)
            }
            if let missing {
                guard missing != previouslyMissing else {
                    throw HearthError(
                        .dataLoss,
                        "The bytes of an object (blob \(missing)) are not in \(source.path)/\(Self.blobsDirectory). If the server keeps object bytes in an external S3 bucket (--blob-s3), back that bucket up with S3's own tools and run hearth backup with --metadata-only.")
                }
                previouslyMissing = missing
                progress(.step("blob \(missing) was reclaimed during the backup; taking the object metadata snapshot again (attempt \(attempt + 1))"))
                continue
            }
            for (relative, size) in named where size >= 0 {
                let bytes = (try? FileManager.default.attributesOfItem(atPath: partial.appendingPathComponent("\(Self.blobsDirectory)/\(relative)").path)[.size] as? Int64) ?? -1
                guard bytes == size else {
                    throw HearthError(.dataLoss, "Object blob \(relative) has \(bytes) bytes but its metadata says \(size): the data directory is damaged.")
                }
            }
            for relative in linked where named[relative] == nil {
                try? FileManager.default.removeItem(at: partial.appendingPathComponent("\(Self.blobsDirectory)/\(relative)"))
            }
            return named.count
        }
        throw HearthError(.unavailable, "Objects were deleted faster than the backup could link their bytes; try again when the server is less busy.")
    }

    /// Blob paths (`ab/<id>`) named by objects and upload parts, with the object's size (-1 for parts).
    func namedBlobs(in storage: URL) throws(HearthError) -> [String: Int64] {
        do {
            let queue = try DatabaseQueue(path: storage.path)
            defer { try? queue.close() }
            let rows = try queue.read { db in try SQLiteObjectMetadataStore.blobReferences(db) }
            var out: [String: Int64] = [:]
            for (id, size) in rows {
                guard id.utf8.count == 26, id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 118) }) else {
                    throw HearthError(.dataLoss, "The object metadata names an invalid blob id \(id.debugDescription).")
                }
                out["\(id.prefix(2))/\(id)"] = max(out["\(id.prefix(2))/\(id)"] ?? -1, size)
            }
            return out
        } catch let error as HearthError {
            throw error
        } catch {
            throw HearthError(.dataLoss, "Cannot read the object metadata snapshot: \(error)")
        }
    }

    /// Links one blob into the backup. Returns false when it is gone (and `required` is false).
    func linkBlob(_ relative: String, into partial: URL, required: Bool) throws(HearthError) -> Bool {
        let from = source.appendingPathComponent("\(Self.blobsDirectory)/\(relative)")
        let to = partial.appendingPathComponent("\(Self.blobsDirectory)/\(relative)")
        try BackupFiles.makeDirectory(to.deletingLastPathComponent())
        do {
            try BackupFiles.linkOrCopy(from, to)
            return true
        } catch where error.code == .notFound && !required {
            return false
        }
    }
}
