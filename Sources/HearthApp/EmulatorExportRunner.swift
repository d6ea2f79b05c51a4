package import Foundation
package import HearthAuth
import HearthCore
import HearthDatabase
import HearthDocuments
package import HearthServer
import HearthSQLite
import HearthStorage

/// Exports a data directory into the Emulator Suite's format, and imports such an export into
/// an empty data directory (offline: the server must not be running on it). It reads and writes
/// the embedded backend's stores directly (the bulk loader writes a new document store file), so
/// it lives beside the composition root, not in the transports.
package struct EmulatorExportRunner {
    package var dataDirectory: URL
    package var project: String
    package var passwordHashing: ScryptParameters
    /// How Firestore documents are imported.
    package var firestoreImport: FirestoreImport = .bulk

    /// How `importing` writes Firestore documents.
    package enum FirestoreImport: Sendable {
        /// Straight into a new document store file, renamed into place when complete
        /// (``SQLiteDocumentBulkLoad``): the import path.
        case bulk
        /// Commits of 500 through the document engine, as clients write: the reference the bulk
        /// path is checked and measured against.
        case engine
    }

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
        /// Firestore databases exported or imported.
        package var databases: [String] = []
        package var objects = 0
    }

    /// Every object of every bucket.
    func allObjects(_ store: ObjectStore) async throws -> (buckets: [String], objects: [StorageObject]) {
        var objects: [StorageObject] = []
        let buckets = try await store.buckets().map(\.name)
        for bucket in buckets {
            var after: String? = nil
            repeat {
                let page = try await store.list(bucket, .init(after: after))
                objects += page.objects
                after = page.next
            } while after != nil
        }
        return (buckets, objects)
    }

    var documentStorePath: String { dataDirectory.appendingPathComponent(SQLiteDataDirectory.documents).path }

    func openDocumentStore() throws -> SQLiteDocumentStore {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        return try SQLiteDocumentStore(path: documentStorePath)
    }

    func openAuthStore() throws -> GRDBAuthStore {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        return try SQLiteDataDirectory.openAccounts(directory: dataDirectory)
    }

    func openDatabaseStore() throws -> SQLiteDatabaseTreeStore {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        return try SQLiteDatabaseTreeStore(path: dataDirectory.appendingPathComponent(SQLiteDataDirectory.databaseTrees).path)
    }

    /// Whether the data directory holds no accounts and no database data.
    package func isEmpty() async throws -> Bool {
        let accounts = try await openAuthStore().accounts(after: nil, limit: 1).count
        guard accounts == 0, try await openDatabaseStore().namespaces().isEmpty else { return false }
        // Without opening the store as a server does: an import may replace its file next.
        guard try SQLiteDocumentBulkLoad.firstDatabaseWithDocuments(path: documentStorePath) == nil else { return false }
        return try await allObjects(ObjectStore.open(directory: dataDirectory)).objects.isEmpty
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
            var accounts: [Account] = []
            var after: String? = nil
            while true {
                let page = try await auth.accounts(after: after, limit: 1000)
                accounts += page
                guard let last = page.last, page.count == 1000 else { break }
                after = last.uid
            }
            let authDir = staging.appendingPathComponent("auth_export")
            try fm.createDirectory(at: authDir, withIntermediateDirectories: true)
            var body: [(String, JSON)] = [("kind", .string("identitytoolkit#DownloadAccountResponse"))]
            if !accounts.isEmpty { body.append(("users", .array(accounts.map(EmulatorExport.accountJSON)))) }
            try write(JSON.object(body), to: authDir.appendingPathComponent("accounts.json"))
            let authSettings = try await auth.projectSettings()
            try write(EmulatorExport.authConfigJSON(authSettings), to: authDir.appendingPathComponent("config.json"))
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

            // Firestore: every database's documents, one record each (a named database's carry
            // its id in their keys), streamed into one output file.
            let store = try openDocumentStore()
            let fsDir = staging.appendingPathComponent("firestore_export")
            var exportFile = try FirestoreExportFile(directory: fsDir, name: "firestore_export")
            for database in try await store.databaseIDs() {
                let project = self.project
                let file = exportFile
                let (written, count) = try await store.forEachDocument(database, (file, 0)) { state, doc in
                    try state.0.append(.init(database: database, path: doc.path.segments, fields: doc.fields), project: project)
                    state.1 += 1
                }
                exportFile = written
                summary.databases.append(database)
                progress("firestore \(database): \(count) documents")
            }
            summary.documents = try exportFile.finish()
            paths[.firestore] = "firestore_export"
            progress("firestore: \(summary.documents) documents")

            // Storage: bucket ids, and each object's bytes and metadata.
            let objectStore = try ObjectStore.open(directory: dataDirectory)
            let (buckets, objects) = try await allObjects(objectStore)
            let stDir = staging.appendingPathComponent("storage_export")
            try fm.createDirectory(at: stDir.appendingPathComponent("blobs"), withIntermediateDirectories: true)
            try fm.createDirectory(at: stDir.appendingPathComponent("metadata"), withIntermediateDirectories: true)
            try write(
                JSON.object([("buckets", .array(buckets.map { JSON.object([("id", .string($0))]) }))]),
                to: stDir.appendingPathComponent("buckets.json"))
            for (i, object) in objects.enumerated() {
                let rel = EmulatorExport.storagePath(bucket: object.bucket, name: object.name)
                let blob = stDir.appendingPathComponent("blobs").appendingPathComponent(rel)
                let meta = stDir.appendingPathComponent("metadata").appendingPathComponent(rel + ".json")
                try fm.createDirectory(at: blob.deletingLastPathComponent(), withIntermediateDirectories: true)
                try fm.createDirectory(at: meta.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(try await objectStore.bytes(object)).write(to: blob)
                try write(EmulatorExport.storageMetadataJSON(object), to: meta)
                if (i + 1) % 100 == 0 { progress("storage: \(i + 1) of \(objects.count) objects") }
            }
            paths[.storage] = "storage_export"
            summary.objects = objects.count
            progress("storage: \(objects.count) objects in \(buckets.count) buckets")

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

    /// Reads and checks the whole export first (Firestore's documents as they stream into a
    /// new document store file, invisible until the end), refuses a data directory that
    /// already holds data, then writes; a failure while writing removes what was written, so
    /// the directory is as it was.
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

        // 1. Read and check everything but Firestore's documents (streamed in step 4).
        var accounts: [(Account, EmulatorExport.ImportedPassword?)] = []
        var authSettings = AuthProjectSettings()
        if let path = metadata.paths[.auth], wanted.contains(.auth) {
            let dir = source.appendingPathComponent(path)
            if let bytes = fm.contents(atPath: dir.appendingPathComponent("accounts.json").path) {
                accounts = try EmulatorExport.accounts(Array(bytes))
            } else if fm.fileExists(atPath: dir.path) == false {
                throw EmulatorExport.Failure("the metadata names \(path)/ but the export has no such folder")
            }
            if let bytes = fm.contents(atPath: dir.appendingPathComponent("config.json").path) {
                authSettings = try EmulatorExport.authConfig(Array(bytes))
            }
            // The Auth emulator writes each tenant's accounts to accounts-<tenantId>.json; Hearth has no tenants.
            for name in ((try? fm.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() {
                guard let tenant = EmulatorExport.tenant(ofAccountsFile: name) else { continue }
                guard let bytes = fm.contents(atPath: dir.appendingPathComponent(name).path) else {
                    throw EmulatorExport.Failure("cannot read \(path)/\(name)")
                }
                let count: Int
                do { count = try EmulatorExport.accounts(Array(bytes)).count } catch {
                    throw EmulatorExport.Failure("\(path)/\(name): \(error.description)")
                }
                guard count == 0 else {
                    throw EmulatorExport.Failure(
                        "\(path)/\(name) holds \(count) account(s) of tenant \(tenant); Hearth has no tenants (Identity Platform multi-tenancy), so they cannot be imported")
                }
                progress("auth: tenant \(tenant) has no accounts; skipped")
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
        var firestoreOutputs: [URL] = []
        if let path = metadata.paths[.firestore], wanted.contains(.firestore) {
            firestoreOutputs = try firestoreOutputFiles(source.appendingPathComponent(path), named: metadata.firestoreMetadataFile)
        }
        var objects: [(EmulatorExport.ImportedObject, URL)] = []
        var bucketIDs: [String] = []
        if let path = metadata.paths[.storage], wanted.contains(.storage) {
            (bucketIDs, objects) = try readStorage(source.appendingPathComponent(path), folder: path)
            progress("storage: read \(objects.count) objects")
        }

        // 2. The target must be empty.
        let auth = try openAuthStore()
        let database = try openDatabaseStore()
        let existingAccounts = try await auth.accounts(after: nil, limit: 1).count
        let existingNamespaces = try await database.namespaces()
        let objectStore = try ObjectStore.open(directory: dataDirectory)
        let existingObjects = try await allObjects(objectStore).objects.count
        guard existingObjects == 0 else {
            throw EmulatorExport.Failure("\(dataDirectory.path) already holds Storage objects; import into a new or empty data directory")
        }
        if let db = try SQLiteDocumentBulkLoad.firstDatabaseWithDocuments(path: documentStorePath) {
            throw EmulatorExport.Failure(
                "\(dataDirectory.path) already holds Firestore documents (database \(db)); import into a new or empty data directory")
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

        let settings = authSettings
        let previousSettings = try await auth.projectSettings()

        // 4. Firestore's documents: streamed from the export, checked, and loaded into a new
        // store file that replaces the (empty) store's last, once everything else is written.
        var summary = Summary()
        var bulk: SQLiteDocumentBulkLoad?
        var engineDocuments: [FirestoreExportFormat.Entity] = []
        if !firestoreOutputs.isEmpty {
            switch firestoreImport {
            case .bulk:
                try fm.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
                let load = try bulkFailure { try SQLiteDocumentBulkLoad(path: documentStorePath) }
                var databases = Set<String>()
                summary.documents = try bulkFailure {
                    try load.load { writer in
                        try forEachFirestoreEntity(firestoreOutputs) { entity in
                            try writer.add(database: entity.database, path: ResourcePath(entity.path), fields: entity.fields)
                            databases.insert(entity.database)
                            if writer.count % 100_000 == 0 { progress("firestore: loaded \(writer.count) documents") }
                        }
                    }
                }
                summary.databases = databases.sorted()
                progress("firestore: loaded \(summary.documents) documents")
                bulk = load
            case .engine:
                var seen = Set<[String]>()
                try forEachFirestoreEntity(firestoreOutputs) { entity in
                    guard seen.insert([entity.database] + entity.path).inserted else {
                        throw EmulatorExport.Failure("firestore: document \(entity.path.joined(separator: "/")) appears twice")
                    }
                    engineDocuments.append(entity)
                }
                progress("firestore: read \(engineDocuments.count) documents")
            }
        }

        // 5. Write; undo on failure.
        var written: [String] = []
        var writtenDocuments: [(String, ResourcePath)] = []
        var writtenObjects: [(String, String)] = []
        do {
            let toSave = ready
            var changes = AuthChangeSet(expectations: [.noAccounts], mutations: toSave.map { .saveAccount($0) })
            if settings.emailEnumerationProtection != nil { changes.mutations.append(.saveProjectSettings(settings)) }
            do {
                try await auth.apply(changes)
            } catch AuthStoreConflict.changed(.noAccounts) {
                throw EmulatorExport.Failure("auth accounts appeared while importing; is a server running on this data directory?")
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
            if !engineDocuments.isEmpty {
                let engine = try await DocumentEngine(store: try openDocumentStore())
                var done = 0
                for (db, entities) in Dictionary(grouping: engineDocuments, by: \.database).sorted(by: { $0.key < $1.key }) {
                    let name = DatabaseName(project: project, database: db)
                    for start in stride(from: 0, to: entities.count, by: 500) {
                        let batch = entities[start..<min(start + 500, entities.count)]
                        let writes = batch.map { Write(path: ResourcePath($0.path), kind: .update(fields: $0.fields, mask: nil)) }
                        do {
                            _ = try await engine.commit(name, writes)
                        } catch {
                            throw EmulatorExport.Failure("firestore: \(error)")
                        }
                        writtenDocuments += batch.map { (db, ResourcePath($0.path)) }
                        done += batch.count
                        progress("firestore: imported \(done) of \(engineDocuments.count) documents")
                    }
                    summary.databases.append(db)
                }
                summary.documents = engineDocuments.count
            }
            for bucket in bucketIDs { _ = try await objectStore.createBucket(bucket, ifMissing: true) }
            for (i, (object, blob)) in objects.enumerated() {
                guard let data = fm.contents(atPath: blob.path) else { throw EmulatorExport.Failure("cannot read \(blob.path)") }
                _ = try await objectStore.createBucket(object.bucket, ifMissing: true)
                let stored = try await objectStore.put(object.bucket, object.name, Array(data), attributes: object.attributes)
                writtenObjects.append((object.bucket, object.name))
                if let size = object.size, size != stored.size {
                    throw EmulatorExport.Failure("storage: \(object.bucket)/\(object.name) has \(stored.size) bytes, its metadata says \(size)")
                }
                if let md5 = object.md5Base64, md5 != stored.md5Base64 {
                    throw EmulatorExport.Failure("storage: the bytes of \(object.bucket)/\(object.name) do not match its md5Hash")
                }
                if (i + 1) % 100 == 0 { progress("storage: imported \(i + 1) of \(objects.count) objects") }
            }
            summary.objects = objects.count
            if let bulk {
                try bulkFailure { try bulk.install() }
                progress("firestore: imported \(summary.documents) documents")
            }
        } catch {
            bulk?.discard()
            for (bucket, name) in writtenObjects { try? await objectStore.delete(bucket, name) }
            if !writtenDocuments.isEmpty, let engine = try? await DocumentEngine(store: try openDocumentStore()) {
                for (db, paths) in Dictionary(grouping: writtenDocuments, by: \.0) {
                    let name = DatabaseName(project: project, database: db)
                    for start in stride(from: 0, to: paths.count, by: 500) {
                        let batch = paths[start..<min(start + 500, paths.count)]
                        _ = try? await engine.commit(name, batch.map { Write(path: $0.1, kind: .delete) })
                    }
                }
            }
            try? await auth.apply(AuthChangeSet(mutations: [.deleteAllAccounts, .saveProjectSettings(previousSettings)]))
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

    /// The bulk loader's failures as the import's.
    func bulkFailure<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as SQLiteDocumentBulkLoad.Failure {
            switch failure {
            case .storeNotEmpty(let db):
                throw EmulatorExport.Failure(
                    "\(dataDirectory.path) already holds Firestore documents (database \(db)); import into a new or empty data directory")
            default:
                throw EmulatorExport.Failure("firestore: \(failure)")
            }
        }
    }
}

extension EmulatorExportRunner {
    /// The output files of a `firestore_export` folder: the overall metadata names the kinds
    /// metadata, which lists them.
    package func firestoreOutputFiles(_ dir: URL, named metadataFile: String?) throws -> [URL] {
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
            let outputs = try FirestoreExportFormat.outputFiles(fromKinds: try read(kindsURL)).map {
                kindsURL.deletingLastPathComponent().appendingPathComponent($0)
            }
            for url in outputs where !fm.isReadableFile(atPath: url.path) {
                throw EmulatorExport.Failure("cannot read \(url.path)")
            }
            return outputs
        } catch let e as FirestoreExportFormat.Failure {
            throw EmulatorExport.Failure("firestore export: \(e.description)")
        }
    }

    /// Every document of the output files, in order, read a megabyte at a time (records and
    /// their checksums checked, every path a document path).
    package func forEachFirestoreEntity(_ outputs: [URL], _ visit: (FirestoreExportFormat.Entity) throws -> Void) throws {
        for url in outputs {
            guard let handle = FileHandle(forReadingAtPath: url.path) else { throw EmulatorExport.Failure("cannot read \(url.path)") }
            defer { try? handle.close() }
            var reader = FirestoreExportFormat.LogReader()
            let piece = 32 * 32768
            do {
                while true {
                    let data = try handle.read(upToCount: piece) ?? Data()
                    let bytes = [UInt8](data)
                    try reader.read(bytes[...], last: bytes.count < piece) { record in
                        let entity = try FirestoreExportFormat.entity(record)
                        guard entity.path.count % 2 == 0 else {
                            throw EmulatorExport.Failure("firestore: document \(entity.path.joined(separator: "/")) is not a valid document path")
                        }
                        try visit(entity)
                    }
                    if bytes.count < piece { break }
                }
            } catch let e as FirestoreExportFormat.Failure {
                throw EmulatorExport.Failure("firestore export: \(e.description)")
            }
        }
    }
}

extension EmulatorExportRunner {
    /// The buckets and objects of a `storage_export` folder: every `metadata/….json` with its
    /// blob, checked before anything is written.
    func readStorage(_ dir: URL, folder: String) throws -> ([String], [(EmulatorExport.ImportedObject, URL)]) {
        let fm = FileManager.default
        guard let bucketsData = fm.contents(atPath: dir.appendingPathComponent("buckets.json").path) else {
            throw EmulatorExport.Failure("\(folder)/buckets.json is missing")
        }
        let bucketsJSON: JSON
        do { bucketsJSON = try JSON.parse(Array(bucketsData)) } catch { throw EmulatorExport.Failure("\(folder)/buckets.json is not JSON: \(error.message)") }
        guard let list = bucketsJSON["buckets"]?.arrayValue else { throw EmulatorExport.Failure("\(folder)/buckets.json has no \"buckets\" list") }
        let buckets = try list.map { b in
            guard let id = b["id"]?.stringValue, !id.isEmpty else { throw EmulatorExport.Failure("\(folder)/buckets.json: a bucket has no id") }
            return id
        }
        let metadataDir = dir.appendingPathComponent("metadata").standardizedFileURL
        let blobsDir = dir.appendingPathComponent("blobs")
        var out: [(EmulatorExport.ImportedObject, URL)] = []
        guard let walker = fm.enumerator(at: metadataDir, includingPropertiesForKeys: [.isRegularFileKey]) else { return (buckets, []) }
        var seen = Set<String>()
        for case let url as URL in walker {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true, url.pathExtension == "json" else { continue }
            let full = url.standardizedFileURL.path
            guard full.hasPrefix(metadataDir.path + "/") else { continue }
            let rel = String(full.dropFirst(metadataDir.path.count + 1).dropLast(".json".count))
            guard let data = fm.contents(atPath: url.path) else { throw EmulatorExport.Failure("cannot read \(url.path)") }
            let object = try EmulatorExport.storageObject(Array(data), file: "\(folder)/metadata/\(rel).json")
            let blob = blobsDir.appendingPathComponent(rel)
            guard fm.fileExists(atPath: blob.path) else {
                throw EmulatorExport.Failure("\(folder)/blobs/\(rel) is missing (the bytes of \(object.bucket)/\(object.name))")
            }
            guard seen.insert(object.bucket + "/" + object.name).inserted else {
                throw EmulatorExport.Failure("\(folder): \(object.bucket)/\(object.name) appears twice")
            }
            out.append((object, blob))
        }
        return (buckets, out.sorted { ($0.0.bucket, $0.0.name) < ($1.0.bucket, $1.0.name) })
    }
}
