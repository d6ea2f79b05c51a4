import HearthFirestoreProto

/// `Listen` (bidirectional): the realtime listener stream. Not served yet — the change feed
/// and listen targets arrive in HearthDocuments; this file is the one place to serve it from.
extension FirestoreGRPCService {
    func listen(_ call: GRPCCall, _ requests: inout GRPCMessageReader, _ sender: GRPCMessageSender) async throws {
        throw GRPCStatus(.unimplemented, "Listen is not served yet")
    }
}
