import Foundation
import GRPCCore
import GRPCInProcessTransport
import HearthFirestoreProto
import Testing

/// The generated client and server halves talk to each other over grpc-swift-2's in-process transport, with the
/// GRPCProtobuf serialisers the generated code picks: one RPC of each streaming kind.
@Suite struct InProcessRPCTests {
    typealias Firestore = Google_Firestore_V1_Firestore

    func withProbe<R: Sendable>(
        _ body: (Firestore.Client<InProcessTransport.Client>) async throws -> R
    ) async throws -> R {
        let transport = InProcessTransport()
        return try await withGRPCServer(transport: transport.server, services: [ProbeFirestore()]) { _ in
            try await withGRPCClient(transport: transport.client) { client in
                try await body(Firestore.Client(wrapping: client))
            }
        }
    }

    @Test func unaryCommitCarriesVerifyWrites() async throws {
        var request = GoldenMessages.commitRequest()
        var verify = Google_Firestore_V1_Write()
        verify.verify = GoldenMessages.documents + "/rooms/r9"
        verify.currentDocument.exists = true
        request.writes.append(verify)
        let response = try await withProbe { try await $0.commit(request) }
        #expect(response.writeResults.count == 4)
    }

    @Test func serverStreamingRunQuery() async throws {
        let names = try await withProbe { firestore in
            try await firestore.runQuery(GoldenMessages.runQueryRequest()) { response in
                var names: [String] = []
                for try await message in response.messages {
                    names.append(message.document.name)
                }
                return names
            }
        }
        #expect(names == [GoldenMessages.documents + "/rooms/r1/messages"])
    }

    @Test func bidirectionalListen() async throws {
        let changes = try await withProbe { firestore in
            try await firestore.listen { writer in
                var add = GoldenMessages.listenRequest()
                try await writer.write(add)
                add.addTarget.targetID = 7
                try await writer.write(add)
                var remove = Google_Firestore_V1_ListenRequest()
                remove.removeTarget = 20601
                try await writer.write(remove)
            } onResponse: { response in
                var changes: [String] = []
                for try await message in response.messages {
                    let change = message.targetChange
                    changes.append("\(change.targetChangeType) \(change.targetIds)")
                }
                return changes
            }
        }
        #expect(changes == ["add [20601]", "add [7]", "remove [20601]"])
    }
}
