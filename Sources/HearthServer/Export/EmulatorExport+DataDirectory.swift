package import Foundation
import GRDB
package import HearthAuth
import HearthCore
import HearthDatabase
import HearthDocuments
import HearthSQLite

/// Exports a data directory into the Emulator Suite's format, and imports such an export into
/// an empty data directory (offline: the server must not be running on it).
package struct EmulatorExportRunner {
    package var dataDirectory: URL
    package var project: String
    package var passwordHashing: ScryptParameters

    package init(dataDirectory: URL, project: String, passwordHashing: ScryptParameters = .strong) {
        self.dataDirectory = dataDirectory
        self.project = project
        self.passwordHashing = passwordHashing
    }

    package struct Summary: Sendable {
        package var accounts = 0
        package var namespaces: [String] = []
        package var leaves = 0
        package var documents = 0
    }

    static let firestoreDatabase = "(default)"

    func openDocumentStore() throws -> SQLiteDocumentStore {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        return try SQLiteDocumentStore(path: dataDirectory.appendingPathComponent("hearth.sqlite").path)
    }

    /// Every document of the default database, in path order.
    func allDocuments(_ store: SQLiteDocumentStore) async throws -> [Document] {
        try await store.read { r in
            var out: [Document] = []
            try r.scanDocuments(Self.firestoreDatabase, .descendants(.root), KeyRange(lower: nil, upper: nil), reverse: false) { doc in
                out.append(doc)
                return true
            }
            return out
        }
    }

    func openAuthStore() throws -> GRDBAuthStore {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        return try GRDBAuthStore(writer: try DatabasePool(path: dataDirectory.appendingPathComponent("auth.sqlite").path))
    }

    func openDatabaseStore() throws -> SQLiteDatabaseTreeStore {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        return try SQLiteDatabaseTreeStore(path: dataDirectory.appendingPathComponent("database.sqlite").path)
    }

    /// Whether the data directory holds no accounts and no database data.
    package func isEmpty() async throws -> Bool {
        let accounts = try await openAuthStore().read { try $0.accounts(after: nil, limit: 1).count }
        guard try await accounts == 0, try await openDatabaseStore().namespaces().isEmpty else { return false }
        return try await allDocuments(openDocumentStore()).isEmpty
    }

    // MARK: Export

    /// Writes the export beside `destination` and renames it into place when complete. An
    /// existing `destination` must be empty or a previous export (it is replaced, as
    /// `firebase emulators:export --force` does).
    package func export(to destination: URL, progress: (String) -> Void) async throws -> Summary {
        let fm = FileManager.default
        let destination = destination.standardizedFileURL
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: dataDirectory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw EmulatorExport.Failure("there is no data directory at \(dataDirectory.path)")
        }
        var replacing = false
        if fm.fileExists(atPath: destination.path) {
            let entries = try fm.contentsOfDirectory(atPath: destination.path)
            if !entries.isEmpty {
                guard entries.contains(EmulatorExport.metadataFile) else {
                    throw EmulatorExport.Failure("\(destination.path) is neither empty nor an earlier export; choose another folder")
                }
                replacing = true
            }
        }
        let staging = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).hearth-export-\(UInt32.random(in: .min ... .max))")
        try fm.createDirectory(at: staging, withIntermediateDirectories: true)
        do {
            var summary = Summary()
            var paths: [EmulatorExport.Service: String] = [:]

            // Auth: every account, in uid order, as accounts:batchGet returns them.
            let auth = try openAuthStore()
            let accounts = try await auth.read { r in
                var all: [Account] = []
                var after: String? = nil
                while true {
                    let page = try r.accounts(after: after, limit: 1000)
                    all += page
                    guard let last = page.last, page.count == 1000 else { break }
                    after = last.uid
                }
                return all
            }
            let authDir = staging.appendingPathComponent("auth_export")
            try fm.createDirectory(at: authDir, withIntermediateDirectories: true)
            var body: [(String, JSON)] = [("kind", .string("identitytoolkit#DownloadAccountResponse"))]
            if !accounts.isEmpty { body.append(("users", .array(accounts.map(EmulatorExport.accountJSON)))) }
            try write(JSON.object(body), to: authDir.appendingPathComponent("accounts.json"))
            try write(
                JSON.object([("signIn", .object([("allowDuplicateEmails", .bool(false))]))]),
                to: authDir.appendingPathComponent("config.json"))
            paths[.auth] = "auth_export"
            summary.accounts = accounts.count
            progress("auth: \(accounts.count) accounts")

            // Realtime Database: one file per namespace that holds data.
            let database = try openDatabaseStore()
            let namespaces = try await database.namespaces()
            let dbDir = staging.appendingPathComponent("database_export")
            try fm.createDirectory(at: dbDir, withIntermediateDirectories: true)
            for ns in namespaces {
                let subtree = try await database.subtree(namespace: ns, at: DatabasePath([]))
                let node = DatabaseNode(leaves: subtree.leaves, base: DatabasePath([]))
                try write(node.exportJSON(), to: dbDir.appendingPathComponent("\(ns).json"))
                summary.namespaces.append(ns)
                summary.leaves += subtree.leaves.count
                progress("database \(ns): \(subtree.leaves.count) values")
            }
            paths[.database] = "database_export"

            // Firestore: the default database's documents, one record each, in one output file.
            let documents = try await allDocuments(try openDocumentStore())
            let fsDir = staging.appendingPathComponent("firestore_export")
            let kindsDir = fsDir.appendingPathComponent("all_namespaces/all_kinds")
            try fm.createDirectory(at: kindsDir, withIntermediateDirectories: true)
            let output = FirestoreExportFormat.logFile(documents.map {
                FirestoreExportFormat.record(.init(path: $0.path.segments, fields: $0.fields), project: project)
            })
            try Data(output).write(to: kindsDir.appendingPathComponent("output-0"))
            let micros = Int64(Date().timeIntervalSince1970 * 1_000_000)
            try Data(FirestoreExportFormat.kindsMetadata(name: "firestore_export", micros: micros, outputs: ["output-0"]))
                .write(to: kindsDir.appendingPathComponent("all_namespaces_all_kinds.export_metadata"))
            try Data(FirestoreExportFormat.overallMetadata(documents: documents.count, outputBytes: output.count))
                .write(to: fsDir.appendingPathComponent("firestore_export.overall_export_metadata"))
            paths[.firestore] = "firestore_export"
            summary.documents = documents.count
            progress("firestore: \(documents.count) documents")

            let metadata = EmulatorExport.Metadata(version: EmulatorExport.writtenVersion, paths: paths)
            try write(metadata.json, to: staging.appendingPathComponent(EmulatorExport.metadataFile))
            if replacing { try fm.removeItem(at: destination) }
            if fm.fileExists(atPath: destination.path) { try fm.removeItem(at: destination) }
            try fm.moveItem(at: staging, to: destination)
            return summary
        } catch {
            try? fm.removeItem(at: staging)
            throw error
        }
    }

    private func write(_ json: JSON, to url: URL) throws {
        try Data(json.serializedBytes()).write(to: url, options: .atomic)
    }

    // MARK: Import

    /// Reads and checks the whole export first, refuses a data directory that already holds
    /// accounts or database data, then writes; a failure while writing removes what was
    /// written, so the directory is as it was.
    package func importing(
        from source: URL, only: Set<EmulatorExport.Service>? = nil, progress: (String) -> Void
    ) async throws -> Summary {
        let fm = FileManager.default
        let metadataURL = source.appendingPathComponent(EmulatorExport.metadataFile)
        guard let metadataBytes = fm.contents(atPath: metadataURL.path) else {
            throw EmulatorExport.Failure("\(source.path) is not an Emulator Suite export: it has no \(EmulatorExport.metadataFile)")
        }
        let metadata = try EmulatorExport.Metadata.parse(Array(metadataBytes))
        let wanted = only ?? Set(EmulatorExport.Service.allCases)
        for service in [EmulatorExport.Service.storage] where metadata.paths[service] != nil && wanted.contains(service) {
            throw EmulatorExport.Failure(
                "the export holds \(service.rawValue) data, which `hearth import` cannot read yet; pass --only auth,database,firestore to import the rest")
        }

        // 1. Read and check everything.
        var accounts: [(Account, EmulatorExport.ImportedPassword?)] = []
        if let path = metadata.paths[.auth], wanted.contains(.auth) {
            let file = source.appendingPathComponent(path).appendingPathComponent("accounts.json")
            if let bytes = fm.contents(atPath: file.path) {
                accounts = try EmulatorExport.accounts(Array(bytes))
            } else if fm.fileExists(atPath: source.appendingPathComponent(path).path) == false {
                throw EmulatorExport.Failure("the metadata names \(path)/ but the export has no such folder")
            }
            progress("auth: read \(accounts.count) accounts")
        }
        var trees: [(String, DatabaseNode)] = []
        if let path = metadata.paths[.database], wanted.contains(.database) {
            let dir = source.appendingPathComponent(path)
            guard let names = try? fm.contentsOfDirectory(atPath: dir.path) else {
                throw EmulatorExport.Failure("the metadata names \(path)/ but the export has no such folder")
            }
            for name in names.sorted() where !name.hasPrefix(".") {
                let ns = try EmulatorExport.namespace(ofFile: name)
                guard let bytes = fm.contents(atPath: dir.appendingPathComponent(name).path) else {
                    throw EmulatorExport.Failure("cannot read \(path)/\(name)")
                }
                trees.append((ns, try EmulatorExport.databaseTree(Array(bytes), file: "\(path)/\(name)")))
                progress("database \(ns): read")
            }
        }

        var documents: [FirestoreExportFormat.Entity] = []
        if let path = metadata.paths[.firestore], wanted.contains(.firestore) {
            documents = try readFirestore(source.appendingPathComponent(path), named: metadata.firestoreMetadataFile)
            progress("firestore: read \(documents.count) documents")
        }

        // 2. The target must be empty.
        let auth = try openAuthStore()
        let database = try openDatabaseStore()
        let existingAccounts = try await auth.read { try $0.accounts(after: nil, limit: 1).count }
        let existingNamespaces = try await database.namespaces()
        let documentStore = try openDocumentStore()
        let hasDocuments = try await documentStore.read { r in
            var any = false
            try r.scanDocuments(Self.firestoreDatabase, .descendants(.root), KeyRange(lower: nil, upper: nil), reverse: false) { _ in
                any = true
                return false
            }
            return any
        }
        guard !hasDocuments else {
            throw EmulatorExport.Failure("\(dataDirectory.path) already holds Firestore documents; import into a new or empty data directory")
        }
        guard existingAccounts == 0, existingNamespaces.isEmpty else {
            throw EmulatorExport.Failure(
                "\(dataDirectory.path) already holds \(existingAccounts > 0 ? "auth accounts" : "database data (\(existingNamespaces.joined(separator: ", ")))"); import into a new or empty data directory")
        }

        // 3. Hash the passwords the emulator kept in clear (before anything is written).
        var ready: [Account] = []
        ready.reserveCapacity(accounts.count)
        for (i, (account, password)) in accounts.enumerated() {
            var a = account
            switch password {
            case .hash(let h): a.passwordHash = h
            case .clear(let text): a.passwordHash = try passwordHashing.hash(text)
            case nil: break
            }
            ready.append(a)
            if (i + 1) % 100 == 0 { progress("auth: hashed \(i + 1) of \(accounts.count) passwords") }
        }

        // 4. Write; undo on failure.
        var summary = Summary()
        var written: [String] = []
        var writtenDocuments: [ResourcePath] = []
        do {
            let toSave = ready
            try await auth.write { w in
                guard try w.accounts(after: nil, limit: 1).isEmpty else {
                    throw EmulatorExport.Failure("auth accounts appeared while importing; is a server running on this data directory?")
                }
                for a in toSave { try w.save(a) }
            }
            summary.accounts = ready.count
            progress("auth: imported \(ready.count) accounts")
            for (ns, node) in trees {
                let leaves = node.leaves(at: DatabasePath([]))
                guard !leaves.isEmpty else { continue }
                let revision = try await database.subtree(namespace: ns, at: DatabasePath([])).revision
                let commit = DatabaseTreeCommit(
                    namespace: ns, expectedRevision: revision, clearedSubtrees: [DatabasePath([])], clearedLeaves: [], writtenLeaves: leaves)
                guard try await database.apply(commit) != nil else {
                    throw EmulatorExport.Failure("database \(ns) changed while importing; is a server running on this data directory?")
                }
                written.append(ns)
                summary.namespaces.append(ns)
                summary.leaves += leaves.count
                progress("database \(ns): imported \(leaves.count) values")
            }
            if !documents.isEmpty {
                let engine = try await DocumentEngine(store: documentStore)
                let db = DatabaseName(project: project, database: Self.firestoreDatabase)
                var done = 0
                for batch in stride(from: 0, to: documents.count, by: 500).map({ documents[$0..<min($0 + 500, documents.count)] }) {
                    let writes = batch.map { Write(path: ResourcePath($0.path), kind: .update(fields: $0.fields, mask: nil)) }
                    do {
                        _ = try await engine.commit(db, writes)
                    } catch {
                        throw EmulatorExport.Failure("firestore: \(error)")
                    }
                    writtenDocuments += batch.map { ResourcePath($0.path) }
                    done += batch.count
                    progress("firestore: imported \(done) of \(documents.count) documents")
                }
                summary.documents = documents.count
            }
        } catch {
            if !writtenDocuments.isEmpty, let engine = try? await DocumentEngine(store: documentStore) {
                let db = DatabaseName(project: project, database: Self.firestoreDatabase)
                for start in stride(from: 0, to: writtenDocuments.count, by: 500) {
                    let paths = writtenDocuments[start..<min(start + 500, writtenDocuments.count)]
                    _ = try? await engine.commit(db, paths.map { Write(path: $0, kind: .delete) })
                }
            }
            try? await auth.write { w in try w.deleteAllAccounts() }
            for ns in written {
                if let revision = try? await database.subtree(namespace: ns, at: DatabasePath([])).revision {
                    _ = try? await database.apply(DatabaseTreeCommit(
                        namespace: ns, expectedRevision: revision, clearedSubtrees: [DatabasePath([])], clearedLeaves: [], writtenLeaves: []))
                }
            }
            throw error
        }
        return summary
    }
}

extension EmulatorExportRunner {
    /// Every document of a `firestore_export` folder: the overall metadata names the kinds
    /// metadata, which lists the output files.
    func readFirestore(_ dir: URL, named metadataFile: String?) throws -> [FirestoreExportFormat.Entity] {
        let fm = FileManager.default
        let overallURL: URL
        if let metadataFile {
            overallURL = dir.deletingLastPathComponent().appendingPathComponent(metadataFile)
        } else if let name = (try? fm.contentsOfDirectory(atPath: dir.path))?.first(where: { $0.hasSuffix(".overall_export_metadata") }) {
            overallURL = dir.appendingPathComponent(name)
        } else {
            throw EmulatorExport.Failure("\(dir.lastPathComponent)/ has no .overall_export_metadata file")
        }
        func read(_ url: URL) throws -> [UInt8] {
            guard let data = fm.contents(atPath: url.path) else { throw EmulatorExport.Failure("cannot read \(url.path)") }
            return Array(data)
        }
        do {
            let kinds = try FirestoreExportFormat.kindsMetadataFile(fromOverall: try read(overallURL))
            guard !kinds.hasPrefix("/"), !kinds.split(separator: "/").contains("..") else {
                throw EmulatorExport.Failure("the overall export metadata names \(kinds), outside the export")
            }
            let kindsURL = overallURL.deletingLastPathComponent().appendingPathComponent(kinds)
            var out: [FirestoreExportFormat.Entity] = []
            var seen = Set<[String]>()
            for name in try FirestoreExportFormat.outputFiles(fromKinds: try read(kindsURL)) {
                for record in try FirestoreExportFormat.records(try read(kindsURL.deletingLastPathComponent().appendingPathComponent(name))) {
                    let entity = try FirestoreExportFormat.entity(record)
                    guard entity.path.count % 2 == 0, seen.insert(entity.path).inserted else {
                        throw EmulatorExport.Failure("firestore: document \(entity.path.joined(separator: "/")) is not a valid document path or appears twice")
                    }
                    out.append(entity)
                }
            }
            return out
        } catch let e as FirestoreExportFormat.Failure {
            throw EmulatorExport.Failure("firestore export: \(e.description)")
        }
    }
}
