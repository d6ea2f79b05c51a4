import HearthCore
public import HearthDocuments
public import HearthRules
public import HearthStorage
public import Logging
import Foundation

/// Storage security rules on object requests: admins bypass them; without rules,
/// production denies every client and emulator mode allows every client. Any upload is
/// `create`, a metadata change `update`, a download or metadata read `get`, a listing `list`
/// (which needs `rules_version = '2'`).
///
/// Rules may read Firestore documents with `firestore.get()` and `firestore.exists()`
/// (cross-service rules): the lookups read the live document engine, inside one storage
/// snapshot per evaluation, against the Storage budget of ``DocumentAccessLedger/storage``.
public struct StorageSecurity: Sendable {
    public let rules: RulesStore
    public let emulator: Bool
    /// The document engine `firestore.get()`/`exists()` read (nil: such rules fail, and deny).
    let documents: DocumentEngine?
    let logger: Logger

    public init(rules: RulesStore, emulator: Bool, documents: DocumentEngine?, logger: Logger) {
        self.rules = rules
        self.emulator = emulator
        self.documents = documents
        self.logger = logger
    }

    static func rulesObject(_ o: StorageObject) -> RulesStorageObject {
        RulesStorageObject(
            name: o.name, bucket: o.bucket, size: o.size, contentType: o.contentType, metadata: o.custom, md5Hash: o.md5Base64,
            crc32c: o.crc32cBase64, etag: o.etag, generation: o.generation, metageneration: o.metageneration,
            timeCreated: o.created, updated: o.updated, contentDisposition: o.contentDisposition,
            contentEncoding: o.contentEncoding, contentLanguage: o.contentLanguage, cacheControl: o.cacheControl)
    }

    /// The object a write would produce, as `request.resource` (no generation, etag or times).
    public static func incoming(bucket: String, name: String, size: Int64, attributes: ObjectAttributes) -> RulesStorageObject {
        RulesStorageObject(
            name: name, bucket: bucket, size: size, contentType: attributes.contentType, metadata: attributes.custom,
            contentDisposition: attributes.contentDisposition, contentEncoding: attributes.contentEncoding,
            contentLanguage: attributes.contentLanguage, cacheControl: attributes.cacheControl)
    }

    /// Throws 403 unless `identity` may do `method` on the object (or, for `list`, the prefix).
    public func check(
        _ identity: Identity, _ method: RulesMethod, bucket: String, name: String, existing: StorageObject?,
        incoming: RulesStorageObject? = nil, project: String
    ) async throws {
        if identity.isAdmin { return }
        try await rules.synchronize()
        guard let loaded = rules.rules(for: project) else {
            if emulator { return }
            throw denial(nil)
        }
        let target: RulesRequest.Target = method == .list ? .storagePrefix(bucket: bucket, prefix: name) : .storageObject(bucket: bucket, name: name)
        let request = RulesRequest(
            method: method, target: target, auth: identity.rulesAuth, time: Timestamp(microseconds: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down))),
            resource: existing.map { Self.rulesObject($0).rulesValue }, newResource: incoming?.rulesValue)
        let options = RulesEvaluationOptions(recordCoverage: emulator)
        let d: RulesDecision
        if loaded.usesDocuments, let documents {
            d = try await FetchingLookup().settle({ lookup in
                var ledger = DocumentAccessLedger.storage
                return loaded.ruleset.evaluate(request, documents: lookup, ledger: &ledger, options: options)
            }, fetch: { key in try await documents.latestDocuments(key.database, [key.path])[0]?.fields })
        } else {
            var ledger = DocumentAccessLedger.storage
            d = loaded.ruleset.evaluate(request, documents: nil, ledger: &ledger, options: options)
        }
        loaded.record(d.coverage)
        RulesMetrics.count("storage", d)
        if !d.isAllowed { throw denial(d) }
    }

    func denial(_ d: RulesDecision?) -> HearthError {
        let reason = d?.reason ?? "No storage rules are loaded; production mode denies every client request."
        logger.debug("storage rules denied", metadata: ["reason": "\(reason)"])
        return HearthError(.permissionDenied, "Permission denied. No READ/WRITE permission." + (emulator ? " " + reason : ""))
    }
}
