import HearthCore
import HearthDocuments
import HearthFirestoreProto
import Foundation

/// `Write` (bidirectional): the write stream the mobile SDKs use. The first request names the
/// database only; the first response carries a new `stream_id` and `stream_token`. Each later
/// request's writes commit atomically, like one Commit, and are answered with a new token, the
/// write results and the commit time. An error ends the stream with its status.
///
/// Choices where the protocol leaves room: streams are not resumable (a first request that
/// names a `stream_id` starts a new stream); a later request's `stream_token`, when set, must
/// be the last token sent; a first request carrying writes is refused (INVALID_ARGUMENT).
extension FirestoreGRPCService {
    func write(_ call: GRPCCall, _ requests: inout GRPCMessageReader, _ sender: GRPCMessageSender) async throws {
        guard let handshake = try await requests.next(Google_Firestore_V1_WriteRequest.self) else { return }
        let db = try Self.database(handshake.database, "database")
        guard handshake.writes.isEmpty else {
            throw HearthError.invalidArgument("The first request of a write stream must not contain writes.")
        }
        let identity = try await identity(call)
        let p = FirestoreProto(database: db)
        let streamID = AutoID.make()
        var token = Self.streamToken()
        var opening = Google_Firestore_V1_WriteResponse()
        opening.streamID = streamID
        opening.streamToken = token
        opening.commitTime = FirestoreProto.timestamp(engine.clock.current())
        try sender.send(opening)
        while let request = try await requests.next(Google_Firestore_V1_WriteRequest.self) {
            if !request.database.isEmpty && request.database != handshake.database {
                throw HearthError.invalidArgument("A write stream's requests must all name the same database.")
            }
            if !request.streamToken.isEmpty && request.streamToken != token {
                throw HearthError.invalidArgument("Invalid stream token: it is not the last token this stream sent.")
            }
            var response = Google_Firestore_V1_WriteResponse()
            if request.writes.isEmpty {
                response.commitTime = FirestoreProto.timestamp(engine.clock.current())
            } else {
                let writes = try Self.writes(request.writes, p)
                let authorizer = try await authorizer(identity, db, verify: FirestoreProto.verifyIndexes(request.writes))
                let result = try await engine.commit(db, writes, authorizer: authorizer)
                response.writeResults = result.writeResults.map(p.proto)
                response.commitTime = FirestoreProto.timestamp(result.commitTime)
            }
            token = Self.streamToken()
            response.streamToken = token
            try sender.send(response)
        }
    }

    /// An opaque token: 16 random bytes.
    static func streamToken() -> Data {
        var rng = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
}
