import HearthCore
import HearthDocuments
import HearthFirestoreProto
import Crypto
import Foundation

/// `Listen` (bidirectional): realtime listeners. The engine's Listen driver does the work
/// (docs/realtime.md); this file translates `ListenRequest`s into commands, the engine's
/// outputs into `ListenResponse`s, and judges every target read with the security rules.
///
/// The first request must name the database; later requests may repeat it but not change
/// it. Malformed requests, duplicate or unknown target ids and resume tokens Hearth did not
/// issue end the stream with INVALID_ARGUMENT; an invalid or refused target is removed with
/// its cause and the stream goes on.
extension FirestoreGRPCService {
    func listen(_ call: GRPCCall, _ requests: inout GRPCMessageReader, _ sender: GRPCMessageSender) async throws {
        guard let first = try await requests.next(Google_Firestore_V1_ListenRequest.self) else { return }
        guard !first.database.isEmpty else {
            throw HearthError.invalidArgument("The first message of a listen stream must name the database.")
        }
        let db = try Self.database(first.database, "database")
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        let firstCommand = try Self.listenCommand(first, db, p)
        let security = self.security
        let judge: @Sendable (ListenTargetSpec, [Document]) async throws -> Void = { spec, documents in
            switch spec {
            case .query(let q):
                try await security.checkQuery(identity, db, q)
            case .documents(let paths):
                var found: [ResourcePath: Document] = [:]
                for d in documents { found[d.path] = d }
                let reads: [(ResourcePath, Document?)] = paths.map { ($0, found[$0]) }
                try await security.checkGets(identity, db, reads)
            }
        }
        let authorize = identity.isAdmin ? nil : judge
        // The request stream is read here, into an AsyncStream the engine consumes: when the
        // engine ends the stream (an error), its own tasks stop at once, the status is written,
        // and only then is the read of the client's request stream torn down.
        let (commands, input) = AsyncThrowingStream.makeStream(of: ListenCommand.self)
        input.yield(firstCommand)
        let box = ReaderBox(requests)
        let engine = self.engine
        let database = first.database
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    while let r = try await box.reader.next(Google_Firestore_V1_ListenRequest.self) {
                        if !r.database.isEmpty && r.database != database {
                            throw HearthError.invalidArgument("A listen stream's requests must all name the same database.")
                        }
                        input.yield(try Self.listenCommand(r, db, p))
                    }
                    input.finish()
                } catch let status as GRPCStatus {
                    input.finish(throwing: HearthError(status.code, status.message))
                } catch {
                    input.finish(throwing: error)
                }
            }
            let failure: GRPCStatus
            do {
                try await engine.listen(database: db, commands: commands, authorize: authorize) { outputs in
                    for o in outputs { try await sender.sendPaced(Self.listenResponse(o, p)) }
                }
                return
            } catch let e as HearthError {
                failure = GRPCStatus(e)
            } catch is CancellationError {
                return
            } catch {
                logger.error("listen stream failed", metadata: ["error": "\(error)"])
                failure = GRPCStatus(.internal, "Internal error.")
            }
            // Status first; then give the client a moment to close its side (it does on seeing
            // the status) before the read of its request stream is torn down.
            await sender.finish(failure)
            group.addTask { try? await Task.sleep(for: .seconds(10)) }
            _ = try? await group.next()
            group.cancelAll()
        }
    }

    /// One `ListenRequest` as an engine command.
    static func listenCommand(_ r: Google_Firestore_V1_ListenRequest, _ db: DatabaseName, _ p: FirestoreProto) throws(HearthError) -> ListenCommand {
        switch r.targetChange {
        case .removeTarget(let id)?:
            return .remove(id)
        case .addTarget(let t)?:
            let spec: ListenTargetSpec
            switch t.targetType {
            case .documents(let d)?:
                var paths: [ResourcePath] = []
                for (i, name) in d.documents.enumerated() {
                    let (docDB, path) = try document(name, "add_target.documents.documents[\(i)]")
                    guard docDB == db else {
                        throw .invalidArgument("Document \"\(name)\" is not in the stream's database \"\(db.text)\".")
                    }
                    paths.append(path)
                }
                spec = .documents(paths)
            case .query(let q)?:
                let (queryDB, parent) = try queryParent(q.parent)
                guard queryDB == db else {
                    throw .invalidArgument("Query parent \"\(q.parent)\" is not in the stream's database \"\(db.text)\".")
                }
                guard case .structuredQuery(let sq)? = q.queryType else {
                    throw .invalidArgument("A query target needs a structured_query.")
                }
                spec = .query(try p.query(sq, parent: parent, "add_target.query.structured_query"))
            case nil:
                throw .invalidArgument("A target needs a query or documents.")
            }
            var resumeAfter: Timestamp?
            switch t.resumeType {
            case .resumeToken(let token)?: resumeAfter = try ListenResumeToken.decode([UInt8](token))
            case .readTime(let time)?: resumeAfter = try FirestoreProto.timestamp(time, "add_target.read_time")
            case nil: break
            }
            return .add(ListenTarget(
                id: t.targetID, spec: spec, resumeAfter: resumeAfter, once: t.once,
                expectedCount: t.hasExpectedCount ? t.expectedCount.value : nil))
        case nil:
            throw .invalidArgument("A listen request must add or remove a target.")
        }
    }

    static func listenResponse(_ o: ListenOutput, _ p: FirestoreProto) -> Google_Firestore_V1_ListenResponse {
        var r = Google_Firestore_V1_ListenResponse()
        switch o {
        case .targetChange(let kind, let ids, let cause, let token, let readTime):
            var c = Google_Firestore_V1_TargetChange()
            c.targetChangeType = Google_Firestore_V1_TargetChange.TargetChangeType(rawValue: kind.rawValue) ?? .noChange
            c.targetIds = ids
            if let cause { c.cause = FirestoreProto.status(HearthError(cause.code, cause.message)) }
            if let token { c.resumeToken = Data(ListenResumeToken.encode(token)) }
            if let readTime { c.readTime = FirestoreProto.timestamp(readTime) }
            r.targetChange = c
        case .document(let doc, let ids, let removed):
            var c = Google_Firestore_V1_DocumentChange()
            c.document = p.proto(doc)
            c.targetIds = ids
            c.removedTargetIds = removed
            r.documentChange = c
        case .documentDelete(let path, let removed, let readTime):
            var d = Google_Firestore_V1_DocumentDelete()
            d.document = p.database.name(of: path)
            d.removedTargetIds = removed
            d.readTime = FirestoreProto.timestamp(readTime)
            r.documentDelete = d
        case .documentRemove(let path, let removed, let readTime):
            var d = Google_Firestore_V1_DocumentRemove()
            d.document = p.database.name(of: path)
            d.removedTargetIds = removed
            d.readTime = FirestoreProto.timestamp(readTime)
            r.documentRemove = d
        case .existenceFilter(let id, let count, let names):
            var f = Google_Firestore_V1_ExistenceFilter()
            f.targetID = id
            f.count = count
            if let names { f.unchangedNames = bloomFilter(names.map { p.database.name(of: $0) }) }
            r.filter = f
        }
        return r
    }

    /// The bloom filter of an existence filter, as the Firebase SDKs test it: for each name,
    /// the MD5 digest's first and second 8 bytes (little-endian) are h1 and h2; the i-th of
    /// `hash_count` bits is `(h1 + i·h2) mod bitCount`, least significant bit first in each byte.
    /// Sized for a 1% false-positive rate.
    static func bloomFilter(_ names: [String]) -> Google_Firestore_V1_BloomFilter {
        var filter = Google_Firestore_V1_BloomFilter()
        guard !names.isEmpty else { return filter }
        let n = Double(names.count)
        let bitCount = max(8, Int((-n * log(0.01) / (log(2.0) * log(2.0))).rounded(.up)))
        let byteCount = (bitCount + 7) / 8
        let hashCount = max(1, Int((Double(bitCount) / n * log(2.0)).rounded()))
        var bitmap = [UInt8](repeating: 0, count: byteCount)
        for name in names {
            let digest = Array(Insecure.MD5.hash(data: Array(name.utf8)))
            var h1: UInt64 = 0, h2: UInt64 = 0
            for i in (0..<8).reversed() {
                h1 = h1 << 8 | UInt64(digest[i])
                h2 = h2 << 8 | UInt64(digest[8 + i])
            }
            for i in 0..<UInt64(hashCount) {
                let bit = Int((h1 &+ i &* h2) % UInt64(bitCount))
                bitmap[bit / 8] |= 1 << UInt8(bit % 8)
            }
        }
        filter.bits.bitmap = Data(bitmap)
        filter.bits.padding = Int32(byteCount * 8 - bitCount)
        filter.hashCount = Int32(hashCount)
        return filter
    }
}

/// The request side of a Listen call, read by exactly one task (the engine's reader).
final class ReaderBox: @unchecked Sendable {
    var reader: GRPCMessageReader

    init(_ reader: GRPCMessageReader) {
        self.reader = reader
    }
}
