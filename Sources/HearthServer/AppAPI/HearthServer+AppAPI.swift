import HearthCore
import HearthAppCheck
import HearthAuth
import HearthDocuments
import HearthFiles
import HearthStorage
import Hummingbird
import Logging
import ServiceLifecycle
import Foundation

extension HearthServer {
    /// The api port's listener and the service that expires unfinished uploads.
    func appAPIServices(authenticator: Authenticator, appCheck: AppCheckEngine, ready: ReadyFile) async throws -> [any Service] {
        let api = configuration.api
        let bucket: String
        let credentials: (id: String, secret: String)
        let publicURL: URL?
        let fileObjects: any FileObjects
        if let external = api.externalS3 {
            // Objects in an external S3 bucket: URLs presigned for it, objects checked there.
            guard let id = api.s3AccessKeyID, let secret = api.s3SecretAccessKey else {
                throw HearthError(
                    .failedPrecondition, "externalS3 needs HEARTH_API_S3_ACCESS_KEY_ID and HEARTH_API_S3_SECRET_ACCESS_KEY in the environment.")
            }
            bucket = external.bucket
            credentials = (id, secret)
            publicURL = external.endpoint
            let spool = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("api-s3-spool")
            fileObjects = ExternalS3FileObjects(
                client: try S3BlobStore(
                    configuration: .init(endpoint: external.endpoint, region: api.s3Region, bucket: external.bucket, accessKeyID: id, secretAccessKey: secret),
                    spool: spool))
        } else {
            bucket = api.bucket ?? configuration.defaultBucket
            try await objects.createBucket(bucket, ifMissing: true)
            credentials = try await presignCredentials(bucket: bucket)
            publicURL = api.s3PublicURL
            fileObjects = objects
        }
        let host = configuration.listensOnEveryAddress ? "127.0.0.1" : configuration.host
        let scheme = configuration.scheme
        let region = api.s3Region
        let registry = FileRegistry(
            documents: engine, database: DatabaseName(project: configuration.project, database: "(default)"), objects: fileObjects,
            bucket: bucket, policy: api.policy,
            presigner: { [ready] in
                let endpoint: URL
                if let publicURL {
                    endpoint = publicURL
                } else {
                    guard let port = ready.port("s3"), let url = URL(string: "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)") else {
                        throw HearthError(.unavailable, "The S3 port is not listening yet.")
                    }
                    endpoint = url
                }
                return S3Presigner(endpoint: endpoint, region: region, accessKeyID: credentials.id, secretAccessKey: credentials.secret)
            },
            logger: logger)
        try await registry.declareIndexes()
        let gate = AppCheckGate(service: "api", mode: api.appCheckEnforcement["api"] ?? .off, engine: appCheck, logger: logger)
        var lifecycle: [any Service] = []
        var lifecycleMetrics: LifecycleMetrics?
        if let rules = configuration.lifecycle {
            let auth = auth
            let worker = LifecycleWorker(
                rules: rules, documents: engine, database: registry.database, objects: objects, bucket: configuration.defaultBucket,
                existingAccounts: { uids in Set(try await auth.lookup(uids: uids).map(\.uid)) },
                realtime: DatabaseLifecycleAdapter(engine: database, project: configuration.project), logger: logger)
            lifecycle.append(LifecycleService(worker: worker, accountDeletions: auth.accountDeletions.subscribe(), jobs: jobs))
            lifecycleMetrics = worker.metrics
        }
        return lifecycle + [
            listener(
                "api",
                AppAPIResponder(
                    registry: registry, authenticator: authenticator, appCheck: appCheck, appCheckGate: gate, lifecycleMetrics: lifecycleMetrics,
                    readiness: readinessProbe(ready), logger: logger, maxBody: configuration.limits.requestBytes(.api)),
                ready),
            PendingUploadSweeper(registry: registry, interval: .seconds(api.sweepIntervalSeconds), jobs: jobs),
        ]
    }

    /// `/readyz`: every expected listener bound, then each of the composition root's checks
    /// (``ReadinessCheck``: for SQLite, a small file written, synced and removed in the data
    /// directory, then each store's write lock taken and released).
    func readinessProbe(_ ready: ReadyFile) -> @Sendable () async throws -> Void {
        let checks = readiness
        return {
            let missing = ready.missing
            if !missing.isEmpty { throw HearthError(.unavailable, "Not listening yet: \(missing.joined(separator: ", ")).") }
            for readiness in checks { try await readiness.check() }
        }
    }

    /// App Check for the other services' transports, by configuration (`firestore`, `storage`,
    /// `auth`, `database`).
    func appCheckGates(_ engine: AppCheckEngine) -> [String: AppCheckGate] {
        var gates: [String: AppCheckGate] = [:]
        for service in ["firestore", "storage", "auth", "database"] {
            if let mode = configuration.api.appCheckEnforcement[service], mode != .off {
                gates[service] = AppCheckGate(service: service, mode: mode, engine: engine, logger: logger)
            }
        }
        return gates
    }

    /// The S3 key presigned URLs are signed with: from the environment, else the server's own
    /// key for the registry (created once, limited to its bucket).
    func presignCredentials(bucket: String) async throws -> (id: String, secret: String) {
        let api = configuration.api
        if let id = api.s3AccessKeyID, let secret = api.s3SecretAccessKey { return (id, secret) }
        let note = "hearth api file registry (\(bucket))"
        if let key = try await objects.accessKeys().first(where: { $0.note == note && !$0.revoked }) { return (key.id, key.secret) }
        let key = try await objects.createAccessKey(buckets: [bucket], note: note)
        logger.notice("created the api port's S3 key for presigned URLs", metadata: ["id": "\(key.id)", "bucket": "\(bucket)"])
        return (key.id, key.secret)
    }
}
