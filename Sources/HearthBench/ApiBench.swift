import Foundation
import HearthCore
import HearthDocuments
import HearthFiles
import HearthServer
import HearthStorage
import Logging
import NIOCore
import NIOHTTP1

/// `hearth bench --phases api,lifecycle` (issue 15's targets):
/// - `api`: presign-upload (one durable document write) and complete (a HEAD, a 512-byte read,
///   one durable write) per second through the api port, next to a same-run authenticated
///   request that writes nothing (`GET /v1/files` of a user without files);
/// - `lifecycle`: the lifecycle worker's deletions per second (documents plus objects) on a
///   data set of expired bottles, each with a subcollection document and an object.
struct ApiBench {
    let load: Load
    let server: HearthServer
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 0, count: 56)

    func progress(_ text: String) { FileHandle.standardError.write(Data("  \(text)\n".utf8)) }

    func runAPI(port: Int) async throws {
        let base = "http://127.0.0.1:\(port)"
        let uid = "bench-api"
        let user = load.with(authorization: "Bearer " + Bench.unsignedToken(uid: uid))
        let nobody = load.with(authorization: "Bearer " + Bench.unsignedToken(uid: "bench-api-empty"))
        print(try await nobody.run("baseline: api port, authenticated GET /v1/files, empty page (no write)") { _ in
            (HTTPMethod.GET, "\(base)/v1/files?pageSize=1", nil)
        })
        let body = ByteBuffer(string: #"{"contentType":"image/png","fileExtension":"png"}"#)
        print(try await user.run("api: presign-upload (one durable write)") { _ in (HTTPMethod.POST, "\(base)/v1/files/presign-upload", body) })

        // The same run's ceiling for presign-upload: its durable write alone (the same record,
        // created through the engine in process: no HTTP, no token, no signing), then the
        // registry's whole presignUpload in process (write + key + signing, no HTTP).
        let database = DatabaseName(project: server.configuration.project, database: "(default)")
        let engine = server.engine
        print(
            try await GRDBBaseline.measure("ceiling: the record's durable write alone (in process)", clients: load.clients, duration: load.duration) { _ in
                var write = Write.create(
                    FileRecord.path(ULID.make(now: FileRegistry.systemNow()).text),
                    [
                        "ownerUid": .string("bench-ceiling"), "bucket": .string("b"), "key": .string("users/bench-ceiling/uploads/x.png"),
                        "contentType": .string("image/png"), "status": .string("pending"),
                    ])
                write.transforms = [
                    FieldTransform(field: FieldPath(["createdAt"]), operation: .serverTimestamp),
                    FieldTransform(field: FieldPath(["updatedAt"]), operation: .serverTimestamp),
                ]
                _ = try await engine.commit(database, [write])
            })
        let registry = FileRegistry(
            documents: server.engine, database: database, objects: server.objects, bucket: server.configuration.defaultBucket,
            policy: FileUploadPolicy(),
            presigner: { S3Presigner(endpoint: URL(string: "http://127.0.0.1:1")!, region: "us-east-1", accessKeyID: "bench", secretAccessKey: "bench") },
            logger: Logger(label: "bench"))
        print(
            try await GRDBBaseline.measure("in process: FileRegistry.presignUpload (no HTTP)", clients: load.clients, duration: load.duration) { _ in
                _ = try await registry.presignUpload(owner: "bench-ceiling", contentType: "image/png", fileExtension: "png", declaredSize: nil)
            })

        // Record more pending files through the registry itself (the presign phase above made only
        // a few seconds' worth), upload an object for each, then complete each once: the complete
        // phase runs at most 3 s so that it never repeats a file.
        progress("recording 6000 more pending files…")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<6000 {
                if index >= 32 { try await group.next() }
                group.addTask { _ = try await registry.presignUpload(owner: uid, contentType: "image/png", fileExtension: "png", declaredSize: nil) }
            }
            try await group.waitForAll()
        }
        let pending = try await server.engine.runQuery(
            database, Query(collectionId: FileRecord.collection, filter: .field(FieldPath(["ownerUid"]), .equal, .string(uid))))
            .documents.compactMap(FileRecord.init)
        progress("uploading \(pending.count) objects for the complete phase…")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, record) in pending.enumerated() {
                if index >= 16 { try await group.next() }
                group.addTask {
                    var attributes = ObjectAttributes()
                    attributes.contentType = "image/png"
                    _ = try await server.objects.put(record.bucket, record.key, Self.png, attributes: attributes)
                }
            }
            try await group.waitForAll()
        }
        let ids = pending.map(\.fileId)
        let short = Load(client: load.client, clients: load.clients, duration: min(load.duration, 3)).with(authorization: user.authorization)
        let measured = try await short.run("api: complete (HEAD, content check, one durable write)") { i in
            (HTTPMethod.POST, "\(base)/v1/files/\(ids[abs(i) % ids.count])/complete", nil)
        }
        print(measured)
        if measured.operations + 8 > ids.count {
            progress("note: \(measured.operations) completes for \(ids.count) files — some were repeats (answered without a write)")
        }
    }

    func runLifecycle(bottles: Int) async throws {
        let database = DatabaseName(project: server.configuration.project, database: "(default)")
        let bucket = server.configuration.defaultBucket

        // Same-run baseline: the same data set deleted the way the worker did before batching
        // objects — one `ObjectStore.delete` transaction per object (16 in flight), documents in
        // commits of 500.
        try await prepareBottles(bottles, collection: "basebottles")
        var start = ContinuousClock.now
        var names: [String] = []
        var after: String?
        repeat {
            let page = try await server.objects.list(bucket, .init(prefix: "basebottles/", after: after, maxResults: 1000))
            names += page.objects.map(\.name)
            after = page.next
        } while after != nil
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, name) in names.enumerated() {
                if index >= 16 { try await group.next() }
                group.addTask { try await server.objects.delete(bucket, name) }
            }
            try await group.waitForAll()
        }
        var paths: [ResourcePath] = []
        for index in 0..<bottles {
            let id = String(format: "b%06d", index)
            paths += [ResourcePath(["basebottles", id, "chat", "m1"]), ResourcePath(["basebottles", id])]
        }
        for chunk in stride(from: 0, to: paths.count, by: 500) {
            _ = try await server.engine.commit(database, paths[chunk..<min(paths.count, chunk + 500)].map { Write.delete($0) })
        }
        let baseline = Self.seconds(ContinuousClock.now - start)
        print(
            "baseline: one transaction per object, documents in commits of 500: \(Int((Double(names.count + paths.count) / baseline).rounded())) deletions/s (\(paths.count) documents + \(names.count) objects in \(String(format: "%.2f", baseline)) s)"
        )

        try await prepareBottles(bottles, collection: "lifebottles")
        let rules = try LifecycleRules.parse(
            JSON.parse(
                #"{"batchSize": 500, "rules": [{"cascade": "lifebottles/{id}", "when": [{"field": "expiresAt", "op": "<", "value": "now"}], "storagePrefixes": ["lifebottles/{id}/"]}]}"#
            ), source: "bench")
        let worker = LifecycleWorker(
            rules: rules, documents: server.engine, database: database, objects: server.objects, bucket: bucket, logger: Logger(label: "bench"))
        start = ContinuousClock.now
        var total = LifecycleWorker.Counts()
        while true {
            let counts = try await worker.pass(dryRun: false)
            if counts.total == 0 { break }
            total.documents += counts.documents
            total.objects += counts.objects
        }
        let seconds = Self.seconds(ContinuousClock.now - start)
        let rate = Int((Double(total.total) / seconds).rounded())
        print("lifecycle: cascade deletes, one worker: \(rate) deletions/s (\(total.documents) documents + \(total.objects) objects in \(String(format: "%.2f", seconds)) s)")
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    /// `bottles` expired bottles under `collection`, each with a chat message and an object.
    func prepareBottles(_ bottles: Int, collection: String) async throws {
        let database = DatabaseName(project: server.configuration.project, database: "(default)")
        let bucket = server.configuration.defaultBucket
        progress("preparing \(bottles) expired bottles in \(collection) with a chat message and an object each…")
        var writes: [Write] = []
        for index in 0..<bottles {
            let id = String(format: "b%06d", index)
            writes.append(.set(ResourcePath([collection, id]), ["expiresAt": .timestamp(Timestamp(seconds: 1_600_000_000, nanos: 0))]))
            writes.append(.set(ResourcePath([collection, id, "chat", "m1"]), ["text": .string("hi")]))
            if writes.count >= 500 {
                _ = try await server.engine.commit(database, writes)
                writes.removeAll()
            }
        }
        if !writes.isEmpty { _ = try await server.engine.commit(database, writes) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<bottles {
                if index >= 16 { try await group.next() }
                group.addTask { _ = try await server.objects.put(bucket, String(format: "\(collection)/b%06d/content/image.jpg", index), [0xFF, 0xD8, 0xFF]) }
            }
            try await group.waitForAll()
        }
    }
}
